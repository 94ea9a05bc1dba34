"""The estimators a model file may hold, and what each one's state holds: a model file naming
another class, or holding other attributes, other objects or other shapes, is refused
(:mod:`.fitted_state` reads the declarations)."""
from .engine.history import FitStats, History
from .fitted_state import (Array, Bool, Equal, Instance, Int, Mapping, Optional, Real, Rows,
                           Sparse, State)
from .programs.implicit_mf import ImplicitMFProgram
from .programs.mf import MFProgram, Side

FLOATS, INTEGERS, STRINGS = "f", "iu", "UO"
IDS = "biufUO"  # user and item ids keep the type they were given

HISTORY = Instance(History, records=Rows(), stats=Instance(
    FitStats, added={"graphs": Int()}, rounds=Int(), tasks_per_round=Real(), recoveries=Rows(),
    resumed_from=Optional(Int()), wall_seconds=Real(), compute_seconds=Real(),
    converged=Bool()))
FEATURES = {"n_features_in_": Int(1, dim="n_features_in_")}
NAMES = {"feature_names_in_": Array(STRINGS, ("n_features_in_",))}
COEF = {"coef_": Array(FLOATS, ("n_features_in_",)), "intercept_": Real(), "dual_gap_": Real(),
        "n_iter_": Int()}
PENALTY_GRID = {"alpha_": Real(), "alphas_": Array(FLOATS, [("alphas",), ("l1_ratios", "alphas")]),
                "mse_path_": Array(FLOATS, [("alphas", "folds"),
                                            ("l1_ratios", "alphas", "folds")])}
LASSO = {"l1_ratio": Equal(1.0)}  # a Lasso is an ElasticNet of l1_ratio 1
LINEAR_CLASSIFIER = {**FEATURES, "classes_": Array("biufUO", ("classes",)),
                     "coef_": Array(FLOATS, ("coef_rows", "n_features_in_")),
                     "intercept_": Array(FLOATS, ("coef_rows",)), "history_": HISTORY}


def _edges():
    return Array(INTEGERS, (None,))


def _side(size):
    """How a factorization program updates one side's rows: its coordinates index the rows'
    ``width`` columns (the kernels do not check them)."""
    return Instance(Side, size=Int(dim=size), coords=Array(INTEGERS, (None,), below="width"),
                    lam=Array(FLOATS, ("width",)))


BLOCKS = {"user_edges": _edges(), "item_edges": _edges(), "n_user_blocks": Int(1),
          "sub_rounds": Int(1), "n_components": Int(1, dim="n_components"), "tol": Real(),
          "init_scale": Real(), "seed": Int(), "n_loss_terms": Int()}
MF_PROGRAM = Instance(MFProgram, **BLOCKS, biases=Bool(), mean=Real(), sweeps=Int(1),
                      width=Int(1, dim="width"),
                      sides=Mapping(users=_side("users"), items=_side("n_features_in_")))
IMPLICIT_PROGRAM = Instance(ImplicitMFProgram, **BLOCKS, alpha=Real(), regularization=Real(),
                            cg_steps=Int())
FACTORS = {"user_factors_": Array(FLOATS, ("users", "n_components")),
           "components_": Array(FLOATS, ("n_components", "n_features_in_")),
           "user_ids_": Array(IDS, ("users",)), "item_ids_": Array(IDS, ("n_features_in_",)),
           "history_": HISTORY, "n_iter_": Int(),
           "_seen": Sparse("b", ("users", "n_features_in_"))}


def _mf_program_matches(values, estimator, dims):
    """An older file's program agrees with its model."""
    program = values.get("_program")
    if program is None:
        return None
    k, biases = estimator.n_components, estimator.biases
    if program.biases != biases or program.width != k + 2 * biases:
        return (f"its program has biases={program.biases} and rows of {program.width} columns, "
                f"the model biases={biases} and {k} components")
    if program.mean != values["intercept_"]:
        return f"its program's mean {program.mean} is not its intercept_ {values['intercept_']}"
    return None


def _one_row_for_two_classes(values, estimator, dims):
    classes, rows = dims["classes"], dims["coef_rows"]
    if classes < 2 or rows != (1 if classes == 2 else classes):
        return (f"{classes} classes_ and {rows} rows of coef_ (expected 1 for 2 classes, else "
                "one a class)")
    return None


#: The public estimators, by name, and their states.
STATES = {
    "ElasticNet": State({**FEATURES, **COEF, "n_blocks_": Int(1), "history_": HISTORY},
                        optional=NAMES),
    "Lasso": State({**FEATURES, **COEF, "n_blocks_": Int(1), "history_": HISTORY},
                   always=LASSO, optional=NAMES),
    "ElasticNetCV": State({**FEATURES, **PENALTY_GRID, "l1_ratio_": Real(), **COEF},
                          optional=NAMES),
    "LassoCV": State({**FEATURES, **PENALTY_GRID, **COEF}, always=LASSO, optional=NAMES),
    "LogisticRegression": State({**LINEAR_CLASSIFIER, "n_iter_": Array(INTEGERS, (1,))},
                                optional=NAMES, checks=(_one_row_for_two_classes,)),
    "LinearSVC": State({**LINEAR_CLASSIFIER, "n_iter_": Int()}, optional=NAMES,
                       checks=(_one_row_for_two_classes,)),
    "GeneralizedLinearRegressor": State(
        {**FEATURES, "coef_": Array(FLOATS, ("n_features_in_",)), "intercept_": Real(),
         "n_iter_": Int(), "history_": HISTORY}, optional=NAMES),
    "LatentDirichletAllocation": State(
        {**FEATURES, "vocabulary_": Optional(Array(STRINGS, ("n_features_in_",))),
         "components_": Array(FLOATS, ("n_components", "n_features_in_")),
         "doc_topic_": Array(FLOATS, ("documents", "n_components")), "n_iter_": Int(),
         "history_": HISTORY, "n_vocab_blocks_": Int(1),
         "alpha_": Array(FLOATS, ("n_components",)), "beta_": Real()},
        optional=NAMES),
    "MatrixFactorization": State(
        {**FEATURES, **FACTORS, "user_bias_": Array(FLOATS, ("users",)),
         "item_bias_": Array(FLOATS, ("n_features_in_",)), "intercept_": Real(),
         "fitted_on_pairs_": Bool()},
        optional=NAMES, retired={"_program": MF_PROGRAM}, checks=(_mf_program_matches,)),
    "ImplicitMatrixFactorization": State({**FEATURES, **FACTORS}, optional=NAMES,
                                         retired={"_program": IMPLICIT_PROGRAM}),
    "BayesianPersonalizedRanking": State(
        {**FEATURES, **FACTORS, "item_bias_": Array(FLOATS, ("n_features_in_",))},
        optional=NAMES),
}
