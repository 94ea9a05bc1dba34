"""dask_strads.LinearSVC against independent references: scikit-learn's LinearSVC (liblinear) at
a tight tol, on liblinear's objective computed here in numpy from the fitted attributes; its two
programs (the SVM dual over sample blocks, prox-Newton with the squared hinge over feature
blocks) in a plain loop, on worker processes and past their stop.

Problems are small (a few hundred samples) so that the tight references stay fast. Fits without
a client run in this process; the model-parallel ones run on the session's two-worker-process
cluster.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC as SkLinearSVC
from sklearn.utils._param_validation import InvalidParameterError

import dask_strads
from conftest import run_past_the_stop
from dask_strads.programs import run_sequential
from dask_strads.programs.datafits import Hinge, SquaredHinge
from dask_strads.programs.penalties import Penalty
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
    params = {"tol": 1e-8, **params}
    return dask_strads.LinearSVC(penalty, loss, dual=dual, max_iter=20_000, random_state=0,
                                 **params)


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


# -- the estimator against liblinear --------------------------------------------------------
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no_intercept"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("formulation", FORMULATIONS, ids=formulation_id)
def test_objective_and_predictions_match_liblinear(formulation, sparse, n_classes,
                                                   fit_intercept):
    X, y = problem(n_classes, sparse, seed=1)
    penalty, loss, _ = formulation
    params = dict(C=0.5, fit_intercept=fit_intercept, intercept_scaling=2.0)
    model = ours(*formulation, **params).fit(X, y)
    reference = sklearn_fit(X, y, *formulation, **params)
    assert model.coef_.shape == reference.coef_.shape
    assert model.intercept_.shape == np.shape(reference.intercept_) or not fit_intercept
    assert_same_objective(objective(model, X, y, 0.5, penalty, loss),
                          objective(reference, X, y, 0.5, penalty, loss))
    assert_same_predictions(model, reference, X)
    assert model.history_.stats.converged
    if not fit_intercept:
        assert np.all(model.intercept_ == 0.0)


@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no_intercept"])
def test_unsorted_and_repeated_entries_of_sparse_rows_fit_as_their_sums(fit_intercept):
    """A CSR X whose rows list their entries out of order, some twice (scipy means their sum):
    the fit of the canonical matrix (both to a relative gap of 1e-12: the sums' last bits may
    change which samples a sweep shrinks, hence the iterates), and the caller's matrix left as
    it was."""
    X, y = problem(sparse=True, seed=2)
    rng = np.random.default_rng(0)
    rows, columns, values = [], [], []
    for i in range(X.shape[0]):
        row = X.getrow(i)
        order = rng.permutation(row.nnz)
        halves = rng.random(row.nnz) < 0.3  # these entries split in two halves
        for j, v, split in zip(row.indices[order], row.data[order], halves[order]):
            rows += [i] * (1 + split)
            columns += [j] * (1 + split)
            values += [v / 2, v / 2] if split else [v]
    indptr = np.searchsorted(np.asarray(rows), np.arange(X.shape[0] + 1))
    messy = sp.csr_matrix((np.array(values), np.array(columns), indptr), shape=X.shape)
    assert not messy.has_canonical_format and messy.nnz > X.nnz
    kept = messy.indices.copy(), messy.data.copy()
    for dual in (True, False):
        params = dict(dual=dual, fit_intercept=fit_intercept, tol=1e-12)
        got = ours("l2", "squared_hinge", **params).fit(messy, y)
        expected = ours("l2", "squared_hinge", **params).fit(X, y)
        np.testing.assert_allclose(got.coef_, expected.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(messy.indices, kept[0])
    np.testing.assert_array_equal(messy.data, kept[1])


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("formulation", FORMULATIONS, ids=formulation_id)
def test_class_and_sample_weights_as_liblinear_weighs_them(formulation, n_classes):
    """``sample_weight`` multiplies a sample's cost; ``class_weight`` its class's, in its own
    class's one-vs-rest problem only when there are more than two classes (liblinear's rule):
    the objective of scikit-learn's fit, computed with those weights here."""
    X, y = problem(n_classes, seed=2)
    penalty, loss, _ = formulation
    sample_weight = np.random.default_rng(0).uniform(0.2, 3.0, len(y))
    for class_weight in ({0: 3.0, 1: 0.5}, "balanced"):
        model = ours(*formulation, C=0.7, class_weight=class_weight).fit(
            X, y, sample_weight=sample_weight)
        reference = sklearn_fit(X, y, *formulation, sample_weight=sample_weight, C=0.7,
                                class_weight=class_weight)
        per_class = (np.array([class_weight.get(c, 1.0) for c in range(n_classes)])
                     if isinstance(class_weight, dict)
                     else sample_weight.sum() / (n_classes
                                                 * np.bincount(y, weights=sample_weight)))
        if n_classes == 2:
            weights = sample_weight * per_class[y]
        else:
            weights = sample_weight * np.where(y == np.arange(n_classes)[:, None],
                                               per_class[:, None], 1.0)
        assert_same_objective(objective(model, X, y, 0.7, penalty, loss, weights),
                              objective(reference, X, y, 0.7, penalty, loss, weights))


