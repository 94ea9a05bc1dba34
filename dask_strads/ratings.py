"""Ratings matrices from (user, item, rating) triplets, keeping the id mapping.

A recommender sees a matrix: users are rows, items are columns, and the stored entries are
the observed ratings. Logs come as triplets with arbitrary ids (ints, strings). This module
builds the matrix and keeps the ids of its rows and columns; a recommender fitted on it keeps
them too (``user_ids_``, ``item_ids_``), so that it is asked and answers in ids::

    ratings = RatingsMatrix.from_triplets(df["userId"], df["movieId"], df["rating"])
    model.fit(ratings)
    model.recommend([42, 7], n=10)                  # user ids -> item ids
    ratings.user_index([42, 7])                     # user ids -> rows of ratings.matrix
"""
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

__all__ = ["RatingsMatrix"]


@dataclass(frozen=True, eq=False)  # == on arrays is element-wise: compare by identity
class RatingsMatrix:
    """A sparse ratings matrix and the ids of its rows (users) and columns (items).

    Build it with :meth:`from_triplets`.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix of shape (n_users, n_items), float64
        One stored entry per observed (user, item) pair, in canonical format (sorted column
        indices, no duplicates). A rating of 0 is an observation and is stored (an explicit
        zero): never call ``eliminate_zeros`` on it.
    user_ids : ndarray of shape (n_users,)
        ``user_ids[i]`` is the id of row ``i``; sorted ascending.
    item_ids : ndarray of shape (n_items,)
        ``item_ids[j]`` is the id of column ``j``; sorted ascending.
    """

    matrix: sp.csr_matrix = field(repr=False)
    user_ids: np.ndarray
    item_ids: np.ndarray

    @classmethod
    def from_triplets(cls, users, items, ratings, duplicates="error"):
        """Build the matrix from one (user, item, rating) triplet per observation.

        Rows and columns are the distinct user and item ids, in sorted order, so the result
        does not depend on the order of the triplets. Only users and items that occur get a
        row or a column.

        Parameters
        ----------
        users, items : array-like of shape (n_ratings,)
            Ids of any one sortable kind (ints, strings, ...), e.g. DataFrame columns.
            Missing ids (NaN, None) are refused.
        ratings : array-like of shape (n_ratings,)
            Finite numbers.
        duplicates : {"error", "mean"}, default "error"
            What to do when a (user, item) pair occurs more than once: refuse (the default:
            a repeated pair is more often a join gone wrong than a re-rating), or store the
            mean of its ratings.

        Returns
        -------
        RatingsMatrix

        Raises
        ------
        ValueError
            Empty input, lengths that differ, non-finite ratings, missing ids, ids that
            cannot be sorted together, or a repeated pair with ``duplicates="error"``.
        """
        if duplicates not in ("error", "mean"):
            raise ValueError(f"duplicates must be 'error' or 'mean', got {duplicates!r}")
        users, items = _ids(users, "users"), _ids(items, "items")
        ratings = np.asarray(ratings)
        if ratings.ndim != 1:
            raise ValueError(f"ratings must be 1-d, got shape {ratings.shape}")
        if not users.size == items.size == ratings.size:
            raise ValueError(f"users, items and ratings must have the same length, got "
                             f"{users.size}, {items.size} and {ratings.size}")
        if ratings.size == 0:
            raise ValueError("no ratings: users, items and ratings are empty")
        try:
            ratings = ratings.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"ratings must be numbers: {exc}") from None
        if not np.isfinite(ratings).all():
            bad = np.flatnonzero(~np.isfinite(ratings))
            raise ValueError(f"ratings must be finite: {bad.size} are NaN or infinite "
                             f"(first at position {bad[0]})")

        user_ids, rows = _unique(users, "users")
        item_ids, cols = _unique(items, "items")
        shape = (user_ids.size, item_ids.size)
        # COO -> CSR sorts the entries and sums repeated cells; zeros (and sums that come to
        # zero) stay stored
        matrix = sp.csr_matrix((ratings, (rows, cols)), shape=shape)
        if matrix.nnz < ratings.size:
            counts = sp.csr_matrix((np.ones(ratings.size), (rows, cols)), shape=shape)
            if duplicates == "error":
                at = int(np.argmax(counts.data))
                row = np.searchsorted(counts.indptr, at, side="right") - 1
                raise ValueError(
                    f"{ratings.size - matrix.nnz} repeated (user, item) pairs, e.g. user "
                    f"{user_ids[row:row + 1].tolist()[0]!r} and item "
                    f"{item_ids[counts.indices[at:at + 1]].tolist()[0]!r} "
                    f"({int(counts.data[at])} times); pass duplicates='mean' to store the "
                    "mean rating of each pair")
            matrix.data /= counts.data  # the same cells in the same order
        return cls(matrix=matrix, user_ids=user_ids, item_ids=item_ids)

    def user_index(self, ids: ArrayLike) -> np.ndarray | np.integer:
        """Rows of the given user ids (KeyError for an id that has no row)."""
        return _lookup(self.user_ids, ids, "user")

    def item_index(self, ids: ArrayLike) -> np.ndarray | np.integer:
        """Columns of the given item ids (KeyError for an id that has no column)."""
        return _lookup(self.item_ids, ids, "item")


def _ids(values, name):
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {values.shape}")
    if values.dtype.kind in "fc":
        missing = np.isnan(values)
    elif values.dtype == object:
        missing = np.asarray((values == None) | (values != values), dtype=bool)  # noqa: E711
    else:
        missing = np.zeros(values.size, dtype=bool)
    if missing.any():
        raise ValueError(f"{name} has {int(missing.sum())} missing ids (NaN or None), first at "
                         f"position {np.argmax(missing)}")
    return values


def _unique(values, name):
    """Sorted distinct ids and each value's position among them."""
    try:
        return np.unique(values, return_inverse=True)
    except TypeError as exc:
        raise ValueError(f"{name} ids must be of one sortable kind (e.g. all int or all "
                         f"str): {exc}") from None


def _lookup(sorted_ids, ids, kind):
    ids = np.asarray(ids)
    positions = np.searchsorted(sorted_ids, ids).clip(max=sorted_ids.size - 1)
    unknown = sorted_ids[positions] != ids
    if np.any(unknown):
        raise KeyError(f"unknown {kind} ids: "
                       f"{np.atleast_1d(ids)[np.atleast_1d(unknown)][:5].tolist()}")
    return positions
