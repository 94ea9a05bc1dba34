"""dask_strads.LogisticRegression against independent references: scikit-learn's liblinear and
saga solvers at a tight tol, on the objective computed here in numpy from the fitted attributes.

Problems are small (a few hundred samples) so that the tight references stay fast. Fits without
a client run in this process; the model-parallel ones run on the session's two-worker-process
cluster.
"""
import copy
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression as SkLogisticRegression
from sklearn.utils._param_validation import InvalidParameterError

import dask_strads
from conftest import run_past_the_stop
from dask_strads.programs import Inbox, Instruction, run_sequential
from dask_strads.programs.datafits import Logistic
from dask_strads.programs.penalties import Penalty
from dask_strads.programs.prox_newton import ProxNewtonProgram, make_raw_block

OBJECTIVE_RTOL = 1e-5
TOL = 1e-7
L1_RATIO = {"l1": 1.0, "l2": 0.0, "elasticnet": 0.4}


def problem(n_samples=200, n_features=40, n_classes=2, sparse=False, seed=0, redundant=4):
    X, y = make_classification(n_samples, n_features, n_informative=8, n_redundant=redundant,
                               n_classes=n_classes, n_clusters_per_class=1, random_state=seed)
    if sparse:
        X[np.abs(X) < 0.8] = 0.0
    X[X != 0] += 0.5  # uncentred columns: the intercept matters
    return (sp.csr_matrix(X) if sparse else X), y


def objective(X, y_pm, coef, intercept, C, l1_ratio):
    """scikit-learn's objective of one binary problem (labels in {-1, +1})."""
    z = X @ coef + intercept
    return (C * np.logaddexp(0.0, -y_pm * np.asarray(z).ravel()).sum()
            + l1_ratio * np.abs(coef).sum() + 0.5 * (1 - l1_ratio) * coef @ coef)


def binary_objective(model, X, y, C, l1_ratio):
    y_pm = np.where(y == model.classes_[1], 1.0, -1.0)
    intercept = np.ravel(model.intercept_)[0]  # liblinear without intercept: a float
    return objective(X, y_pm, model.coef_.ravel(), intercept, C, l1_ratio)


def sklearn_fit(X, y, C, l1_ratio, solver, fit_intercept=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SkLogisticRegression(C=C, l1_ratio=l1_ratio, solver=solver, tol=1e-12,
                                    max_iter=100_000, fit_intercept=fit_intercept).fit(X, y)


def ours(penalty, **params):
    return dask_strads.LogisticRegression(penalty, l1_ratio=L1_RATIO[penalty], tol=TOL,
                                          max_iter=300, **params)


@pytest.mark.parametrize("penalty", ["l1", "l2", "elasticnet"])
def test_objective_matches_saga(penalty):
    X, y = problem()
    C = 0.3
    model = ours(penalty, C=C).fit(X, y)
    reference = sklearn_fit(X, y, C, L1_RATIO[penalty], "saga")
    got = binary_objective(model, X, y, C, L1_RATIO[penalty])
    expected = binary_objective(reference, X, y, C, L1_RATIO[penalty])
    assert got <= expected * (1 + OBJECTIVE_RTOL)
    assert got >= expected * (1 - OBJECTIVE_RTOL)  # saga at tol 1e-12 is near the optimum
    assert model.history_.stats.converged


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("penalty", ["l1", "l2"])
def test_without_intercept_matches_liblinear(penalty, sparse):
    """liblinear penalises its intercept: without one, both minimise the same objective."""
    X, y = problem(sparse=sparse, seed=3)
    C = 0.5
    model = ours(penalty, C=C, fit_intercept=False).fit(X, y)
    reference = sklearn_fit(X, y, C, L1_RATIO[penalty], "liblinear", fit_intercept=False)
    got = binary_objective(model, X, y, C, L1_RATIO[penalty])
    expected = binary_objective(reference, X, y, C, L1_RATIO[penalty])
    assert abs(got - expected) <= OBJECTIVE_RTOL * expected
    assert np.all(model.intercept_ == 0.0)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("penalty", ["l1", "l2"])
def test_solver_liblinear_gives_liblinears_fit_with_its_penalised_intercept(penalty, sparse):
    """``solver="liblinear"``: the intercept is the weight of an extra feature of value
    ``intercept_scaling``, penalised as the others: the coefficients and intercept of
    scikit-learn's liblinear at a tight tolerance."""
    X, y = problem(sparse=sparse, seed=5)
    params = dict(C=0.5, l1_ratio=L1_RATIO[penalty], intercept_scaling=3.0)
    model = dask_strads.LogisticRegression(solver="liblinear", tol=1e-10, max_iter=500,
                                           **params).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = SkLogisticRegression(solver="liblinear", tol=1e-12, max_iter=100_000,
                                         **params).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-6)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, atol=1e-6)
    as_float32 = dask_strads.LogisticRegression(solver="liblinear", **params).fit(
        X.astype(np.float32), y)
    assert as_float32.coef_.dtype == reference.fit(X.astype(np.float32), y).coef_.dtype
    unpenalised = ours(penalty, C=0.5).fit(X, y)  # another objective: another intercept
    assert abs(unpenalised.intercept_[0] - model.intercept_[0]) > 1e-3


