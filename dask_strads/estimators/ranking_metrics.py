"""Ranking metrics at k of a factorization on held-out interactions, as the ``implicit`` library's
``evaluation.ranking_metrics_at_k`` defines them, plus recall.

Each user with held-out items gets the ``k`` items of highest score ``w_u . h_i`` among those not
seen in the fit; with ``hits`` those of them that are held out, ``n`` the user's held-out count
and ``m = min(k, n)``:

- precision: the sum of hits over users divided by the sum of ``m`` (1 is perfect even for a
  user with fewer than k held-out items);
- recall: the mean over users of ``hits / n``;
- map: the mean of ``sum over hit positions j of (hits up to j) / j``, divided by ``m``;
- ndcg: the mean of ``sum over hit positions of 1 / log2(j + 1)``, divided by the same sum over
  the first ``m`` positions;
- auc: the mean of the area under the ROC curve of the ranking cut at k, the items below it
  counted as ranked in between: with ``N`` the items not held out, ``(sum over missed
  positions of the hits above them + (hits + n) / 2 (N - misses)) / (n N)``.

Users without held-out items do not count. Factors held on a cluster are scored where they are,
as ``recommend_all`` ranks them: a partition of at most 25,000 users of a block at a time (see
:func:`.ranking.user_partition_waves`) meets the item blocks one at a time (a chain of tasks,
each merging one item block's best into the users' running best, see
:func:`.ranking.streamed_best`), then a task sums the partition's metrics, and only those sums
come back.
"""
from typing import Any

import dask
import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ..engine.blocks import DataLayer
from ..programs.implicit_mf import positive_entries
from ..programs.mf import observed
from .inputs import check_dask_matrix, check_positive_int, is_dask_array, to_scipy_if_pydata
from .ranking import (RANKING_ROWS, block_best, item_blocks, seen_pattern, streamed_best,
                      user_partition_waves)

#: The k of ``score``: precision at 10.
SCORE_K = 10
#: The metrics, in the order of the sums a block returns (after precision's denominator).
METRICS = ("precision", "recall", "map", "ndcg", "auc")


def ranking_metrics(user_rows, item_rows, seen, held_out, k, executor=None):
    """The metrics (a dict, see the module) of scores ``user_rows @ item_rows.T``, the items of
    ``seen`` (boolean CSR, users x items) left out, against ``held_out`` (boolean CSR, the
    relevant items of each user, some stored). Dask rows are scored block by block on
    ``executor``."""
    n_items = seen.shape[1]
    if not is_dask_array(user_rows):
        sums = _block_sums(user_rows, item_rows, seen, held_out, k, n_items)
    else:
        blocks = item_blocks(item_rows)
        sums = np.zeros(len(METRICS) + 2)
        for wave in user_partition_waves(user_rows):
            data, parts = DataLayer("ranking-metrics-data"), []
            for i, rows, users, block in wave:
                relevant = held_out[block]
                if relevant.nnz:
                    best = streamed_best(rows, blocks, seen[block], k, None, f"metrics-{i}",
                                         users, data)
                    parts.append(dask.delayed(_sums_of_best)(best, data(relevant), n_items, k))
            sums += np.sum(executor.compute(*parts), axis=0) if parts else 0
    users = sums[-1]
    return {"precision": float(sums[0] / sums[1]),
            **{name: float(total / users) for name, total in zip(METRICS[1:], sums[2:-1])}}


def _block_sums(user_rows, item_rows, seen, held_out, k, n_items):
    """``[hits, sum of min(k, n), recall, ap, ndcg, auc, users]`` summed over the users of a
    block that have held-out items, ranking ``RANKING_ROWS`` of them at a time."""
    users = np.flatnonzero(np.diff(held_out.indptr))
    sums = np.zeros(len(METRICS) + 2)
    for lo in range(0, len(users), RANKING_ROWS):
        chunk = users[lo:lo + RANKING_ROWS]
        top, _ = block_best(user_rows[chunk], item_rows, seen[chunk], 0, k)
        sums += _metric_sums(top, held_out[chunk], n_items, k)
    return sums


def _sums_of_best(best, held_out, n_items, k):
    """:func:`_block_sums` of a block whose users' best items ``best`` are ranked already."""
    users = np.flatnonzero(np.diff(held_out.indptr))
    return _metric_sums(best[0][users], held_out[users], n_items, k)