@pytest.mark.parametrize("formulation", FORMULATIONS, ids=formulation_id)
def test_integer_sample_weights_are_repeated_rows(formulation):
    X, y = problem(3, seed=3, n_samples=120)
    weights = np.random.default_rng(1).integers(0, 4, len(y))
    rows = np.repeat(np.arange(len(y)), weights)
    penalty, loss, _ = formulation
    weighted = ours(*formulation, C=0.3).fit(X, y, sample_weight=weights)
    repeated = ours(*formulation, C=0.3).fit(X[rows], y[rows])
    assert_same_objective(objective(weighted, X[rows], y[rows], 0.3, penalty, loss),
                          objective(repeated, X[rows], y[rows], 0.3, penalty, loss))
    np.testing.assert_allclose(weighted.decision_function(X), repeated.decision_function(X),
                               rtol=1e-3, atol=1e-4)


def test_hinge_duality_gap_bounds_the_distance_to_liblinears_optimum():
    """The dual program stops on the relative duality gap: the objective of the model it
    returns is within ``tol`` of the optimum, here liblinear's at a tight tolerance."""
    X, y = problem(seed=4, sparse=True)
    reference = objective(sklearn_fit(X, y, *DUAL_HINGE, C=2.0), X, y, 2.0, loss="hinge")
    for tol in (1e-3, 1e-6):
        model = dask_strads.LinearSVC(loss="hinge", C=2.0, tol=tol, max_iter=20_000,
                                      random_state=0).fit(X, y)
        gap = model.history_.records[-1]["gap"]
        assert gap <= tol
        got = objective(model, X, y, 2.0, loss="hinge")
        assert reference * (1 - 1e-9) <= got <= reference * (1 + gap)


def test_binary_decision_function_and_string_labels():
    X, y = problem(seed=5)
    labels = np.array(["no", "yes"])[y]
    model = ours(*DUAL_SQUARED).fit(X, labels)
    np.testing.assert_array_equal(model.classes_, ["no", "yes"])
    decision = X @ model.coef_.ravel() + model.intercept_[0]
    np.testing.assert_allclose(model.decision_function(X), decision)
    np.testing.assert_array_equal(model.predict(X), np.where(decision > 0, "yes", "no"))
    assert isinstance(model.n_iter_, int) and model.coef_.dtype == np.float64


def test_dual_auto_chooses_the_dual_for_sparse_or_wide_data_in_one_block_else_the_primal():
    dense, y = problem(seed=6)
    sparse = sp.csr_matrix(dense)
    wide = dense[:25]
    for X, labels, n_blocks, measure in ((dense, y, None, "violation"), (sparse, y, None, "gap"),
                                         (wide, y[:25], None, "gap"),
                                         (sparse, y, 2, "violation")):
        model = dask_strads.LinearSVC(n_blocks=n_blocks).fit(X, labels)
        assert measure in model.history_.records[-1]
    for X in (dense, sparse):  # the l1 penalty has no dual, the hinge no primal
        assert "violation" in dask_strads.LinearSVC("l1").fit(X, y).history_.records[-1]
        assert "gap" in dask_strads.LinearSVC(loss="hinge").fit(X, y).history_.records[-1]


