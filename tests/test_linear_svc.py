"""The linear SVM's programs against independent references: scikit-learn's LinearSVC
(liblinear) at a tight tol, on liblinear's objective computed here in numpy; the SVM dual program
over several sample blocks and past its stop."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC as SkLinearSVC

import dask_strads
from conftest import run_past_the_stop
from dask_strads.programs import run_sequential
from dask_strads.programs.datafits import SquaredHinge
from dask_strads.programs.prox_newton import ProxNewtonProgram, make_raw_block
from dask_strads.programs.svm_dual import SVMDualProgram

OBJECTIVE_RTOL = 1e-6
#: liblinear's tolerances that reach its optimum: its l1 solver stalls below 1e-8, its dual
#: solver of the hinge below 1e-10; the squared hinge's l2 reference is its primal Newton
#: solver, the most accurate
SKLEARN_TOL = {"l1": 1e-8, "l2": 1e-10}
#: formulations: (penalty, loss, dual)
PRIMAL_L2, PRIMAL_L1 = ("l2", "squared_hinge", False), ("l1", "squared_hinge", False)
DUAL_SQUARED, DUAL_HINGE = ("l2", "squared_hinge", True), ("l2", "hinge", True)
FORMULATIONS = [PRIMAL_L2, PRIMAL_L1, DUAL_SQUARED, DUAL_HINGE]


def formulation_id(formulation):
    penalty, loss, dual = formulation
    return f"{penalty}-{loss}-{'dual' if dual else 'primal'}"


def problem(n_classes=2, sparse=False, seed=0, n_samples=200, n_features=30):
    X, y = make_classification(n_samples, n_features, n_informative=8, n_redundant=0,
                               n_classes=n_classes, n_clusters_per_class=1, random_state=seed)
    if sparse:
        X[np.abs(X) < 0.8] = 0.0
    X[X != 0] += 0.5  # uncentred columns: the intercept matters
    return (sp.csr_matrix(X) if sparse else X), y


def objective(model, X, y, C, penalty="l2", loss="squared_hinge", weights=None):
    """liblinear's objective of the fitted model, summed over its one-vs-rest problems: the
    intercept is the weight ``intercept_ / intercept_scaling`` of a constant feature, penalised;
    ``weights``: the samples' weights, per sample or per problem and sample."""
    scaling = model.intercept_scaling if model.fit_intercept else 1.0
    classes, total = model.classes_, 0.0
    for k, coef in enumerate(model.coef_):
        signs = np.where(y == (classes[1] if len(classes) == 2 else classes[k]), 1.0, -1.0)
        intercept = np.ravel(model.intercept_)[k] if model.fit_intercept else 0.0
        w = np.append(coef, intercept / scaling)
        slack = np.maximum(0.0, 1.0 - signs * (X @ coef + intercept))
        loss_terms = slack if loss == "hinge" else slack * slack
        s = (np.ones(len(y)) if weights is None
             else weights if np.ndim(weights) == 1 else weights[k])
        total += (np.abs(w).sum() if penalty == "l1" else 0.5 * w @ w) + C * s @ loss_terms
    return total