def test_solver_liblinear_on_dask_chunks_gives_the_in_memory_fit():
    """The extra feature joins a Dask array as a chunk of its own (pydata sparse for sparse
    chunks): the same fit as in memory."""
    import dask.array as da
    import sparse

    X, y = problem(seed=6)
    params = dict(solver="liblinear", C=0.5, intercept_scaling=2.0, tol=1e-9, max_iter=500)
    expected = dask_strads.LogisticRegression(**params).fit(X, y)
    for chunked in (da.from_array(X, chunks=(100, 25)),
                    da.from_array(sparse.COO.from_numpy(X), chunks=(100, 25))):
        got = dask_strads.LogisticRegression(**params).fit(chunked, y)
        np.testing.assert_allclose(got.coef_, expected.coef_, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got.intercept_, expected.intercept_, rtol=1e-9)


def test_solver_liblinear_refuses_what_liblinear_refuses():
    X, y = problem(n_classes=3)
    with pytest.raises(ValueError, match="'liblinear' solver does not support multiclass"):
        dask_strads.LogisticRegression(solver="liblinear").fit(X, y)
    X, y = problem()
    with pytest.raises(ValueError, match="not supported for the liblinear solver"):
        dask_strads.LogisticRegression(solver="liblinear", C=np.inf).fit(X, y)


def test_dual_true_gives_liblinears_dual_fit_with_l2_and_is_refused_otherwise():
    """liblinear's dual formulation of the l2 penalty has the primal's optimum: scikit-learn's
    ``dual=True`` fit at a tight tolerance; scikit-learn's refusals elsewhere."""
    X, y = problem(seed=7)
    params = dict(solver="liblinear", C=0.5, l1_ratio=0.0)
    model = dask_strads.LogisticRegression(dual=True, tol=1e-10, max_iter=500,
                                           **params).fit(X, y)
    reference = SkLogisticRegression(dual=True, tol=1e-12, max_iter=100_000, **params).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-6)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, atol=1e-6)
    with pytest.raises(ValueError, match="Solver lbfgs supports only dual=False"):
        dask_strads.LogisticRegression(dual=True, solver="lbfgs").fit(X, y)
    with pytest.raises(ValueError, match="l2 penalty alone, got penalty='l1'"):
        dask_strads.LogisticRegression(dual=True, solver="liblinear", penalty="l1").fit(X, y)


def test_a_large_intercept_scaling_converges_to_liblinears_fit():
    """A constant column of 1e4: near the optimum a step's decrease (~1e-20) is below the
    objective's rounding; the line search measures it sample by sample, as liblinear does."""
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import l1_min_c

    X, y = load_iris(return_X_y=True)
    X, y = StandardScaler().fit_transform(X[y != 2]), y[y != 2]
    params = dict(solver="liblinear", l1_ratio=1.0, intercept_scaling=1e4,
                  C=l1_min_c(X, y, loss="log") * 10 ** (10 / 29))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = dask_strads.LogisticRegression(tol=1e-10, max_iter=100, **params).fit(X, y)
    reference = SkLogisticRegression(tol=1e-12, max_iter=100_000, **params).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-6)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, atol=1e-6)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_a_loss_change_keeps_its_digits_when_tiny(loss):
    """The line search's change of the loss against the same sum in extended precision: equal
    to 1e-9 relative for steps whose change is far below the loss's rounding."""
    from dask_strads.kernels import margin_losses

    rng = np.random.default_rng(0)
    z, q = rng.normal(size=500) * 3, rng.normal(size=500)
    y, C = np.sign(rng.normal(size=500)), rng.uniform(size=500)
    ld = np.longdouble

    def extended(z):
        m = ld(1) * y * z
        if loss == "logistic":
            return np.sum(C * np.log1p(np.exp(-m)))
        return np.sum(C * np.maximum(ld(1) - m, ld(0)) ** 2)

    change = getattr(margin_losses, loss.upper()).change
    for t in (1e-12, 1e-6, 1.0):
        expected = extended(z + ld(t) * q) - extended(z)
        assert change(z, q, t, y, C) == pytest.approx(float(expected), rel=1e-9 if t < 1 else 1e-12)


