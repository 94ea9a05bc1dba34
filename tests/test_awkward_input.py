"""Awkward but legal input is fitted as its plain numpy/scipy form is; impossible input is refused
with a clear error before any cluster work, leaving a fitted estimator exactly as it was.

References are independent of the case under test: sklearn's Lasso, or a fit of the same data
given in memory (numpy / scipy), or a fit with the capped parameter given explicitly.
"""
import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from distributed import Client, LocalCluster
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso as SkLasso

from dask_strads import (ElasticNet, ElasticNetCV, ImplicitMatrixFactorization, Lasso,
                         LassoCV, LatentDirichletAllocation, LogisticRegression,
                         MatrixFactorization)
from dask_strads.estimators import inputs as inputs_module
from dask_strads.estimators import lda as lda_module
from bounded import within
from conftest import fit_is_refused


# -- data and references ----------------------------------------------------------------------
def regression(n=90, p=12, seed=0, density=0.4):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, format="csr", random_state=seed)
    y = X @ rng.normal(size=p) + 0.05 * rng.normal(size=n) + 1.0
    return X, y


def counts(n_docs=60, n_words=40, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix(rng.poisson(0.4, size=(n_docs, n_words)).astype(np.float64))
    X[0, 0] = 3.0  # every row and column need not be filled, one entry at least is
    return X


def ratings(n_users=40, n_items=25, seed=0):
    """Sparse ratings with some explicit zeros (observations of a rating 0)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n_users, n_items, density=0.3, format="csr", random_state=seed,
                  data_rvs=lambda n: rng.integers(0, 6, n).astype(float))
    assert (X.data == 0).any()
    return X


def lasso(**params):
    return Lasso(alpha=0.01, tol=1e-10, max_iter=3000, random_state=0, **params)


def lda(**params):
    return LatentDirichletAllocation(3, max_iter=5, random_state=0, **params)


def mf(**params):
    return MatrixFactorization(3, max_iter=10, random_state=0, **params)


def sklearn_lasso(X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SkLasso(alpha=0.01, tol=1e-12, max_iter=100_000).fit(X, y)


def dask_sparse(X, chunks):
    """A dask array whose chunks are scipy.sparse matrices."""
    return da.from_array(X, chunks=chunks, asarray=False)


def unknown_rows(X, keep):
    """X[keep] as a dask array with unknown chunk sizes (boolean-mask indexing)."""
    X = da.from_array(X, chunks=(20,) + X.shape[1:])
    unknown = X[da.from_array(keep, chunks=20)]
    assert np.isnan(unknown.shape[0])
    return unknown


# -- the estimator left as it was ---------------------------------------------------------------
def snapshot(est):
    return {name: (value, value.copy() if isinstance(value, np.ndarray) else None)
            for name, value in vars(est).items()}


def assert_unchanged(est, before):
    assert vars(est).keys() == before.keys()
    for name, (value, copy) in before.items():
        assert vars(est)[name] is value, name
        if copy is not None:
            np.testing.assert_array_equal(value, copy)


def refused(est, X, match, error=ValueError):
    before = snapshot(est)
    with pytest.raises(error, match=match):
        est.fit(X)
    assert_unchanged(est, before)


# -- 1. dask arrays of scipy.sparse chunks ------------------------------------------------------
def test_lasso_fits_scipy_sparse_chunks_as_the_csr_matrix():
    X, y = regression()
    fitted = lasso().fit(dask_sparse(X, (30, 5)), y)
    in_memory = lasso().fit(X, y)
    np.testing.assert_allclose(fitted.coef_, in_memory.coef_, atol=1e-10)
    reference = sklearn_lasso(X.toarray(), y)
    np.testing.assert_allclose(fitted.coef_, reference.coef_, atol=1e-5)
    np.testing.assert_allclose(fitted.intercept_, reference.intercept_, atol=1e-5)
    np.testing.assert_allclose(fitted.predict(dask_sparse(X, (30, 5))).compute(),
                               reference.predict(X.toarray()), atol=1e-4)


def test_lda_fits_scipy_sparse_chunks_as_the_csr_matrix():
    X = counts()
    fitted = lda().fit(dask_sparse(X, (20, 15)))
    in_memory = lda().fit(X)
    np.testing.assert_array_equal(fitted.components_, in_memory.components_)
    # one chunk of rows: transform draws each chunk of rows from the same seed
    one_row_chunk = dask_sparse(X, (60, 15))
    np.testing.assert_allclose(fitted.transform(one_row_chunk).compute(), in_memory.transform(X))
    np.testing.assert_allclose(fitted.perplexity(one_row_chunk), in_memory.perplexity(X))


def test_mf_fits_scipy_sparse_chunks_as_the_csr_matrix_explicit_zeros_included():
    X = ratings()
    fitted = mf().fit(dask_sparse(X, (15, 10)))
    in_memory = mf().fit(X)
    np.testing.assert_allclose(fitted.user_factors_, in_memory.user_factors_, atol=1e-10)
    np.testing.assert_allclose(fitted.components_, in_memory.components_, atol=1e-10)
    # the explicit zeros count: the mean observation is the data's mean, zeros included
    assert fitted.intercept_ == pytest.approx(X.data.mean())
    assert fitted.score(dask_sparse(X, (15, 10))) == pytest.approx(in_memory.score(X))


# -- 2. unknown chunk sizes ---------------------------------------------------------------------
def test_lasso_computes_unknown_chunk_sizes_of_x_and_y():
    X, y = regression()
    X = X.toarray()
    keep = y > np.median(y) - 1
    X_unknown, y_unknown = unknown_rows(X, keep), unknown_rows(y, keep)
    fitted = lasso().fit(X_unknown, y_unknown)
    assert np.isnan(X_unknown.shape[0])  # the caller's array is left as it was
    reference = sklearn_lasso(X[keep], y[keep])
    np.testing.assert_allclose(fitted.coef_, reference.coef_, atol=1e-5)
    np.testing.assert_allclose(fitted.predict(X_unknown).compute(),
                               reference.predict(X[keep]), atol=1e-4)


def test_lda_and_mf_compute_unknown_chunk_sizes():
    X = counts().toarray()
    keep = np.arange(len(X)) % 3 != 1
    np.testing.assert_array_equal(lda().fit(unknown_rows(X, keep)).components_,
                                  lda().fit(X[keep]).components_)
    R = ratings().toarray()  # dense: every entry an observation
    keep = np.arange(len(R)) % 4 != 0
    fitted, reference = mf().fit(unknown_rows(R, keep)), mf().fit(R[keep])
    np.testing.assert_allclose(fitted.user_factors_, reference.user_factors_, atol=1e-10)
    np.testing.assert_allclose(fitted.transform(unknown_rows(R, keep)).compute(),
                               reference.transform(R[keep]), atol=1e-8)


# -- 3. an LDA corpus without tokens ------------------------------------------------------------
@pytest.mark.parametrize("empty", [np.zeros((6, 5)), sp.csr_matrix((6, 5)),
                                   da.zeros((6, 5), chunks=3)], ids=["numpy", "csr", "dask"])
def test_lda_refuses_a_corpus_without_tokens_and_keeps_its_fit(empty):
    est = lda().fit(counts())
    refused(est, empty, "X holds no tokens")


# -- 4. LDA counts beyond the count tables ------------------------------------------------------
def test_lda_refuses_a_count_beyond_the_int32_tables():
    est = lda().fit(counts())
    X = sp.csr_matrix(([2.0**31], ([0], [0])), shape=(3, 3))
    refused(est, X, "2147483647")
    refused(est, dask_sparse(X, 2), "2147483647")


@pytest.mark.cluster  # the embedded cluster
def test_lda_refuses_a_word_whose_tokens_exceed_the_int32_tables():
    est = lda().fit(counts())
    refused(est, np.array([[2.0**30, 0], [2.0**30, 1]]), "word of X has 2147483648 tokens")


def test_lda_refuses_more_tokens_than_a_shard_holds(monkeypatch):
    est = lda().fit(counts())
    monkeypatch.setattr(lda_module, "BYTES_PER_TOKEN", 2**50)
    refused(est, counts(), r"more than the 0 that .* GiB of memory holds at 1125899906842624 bytes")


def test_lda_refuses_a_shard_larger_than_a_workers_memory(client_factory, monkeypatch):
    est = lda()
    est.client = client_factory(2, processes=False)
    est.fit(counts())
    monkeypatch.setattr(lda_module, "BYTES_PER_TOKEN", 2**50)
    refused(est, dask_sparse(counts(), 30), "tokens to expand in a shard, more than the 0")


# -- 5. values whose squares overflow -----------------------------------------------------------
def test_mf_refuses_ratings_whose_squares_overflow():
    est = mf().fit(ratings())
    R = np.full((4, 3), 1e200)
    refused(est, R, "1e\\+150")
    refused(est, da.from_array(R, chunks=2), "1e\\+150")


def huge(X, seed=0):
    """X's stored values scaled to about 1e308, whose squares overflow float64."""
    X = sp.csr_matrix(X, copy=True)
    X.data = np.random.default_rng(seed).uniform(0.5, 1.0, X.nnz) * 1e308
    return X


SQUARING = [(Lasso, "regression", {}), (ElasticNet, "regression", {}),
            (LogisticRegression, "classes", {}),
            (ImplicitMatrixFactorization, None, {"n_components": 2}),
            (LassoCV, "regression", {"cv": 3}), (ElasticNetCV, "regression", {"cv": 3})]


@pytest.mark.parametrize("make, target, kwargs, kind", [
    (*case, kind) for case in SQUARING for kind in ("dense", "csr", "dask")],
    ids=lambda v: getattr(v, "__name__", v if isinstance(v, str) else None))
def test_values_whose_squares_overflow_are_refused(client_factory, make, target, kwargs, kind):
    """sklearn's ElasticNet raises after its iterations end non-finite; here the check comes
    first, before any of the fit's tasks (a Dask X is checked on the cluster), and a fitted
    estimator stays as it was."""
    X, y = regression()
    targets = {"regression": (y,), "classes": (y > np.median(y),), None: ()}[target]
    client = client_factory(2)
    est = make(**kwargs)
    est.client = client
    est.fit(X, *targets)
    before = snapshot(est)
    bad = huge(X)
    bad = {"dense": bad.toarray(), "csr": bad,
           "dask": da.from_array(bad.toarray(), chunks=(30, 6))}[kind]
    fit_is_refused(est, client, (bad, *targets), ValueError, "magnitude .*1e\\+150.*overflow")
    assert_unchanged(est, before)


@pytest.mark.parametrize("make", [Lasso, ElasticNet, LassoCV], ids=lambda m: m.__name__)
def test_a_target_whose_squares_overflow_is_refused(make):
    X, y = regression()
    est = make().fit(X, y)
    before = snapshot(est)
    with pytest.raises(ValueError, match="Input y holds a value of magnitude"):
        est.fit(X, y * 1e306)
    assert_unchanged(est, before)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the divergence
def test_mf_raises_on_non_finite_factors_and_keeps_its_fit(monkeypatch):
    est = mf().fit(ratings())
    monkeypatch.setattr(inputs_module, "MAX_MAGNITUDE", np.inf)  # let the fit diverge
    refused(est, np.full((4, 3), 1e200), "not finite")


# -- 6. Lasso.predict of a lazy X with NaN ------------------------------------------------------
def test_lasso_lazy_predict_raises_on_nan_as_the_numpy_path():
    X, y = regression()
    X = X.toarray()
    est = lasso().fit(X, y)
    X_nan = X.copy()
    X_nan[50, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.predict(X_nan)
    lazy = est.predict(da.from_array(X_nan, chunks=30))  # lazy: nothing computed yet
    with pytest.raises(ValueError, match="NaN or infinity"):
        lazy.compute()
    np.testing.assert_allclose(est.predict(da.from_array(X, chunks=30)).compute(),
                               sklearn_lasso(X, y).predict(X), atol=1e-4)


# -- 7. vocabulary blocks capped ----------------------------------------------------------------
def test_lda_caps_vocabulary_blocks_at_the_words_that_occur():
    rng = np.random.default_rng(0)
    X = np.zeros((100, 200))
    X[:, :5] = rng.poisson(2.0, size=(100, 5))  # 5 of the 200 words occur
    fitted = within(30, lda(n_vocab_blocks=1000).fit, X)  # not 1000 blocks' rounds
    assert fitted.n_vocab_blocks_ == 5
    np.testing.assert_array_equal(fitted.components_, lda(n_vocab_blocks=5).fit(X).components_)


def test_lda_caps_vocabulary_blocks_per_shard():
    X = counts(n_words=200)
    fitted = lda(n_vocab_blocks=1000).fit(X)
    assert fitted.n_vocab_blocks_ == lda_module.MAX_VOCAB_BLOCKS_PER_SHARD  # one shard here
    np.testing.assert_array_equal(
        fitted.components_,
        lda(n_vocab_blocks=lda_module.MAX_VOCAB_BLOCKS_PER_SHARD).fit(X).components_)


# -- input refused after a fit: the fit kept, its features included ---------------------------
@pytest.mark.parametrize("as_input", [np.asarray, da.from_array], ids=["numpy", "dask"])
@pytest.mark.parametrize("make, supervised", [(lasso, True), (lda, False), (mf, False)],
                         ids=["lasso", "lda", "mf"])
def test_refused_input_of_another_width_keeps_the_fitted_features(make, supervised, as_input):
    target = (np.arange(60.0),) if supervised else ()
    est = make().fit(counts().toarray()[:, :12], *target)
    before = snapshot(est)
    with pytest.raises(ValueError, match="NaN"):
        est.fit(as_input(np.full((5, 3), np.nan)), *[t[:5] for t in target])
    assert_unchanged(est, before)
    assert est.n_features_in_ == 12


# -- 8. a closed client -------------------------------------------------------------------------
@pytest.fixture
def closed_client():
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster:
        client = Client(cluster, set_as_default=False)
        yield client
        client.close()


@pytest.mark.parametrize("make, data", [
    (lasso, lambda: regression()), (lda, lambda: (counts(),)), (mf, lambda: (ratings(),))],
    ids=["lasso", "lda", "mf"])
@pytest.mark.cluster
def test_a_refit_on_a_closed_client_is_refused_and_keeps_the_fit(closed_client, make, data):
    est = make()
    est.client = closed_client
    est.fit(*data())
    closed_client.close()
    before = snapshot(est)
    with pytest.raises(ValueError, match="the client set on this estimator is closed"):
        est.fit(*data())
    assert_unchanged(est, before)
    est.client = None  # the default choice: this process
    refit = est.fit(*data())
    in_process = make().fit(*data())
    for name in ("coef_", "components_", "user_factors_"):
        if hasattr(in_process, name):
            np.testing.assert_allclose(getattr(refit, name), getattr(in_process, name),
                                       atol=1e-8)


# -- more blocks than items ---------------------------------------------------------------------
def test_more_blocks_than_features_is_capped(client_factory):
    X, y = regression(p=6)
    est = lasso(n_blocks=50)
    est.client = client_factory(2, processes=False)
    fitted = est.fit(X, y)
    np.testing.assert_allclose(fitted.coef_, sklearn_lasso(X.toarray(), y).coef_, atol=1e-5)


def test_more_workers_than_users_documents_or_items(client_factory):
    client = client_factory(2, processes=False)
    R = ratings(n_users=1, n_items=6, seed=3)
    R[0, 0] = 4.0
    est = mf()
    est.client = client
    np.testing.assert_allclose(est.fit(R).user_factors_, mf().fit(R).user_factors_, atol=1e-8)
    X = counts(n_docs=1, n_words=30)
    est = lda()
    est.client = client
    fitted = est.fit(X)
    assert fitted.n_vocab_blocks_ == 1  # one shard: one document
    np.testing.assert_array_equal(fitted.components_, lda().fit(X).components_)
