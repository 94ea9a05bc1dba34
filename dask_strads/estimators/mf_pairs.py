"""MatrixFactorization as a regressor on (user, item) pairs: telling pairs from a ratings matrix,
and mapping raw ids to the fitted rows and columns.

``fit(X, y)`` reads X as pairs when y is given and X is a pandas DataFrame, or an array of two
columns of ids that are not floating point (ints, strings, objects). Any other X is a ratings
matrix and y is ignored, as by every unsupervised estimator of scikit-learn. Refused as
ambiguous: two columns of whole floats with a y (pairs, or two items?), three columns whose
first two hold ids with a y (triplets, or three items?), and a DataFrame of user and item
columns without ratings (neither a rating column nor y).
"""
import numpy as np
import scipy.sparse as sp

from .inputs import is_dask_array

#: The names of the id columns of a DataFrame of pairs (else its two columns, in order).
PAIR_COLUMNS = ("user", "item")


def pairs_of(X, y):
    """``(users, items)`` id arrays when (X, y) is a pairs problem, else None (a ratings
    matrix, or a table of triplets). Raises ValueError when X cannot be told apart."""
    if sp.issparse(X) or is_dask_array(X) or _is_sparse_like(X):
        return None
    is_frame = hasattr(X, "columns") and hasattr(X, "dtypes")
    if y is None:
        if is_frame and set(PAIR_COLUMNS) <= set(X.columns) and "rating" not in X.columns:
            raise ValueError(
                f"a DataFrame with user and item columns needs a rating column (or y=ratings); "
                f"this one has columns {list(X.columns)}: add the ratings as a 'rating' column, "
                "or pass them as y")
        return None
    if hasattr(X, "to_delayed"):  # a Dask DataFrame
        raise ValueError("(user, item) pairs with a y must be in memory (a pandas DataFrame "
                         "or an array); for a Dask DataFrame fit its (user, item, rating) "
                         "triplets without y")
    if is_frame:
        return _frame_pairs(X)
    array = np.asarray(X)
    if array.ndim != 2 or array.shape[1] not in (2, 3):
        return None
    ids = array[:, :2]
    if array.shape[1] == 3:
        if ids.dtype.kind not in "fc" or _whole(ids):
            raise ValueError(
                f"X is a {array.shape} array of {array.dtype} whose first two columns hold ids, "
                "and y is given: it looks like (user, item, rating) triplets. Pass a "
                "DataFrame with user, item and rating columns (without y), or the (user, item) "
                "pairs X[:, :2] with y=ratings; to fit a ratings matrix of three items, fit it "
                "without y")
        return None
    if array.dtype.kind in "fc":
        if _whole(array):
            raise ValueError(
                "X has two columns of whole floats and y is given: (user, item) pairs or a "
                "ratings matrix of two items? Pass ids as ints, strings or a DataFrame for "
                "pairs, or fit the matrix without y")
        return None
    return array[:, 0], array[:, 1]


def _whole(array):
    return bool(array.size and np.all(np.isfinite(array)) and np.all(array == np.round(array)))


def check_pairs(X):
    """``(users, items)`` of X, pairs given to predict: a DataFrame or a two-column array."""
    if hasattr(X, "columns") and hasattr(X, "dtypes") and not hasattr(X, "to_delayed"):
        return _frame_pairs(X)
    if sp.issparse(X) or is_dask_array(X) or _is_sparse_like(X):
        raise ValueError("X must hold (user, item) pairs: a DataFrame or an array of two "
                         "columns of ids in memory, not a sparse or Dask matrix")
    array = np.asarray(X)
    if array.ndim != 2 or array.shape[1] != 2:
        raise ValueError(f"X must hold (user, item) pairs in two columns, got shape "
                         f"{array.shape}")
    return array[:, 0], array[:, 1]


def _frame_pairs(frame):
    found = list(frame.columns)
    if set(PAIR_COLUMNS) <= set(found):
        if "rating" in found:
            raise ValueError("X has user, item and rating columns and y is given: fit the "
                             "triplets without y, or the (user, item) pairs with y")
        columns = list(PAIR_COLUMNS)
    elif len(found) == 2:
        columns = found
    else:
        raise ValueError(f"a DataFrame of (user, item) pairs needs columns {list(PAIR_COLUMNS)} "
                         f"or exactly two columns; this one has {found}")
    return frame[columns[0]].to_numpy(), frame[columns[1]].to_numpy()


def _is_sparse_like(X):
    return hasattr(X, "to_scipy_sparse")  # pydata sparse


def positions(known_ids, ids):
    """Position of each id among the sorted ``known_ids``, -1 where it is not one of them."""
    ids = np.asarray(ids)
    if known_ids.size == 0 or ids.size == 0:
        return np.full(ids.shape, -1, dtype=np.int64)
    try:
        at = np.searchsorted(known_ids, ids).clip(max=known_ids.size - 1)
        found = known_ids[at] == ids
    except TypeError:  # ids of another kind than the fitted ones: none is known
        return np.full(ids.shape, -1, dtype=np.int64)
    return np.where(found, at, -1).astype(np.int64)


def known_positions(known_ids, ids, kind):
    """Positions of ids that must all be known (ValueError naming the unknown ones)."""
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise ValueError(f"{kind}s must be a 1D array of {kind} ids, got shape {ids.shape}")
    at = positions(known_ids, ids)
    if np.any(at < 0):
        raise ValueError(f"unknown {kind} ids (not in the fit): {ids[at < 0][:5].tolist()}")
    return at


def filled(ids):
    """Where an array of ids that ``ids_of`` made holds an id (not its fill)."""
    return ids != (None if ids.dtype == object else -1)


def ids_of(known_ids, at):
    """The ids at positions ``at`` (an array of them), -1 marking none: the fill is -1 for
    numeric ids, None for others."""
    numeric = known_ids.dtype.kind in "iuf"
    out = np.empty(at.shape, dtype=known_ids.dtype if numeric else object)
    out[...] = -1 if numeric else None
    out[at >= 0] = known_ids[at[at >= 0]]
    return out
