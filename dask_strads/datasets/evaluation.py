"""Helpers to set up and score experiments: Lasso ``alpha_max``, topic matching, ratings splits."""
import numpy as np
import scipy.sparse as sp

from .generators import _generator


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
