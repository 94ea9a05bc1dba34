"""GeneralizedLinearRegressor: each datafit and penalty against an independent reference
(scikit-learn's Lasso and PoissonRegressor, scipy's L-BFGS-B on the same objective written out
here, the optimality conditions), sample weights against repeated rows, and bad input refused
before any work."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.linear_model import Lasso, PoissonRegressor

from dask_strads import GeneralizedLinearRegressor
from dask_strads.programs.datafits import Logistic
from dask_strads.programs.penalties import Penalty
from dask_strads.programs.prox_newton import ProxNewtonProgram


def regression(n=200, p=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    w = np.zeros(p)
    w[:6] = [1.5, -2.0, 0.8, 1.0, -0.5, 0.3]
    return X, w, rng


def huber(r, delta):
    return np.where(np.abs(r) <= delta, 0.5 * r * r, delta * (np.abs(r) - 0.5 * delta))


def huber_slope(r, delta):
    return np.clip(r, -delta, delta)


def split_variable_fit(X, y, delta, l1, l2, unpenalised=()):
    """min 1/n sum huber(X w + b - y) + l1 ||w||_1 + l2/2 ||w||^2 by scipy's L-BFGS-B, w = u - v
    with u, v >= 0 (a smooth problem with bounds), the features ``unpenalised`` free of l1."""
    n, p = X.shape
    l1_of = np.full(p, l1)
    l1_of[list(unpenalised)] = 0.0

    def objective(theta):
        u, v, b = theta[:p], theta[p:2 * p], theta[-1]
        w = u - v
        r = X @ w + b - y
        slope = X.T @ huber_slope(r, delta) / n + l2 * w
        value = huber(r, delta).mean() + l1_of @ (u + v) + 0.5 * l2 * w @ w
        return value, np.concatenate([slope + l1_of, -slope + l1_of,
                                      [huber_slope(r, delta).mean()]])

    bounds = [(0, None)] * (2 * p) + [(None, None)]
    result = minimize(objective, np.zeros(2 * p + 1), jac=True, method="L-BFGS-B",
                      bounds=bounds, options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 20000})
    theta = result.x
    return theta[:p] - theta[p:2 * p], theta[-1], result.fun


def glm_objective(model, X, y, delta, l1, l2):
    r = X @ model.coef_ + model.intercept_ - y
    w = model.coef_
    return huber(r, delta).mean() + l1 * np.abs(w).sum() + 0.5 * l2 * w @ w


@pytest.mark.parametrize("sparse", [False, True])
def test_squared_error_with_l1_is_scikit_learns_lasso(sparse):
    X, w, rng = regression()
    y = X @ w + 0.3 * rng.standard_normal(len(X)) + 2.0
    data = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0)) if sparse else X
    ours = GeneralizedLinearRegressor(alpha=0.05, tol=1e-10).fit(data, y)
    reference = Lasso(alpha=0.05, tol=1e-12, max_iter=100_000).fit(data, y)
    np.testing.assert_allclose(ours.coef_, reference.coef_, atol=1e-8)
    assert ours.intercept_ == pytest.approx(reference.intercept_, abs=1e-8)


def test_weighted_l1_is_the_lasso_of_rescaled_columns():
    """sum_j v_j |w_j| with w_j = u_j / v_j is the Lasso of the columns x_j / v_j in u."""
    X, w, rng = regression(seed=1)
    y = X @ w + 0.3 * rng.standard_normal(len(X))
    v = rng.uniform(0.3, 3.0, X.shape[1])
    ours = GeneralizedLinearRegressor(alpha=0.08, penalty_weights=v, tol=1e-9,
                                      n_blocks=3).fit(X, y)
    assert ours.history_.stats.converged
    reference = Lasso(alpha=0.08, tol=1e-12, max_iter=100_000).fit(X / v, y)
    np.testing.assert_allclose(ours.coef_, reference.coef_ / v, atol=1e-8)
    assert ours.intercept_ == pytest.approx(reference.intercept_, abs=1e-8)


def test_poisson_with_l2_is_scikit_learns_poisson_regressor():
    X, w, rng = regression(n=400, p=20, seed=2)
    y = rng.poisson(np.exp(0.3 * X @ w + 0.5)).astype(float)
    ours = GeneralizedLinearRegressor("poisson", alpha=0.02, l1_ratio=0.0, tol=1e-10).fit(X, y)
    reference = PoissonRegressor(alpha=0.02, tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, reference.coef_, atol=1e-7)
    assert ours.intercept_ == pytest.approx(reference.intercept_, abs=1e-7)
    np.testing.assert_allclose(ours.predict(X), reference.predict(X), rtol=1e-6)


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5, 0.0])
def test_huber_matches_a_smooth_reformulation_solved_by_scipy(l1_ratio):
    X, w, rng = regression(seed=3)
    y = X @ w + 0.2 * rng.standard_normal(len(X))
    y[:15] += rng.choice([-20.0, 20.0], 15)  # outliers, in the linear part of the loss
    alpha, delta = 0.05, 0.5
    l1, l2 = alpha * l1_ratio, alpha * (1 - l1_ratio)
    # two blocks: their combined steps stop decreasing the objective in float64 near a
    # relative violation of 1e-9, so not tol=1e-10 (one block reaches it)
    ours = GeneralizedLinearRegressor("huber", alpha=alpha, l1_ratio=l1_ratio, epsilon=delta,
                                      tol=1e-8, n_blocks=2).fit(X, y)
    assert ours.history_.stats.converged
    coef, intercept, best = split_variable_fit(X, y, delta, l1, l2)
    assert glm_objective(ours, X, y, delta, l1, l2) <= best + 1e-9
    np.testing.assert_allclose(ours.coef_, coef, atol=1e-5)
    assert ours.intercept_ == pytest.approx(intercept, abs=1e-5)
    if l1_ratio:
        assert np.count_nonzero(ours.coef_) < X.shape[1]


def test_a_zero_weight_leaves_a_feature_unpenalised():
    X, w, rng = regression(seed=4)
    y = X @ w + 0.2 * rng.standard_normal(len(X))
    v = np.ones(X.shape[1])
    v[[5, 20]] = 0.0  # a weak true feature and a noise feature
    ours = GeneralizedLinearRegressor("huber", alpha=0.3, epsilon=1.0, penalty_weights=v,
                                      tol=1e-10).fit(X, y)
    coef, _, best = split_variable_fit(X, y, 1.0, 0.3, 0.0, unpenalised=(5, 20))
    np.testing.assert_allclose(ours.coef_, coef, atol=1e-5)
    assert ours.coef_[5] != 0 and ours.coef_[20] != 0
    assert np.count_nonzero(ours.coef_) < X.shape[1]


@pytest.mark.parametrize("loss", ["squared_error", "huber", "poisson"])
def test_integer_sample_weights_are_repeated_rows(loss):
    X, w, rng = regression(n=120, p=15, seed=5)
    y = (rng.poisson(np.exp(0.2 * X @ w)).astype(float) if loss == "poisson"
         else X @ w + rng.standard_normal(len(X)))
    counts = rng.integers(0, 4, len(X))
    params = dict(loss=loss, alpha=0.03, l1_ratio=0.7, tol=1e-11)
    weighted = GeneralizedLinearRegressor(**params).fit(X, y, sample_weight=counts)
    repeated = GeneralizedLinearRegressor(**params).fit(np.repeat(X, counts, axis=0),
                                                        np.repeat(y, counts))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-8)
    assert weighted.intercept_ == pytest.approx(repeated.intercept_, abs=1e-8)


def test_warm_start_from_the_solution_takes_no_step():
    X, w, rng = regression(seed=6)
    y = X @ w + rng.standard_normal(len(X))
    model = GeneralizedLinearRegressor("huber", alpha=0.05, tol=1e-8, warm_start=True).fit(X, y)
    first = model.coef_.copy()
    model.fit(X, y)
    np.testing.assert_allclose(model.coef_, first, atol=1e-9)
    assert model.n_iter_ <= 1


@pytest.mark.parametrize("params, fit_kwargs, match", [
    (dict(penalty_weights=np.ones(3)), {}, "penalty_weights has shape"),
    (dict(penalty_weights=-np.ones(30)), {}, "finite and non-negative"),
    (dict(loss="poisson"), {"negative_y": True}, "non-negative"),
    (dict(epsilon=0.0), {}, "epsilon"),
    (dict(loss="absolute"), {}, "loss"),
])
def test_bad_input_is_refused_and_keeps_the_previous_fit(params, fit_kwargs, match):
    X, w, rng = regression()
    y = np.abs(X @ w) + 0.1
    model = GeneralizedLinearRegressor(alpha=0.1).fit(X, y)
    fitted = model.coef_.copy()
    model.set_params(**params)
    if fit_kwargs.get("negative_y"):
        y = y - 10.0
    with pytest.raises(ValueError, match=match):
        model.fit(X, y)
    np.testing.assert_array_equal(model.coef_, fitted)


def test_nan_in_x_is_refused():
    X, w, _ = regression()
    X[3, 4] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        GeneralizedLinearRegressor().fit(X, X[:, 0])


def test_a_program_refuses_a_datafit_or_penalty_without_what_it_needs():
    class NoValue:
        name, kernels, coupled, n_classes, n_samples = "broken", "logistic_loss", False, 1, 3

        def of_class(self, Z, k):
            return None

    with pytest.raises(TypeError, match="datafit NoValue has no 'value'"):
        ProxNewtonProgram(1, datafit=NoValue(), penalty=Penalty(1.0, 0.0), fit_intercept=True,
                          tolerance=1e-4)
    with pytest.raises(TypeError, match="penalty tuple has no 'l1_at'"):
        ProxNewtonProgram(1, datafit=Logistic(np.ones((3, 1)), 1.0), penalty=(1.0, 0.0),
                          fit_intercept=True, tolerance=1e-4)


def test_the_hinge_is_refused_by_prox_newton_and_taken_by_the_dual_program():
    """The hinge is not smooth: it declares no kernels for prox-Newton steps, only the dual's
    box, so the prox-Newton program refuses it by name and the SVM dual program takes it."""
    from dask_strads.programs.datafits import Hinge
    from dask_strads.programs.svm_dual import SVMDualProgram

    signs = np.array([[1.0], [-1.0], [1.0]])
    with pytest.raises(TypeError, match="datafit Hinge has no 'kernels'"):
        ProxNewtonProgram(1, datafit=Hinge(signs, 1.0), penalty=Penalty(0.0, 1.0),
                          fit_intercept=True, tolerance=1e-4)
    assert SVMDualProgram(1, datafit=Hinge(signs, 1.0), n_features=2,
                          tolerance=1e-4).loss == "hinge"
    with pytest.raises(TypeError, match="datafit Logistic has no 'dual_box'"):
        SVMDualProgram(1, datafit=Logistic(signs, 1.0), n_features=2, tolerance=1e-4)


def test_on_worker_processes_the_fit_is_the_in_process_one(client_factory):
    """Two feature blocks on a two-worker cluster (separate processes): the same rounds as
    the fit in this process, so the same model; a dask X predicts lazily, as numpy does."""
    import dask.array as da

    X, w, rng = regression(n=300, p=40, seed=7)
    y = rng.poisson(np.exp(0.2 * X @ w)).astype(float)
    v = rng.uniform(0.5, 2.0, X.shape[1])
    params = dict(loss="poisson", alpha=0.02, l1_ratio=0.8, penalty_weights=v, n_blocks=2,
                  tol=1e-8)
    here = GeneralizedLinearRegressor(**params).fit(X, y)
    there = GeneralizedLinearRegressor(**params)
    there.client = client_factory(2)
    there.fit(da.from_array(X, chunks=(100, 40)), y)
    np.testing.assert_allclose(there.coef_, here.coef_, rtol=0, atol=1e-12)
    assert there.n_iter_ == here.n_iter_
    lazy = there.predict(da.from_array(X, chunks=(100, 40)))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), here.predict(X), rtol=1e-12)


def test_a_saved_model_loads_and_predicts_the_same(tmp_path):
    import dask_strads

    X, w, rng = regression(seed=8)
    y = rng.poisson(np.exp(0.2 * X @ w)).astype(float)
    model = GeneralizedLinearRegressor("poisson", alpha=0.01,
                                       penalty_weights=rng.uniform(0.5, 2, X.shape[1])).fit(X, y)
    dask_strads.save(model, tmp_path / "poisson.strads")
    loaded = dask_strads.load(tmp_path / "poisson.strads")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.penalty_weights, model.penalty_weights)


def test_the_command_line_fits_and_predicts_as_the_estimator_does(tmp_path):
    import subprocess
    import sys

    import pandas as pd
    from sklearn.datasets import dump_svmlight_file

    X, w, rng = regression(n=150, p=12, seed=9)
    y = rng.poisson(np.exp(0.2 * X @ w)).astype(float)
    dump_svmlight_file(X, y, str(tmp_path / "counts.svm"))
    for args in (["fit", "glm", "counts.svm", "-p", "loss=poisson", "-p", "alpha=0.01", "-o",
                  "model.strads"], ["predict", "model.strads", "counts.svm", "-o", "out.csv"]):
        done = subprocess.run([sys.executable, "-m", "dask_strads", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    reference = GeneralizedLinearRegressor("poisson", alpha=0.01).fit(X, y)
    np.testing.assert_allclose(pd.read_csv(tmp_path / "out.csv")["prediction"],
                               reference.predict(X), rtol=1e-12)