def sklearn_fit(X, y, penalty, loss, dual, sample_weight=None, **params):
    """scikit-learn's fit of the same objective (``dual``: ours; liblinear's reference solver
    is chosen here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SkLinearSVC(penalty, loss, dual=loss == "hinge", tol=SKLEARN_TOL[penalty],
                           max_iter=10**6, random_state=0, **params).fit(
                               X, y, sample_weight=sample_weight)


def ours(penalty, loss, dual, **params):
    return dask_strads.LinearSVC(penalty, loss, dual=dual, tol=1e-9, max_iter=20_000,
                                 random_state=0, **params)


def assert_same_objective(got, expected):
    assert abs(got - expected) <= OBJECTIVE_RTOL * expected


def assert_same_predictions(model, reference, X):
    """The same classes, but where the reference's two best decisions are within 1e-3 (a
    model within the tolerance of the optimum may tell those apart otherwise)."""
    decision = np.atleast_2d(reference.decision_function(X).T).T
    if decision.shape[1] == 1:
        decisive = np.abs(decision[:, 0]) > 1e-3
    else:
        best = np.sort(decision, axis=1)
        decisive = best[:, -1] - best[:, -2] > 1e-3
    assert decisive.mean() > 0.9
    np.testing.assert_array_equal(model.predict(X)[decisive], reference.predict(X)[decisive])


# -- the programs ---------------------------------------------------------------------------
def test_squared_hinge_l1_reaches_coordinates_whose_samples_all_left_the_margin():
    """A coordinate whose samples are all outside the margin has no curvature and no gradient
    under the squared hinge; with the l1 penalty it must still go to 0 (its Newton model is
    the penalty alone). Rare features of sparse data: these three problems stalled at a relative
    violation of about 0.02 when such a coordinate could not move."""
    for seed in (6, 20, 33):
        rng = np.random.default_rng(seed)
        X = sp.random(200, 300, density=0.02, random_state=seed, format="csc")
        y = np.where(X @ rng.standard_normal(300) + 0.1 * rng.standard_normal(200) > 0, 1, 0)
        signs = np.where(y == 1, 1.0, -1.0)
        program = ProxNewtonProgram(1, SquaredHinge(signs[:, None], 5.0), 1.0, 0.0, False, 1e-9,
                                    sparse=True)
        parameters, reports = run_sequential(program, [make_raw_block(X, np.zeros((1, 300)))],
                                             max_rounds=300)
        assert reports[-1]["violation"] <= 1e-9
        reference = sklearn_fit(X, y, *PRIMAL_L1, C=5.0, fit_intercept=False).coef_[0]

        def primal(w):
            return np.abs(w).sum() + 5.0 * (np.maximum(0.0, 1.0 - signs * (X @ w)) ** 2).sum()

        assert_same_objective(primal(program.coefficients(parameters)[0][0]), primal(reference))


@pytest.mark.parametrize("loss, tol", [("hinge", 1e-5), ("squared_hinge", 1e-8)])
def test_dual_program_blocks_reach_the_single_blocks_optimum(loss, tol):
    """Sample blocks updated in the same round: their changes combined with the factors that
    minimise the dual objective, the fit reaches the optimum of one block (liblinear's solver),
    its duality gap below the tolerance (the hinge's dual, not smooth, converges the slower)."""
    X, y = problem(sparse=True, seed=10, n_samples=300)
    signs = np.where(y == 1, 1.0, -1.0)[:, None]
    X = X.tocsr()
    results = {}
    for n_blocks in (1, 3):
        program = SVMDualProgram(n_blocks, signs, 0.5, loss, X.shape[1], tol, sparse=True)
        edges = np.linspace(0, X.shape[0], n_blocks + 1).astype(int)
        blocks = [{"X": X[lo:hi], "rows": (lo, hi)} for lo, hi in zip(edges[:-1], edges[1:])]
        parameters, reports = run_sequential(program, blocks, max_rounds=5000)
        assert reports[-1]["gap"] <= tol
        w = program.coefficients(parameters)[0][0]
        slack = np.maximum(0.0, 1.0 - signs[:, 0] * (X @ w))
        results[n_blocks] = 0.5 * w @ w + 0.5 * (slack if loss == "hinge" else slack ** 2).sum()
        assert results[n_blocks] == pytest.approx(reports[-1]["objective"], rel=1e-12)
    assert results[3] == pytest.approx(results[1], rel=2 * tol)


def test_dual_rounds_behind_the_stop_change_nothing():
    """Pushes update the blocks' alphas in place; after the report that meets the tolerance,
    further rounds leave the weights as they were, and those are the weights whose objective
    that report gave."""
    X, y = problem(sparse=True, seed=11)
    X = X.tocsr()
    signs = np.where(y == 1, 1.0, -1.0)[:, None]
    program = SVMDualProgram(2, signs, 0.5, "hinge", X.shape[1], 1e-5, sparse=True)
    blocks = [{"X": X[lo:lo + 100], "rows": (lo, lo + 100)} for lo in (0, 100)]
    at_stop, collected, stop = run_past_the_stop(program, blocks, max_rounds=2000)
    np.testing.assert_array_equal(collected, at_stop)
    w = program.coefficients(np.split(collected, [X.shape[1]]))[0][0]
    slack = np.maximum(0.0, 1.0 - signs[:, 0] * (X @ w))
    assert 0.5 * w @ w + 0.5 * slack.sum() == pytest.approx(stop["objective"], rel=1e-12)
