"""The ratings a recommender fits, whatever form they come in, as one checked users x items
matrix with the ids of its rows and columns.

``MatrixFactorization``, ``ImplicitMatrixFactorization`` and ``BayesianPersonalizedRanking`` take
(user, item) pairs with their ratings ``y``, a pandas or Dask DataFrame of ``user``, ``item``,
``rating`` triplets, a :class:`~dask_strads.RatingsMatrix`, or a users x items matrix (numpy,
scipy.sparse, pydata sparse, Dask). :func:`checked_ratings` takes any of them down one way: ids
and repeated pairs resolved into a ratings matrix (pairs and triplets), then that matrix checked
and its entries counted per user and per item in one pass, which the blocks are cut by. Bad
input raises before the fit reaches for a cluster, but for what only a pass over a Dask input
can find: that pass runs on the cluster the fit will run on.
"""
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.utils.validation import check_array

from ..engine.executors import Executor
from ..io.triplets import COLUMNS, is_triplet_frame, ratings_of_frame
from ..programs.mf import observed
from ..ratings import RatingsMatrix
from .base import DaskEstimatorMixin
from .inputs import (check_dask_matrix, check_magnitude, is_dask_array, stored_values,
                     to_scipy_if_pydata)
from .mf_pairs import pairs_of

#: What a matrix's entries are. "explicit": ratings, every stored entry one (an explicit zero
#: too), as MatrixFactorization fits them. "implicit": interaction strengths, an entry that is
#: not zero an interaction (a negative one a dislike), as ImplicitMatrixFactorization fits them.
#: "positive": interactions that are positive entries, a negative one refused, as
#: BayesianPersonalizedRanking ranks them.
Feedback = Literal["explicit", "implicit", "positive"]


@dataclass(frozen=True, eq=False)  # == on arrays is element-wise: compare by identity
class CheckedRatings:
    """A recommender's training data, checked: what its fit cuts into blocks.

    Attributes
    ----------
    matrix : scipy.sparse CSR or CSC matrix, ndarray or Dask array of shape (n_users, n_items)
        Float64, finite; a Dask array as :func:`~dask_strads.estimators.inputs.as_dask_input`
        gives it (chunk sizes known, sparse chunks pydata sparse).
    user_ids, item_ids : ndarray of shape (n_users,), (n_items,)
        The ids of the rows and columns: those of the pairs, triplets or RatingsMatrix (sorted),
        else ``0..n-1``.
    on_pairs : bool
        Whether the ratings came as (user, item) pairs with their ratings ``y``.
    per_user, per_item : ndarray of shape (n_users,), (n_items,)
        The entries that are feedback per row and per column: every stored one for explicit
        feedback, the nonzero ones for implicit.
    total : float
        The sum of the stored values.
    executor : Executor
        Where the fit runs: the cluster a Dask matrix was checked on, else where the estimator
        runs a fit of ``per_user.sum()`` entries.
    given : Any
        The matrix before the checks: X as the fit was given it (the column names of a
        DataFrame become ``feature_names_in_``), or the one built from pairs or triplets.
    """

    matrix: Any = field(repr=False)
    user_ids: np.ndarray
    item_ids: np.ndarray
    on_pairs: bool
    per_user: np.ndarray
    per_item: np.ndarray
    total: float
    executor: Executor
    given: Any = field(repr=False)


def checked_ratings(X: Any, y: ArrayLike | None, estimator: DaskEstimatorMixin,
                    feedback: Feedback,
                    duplicates: Literal["error", "mean"] = "error") -> CheckedRatings:
    """The ratings of X (pairs with their ratings ``y``, triplets, a RatingsMatrix or a users x
    items matrix, told apart as :func:`~dask_strads.estimators.mf_pairs.pairs_of` does),
    checked as ``estimator`` fits ``feedback``; ``duplicates``: what a pair given more than once
    in pairs or triplets is (see :meth:`dask_strads.RatingsMatrix.from_triplets`).

    Raises ValueError for input that cannot be told apart, a DataFrame without triplet columns,
    pairs or triplets that :meth:`~dask_strads.RatingsMatrix.from_triplets` refuses, a matrix
    that is not 2D and non-empty or holds NaN, infinity or a value beyond
    ``inputs.MAX_MAGNITUDE``, and a matrix without feedback (no stored entry for explicit
    feedback, no positive one for implicit, a negative one for positive); TypeError for a
    matrix that does not hold real numbers.
    """
    ratings, on_pairs = _ratings_of(X, y, estimator._client, duplicates)
    given = ratings.matrix if ratings is not None else X
    matrix, (total, lowest, highest), per_user, per_item, executor = _checked_matrix(
        given, estimator, _stored_counts if feedback == "explicit" else _nonzero_counts)
    check_magnitude(max(highest, -lowest), "X")
    _check_feedback(feedback, per_user, lowest, highest, type(estimator).__name__)
    n_users, n_items = matrix.shape
    return CheckedRatings(
        matrix=matrix,
        user_ids=ratings.user_ids if ratings is not None else np.arange(n_users),
        item_ids=ratings.item_ids if ratings is not None else np.arange(n_items),
        on_pairs=on_pairs, per_user=per_user, per_item=per_item, total=float(total),
        executor=executor or estimator._fit_executor(int(per_user.sum())), given=given)