def test_sparse_input_gives_the_dense_fit():
    """Sparse blocks run the CSC kernels: the same model as the dense ones (checked against
    saga above), intercept and elastic net included."""
    X, y = problem(sparse=True, seed=4)
    from_sparse = ours("elasticnet", C=0.3).fit(X, y)
    from_dense = ours("elasticnet", C=0.3).fit(X.toarray(), y)
    np.testing.assert_allclose(from_sparse.coef_, from_dense.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(from_sparse.intercept_, from_dense.intercept_, rtol=1e-7)


def test_one_vs_rest_multiclass():
    """Three classes: each row of coef_ solves the binary problem 'class k against the rest',
    as liblinear's one-vs-rest does (no intercept, where liblinear's objective is ours)."""
    X, y = problem(n_samples=240, n_classes=3, seed=5)
    C = 0.4
    model = ours("l1", C=C, fit_intercept=False, multi_class="ovr").fit(X, y)
    assert model.coef_.shape == (3, X.shape[1])
    for k, label in enumerate(model.classes_):
        y_k = np.where(y == label, 1, 0)
        reference = sklearn_fit(X, y_k, C, 1.0, "liblinear", fit_intercept=False)
        y_pm = np.where(y == label, 1.0, -1.0)
        got = objective(X, y_pm, model.coef_[k], 0.0, C, 1.0)
        expected = objective(X, y_pm, reference.coef_.ravel(), 0.0, C, 1.0)
        assert abs(got - expected) <= OBJECTIVE_RTOL * expected
    proba = model.predict_proba(X)
    scores = 1 / (1 + np.exp(-(X @ model.coef_.T)))
    np.testing.assert_allclose(proba, scores / scores.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(model.predict(X), model.classes_[scores.argmax(axis=1)])


def multinomial_objective(model, X, y, C, l1_ratio):
    """scikit-learn's multinomial objective: C times the cross-entropy plus the penalty."""
    Z = X @ model.coef_.T + model.intercept_
    labels = np.searchsorted(model.classes_, y)
    cross_entropy = (logsumexp(Z, axis=1) - Z[np.arange(len(y)), labels]).sum()
    return (C * cross_entropy + l1_ratio * np.abs(model.coef_).sum()
            + 0.5 * (1 - l1_ratio) * (model.coef_ ** 2).sum())


def split_sign_fit(X, y, C, l1_ratio, n_classes):
    """The multinomial elastic net with an intercept solved by L-BFGS-B on the coefficients'
    positive and negative parts (a smooth problem with bounds), as ``(coef, intercept)``."""
    n_features = X.shape[1]
    Y = np.eye(n_classes)[y]

    def objective(v):
        plus, minus = np.split(v[:-n_classes], 2)
        W = (plus - minus).reshape(n_classes, n_features)
        Z = np.asarray(X @ W.T) + v[-n_classes:]
        grad_Z = C * (softmax(Z, axis=1) - Y)
        grad_W = np.asarray(X.T @ grad_Z).T.ravel() + (1 - l1_ratio) * W.ravel()
        value = (C * (logsumexp(Z, axis=1) - (Z * Y).sum(axis=1)).sum()
                 + l1_ratio * v[:-n_classes].sum() + 0.5 * (1 - l1_ratio) * (W ** 2).sum())
        return value, np.concatenate([grad_W + l1_ratio, l1_ratio - grad_W, grad_Z.sum(axis=0)])

    size = n_classes * n_features
    bounds = [(0, None)] * (2 * size) + [(None, None)] * n_classes
    v = minimize(objective, np.zeros(2 * size + n_classes), jac=True, method="L-BFGS-B",
                 bounds=bounds, options=dict(maxiter=100_000, ftol=1e-15, gtol=1e-12)).x
    plus, minus = np.split(v[:-n_classes], 2)
    return (plus - minus).reshape(n_classes, n_features), v[-n_classes:]


@pytest.mark.parametrize("penalty, sparse, n_blocks", [
    ("l2", False, 1), ("l1", True, 2), ("elasticnet", False, 1)])
def test_multinomial_matches_a_reference(penalty, sparse, n_blocks):
    """More than two classes fit the softmax model: the objective of scikit-learn's lbfgs at a
    tight tolerance (l2) or of an independent L-BFGS-B solve (with l1), and the same
    probabilities."""
    X, y = problem(n_samples=240, n_classes=4, sparse=sparse, seed=3)
    C, l1_ratio = 0.5, L1_RATIO[penalty]
    model = ours(penalty, C=C, n_blocks=n_blocks).set_params(max_iter=3000).fit(X, y)
    assert model.coef_.shape == (4, X.shape[1]) and model.history_.stats.converged
    reference = copy.copy(model)
    if penalty == "l2":
        fitted = sklearn_fit(X, y, C, l1_ratio, "lbfgs")
        reference.coef_, reference.intercept_ = fitted.coef_, fitted.intercept_
    else:
        reference.coef_, reference.intercept_ = split_sign_fit(X, y, C, l1_ratio, 4)
    got = multinomial_objective(model, X, y, C, l1_ratio)
    expected = multinomial_objective(reference, X, y, C, l1_ratio)
    assert abs(got - expected) <= 1e-6 * expected
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), atol=1e-3)
    np.testing.assert_allclose(model.predict_proba(X), softmax(model.decision_function(X), axis=1))


