"""Sample and class weights of the linear models, against scikit-learn's weighted fits and
against the data with each row repeated as many times as its integer weight."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import linear_model
from sklearn.utils.class_weight import compute_class_weight

import dask_strads

TIGHT = {"tol": 1e-12, "max_iter": 10_000}


def regression(n=60, p=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[X < 0.5] = 0.0
    y = X[:, :5] @ rng.standard_normal(5) + 0.1 * rng.standard_normal(n) + 3.0
    return X, y, rng.integers(0, 4, n).astype(float)


def enet_objective(est, X, y, weights, alpha, l1_ratio):
    """scikit-learn's weighted elastic-net objective, in numpy."""
    r = y - X @ est.coef_ - est.intercept_
    coef = est.coef_
    return (0.5 * np.sum(weights * r**2) / weights.sum()
            + alpha * (l1_ratio * np.abs(coef).sum() + 0.5 * (1 - l1_ratio) * coef @ coef))


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_enet_weights_match_sklearn_and_repeated_rows(fit_intercept, sparse, l1_ratio):
    X, y, weights = regression()
    X_fit = sp.csc_matrix(X) if sparse else X
    params = {"alpha": 0.05, "l1_ratio": l1_ratio, "fit_intercept": fit_intercept}
    ours = dask_strads.ElasticNet(**params, **TIGHT).fit(X_fit, y, sample_weight=weights)
    theirs = linear_model.ElasticNet(**params, tol=1e-12, max_iter=100_000).fit(
        X_fit, y, sample_weight=weights)
    rows = np.repeat(np.arange(len(y)), weights.astype(int))
    repeated = dask_strads.ElasticNet(**params, **TIGHT).fit(X_fit[rows], y[rows])
    reference = enet_objective(theirs, X, y, weights, 0.05, l1_ratio)
    assert enet_objective(ours, X, y, weights, 0.05, l1_ratio) - reference < 1e-10
    assert enet_objective(repeated, X, y, weights, 0.05, l1_ratio) - reference < 1e-10
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-8)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=1e-8)


def test_weights_over_blocks_positive_and_least_squares():
    X, y, _ = regression(n=150, p=200, seed=1)
    weights = np.random.default_rng(1).uniform(0.0, 3.0, len(y))
    for positive in (False, True):
        params = {"alpha": 0.01, "l1_ratio": 0.7, "positive": positive}
        ours = dask_strads.ElasticNet(**params, n_blocks=3, **TIGHT).fit(
            sp.csc_matrix(X), y, sample_weight=weights)
        theirs = linear_model.ElasticNet(**params, tol=1e-12, max_iter=100_000).fit(
            X, y, sample_weight=weights)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-8)
        np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=1e-8)
    with pytest.warns(UserWarning, match="least squares"):
        ours = dask_strads.ElasticNet(alpha=0.0, tol=1e-10).fit(X[:, :20], y,
                                                                 sample_weight=weights)
    theirs = linear_model.LinearRegression().fit(X[:, :20], y, sample_weight=weights)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-9)


def test_weights_on_a_process_cluster(client_factory):
    X, y, weights = regression(n=80, p=40, seed=2)
    ours = dask_strads.Lasso(alpha=0.02, n_blocks=2, **TIGHT)
    ours.client = client_factory(2)
    ours.fit(sp.csc_matrix(X), y, sample_weight=weights)
    theirs = linear_model.Lasso(alpha=0.02, tol=1e-12, max_iter=100_000).fit(
        X, y, sample_weight=weights)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-8)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=1e-8)


def test_bad_weights_are_refused_and_leave_the_fit():
    X, y, weights = regression()
    est = dask_strads.Lasso(alpha=0.1).fit(X, y)
    coef = est.coef_.copy()
    for bad, error in ((-weights, ValueError), (weights[:-1], ValueError),
                       (np.zeros(len(y)), ValueError)):
        with pytest.raises(error):
            est.fit(X, y, sample_weight=bad)
    with pytest.raises(ValueError, match="working_set"):
        dask_strads.Lasso(alpha=0.1, schedule="cyclic").fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(est.coef_, coef)