def _ratings_of(X, y, client, duplicates):
    """``(RatingsMatrix, whether X is pairs)`` of pairs, triplets or a RatingsMatrix X;
    ``(None, False)`` for a matrix X. Triplets in a Dask DataFrame are assembled on the workers
    of ``client`` (or of the active client)."""
    if isinstance(X, RatingsMatrix):
        return X, False
    pairs = pairs_of(X, y)
    if pairs is not None:
        return RatingsMatrix.from_triplets(*pairs, y, duplicates), True
    if is_triplet_frame(X):
        return ratings_of_frame(X, client, duplicates), False
    dtypes = getattr(X, "dtypes", None)
    # a pandas DataFrame of numbers is a matrix; one of other columns, or a Dask DataFrame
    # (never a matrix), is triplets under other names
    if dtypes is not None and hasattr(X, "columns") and (
            hasattr(X, "to_delayed") or not all(getattr(t, "kind", "O") in "iufb" for t in dtypes)):
        raise ValueError(
            f"a DataFrame of (user, item, rating) triplets needs columns named {list(COLUMNS)}; "
            f"this one has columns {list(X.columns)}: rename them, e.g. "
            "df.rename(columns={'userId': 'user', 'movieId': 'item'})")
    return None, False


def _checked_matrix(X, estimator, counts_of):
    """``(X, (sum, lowest, highest), per_user, per_item, executor)``: X checked (2D, non-empty,
    real, finite: scikit-learn's ``check_array`` for X in memory), the sum and range of its
    stored values and ``counts_of(block, axis)``, the entries that count per row (axis 0, a
    column) or per column (axis 1, a row). A Dask X is checked and counted chunk by chunk in one
    pass, on the executor it will be fitted on (returned; None for X in memory)."""
    if is_dask_array(X):
        X = check_dask_matrix(X, estimator)
        stats = X.map_blocks(_value_stats, chunks=(1, 1, 4), new_axis=2, dtype=float)
        per_user = X.map_blocks(counts_of, 0, chunks=(X.chunks[0], (1,) * X.numblocks[1]),
                                dtype=np.int64)
        per_item = X.map_blocks(counts_of, 1, chunks=((1,) * X.numblocks[0], X.chunks[1]),
                                dtype=np.int64)
        executor = estimator._fit_executor(X.size)
        finite, *summary, per_user, per_item = executor.compute(
            *_summary(stats), per_user.sum(axis=1), per_item.sum(axis=0))
        if not finite:
            raise ValueError("Input X contains NaN or infinity.")
        return X, summary, per_user, per_item, executor
    X = check_array(to_scipy_if_pydata(X), accept_sparse=["csr", "csc"], dtype=np.float64,
                    estimator=estimator)
    if sp.issparse(X) and not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # repeated (i, j) pairs are one entry, as in scipy
    _, *summary = _summary(_value_stats(X))
    return X, summary, counts_of(X, 0).ravel(), counts_of(X, 1).ravel(), None


def _value_stats(block):
    """[[[finite, sum, smallest, largest]]] of the values a chunk stores (zeros when it stores
    none or one that is not finite)."""
    values = stored_values(block)
    finite = bool(np.all(np.isfinite(values)))
    if not (finite and values.size):
        return np.array([[[float(finite), 0.0, 0.0, 0.0]]])
    with np.errstate(over="ignore"):  # an infinite sum: values past the bound checked after
        total = values.sum()
    return np.array([[[1.0, total, float(values.min()), float(values.max())]]])


def _summary(stats):
    """Whether every chunk is finite, and the sum, smallest and largest of their values, from
    the chunks' :func:`_value_stats` (numpy or Dask)."""
    return [stats[..., 0].min(), stats[..., 1].sum(), stats[..., 2].min(), stats[..., 3].max()]


def _stored_counts(block, axis):
    """Stored entries of a chunk per row (axis 0, as a column) or per column (axis 1, a row)."""
    counts = np.diff(observed(to_scipy_if_pydata(block), axis)[0])
    return counts[:, None] if axis == 0 else counts[None, :]


def _nonzero_counts(block, axis):
    """Nonzero entries of a chunk per row (axis 0, as a column) or per column (axis 1)."""
    block = to_scipy_if_pydata(block)
    counts = np.asarray((block != 0).sum(axis=1 - axis)).ravel()
    return counts[:, None] if axis == 0 else counts[None, :]


def _check_feedback(feedback, per_user, lowest, highest, name):
    """Refuse a matrix without the feedback a fit of ``feedback`` needs."""
    if feedback == "explicit":
        if per_user.sum() == 0:
            raise ValueError("X stores no entries: there is no rating to fit")
        return
    if feedback == "positive" and lowest < 0:
        raise ValueError(f"Negative values in data passed to {name}: it ranks interactions "
                         "(positive entries) and takes no negative feedback")
    if highest <= 0:
        raise ValueError("X has no positive entry: there is no interaction to fit")