def test_binary_predictions_and_string_labels():
    X, y = problem(seed=2)
    labels = np.array(["no", "yes"])[y]
    model = ours("l1", C=1.0).fit(X, labels)
    np.testing.assert_array_equal(model.classes_, ["no", "yes"])
    decision = X @ model.coef_.ravel() + model.intercept_[0]
    np.testing.assert_allclose(model.decision_function(X), decision)
    np.testing.assert_allclose(model.predict_proba(X)[:, 1], 1 / (1 + np.exp(-decision)))
    np.testing.assert_array_equal(model.predict(X), np.where(decision > 0, "yes", "no"))


def test_two_blocks_on_a_cluster_match_the_sequential_run(client_factory):
    """Model-parallel: two feature blocks on two worker processes give the result of the same
    program run in a plain loop, and the optimum a one-block fit reaches (tested above against
    saga and liblinear)."""
    X, y = problem(n_samples=300, n_features=60, sparse=True, seed=7, redundant=0)
    C, tol = 0.3, 1e-5
    model = ours("elasticnet", C=C, n_blocks=2).set_params(tol=tol)
    model.client = client_factory(2)
    model.fit(X, y)
    assert 0 < model.history_.stats.tasks_per_round <= 4  # 2 pushes, a pull, a report; fewer fused
    one_block = ours("elasticnet", C=C).fit(X, y)
    expected = binary_objective(one_block, X, y, C, L1_RATIO["elasticnet"])
    got = binary_objective(model, X, y, C, L1_RATIO["elasticnet"])
    assert expected * (1 - 1e-12) <= got <= expected * (1 + OBJECTIVE_RTOL)

    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    program = ProxNewtonProgram(2, datafit=Logistic(Y, C), penalty=Penalty(0.4, 0.6),
                                fit_intercept=True, tolerance=tol, sparse=True)
    X_csc = X.tocsc()
    blocks = [make_raw_block(X_csc[:, :30], np.zeros((1, 30))),
              make_raw_block(X_csc[:, 30:], np.zeros((1, 30)))]
    params, reports = run_sequential(program, blocks, max_rounds=300)
    coef, intercept = program.coefficients(params)
    np.testing.assert_allclose(model.intercept_, intercept, rtol=1e-10)
    np.testing.assert_allclose(model.coef_, coef, rtol=1e-10, atol=1e-12)
    assert len(reports) == model.n_iter_[0]


