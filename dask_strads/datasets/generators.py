"""Synthetic data with the planted truth: regression problems, LDA corpora, ratings matrices.

Deterministic given ``random_state``; see :mod:`dask_strads.datasets` for the list.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state


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


def _dirichlet(concentration, size, rng):
    """``size`` draws from a Dirichlet(``concentration``) over ``concentration.size``.

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
        ``doc_topic_prior`` may also be ``n_topics`` values: an asymmetric alpha.
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
        if not np.all(np.asarray(value) > 0):
            raise ValueError(f"{name} must be > 0, got {value!r}")
    rng = _generator(random_state)
    phi = _dirichlet(np.full(n_words, float(topic_word_prior)), n_topics, rng)
    theta = _dirichlet(np.broadcast_to(np.asarray(doc_topic_prior, dtype=np.float64),
                                       (n_topics,)), n_docs, rng)
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