def _metric_sums(top, held_out, n_items, k):
    """The sums of :func:`_block_sums` over users whose top items are ``top`` and whose
    held-out items are the rows of ``held_out`` (each with at least one)."""
    relevant = np.diff(held_out.indptr).astype(np.float64)
    hits = held_out[np.arange(len(top))[:, None], np.maximum(top, 0)].toarray() & (top >= 0)
    found = hits.sum(axis=1)
    cut = np.minimum(k, relevant)
    hits_so_far = np.cumsum(hits, axis=1)
    position = np.arange(1, k + 1)
    gain = 1.0 / np.log2(position + 1)
    ideal = np.cumsum(gain)[cut.astype(np.int64) - 1]
    others = n_items - relevant
    misses = k - found
    auc = (np.where(hits, 0, hits_so_far).sum(axis=1)
           + (found + relevant) / 2.0 * (others - misses)) / (relevant * others)
    return np.array([found.sum(), cut.sum(), (found / relevant).sum(),
                     ((hits * hits_so_far / position).sum(axis=1) / cut).sum(),
                     ((hits * gain).sum(axis=1) / ideal).sum(), auc.sum(), len(top)])


def checked_user_matrix(estimator, X, what):
    """X (numpy, scipy.sparse, pydata sparse or Dask) checked as a matrix of the fitted users
    and items, for ``what`` (a phrase naming the use) to compare with the fit."""
    if is_dask_array(X):
        X = check_dask_matrix(X, estimator, estimator.n_features_in_)
    else:
        X = validate_data(estimator, to_scipy_if_pydata(X), reset=False,
                          accept_sparse=["csr", "csc"], dtype=np.float64)
    if X.shape[0] != len(estimator.user_ids_):
        raise ValueError(f"X has {X.shape[0]} rows, but {what} compares with the "
                         f"{len(estimator.user_ids_)} users of the fit")
    return X


def held_out_pattern(estimator, X, entries, kind):
    """The held-out interactions of X, those ``entries(chunk)`` picks (``kind``: what they are,
    for the error when there is none), as a boolean CSR matrix (computed chunk by chunk for a
    Dask X)."""
    X = checked_user_matrix(estimator, X, "ranking")
    held_out = seen_pattern(X, entries, estimator._data_executor(X.size) if is_dask_array(X)
                            else None)
    if held_out.nnz == 0:
        raise ValueError(f"X has no {kind}: there is no held-out interaction to rank against")
    return held_out


class RanksHeldOut:
    """``ranking_metrics`` and ``precision_at_k`` (and, as the ``score`` of a recommender of
    interactions, precision at 10) of a recommender: which entries of a held-out matrix are the
    relevant items is :meth:`_held_out_entries`: by default the positive ones (interactions)."""

    def _held_out_entries(self):
        """``(entries(chunk), what they are called)``: the relevant entries of held-out data."""
        return positive_pattern, "positive entry"

    def ranking_metrics(self, X: Any, k: int = SCORE_K) -> dict[str, float]:
        """Precision, recall, MAP, NDCG and AUC at ``k`` of the recommendations on held-out
        data X (a matrix of the fitted users and items whose relevant entries, the positive
        ones for interactions and the stored ones for ratings, are the held-out items; keep
        the ratings that count as liked, e.g. ``X_test >= 4``; numpy, scipy.sparse or Dask),
        as a dict: each user with held-out items gets the top ``k`` items not seen in the fit
        (the definitions of the ``implicit`` library's ``ranking_metrics_at_k``, see
        :mod:`dask_strads.estimators.ranking_metrics`). Factors kept on the cluster are scored
        there, block against block."""
        check_is_fitted(self)
        check_positive_int(k, "k")
        held_out = held_out_pattern(self, X, *self._held_out_entries())
        user_rows, item_rows = self._scoring_rows()
        # factors on a cluster are ranked as recommend_all ranks them: on the fit's cluster
        # while it runs, else on the client set; factors in memory here
        executor = (self._data_executor(user_rows.size + item_rows.size)
                    if is_dask_array(user_rows) else None)
        return ranking_metrics(user_rows, item_rows, self._seen, held_out, k, executor)

    def precision_at_k(self, X: Any, k: int = SCORE_K) -> float:
        """Precision at ``k`` of the recommendations on held-out data X (see
        ``ranking_metrics``): the number of held-out items among each user's top ``k`` unseen
        ones, summed over users, divided by the sum over users of ``min(k, their held-out
        count)`` (the ``implicit`` library's definition: 1 is perfect even for users with fewer
        than ``k`` held-out items)."""
        return self.ranking_metrics(X, k)["precision"]

    def score(self, X: Any, y: Any = None) -> float:
        """Precision at 10 (``precision_at_k(X, k=10)``) on the held-out interactions X: higher
        is better, as scikit-learn's model selection expects; y is ignored."""
        return self.precision_at_k(X, SCORE_K)


def positive_pattern(chunk):
    """``(indptr, indices)`` of the positive entries of a chunk, row by row: interactions."""
    return positive_entries(*observed(chunk, axis=0))[:2]
