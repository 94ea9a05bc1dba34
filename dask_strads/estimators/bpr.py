"""Bayesian personalised ranking of implicit feedback, model-parallel by rotating item blocks."""
import os
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..kernels.bpr import sgd_steps
from ..kernels.compilation import announce_compiling
from ..log import logger
from ..partition import block_edges
from ..programs.bpr import BPRProgram
from .base import SHARED_CONSTRAINTS, DaskEstimatorMixin, NumberInterval
from .inputs import blocks_along, to_scipy_if_pydata
from .ranking import pattern, seen_pattern, similar_ids
from .ranking_metrics import RanksHeldOut, positive_pattern
from .ratings_input import checked_ratings
from .recommender import Recommender


class BayesianPersonalizedRanking(Recommender, RanksHeldOut, DaskEstimatorMixin,
                                  BaseEstimator):
    """Bayesian personalised ranking (Rendle et al. 2009): implicit feedback ``X`` (users x
    items; a positive entry is an interaction) ranked by learning that each user prefers an item
    they interacted with to one they did not.

    The fit maximises ``sum ln sigmoid(w_u . (h_i - h_j) + b_i - b_j)`` over triples of a user,
    an item of theirs and another item, less an L2 penalty, by stochastic gradient steps on
    sampled triples, as the ``implicit`` library's ``BayesianPersonalizedRanking``. Model-parallel
    as in STRADS: the users and the items are cut into one block per worker, and in each round
    every user block takes a different item block (they rotate: an iteration is one round per
    block), so the blocks' steps run at once on disjoint rows (see
    :mod:`dask_strads.programs.bpr`). Each iteration takes about one step per interaction.
    New users are folded in (``recommend`` of triplets, ``partial_fit_users``) by the same
    steps on their rows alone, ``max_iter`` an interaction, the items fixed.

    Parameters
    ----------
    n_components : int
        Rank k of the factors (each item also has a bias).
    learning_rate : float
        Step size of the gradient steps.
    regularization : float
        L2 penalty of the factors and biases, applied at each step.
    max_iter : int
        Iterations (passes over the interactions).
    random_state : int, RandomState or None
        Seeds the initial factors and the sampled triples.
    keep_on_cluster, checkpoint_interval, checkpoint_dir, progress, callback
        As in :class:`dask_strads.MatrixFactorization`.

    Attributes
    ----------
    user_factors_ : ndarray (n_users, k)
        float32, as the ``implicit`` library's (and so are the others).
    components_ : ndarray (k, n_items)
        The item factors.
    item_bias_ : ndarray (n_items,)
    user_ids_, item_ids_ : ndarray (n_users,), (n_items,)
        The ids of the rows and columns: those of the triplets or pairs of the fit (sorted),
        else ``0..n-1``.
    n_iter_ : int
    history_ : dask_strads.engine.History
        Per round (``iteration`` beside it): ``objective``, the mean ``-ln sigmoid`` of the
        round's sampled triples before their steps, and ``accuracy``, the share of them already
        ranked right.

    The client is not a parameter: set ``est.client = client``.
    """

    _parameter_constraints = {
        **SHARED_CONSTRAINTS,
        "n_components": [NumberInterval(Integral, 1, None, closed="left")],
        "learning_rate": [NumberInterval(Real, 0, None, closed="neither")],
        "regularization": [NumberInterval(Real, 0, None, closed="left")],
    }

    def __init__(self, n_components: int = 100, *, learning_rate: float = 0.01,
                 regularization: float = 0.01, max_iter: int = 100,
                 random_state: int | np.random.RandomState | None = None,
                 keep_on_cluster: bool = False, checkpoint_interval: int = 10,
                 checkpoint_dir: str | os.PathLike | None = None,
                 progress: bool | Literal["plot"] = False,
                 callback: Callable[..., Any] | None = None) -> None:
        self.n_components = n_components
        self.learning_rate = learning_rate
        self.regularization = regularization
        self.max_iter = max_iter
        self.random_state = random_state
        self.keep_on_cluster = keep_on_cluster
        self.checkpoint_interval = checkpoint_interval
        self.checkpoint_dir = checkpoint_dir
        self.progress = progress
        self.callback = callback

    def fit(self, X: Any, y: ArrayLike | None = None) -> "BayesianPersonalizedRanking":
        """Fit to the interactions X (users x items; numpy, scipy.sparse, Dask; positive
        entries are interactions), or to a pandas or Dask DataFrame of ``user``, ``item``,
        ``rating`` triplets or a :class:`dask_strads.RatingsMatrix` (their ids kept in
        ``user_ids_`` / ``item_ids_``), or to (user, item) pairs X with their strengths ``y`` (as
        :meth:`dask_strads.MatrixFactorization.fit` tells them apart). Bad input is refused
        before any work, and leaves a fitted estimator as it was."""
        self._check_params()
        data = checked_ratings(X, y, self, "positive")
        X, executor, per_user, per_item = data.matrix, data.executor, data.per_user, data.per_item
        n_blocks = min(len(executor.workers), len(per_user), len(per_item))
        user_edges = block_edges(len(per_user), n_blocks, per_user)
        program = BPRProgram(self.n_components, item_counts=per_item, n_blocks=n_blocks,
                             learning_rate=self.learning_rate,
                             regularization=self.regularization, seed=self._seed())
        blocks = blocks_along(X, user_edges, _interactions_block, axis=0)
        result = self._run_engine(program, blocks, executor, n_blocks * self.max_iter, (X,))
        users = self._parameters(result)
        items = program.in_item_order(self._parameters(result, carried=True))

        self._reset_features(data.given)  # a DataFrame's column names, as MF and ALS keep them
        k = self.n_components
        self.user_factors_ = users[:, :k]
        self.components_ = items[:, :k].T
        self.item_bias_ = items[:, k]
        self.user_ids_ = data.user_ids
        self.item_ids_ = data.item_ids
        result.history.records[:] = [{"round": r["round"], "iteration": r["round"] // n_blocks,
                                      **r} for r in result.history.records]
        self.history_ = result.history
        self.n_iter_ = self.history_.last_round // n_blocks + 1
        self._seen = seen_pattern(X, positive_pattern, executor)
        self._executor = executor
        return self

    def similar_items(self, items: ArrayLike, n: int = 10) -> np.ndarray:
        """The ``n`` items whose factors have the highest cosine similarity with those of each
        of ``items`` (item ids), most similar first, the item itself left out (-1 or None where
        fewer are left, as in ``recommend``)."""
        check_is_fitted(self)
        return similar_ids(self.item_ids_, self._in_memory(self.components_).T, items, n,
                           "item")

    def _folded_in_users(self, matrix):
        """``({"user_factors_": rows}, seen)`` of users fitted to their interactions ``matrix``
        (CSR over the fitted items) by the fit's steps on their triples, ``max_iter`` steps an
        interaction, the item factors and biases held fixed."""
        announce_compiling("bpr", emit=logger.info)
        positive = _ones_where_positive(matrix)
        positive.sort_indices()
        items = np.ascontiguousarray(self._in_memory(self._scoring_rows()[1]))
        k, seed = self.n_components, self._seed()
        users = np.ones((positive.shape[0], k + 1), dtype=items.dtype)
        users[:, :k] = np.random.default_rng(seed).normal(0.0, 0.01, (positive.shape[0], k))
        sgd_steps(positive.indptr, positive.indices, users, items, positive.nnz * self.max_iter,
                  seed, self.learning_rate, self.regularization, fixed_user_columns=1,
                  move_items=False)
        return ({"user_factors_": users[:, :k]},
                pattern(positive.indptr, positive.indices, positive.shape[1]))

    def _folded_in_items(self, matrix):
        raise ValueError("BayesianPersonalizedRanking folds in no new items: refit with their "
                         "interactions")

    def _scoring_rows(self):
        """User rows ``[w, 1]`` and item rows ``[h, b]``: their product is the score (Dask
        arrays for factors kept on the cluster)."""
        return (self._user_scoring_rows(self.user_factors_),
                np.hstack([self.components_.T, self.item_bias_[:, None]]))

    @staticmethod
    def _user_scoring_rows(user_factors_):
        return np.hstack([user_factors_, np.ones_like(user_factors_[:, :1])])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags


def _interactions_block(part, lo, hi):
    """A block of users' interactions: the positive entries of ``part``, as ones (CSR)."""
    return _ones_where_positive(part)


def _ones_where_positive(chunk):
    indptr, indices = positive_pattern(to_scipy_if_pydata(chunk))
    return sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=chunk.shape)