def test_dask_chunks_give_the_in_memory_fit():
    """Dask arrays, dense and pydata-sparse chunks: the dual program's sample blocks and the
    primal's feature blocks (the constant column a chunk of its own) give the fit of the same
    array in memory (numpy, scipy CSR)."""
    import dask.array as da
    import sparse

    X, y = problem(seed=7)
    for dual in (True, False):
        # the same fit on either layout, to the same tolerance: the dual's 1e-3 is 829 rounds
        # (1e-7 was 2517), the primal's 1e-7 220
        params = dict(n_blocks=2, C=0.5, tol=1e-3 if dual else 1e-7)
        for in_memory, chunked in ((X, da.from_array(X, chunks=(100, 15))),
                                   (sp.csr_matrix(X), da.from_array(sparse.COO.from_numpy(X),
                                                                     chunks=(100, 15)))):
            expected = ours("l2", "squared_hinge", dual).set_params(**params).fit(in_memory, y)
            got = ours("l2", "squared_hinge", dual).set_params(**params).fit(chunked, y)
            np.testing.assert_allclose(got.coef_, expected.coef_, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(got.intercept_, expected.intercept_, rtol=1e-9)


@pytest.mark.parametrize("formulation", [DUAL_HINGE, PRIMAL_L1], ids=formulation_id)
def test_two_blocks_on_worker_processes_give_the_in_process_fit(formulation, client_factory):
    """Model-parallel: two sample blocks (dual) or feature blocks (primal) on two worker
    processes give the model of the same fit in this process, and liblinear's optimum."""
    X, y = problem(3, sparse=True, seed=8, n_samples=240, n_features=40)
    penalty, loss, _ = formulation
    in_process = ours(*formulation, C=0.5, n_blocks=2).set_params(tol=1e-7).fit(X, y)
    on_cluster = ours(*formulation, C=0.5, n_blocks=2).set_params(tol=1e-7)
    on_cluster.client = client_factory(2)
    on_cluster.fit(X, y)
    assert on_cluster.history_.stats.tasks_per_round <= 4  # 2 pushes, a pull, a report
    np.testing.assert_allclose(on_cluster.coef_, in_process.coef_, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(on_cluster.intercept_, in_process.intercept_, rtol=1e-10)
    assert on_cluster.n_iter_ == in_process.n_iter_
    reference = objective(sklearn_fit(X, y, *formulation, C=0.5), X, y, 0.5, penalty, loss)
    assert abs(objective(on_cluster, X, y, 0.5, penalty, loss) - reference) <= 1e-5 * reference


@pytest.mark.parametrize("params, error, message", [
    (dict(penalty="l1", loss="hinge"), ValueError,
     r"Unsupported set of arguments: The combination of penalty='l1' and loss='hinge' is not "
     r"supported, Parameters: penalty='l1', loss='hinge', dual='auto'"),
    (dict(loss="hinge", dual=False), ValueError,
     r"The combination of penalty='l2' and loss='hinge' are not supported when dual=False"),
    (dict(penalty="l1", dual=True), ValueError,
     r"The combination of penalty='l1' and loss='squared_hinge' are not supported when "
     r"dual=True"),
    (dict(multi_class="crammer_singer"), ValueError,
     r"multi_class='crammer_singer' .* not supported: dask_strads.LinearSVC fits one-vs-rest "
     r"problems, multi_class='ovr'"),
    (dict(C=np.inf), InvalidParameterError, "'C' parameter"),
    (dict(C=0.0), InvalidParameterError, "'C' parameter"),
    (dict(tol=0.0), InvalidParameterError, "'tol' parameter"),
    (dict(loss="log"), InvalidParameterError, "'loss' parameter"),
    (dict(dual="yes"), InvalidParameterError, "'dual' parameter"),
])
def test_bad_parameters_refused_before_fitting_with_sklearns_messages(params, error, message):
    X, y = problem(seed=9)
    model = dask_strads.LinearSVC(random_state=0).fit(X, y)
    coef = model.coef_.copy()
    with pytest.raises(error, match=message):
        model.set_params(**params).fit(X, y)
    np.testing.assert_array_equal(model.coef_, coef)


def test_one_class_refused():
    X, _ = problem(seed=9)
    with pytest.raises(ValueError, match="at least 2 classes"):
        dask_strads.LinearSVC().fit(X, np.zeros(len(X)))


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
        program = ProxNewtonProgram(1, datafit=SquaredHinge(signs[:, None], 5.0),
                                    penalty=Penalty(1.0, 0.0),
                                    fit_intercept=False, tolerance=1e-9, sparse=True)
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
        datafit = (Hinge if loss == "hinge" else SquaredHinge)(signs, 0.5)
        program = SVMDualProgram(n_blocks, datafit=datafit, n_features=X.shape[1], tolerance=tol,
                                 sparse=True)
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
    program = SVMDualProgram(2, datafit=Hinge(signs, 0.5), n_features=X.shape[1], tolerance=1e-5,
                             sparse=True)
    blocks = [{"X": X[lo:lo + 100], "rows": (lo, lo + 100)} for lo in (0, 100)]
    at_stop, collected, stop = run_past_the_stop(program, blocks, max_rounds=2000)
    np.testing.assert_array_equal(collected, at_stop)
    w = program.coefficients(np.split(collected, [X.shape[1]]))[0][0]
    slack = np.maximum(0.0, 1.0 - signs[:, 0] * (X @ w))
    assert 0.5 * w @ w + 0.5 * slack.sum() == pytest.approx(stop["objective"], rel=1e-12)
