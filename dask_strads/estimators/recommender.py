"""What the recommenders share: the best items for some users, or for every user on the workers
holding their factors, as ids with their scores; and new or changed users or items folded into
the model.

An estimator using :class:`Recommender` scores a user and an item by the product of their rows
(:meth:`Recommender._scoring_rows`, plus :meth:`Recommender._score_offset`) and finds the rows of
the users it is asked about (:meth:`Recommender._rows_and_seen`; a user's row from its fitted
arrays: ``_user_scoring_rows``), and fits the users or items it is given the interactions of
(``_folded_in_users``, ``_folded_in_items``)."""
import os
from typing import Any, TypeVar

import dask
import fsspec
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.utils.validation import check_is_fitted

from ..engine.blocks import DataLayer
from ..io.triplets import is_triplet_frame, require_pandas
from .inputs import DataFrame, check_positive_int, is_dask_array
from .mf_pairs import ids_of, known_positions
from .ranking import (allowed_items, item_blocks, streamed_best, top_items, triplet_rows,
                      user_partition_waves)

#: A task builds (and writes, as a Parquet row group) the recommendations of this many rows at a
#: time, at most (at least one user's): pyarrow's writer keeps about 500 bytes a row of a row
#: group in its memory pool after the write (measured with its default pool, mimalloc).
ROWS_PER_ROW_GROUP = 8192
#: The columns written dictionary-encoded: a user repeats ``n`` times and ranks are few. A
#: dictionary of the scores (all distinct) and the items would cost the writer about 500 bytes
#: a row of a row group, kept by the worker process after it, for a larger file.
DICTIONARY_COLUMNS = ["user", "rank"]

_RecommenderT = TypeVar("_RecommenderT", bound="Recommender")


