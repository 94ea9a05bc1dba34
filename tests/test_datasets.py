import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Lasso

from dask_strads.datasets import (
    alpha_max,
    load_trump_tweets_tfidf,
    make_correlated_regression,
    make_sparse_regression,
)


def _adjacent_corr(X, lag):
    """Mean empirical correlation of columns j and j + lag."""
    C = np.corrcoef(X, rowvar=False)
    return np.mean(np.diagonal(C, offset=lag))


# --- make_correlated_regression -------------------------------------------------------

@pytest.mark.parametrize("rho", [0.9, 0.5, -0.6])
def test_correlated_ar1_structure(rho):
    X, _, _ = make_correlated_regression(n_samples=4000, n_features=60, n_informative=5,
                                         rho=rho, random_state=0)
    for lag in (1, 2, 3, 5):
        assert _adjacent_corr(X, lag) == pytest.approx(rho ** lag, abs=0.02)
    # stationary: every column has unit variance, zero mean
    np.testing.assert_allclose(X.var(axis=0), 1.0, atol=0.1)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=0.06)


def test_correlated_shapes_dtypes_planted():
    X, y, w = make_correlated_regression(n_samples=300, n_features=1000, n_informative=37,
                                         random_state=1)
    assert X.shape == (300, 1000) and y.shape == (300,) and w.shape == (1000,)
    assert X.dtype == y.dtype == w.dtype == np.float64
    assert X.flags.f_contiguous
    assert np.count_nonzero(w) == 37
    assert np.all((np.abs(w[w != 0]) >= 1) & (np.abs(w[w != 0]) <= 2))
    assert np.any(w > 0) and np.any(w < 0)


def test_correlated_snr_and_noise():
    X, y, w = make_correlated_regression(n_samples=20000, n_features=200, n_informative=20,
                                         rho=0.9, random_state=2)
    signal = X @ w
    assert np.var(signal) / np.var(y - signal) == pytest.approx(10.0, rel=0.2)
    X2, y2, w2 = make_correlated_regression(n_samples=500, n_features=50, n_informative=5,
                                            noise=0.0, random_state=3)
    np.testing.assert_allclose(y2, X2 @ w2)


def test_correlated_determinism():
    a = make_correlated_regression(n_samples=50, n_features=700, n_informative=4,
                                   random_state=7)
    b = make_correlated_regression(n_samples=50, n_features=700, n_informative=4,
                                   random_state=np.random.RandomState(7))
    c = make_correlated_regression(n_samples=50, n_features=700, n_informative=4,
                                   random_state=8)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], c[0])
    assert not np.array_equal(a[2], c[2])


def test_correlated_bad_params():
    with pytest.raises(ValueError):
        make_correlated_regression(n_samples=10, n_features=10, rho=1.0)
    with pytest.raises(ValueError):
        make_correlated_regression(n_samples=10, n_features=10, n_informative=11)


# --- make_sparse_regression -----------------------------------------------------------

def test_sparse_shapes_density_planted():
    X, y, w = make_sparse_regression(n_samples=2000, n_features=30000, density=2e-3,
                                     n_informative=25, random_state=0)
    assert sp.issparse(X) and X.format == "csc" and X.has_canonical_format
    assert X.shape == (2000, 30000) and y.shape == (2000,) and w.shape == (30000,)
    assert X.dtype == y.dtype == w.dtype == np.float64
    assert X.nnz == pytest.approx(2000 * 30000 * 2e-3, rel=0.02)
    assert np.count_nonzero(w) == 25
    assert np.std(X.data) == pytest.approx(1.0, rel=0.02)
    signal = X @ w
    assert np.var(signal) / np.var(y - signal) == pytest.approx(10.0, rel=0.3)


def test_sparse_determinism():
    a = make_sparse_regression(n_samples=100, n_features=5000, density=0.01,
                               n_informative=5, random_state=3)
    b = make_sparse_regression(n_samples=100, n_features=5000, density=0.01,
                               n_informative=5, random_state=3)
    c = make_sparse_regression(n_samples=100, n_features=5000, density=0.01,
                               n_informative=5, random_state=4)
    assert (a[0] != b[0]).nnz == 0
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2], b[2])
    assert (a[0] != c[0]).nnz > 0


def test_sparse_default_size_is_light():
    X, y, _ = make_sparse_regression(random_state=0)
    assert X.shape == (10000, 1_000_000)
    assert X.nnz == pytest.approx(1e7, rel=0.01)
    assert X.data.nbytes + X.indices.nbytes + X.indptr.nbytes < 200e6


# --- alpha_max ------------------------------------------------------------------------

@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_alpha_max_brute(fit_intercept, sparse):
    X, y, _ = make_sparse_regression(n_samples=200, n_features=400, density=0.1,
                                     n_informative=10, random_state=0)
    y = y + 3.0  # an offset, so that centring matters
    if not sparse:
        X = X.toarray()
    amax = alpha_max(X, y, fit_intercept=fit_intercept)
    dense = X.toarray() if sparse else X
    y_c = y - y.mean() if fit_intercept else y
    assert amax == pytest.approx(np.max(np.abs(
        (dense - dense.mean(0) if fit_intercept else dense).T @ y_c)) / 200)

    def nnz(alpha):
        lasso = Lasso(alpha=alpha, fit_intercept=fit_intercept, tol=1e-10, max_iter=100_000)
        return np.count_nonzero(lasso.fit(X, y).coef_)

    assert nnz(1.01 * amax) == 0
    assert nnz(0.9 * amax) > 0


def test_alpha_max_correlated():
    X, y, _ = make_correlated_regression(n_samples=100, n_features=300, n_informative=5,
                                         random_state=0)
    amax = alpha_max(X, y)
    assert np.count_nonzero(Lasso(alpha=1.01 * amax, tol=1e-10).fit(X, y).coef_) == 0
    assert np.count_nonzero(Lasso(alpha=0.9 * amax, tol=1e-10).fit(X, y).coef_) > 0


def test_alpha_max_shape_mismatch():
    with pytest.raises(ValueError):
        alpha_max(np.ones((3, 2)), np.ones(4))


# --- load_trump_tweets_tfidf ----------------------------------------------------------

def test_trump_tweets_tfidf():
    X, y, names = load_trump_tweets_tfidf()
    assert sp.issparse(X) and X.format == "csr"
    assert X.shape[0] == y.shape[0] == 20761
    assert 3000 < X.shape[1] == len(names) < 10000
    assert X.dtype == np.float64 and np.all(np.isfinite(y)) and y.min() >= 0
    # rows are l2-normalised TF-IDF vectors (a tweet may have no kept term)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    assert np.allclose(norms[norms > 0], 1.0)
    assert "america" in set(names)
    Xc, _, _ = load_trump_tweets_tfidf(min_df=50, format="csc")
    assert Xc.format == "csc" and Xc.shape[1] < X.shape[1]