def classification(n=120, p=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.standard_normal(n) > 0.3).astype(int)
    return X, y, rng.integers(0, 4, n).astype(float)


def logistic_objective(est, X, y, weights, C, l1_ratio):
    z = X @ est.coef_.ravel() + est.intercept_
    coef = est.coef_
    return (C * np.sum(weights * np.logaddexp(0.0, -(2 * y - 1) * z))
            + l1_ratio * np.abs(coef).sum() + 0.5 * (1 - l1_ratio) * (coef**2).sum())


@pytest.mark.parametrize("class_weight", [None, "balanced", {0: 2.0, 1: 0.5}])
def test_logistic_weights_match_sklearn(class_weight):
    X, y, weights = classification()
    ours = dask_strads.LogisticRegression("l2", C=0.5, tol=1e-10, max_iter=1000,
                                          class_weight=class_weight)
    ours.fit(X, y, sample_weight=weights)
    theirs = linear_model.LogisticRegression(C=0.5, l1_ratio=0.0, tol=1e-12, max_iter=10_000,
                                             class_weight=class_weight)
    theirs.fit(X, y, sample_weight=weights)
    total = weights * (1.0 if class_weight is None else compute_class_weight(
        class_weight, classes=np.array([0, 1]), y=y, sample_weight=weights)[y])
    reference = logistic_objective(theirs, X, y, total, 0.5, 0.0)
    assert logistic_objective(ours, X, y, total, 0.5, 0.0) - reference < 1e-9 * reference
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-6)


def test_logistic_l1_integer_weights_are_repeated_rows():
    X, y, weights = classification(seed=3)
    rows = np.repeat(np.arange(len(y)), weights.astype(int))
    params = {"C": 0.5, "tol": 1e-8, "max_iter": 1000}
    weighted = dask_strads.LogisticRegression(l1_ratio=1.0, **params).fit(
        X, y, sample_weight=weights)
    repeated = dask_strads.LogisticRegression(l1_ratio=1.0, **params).fit(X[rows], y[rows])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-6)
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, atol=1e-6)
    assert 0 < np.count_nonzero(weighted.coef_) < X.shape[1]


@pytest.mark.parametrize("sparse", [False, True])
def test_cv_weights_match_sklearn(sparse):
    X, y, _ = regression(n=80, p=40, seed=4)
    weights = np.random.default_rng(4).uniform(0.2, 3.0, len(y))
    X_fit = sp.csc_matrix(X) if sparse else X
    params = {"l1_ratio": [0.5, 1.0], "alphas": 8, "cv": 3, "tol": 1e-10}
    ours = dask_strads.ElasticNetCV(**params, n_jobs=1).fit(X_fit, y, sample_weight=weights)
    theirs = linear_model.ElasticNetCV(**params).fit(X_fit, y, sample_weight=weights)
    np.testing.assert_allclose(ours.alphas_, theirs.alphas_, rtol=1e-12)
    np.testing.assert_allclose(ours.mse_path_, theirs.mse_path_, rtol=1e-6)
    assert (ours.alpha_, ours.l1_ratio_) == (theirs.alpha_, theirs.l1_ratio_)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-8)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=1e-8)


def test_weights_with_dask_arrays():
    import dask
    import dask.array as da
    import sparse

    X, y, weights = regression(n=80, p=30, seed=5)
    reference = dask_strads.Lasso(alpha=0.02, **TIGHT).fit(X, y, sample_weight=weights)
    for chunks in (da.from_array(X, chunks=(40, 15)),
                   da.from_array(sparse.COO.from_numpy(X), chunks=(40, 15))):
        ours = dask_strads.Lasso(alpha=0.02, **TIGHT)
        with dask.config.set(scheduler="synchronous"):  # in this process, two blocks
            ours.fit(chunks, y, sample_weight=da.from_array(weights, chunks=40))
        np.testing.assert_allclose(ours.coef_, reference.coef_, atol=1e-12)
        np.testing.assert_allclose(ours.intercept_, reference.intercept_, atol=1e-12)
