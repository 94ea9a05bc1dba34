"""``dask_strads.ImplicitMatrixFactorization``: implicit-feedback factorization by model-parallel
alternating least squares."""
import os
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ..kernels.compilation import announce_compiling
from ..log import logger
from ..programs.implicit_mf import ImplicitMFProgram, feedback_entries
from ..programs.mf import observed
from .base import SHARED_CONSTRAINTS, DaskEstimatorMixin, NumberInterval
from .factor_blocks import block_layout, per_iteration, user_item_blocks
from .inputs import DaskArray, check_dask_matrix, is_dask_array, to_scipy_if_pydata
from .mf import _contiguous
from .ranking import seen_pattern, similar_ids
from .ranking_metrics import RanksHeldOut
from .ratings_input import checked_ratings
from .recommender import Recommender

#: The k of ``score``: precision at 10.
class ImplicitMatrixFactorization(Recommender, RanksHeldOut, DaskEstimatorMixin,
                                  ClassNamePrefixFeaturesOutMixin,
                                  TransformerMixin, BaseEstimator):
    """Implicit-feedback matrix factorization (Hu, Koren & Volinsky 2008): clicks, plays or
    purchases ``X`` (users x items) as preferences weighted by confidence.

    Every user-item pair counts: the preference is ``p_ui = 1`` where ``x_ui > 0`` and 0
    elsewhere, the confidence ``c_ui = 1 + alpha |x_ui|`` (a negative ``x_ui`` is negative
    feedback, a dislike held with that confidence, as in the ``implicit`` library; items given
    one count as seen), and the fit minimises
    ``sum_{u,i} c_ui (p_ui - w_u . h_i)^2 + regularization (||W||^2 + ||H||^2)`` by alternating
    least squares: all item rows from the user factors, then all user rows from the item factors,
    each row's problem solved with the other side's Gramian (k x k) and the rows of its own
    interactions only, so the dense matrix is never formed (see
    :mod:`dask_strads.programs.implicit_mf`). Users and items are split into one block each per
    worker, as by :class:`dask_strads.MatrixFactorization`.

    Parameters
    ----------
    n_components : int
        Rank k of the factors.
    alpha : float
        Confidence scale: an interaction of strength x weighs ``1 + alpha |x|``.
    regularization : float
        L2 penalty of both factors (not scaled by the number of interactions).
    max_iter : int
        Iterations, each solving every item row and then every user row.
    tol : float
        Stop when an iteration lowers the objective by at most this fraction of it (0: run
        ``max_iter`` iterations).
    cg_steps : int
        Conjugate-gradient steps per row and round, from the row's previous value; 0 solves each
        row's system exactly.
    random_state : int, RandomState or None
        Seeds the initial user factors.
    keep_on_cluster, checkpoint_interval, checkpoint_dir, progress, callback
        As in :class:`dask_strads.MatrixFactorization`.

    Attributes
    ----------
    user_factors_ : ndarray (n_users, k)
    components_ : ndarray (k, n_items)
        The item factors.
    user_ids_, item_ids_ : ndarray (n_users,), (n_items,)
        The ids of the rows and columns: those of the triplets or pairs of the fit (sorted),
        else ``0..n-1``.
    n_iter_ : int
    history_ : dask_strads.engine.History
        Per iteration: objective, ``rmse`` (the square root of the weighted loss per user-item
        pair), relative decrease and time.

    The client is not a parameter: set ``est.client = client``.
    """

    _parameter_constraints = {
        **SHARED_CONSTRAINTS,
        "n_components": [NumberInterval(Integral, 1, None, closed="left")],
        "alpha": [NumberInterval(Real, 0, None, closed="left")],
        "regularization": [NumberInterval(Real, 0, None, closed="neither")],
        "tol": [NumberInterval(Real, 0, None, closed="left")],
        "cg_steps": [NumberInterval(Integral, 0, None, closed="left")],
    }

    def __init__(self, n_components: int = 10, *, alpha: float = 2.0,
                 regularization: float = 16.0, max_iter: int = 15, tol: float = 1e-4,
                 cg_steps: int = 3, random_state: int | np.random.RandomState | None = None,
                 keep_on_cluster: bool = False, checkpoint_interval: int = 10,
                 checkpoint_dir: str | os.PathLike | None = None,
                 progress: bool | Literal["plot"] = False,
                 callback: Callable[..., Any] | None = None) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.regularization = regularization
        self.max_iter = max_iter
        self.tol = tol
        self.cg_steps = cg_steps
        self.random_state = random_state
        self.keep_on_cluster = keep_on_cluster
        self.checkpoint_interval = checkpoint_interval
        self.checkpoint_dir = checkpoint_dir
        self.progress = progress
        self.callback = callback

    # -- fitting ------------------------------------------------------------------------------
    def fit(self, X: Any, y: ArrayLike | None = None) -> "ImplicitMatrixFactorization":
        """Fit the factors to the interactions X (users x items; numpy, scipy.sparse, Dask), or
        to a pandas or Dask DataFrame of ``user``, ``item``, ``rating`` triplets or a
        :class:`dask_strads.RatingsMatrix` (any sortable ids, kept in ``user_ids_`` /
        ``item_ids_``), or to (user, item) pairs X with their strengths ``y`` (as
        :meth:`dask_strads.MatrixFactorization.fit` tells them apart). Bad input is refused
        before any work, and leaves a fitted estimator as it was."""
        self._check_params()
        data = checked_ratings(X, y, self, "implicit")
        checked, executor = data.matrix, data.executor
        n_users = checked.shape[0]
        c, user_edges, item_edges = block_layout(data.per_user, data.per_item, self.n_components,
                                                 len(executor.workers))
        program = self._new_program(user_edges, item_edges, seed=self._seed(), sub_rounds=c)
        raw, slots = user_item_blocks(checked, user_edges, item_edges)
        result = self._run_engine(program, raw, executor, 2 * c * self.max_iter, (checked,),
                                  slots=slots)
        rows = self._parameters(result)  # users, then items
        finite = (executor.compute(np.isfinite(rows).all())[0] if is_dask_array(rows)
                  else np.isfinite(rows).all())
        if not finite:
            raise ValueError("the fit diverged: its factors are not finite (interactions too "
                             "large for alpha? rescale them)")
        seen = seen_pattern(checked, _feedback, executor)

        self._reset_features(data.given)
        self.user_factors_ = _contiguous(rows[:n_users])
        self.components_ = _contiguous(rows[n_users:].T)
        self.user_ids_ = data.user_ids
        self.item_ids_ = data.item_ids
        self.history_ = per_iteration(result.history, c)
        self.n_iter_ = len(self.history_)
        self._seen = seen
        self._executor = executor
        return self

    def _new_program(self, user_edges, item_edges, **options):
        """The program of a fit with these hyperparameters."""
        return ImplicitMFProgram(self.n_components, user_edges=user_edges, item_edges=item_edges,
                                 alpha=self.alpha,
                                 regularization=self.regularization, cg_steps=self.cg_steps,
                                 tol=self.tol,
                                 **options)

    def _fitted_program(self):
        """The program's solve for the fitted users and items, which folds rows in: a fitted
        estimator (and its model file) keeps no program."""
        return self._new_program([0, len(self.user_ids_)], [0, len(self.item_ids_)])

    def fit_transform(self, X: Any, y: ArrayLike | None = None) -> np.ndarray | DaskArray:
        """Fit, and return ``transform(X)``: the users' rows solved exactly against the final
        item factors (``user_factors_`` are within the last round's conjugate-gradient steps
        of them)."""
        return self.fit(X, y).transform(X)

    # -- using the model ----------------------------------------------------------------------
    def transform(self, X: Any) -> np.ndarray | DaskArray:
        """User factors of the rows of X (interactions with the fitted items), each solved
        exactly with the item factors fixed (fold-in); lazy for a dask array."""
        check_is_fitted(self)
        announce_compiling("implicit_mf", emit=logger.info)
        items = np.ascontiguousarray(self._in_memory(self.components_).T)
        if is_dask_array(X):
            X = check_dask_matrix(X, self, self.n_features_in_)
            return X.rechunk({1: -1}).map_blocks(
                _fold_in, self._fitted_program(), items, dtype=np.float64,
                chunks=(X.chunks[0], (items.shape[1],)))
        X = validate_data(self, to_scipy_if_pydata(X), reset=False,
                          accept_sparse=["csr", "csc"], dtype=np.float64)
        return _fold_in(X, self._fitted_program(), items)

    def _folded_in_users(self, matrix):
        """``({"user_factors_": rows}, seen)`` of users fitted to their interactions ``matrix``
        (CSR over the fitted items), the items held fixed."""
        announce_compiling("implicit_mf", emit=logger.info)
        items = np.ascontiguousarray(self._in_memory(self.components_).T)
        return ({"user_factors_": _fold_in(matrix, self._fitted_program(), items)},
                seen_pattern(matrix, _feedback, None))

    def _folded_in_items(self, matrix):
        """As :meth:`_folded_in_users`, for items (``matrix``: items x fitted users), the users
        held fixed: the model is symmetric in users and items."""
        announce_compiling("implicit_mf", emit=logger.info)
        users = np.ascontiguousarray(self._in_memory(self.user_factors_))
        return ({"components_": _fold_in(matrix, self._fitted_program(), users)},
                seen_pattern(matrix, _feedback, None))

    def _scoring_rows(self):
        """User and item factor rows, whose product is the score (Dask arrays for factors
        kept on the cluster)."""
        return self.user_factors_, self.components_.T

    @staticmethod
    def _user_scoring_rows(user_factors_):
        return user_factors_

    def similar_items(self, items: ArrayLike, n: int = 10) -> np.ndarray:
        """The ``n`` items whose factors have the highest cosine similarity with those of each
        of ``items`` (item ids), most similar first, the item itself left out: an array
        (len(items), n) of item ids (-1 or None where fewer are left, as in ``recommend``)."""
        check_is_fitted(self)
        return similar_ids(self.item_ids_, self._in_memory(self.components_).T, items, n,
                           "item")

    def similar_users(self, users: ArrayLike, n: int = 10) -> np.ndarray:
        """As ``similar_items``, for users: user ids in, user ids out."""
        check_is_fitted(self)
        return similar_ids(self.user_ids_, self._in_memory(self.user_factors_), users, n, "user")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    @property
    def _n_features_out(self):
        return self.components_.shape[0]


def _fold_in(X, program, items):
    X = sp.csr_matrix(check_array(to_scipy_if_pydata(X), accept_sparse="csr", dtype=np.float64))
    indptr, indices, values = feedback_entries(*observed(X, axis=0))
    factor = np.zeros((X.shape[0], items.shape[1]))
    program.solve(indptr, indices, values, factor, items, items.T @ items, cg_steps=0)
    return factor


def _feedback(chunk):
    """The entries of a chunk the fit reads (and recommendations leave out): the nonzero ones."""
    return feedback_entries(*observed(chunk, axis=0))[:2]