def test_rounds_behind_the_stop_change_nothing():
    """Pushes update the blocks in place; after the report that meets the tolerance, further
    rounds leave every block as it was, and the collected coefficients and intercept are those
    whose objective that report gave (computed here in numpy)."""
    X, y = problem(n_samples=300, n_features=60, sparse=True, seed=7, redundant=0)
    C, l1_ratio = 0.3, 0.4
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    program = ProxNewtonProgram(2, datafit=Logistic(Y, C), penalty=Penalty(l1_ratio, 1 - l1_ratio),
                                fit_intercept=True,
                                tolerance=1e-5, sparse=True)
    X_csc = X.tocsc()
    blocks = [make_raw_block(X_csc[:, lo:lo + 30], np.zeros((1, 30))) for lo in (0, 30)]
    at_stop, collected, stop = run_past_the_stop(program, blocks)
    np.testing.assert_array_equal(collected, at_stop)
    coef, intercept = program.coefficients(np.split(collected, 2))  # 30 features + 1 a block
    assert objective(X, Y[:, 0], coef[0], intercept[0], C, l1_ratio) == (
        pytest.approx(stop["objective"], rel=1e-12))


@pytest.mark.parametrize("penalty", ["l1", "l2"])  # sparse and dense initial coefficients
def test_warm_start_resumes_from_the_previous_fit(penalty):
    X, y = problem(seed=11)
    l1_ratio = L1_RATIO[penalty]
    cold = ours(penalty, C=0.5).fit(X, y)
    warm = ours(penalty, C=0.5, warm_start=True)
    warm.coef_, warm.intercept_, warm.classes_ = cold.coef_, cold.intercept_, cold.classes_
    warm.fit(X, y)
    assert warm.n_iter_[0] < cold.n_iter_[0]
    assert (binary_objective(warm, X, y, 0.5, l1_ratio)
            <= binary_objective(cold, X, y, 0.5, l1_ratio) * (1 + 1e-9))


def test_warm_start_without_intercept_leaves_the_previous_intercept_out():
    """A warm start without an intercept starts from the previous coefficients only: the fit is
    liblinear's without intercept (its objective is ours there), and ``intercept_`` is 0."""
    X, y = problem(seed=3)
    model = ours("l1", C=0.5).fit(X, y)
    assert np.any(model.intercept_ != 0.0)
    model.set_params(fit_intercept=False, warm_start=True).fit(X, y)
    reference = sklearn_fit(X, y, 0.5, 1.0, "liblinear", fit_intercept=False)
    got, expected = (binary_objective(m, X, y, 0.5, 1.0) for m in (model, reference))
    assert abs(got - expected) <= OBJECTIVE_RTOL * expected
    assert np.all(model.intercept_ == 0.0)


@pytest.mark.parametrize("density", [0.0, 0.1, 1.0])
def test_initial_coefficients_travel_compact_and_start_the_state(density):
    """A block's initial coefficients reach its worker as a CSR matrix unless they are denser
    than that pays for (a fit from zero sends no values), and its state starts from them."""
    rng = np.random.default_rng(0)
    coef = rng.normal(size=(3, 40)) * (rng.random((3, 40)) < density)
    X, y = problem(n_samples=120, n_classes=3, seed=2)
    raw = make_raw_block(X, coef)
    assert sp.issparse(raw["coef"]) == (density < 1)
    assert not sp.issparse(raw["coef"]) or raw["coef"].nnz == np.count_nonzero(coef)
    Y = np.where(y[:, None] == np.arange(3), 1.0, -1.0)
    program = ProxNewtonProgram(1, datafit=Logistic(Y, 0.5), penalty=Penalty(1.0, 0.0),
                                fit_intercept=True, tolerance=1e-4)
    state, _ = program.init_block(program.prepare_block(raw, 0), 0)
    np.testing.assert_array_equal(state.coef, np.hstack([coef, np.zeros((3, 1))]))