class Recommender:
    """``recommend``, ``recommend_all``, ``partial_fit_users`` and ``partial_fit_items`` for an
    estimator with fitted ``user_ids_``, ``item_ids_`` and ``_seen`` (the interactions of the
    fit: a boolean CSR matrix, users x items)."""

    def recommend(self, users: Any, n: int = 10, exclude_seen: bool = True, *,
                  filter_items: ArrayLike | None = None, items: ArrayLike | None = None,
                  return_scores: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The ``n`` items of highest score for each user, best first, as item ids.

        Parameters
        ----------
        users : array-like or DataFrame
            Ids of fitted users (for a matrix fit, its row indices), or a DataFrame of
            ``user``, ``item``, ``rating`` triplets whose users (new or not) are folded in from
            those interactions alone, as ``transform`` does, answered in the order of their
            sorted ids.
        n : int
            Items per user.
        exclude_seen : bool
            Leave out the items each user interacted with (in the fit; for folded-in users, in
            the triplets).
        filter_items : array-like, optional
            Item ids never recommended.
        items : array-like, optional
            The candidate item ids (by default every fitted item).
        return_scores : bool
            Also return the scores.

        Returns
        -------
        ids : ndarray of shape (n_users, n)
            Item ids, best first; where fewer than ``n`` items are left a row ends with -1
            (None for ids that are not numbers).
        scores : ndarray of shape (n_users, n)
            With ``return_scores``: each item's score (the predicted rating for
            MatrixFactorization), NaN where no item is left.
        """
        check_is_fitted(self)
        check_positive_int(n, "n")
        allowed = allowed_items(self.item_ids_, filter_items, items)
        user_rows, seen = self._rows_and_seen(users)
        item_rows = self._in_memory(self._scoring_rows()[1])
        top, scores = top_items(user_rows, item_rows, seen, n, exclude_seen, allowed)
        ids = ids_of(self.item_ids_, top)
        return (ids, scores + self._score_offset()) if return_scores else ids

    def recommend_all(self, n: int = 10, exclude_seen: bool = True, *,
                      filter_items: ArrayLike | None = None, items: ArrayLike | None = None,
                      path: str | None = None) -> DataFrame | None:
        """The ``n`` best items of every fitted user, as ``recommend`` gives them, computed a
        partition of at most 25,000 users at a time where their factors are: on the workers
        holding them when the model keeps its factors on the cluster (``keep_on_cluster=True``;
        a partition of each block of users at a time, the cluster forgetting the tasks of one
        before the next). A partition meets the item blocks one at a time, a task per item block
        merging that block's best items into its users' running best (``n`` positions and scores
        a user), so a worker holds its blocks, one item block of another worker, one partition's
        running best, the scores of a few users against an eighth of that block's items at a
        time (at most an eighth of its bytes or 1 MiB, twice that while ranking them; the eighth
        of the items copied when misaligned) and at most 8,192 rows of recommendations at a
        time, written as one Parquet row group each: beyond its blocks, what it holds does not
        grow with its users. Ties go to the item first in ``item_ids_``.
        No factor comes to the client.

        Parameters
        ----------
        n, exclude_seen, filter_items, items
            As in ``recommend``.
        path : str, optional
            Where to write them as Parquet, a file per partition (a local path, made
            absolute here, or an fsspec URL the workers can write to), a folder made for them
            (``part.00000.parquet``, ...); a folder that exists must be empty. Needs pandas and
            pyarrow (``pip install "dask_strads[io]"``).

        Returns
        -------
        pandas.DataFrame or None
            Without ``path``: columns ``user``, ``rank`` (1 for the best), ``item`` and
            ``score``, users in the order of ``user_ids_``; with ``path``, None once written.
        """
        check_is_fitted(self)
        check_positive_int(n, "n")
        pandas = require_pandas("recommend_all")
        allowed = allowed_items(self.item_ids_, filter_items, items)
        if path is not None:
            path = _empty_folder(path)
        user_rows, item_rows = self._scoring_rows()
        blocks_of_items = item_blocks(item_rows)
        # the fit's cluster while it runs, else the client set, else as a fit of factors' size
        executor = self._data_executor(user_rows.size + item_rows.size)
        frames = {}
        for wave in user_partition_waves(user_rows):
            tasks, data = {}, DataLayer("recommend-all-data")
            item_ids = data(self.item_ids_)
            for i, rows, users, block in wave:
                best = streamed_best(rows, blocks_of_items, self._seen[block] if exclude_seen
                                     else None, n, allowed, f"users-{i}", users, data)
                recommended = (best, data(self.user_ids_[block]), item_ids,
                               self._score_offset(), ROWS_PER_ROW_GROUP)
                tasks[i] = (dask.delayed(_recommendations)(*recommended) if path is None else
                            dask.delayed(_write_recommendations)(
                                f"{path}/part.{i:05d}.parquet", *recommended))
            frames.update(zip(tasks, executor.compute(*tasks.values())))
        return None if path is not None else pandas.concat(
            [frames[i] for i in sorted(frames)], ignore_index=True)

    def partial_fit_users(self: _RecommenderT, triplets: DataFrame) -> _RecommenderT:
        """Fit the factors of the users of ``triplets`` from those interactions alone, the item
        factors held fixed, and keep them in the model: new users join ``user_ids_`` (kept
        sorted), and a known user's factors and seen items are replaced by those of its
        interactions here (as the ``implicit`` library's ``partial_fit_users``). No other user
        or item changes, so it costs a fold-in, not a refit: a full refit would also move the
        items (see the estimator's guide for the gap measured).

        Parameters
        ----------
        triplets : DataFrame
            ``user``, ``item``, ``rating`` rows: every interaction of each user it names, with
            items of the fit only.

        Returns
        -------
        self
            With its fitted arrays in memory (factors kept on the cluster are gathered).
        """
        return self._partial_fit(triplets, "user", "item")

    def partial_fit_items(self: _RecommenderT, triplets: DataFrame) -> _RecommenderT:
        """As ``partial_fit_users``, for items: fit the factors (and bias) of the items of
        ``triplets`` from their interactions with fitted users alone, the user factors held
        fixed; new items join ``item_ids_`` (and ``n_features_in_``), a known item's factors
        and who interacted with it are replaced.

        Parameters
        ----------
        triplets : DataFrame
            ``user``, ``item``, ``rating`` rows: every interaction with each item it names, by
            users of the fit only.

        Returns
        -------
        self
        """
        return self._partial_fit(triplets, "item", "user")

    def _rows_and_seen(self, users):
        """The scoring rows of ``users`` (fitted ids, or triplets whose users are folded in)
        and the items they interacted with (a boolean CSR matrix)."""
        if is_triplet_frame(users):
            folded, seen = self._folded_in_users(triplet_rows(users, self.item_ids_)[1])
            return self._user_scoring_rows(**folded), seen
        at = known_positions(self.user_ids_, users, "user")
        return self._in_memory(self._scoring_rows()[0])[at], self._seen[at]

    def _partial_fit(self, triplets, side, other):
        check_is_fitted(self)
        if not is_triplet_frame(triplets):
            raise TypeError(f"partial_fit_{side}s takes a DataFrame of user, item, rating "
                            f"triplets, got {type(triplets).__name__}")
        ids, matrix = triplet_rows(triplets, getattr(self, f"{other}_ids_"), side, other)
        folded, seen = (self._folded_in_users(matrix) if side == "user"
                        else self._folded_in_items(matrix))
        for name, value in list(vars(self).items()):
            if name.endswith("_") and is_dask_array(value):
                setattr(self, name, self._in_memory(value))
        known = getattr(self, f"{side}_ids_")
        merged_ids = np.union1d(known, ids)
        old_at, new_at = np.searchsorted(merged_ids, known), np.searchsorted(merged_ids, ids)
        for name, rows in folded.items():  # a row per user (item), or a column for components_
            current = np.asarray(getattr(self, name))
            current = current.T if name == "components_" else current
            merged = np.zeros((len(merged_ids),) + current.shape[1:], dtype=current.dtype)
            merged[old_at], merged[new_at] = current, rows
            setattr(self, name, merged.T if name == "components_" else merged)
        source = np.empty(len(merged_ids), dtype=np.int64)
        source[old_at] = np.arange(len(known))
        source[new_at] = len(known) + np.arange(len(ids))
        by_side = self._seen if side == "user" else self._seen.T.tocsr()
        merged_seen = sp.vstack([by_side, seen], format="csr")[source]
        self._seen = merged_seen if side == "user" else merged_seen.T.tocsr()
        setattr(self, f"{side}_ids_", merged_ids)
        if side == "item":
            self.n_features_in_ = len(merged_ids)
        return self

    def _score_offset(self):
        """What a score adds to the product of a user's and an item's rows."""
        return 0.0


def _recommendation_frames(best, user_ids, item_ids, offset, rows):
    """The recommendations of one block of users (``best``: the positions and scores of their
    best items, -1 past the last) as pandas DataFrames of at most ``rows`` rows (at least one
    user) each."""
    pandas = require_pandas("recommend_all")
    top, scores = best
    step = max(1, rows // max(1, top.shape[1]))
    for lo in range(0, len(user_ids), step):
        users = slice(lo, lo + step)
        found = top[users] >= 0
        yield pandas.DataFrame({"user": np.repeat(user_ids[users], found.sum(axis=1)),
                                "rank": np.nonzero(found)[1] + 1,
                                "item": item_ids[top[users][found]],
                                "score": scores[users][found] + offset})


def _recommendations(*block):
    return require_pandas("recommend_all").concat(list(_recommendation_frames(*block)),
                                                  ignore_index=True)


def _write_recommendations(path, *block):
    """Write a block's recommendations to ``path`` as one Parquet file, a row group per frame
    of users: no more than a frame's recommendations is held at once."""
    import pyarrow
    import pyarrow.parquet

    writer = None
    with fsspec.open(path, "wb") as file:
        for frame in _recommendation_frames(*block):
            table = pyarrow.Table.from_pandas(frame, preserve_index=False)
            writer = writer or pyarrow.parquet.ParquetWriter(
                file, table.schema, use_dictionary=DICTIONARY_COLUMNS)
            writer.write_table(table)
        if writer is not None:
            writer.close()


def _empty_folder(path):
    """``path`` (made absolute where the call runs if local: the workers may run elsewhere) as
    a new or empty folder."""
    path = os.fspath(path)
    fs, inside = fsspec.core.url_to_fs(path)
    if "://" not in path:
        path = inside = os.path.abspath(path)
    if fs.exists(inside) and (not fs.isdir(inside) or fs.ls(inside)):
        raise ValueError(f"{path} exists and is not an empty folder: recommend_all writes a "
                         "folder of Parquet files; remove it or give another path")
    fs.makedirs(inside, exist_ok=True)
    return path