def test_hand_over_gives_what_collect_gives_in_the_state_itself():
    """The fit's final collect (``hand_over``) commits the last changes into the state's own
    coefficients instead of a copy; its parameters are those ``collect`` computes from a copy
    (three classes, an intercept, two blocks, a round in)."""
    X, y = problem(n_samples=150, n_classes=3, sparse=True, seed=6)
    Y = np.where(y[:, None] == np.arange(3), 1.0, -1.0)
    program = ProxNewtonProgram(2, datafit=Logistic(Y, 0.5), penalty=Penalty(1.0, 0.0),
                                fit_intercept=True, tolerance=1e-8, sparse=True)
    X_csc = X.tocsc()
    data = [program.prepare_block(make_raw_block(X_csc[:, lo:lo + 20], np.zeros((3, 20))), b)
            for b, lo in enumerate((0, 20))]
    started = [program.init_block(d, b) for b, d in enumerate(data)]
    shared, _ = program.pull(dict(enumerate(p for _, p in started)), program.initial_shared())
    states = [s for s, _ in started]
    pushed = [program.push(b, d, s, Instruction(), shared, Inbox())
              for b, (d, s) in enumerate(zip(data, states))]
    shared, _ = program.pull(dict(enumerate(p for _, p in pushed)), shared)
    assert 0 < shared.step.min() and any(len(p) for s in states for p, _ in s.changes)
    collected = [program.collect(d, s, shared) for d, s in zip(data, states)]
    handed = [program.hand_over(d, s, shared) for d, s in zip(data, states)]
    for c, h, s in zip(collected, handed, states):
        np.testing.assert_array_equal(h, c)
        assert np.shares_memory(h, s.coef) and not np.shares_memory(c, s.coef)
    coef, intercept = program.coefficients(handed)
    np.testing.assert_array_equal(intercept, shared.intercept)
    assert coef.shape == (3, 40) and np.any(coef)


@pytest.mark.parametrize("estimator, data", [
    (lambda **p: dask_strads.LogisticRegression(l1_ratio=1.0, tol=TOL, max_iter=2, **p),
     problem),
    (lambda **p: dask_strads.Lasso(alpha=0.01, tol=1e-12, max_iter=2, **p),
     lambda: make_regression(100, 300, n_informative=20, noise=1.0, random_state=0)),
], ids=["LogisticRegression", "Lasso"])
def test_a_callback_silences_the_convergence_warning_only_when_it_stops_the_fit(estimator,
                                                                                data):
    X, y = data()
    seen = []
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        est = estimator(callback=lambda record: seen.append(record["round"])).fit(X, y)
    assert seen and not est.history_.stats.converged
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = estimator(callback=lambda record: record["round"] >= 0).fit(X, y)
    assert [r["round"] for r in est.history_ if r.get("stopped_by_callback")] == [0]


def test_bad_input_refused_before_fitting_and_fitted_model_kept():
    X, y = problem(seed=1)
    model = ours("l1").fit(X, y)
    coef = model.coef_.copy()
    model.set_params(penalty="elasticnet", l1_ratio=None)
    with pytest.raises(ValueError, match="l1_ratio"):
        model.fit(X, y)
    model.set_params(penalty="l1", l1_ratio=1.0)
    with pytest.raises(ValueError, match="at least 2 classes"):
        model.fit(X, np.zeros(len(y)))
    with pytest.raises(InvalidParameterError, match="C"):
        model.set_params(C=0.0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="penalty"):
        model.set_params(C=1.0, penalty="l3").fit(X, y)
    with pytest.raises(ValueError, match="continuous"):
        model.set_params(penalty="l1").fit(X, y + 0.5)
    np.testing.assert_array_equal(model.coef_, coef)


def test_a_fit_resumed_from_a_disk_checkpoint_equals_the_uninterrupted_one(tmp_path):
    X, y = problem(n_classes=3, seed=13)
    uninterrupted = ours("l1", C=0.5).fit(X, y)
    stopped = ours("l1", C=0.5, checkpoint_interval=2, checkpoint_dir=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        stopped.set_params(max_iter=4).fit(X, y)
    resumed = ours("l1", C=0.5, checkpoint_interval=2, checkpoint_dir=tmp_path).fit(X, y)
    assert resumed.history_.stats.resumed_from == 4
    np.testing.assert_array_equal(resumed.coef_, uninterrupted.coef_)
    np.testing.assert_array_equal(resumed.intercept_, uninterrupted.intercept_)
