"""``dask_strads.MatrixFactorization``: matrix completion by model-parallel coordinate descent."""
import os
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.metrics import r2_score
from sklearn.utils.metaestimators import available_if
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ..kernels.compilation import announce_compiling
from ..log import logger
from ..programs.mf import ITEMS, USERS, MFProgram, observed
from .base import SHARED_CONSTRAINTS, DaskEstimatorMixin, NumberInterval
from .factor_blocks import block_layout, per_iteration, user_item_blocks
from .inputs import DaskArray, check_dask_matrix, is_dask_array, to_scipy_if_pydata
from .mf_pairs import check_pairs, positions
from .ranking import pattern, seen_pattern, similar_ids
from .ranking_metrics import RanksHeldOut, checked_user_matrix
from .ratings_input import checked_ratings
from .recommender import Recommender

#: Fold-in (``transform``) solves each row's ridge problem: coordinate descent from zero until no
#: coordinate moves more than FOLD_IN_TOL, or FOLD_IN_SWEEPS sweeps.
FOLD_IN_SWEEPS = 200
FOLD_IN_TOL = 1e-10


def _fitted_on_pairs(estimator):
    check_is_fitted(estimator)
    return estimator.fitted_on_pairs_


class MatrixFactorization(Recommender, RanksHeldOut, DaskEstimatorMixin,
                          ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Matrix completion: ratings ``X ≈ mu + b_i + c_j + W H`` fitted to the stored entries of X.

    Only the stored entries of X are observations: those of a sparse matrix (explicit zeros
    included), every entry of a dense array. Minimises, over the observations,
    ``sum (x_ij - mu - b_i - c_j - w_i . h_j)^2 + alpha_W ||W||^2 + alpha_H ||H||^2
    + alpha_bias (||b||^2 + ||c||^2)``, with ``mu`` the mean observation, by coordinate descent:
    all user rows from the item factors, then all item rows from the user factors (see
    :mod:`dask_strads.programs.mf`). Users and items are each split into ``c`` blocks a worker,
    a side updated one block a worker at a time: ``c`` is 1 unless the rows a block would
    receive are large (see docs/mf.md, "Memory per worker").

    One rule gives it its two faces: :meth:`fit` reads ``X`` as (user, item) pairs when ratings
    ``y`` come with them, and the model is then a regressor of pairs (``predict`` and ``score``
    take pairs, so that ``GridSearchCV`` and ``cross_val_score`` split ratings); any other ``X``
    is a users x items ratings matrix, and the model a transformer (``transform`` gives user
    factors, ``predict_entries`` predicts entries). ``fitted_on_pairs_`` says which; the
    recommender methods work either way.

    Parameters
    ----------
    n_components : int
        Rank k of the factors.
    alpha_W : float
        L2 penalty of the user factors (not scaled by the number of ratings: see docs/mf.md).
    alpha_H : float or "same"
        L2 penalty of the item factors; "same" takes ``alpha_W``.
    alpha_bias : float
        L2 penalty of the user and item biases.
    biases : bool
        Fit the global mean and the user and item biases; False fits ``X ≈ W H`` alone.
    duplicates : {"error", "mean"}
        A (user, item) pair given more than once in triplets or pairs: refused, or fitted as
        the mean of its ratings (a matrix has one entry a pair, as scipy sums repeats).
    max_iter : int
        Iterations, each updating every item row and then every user row.
    tol : float
        Stop when an iteration lowers the objective by at most this fraction of it.
    inner_iter : int
        Coordinate-descent sweeps over each row per update.
    random_state : int, RandomState or None
        Seeds the initial user factors.
    keep_on_cluster : bool
        Keep the factors and biases as Dask arrays whose chunks (user blocks, item blocks)
        stay on the workers instead of gathering them.
    checkpoint_interval, checkpoint_dir
        As in :class:`dask_strads.Lasso` (rounds: ``2c`` an iteration).
    progress : bool or "plot"
        Show a progress bar (tqdm) over the iterations; ``"plot"`` redraws a convergence plot
        in Jupyter (a bar elsewhere).
    callback : callable or None
        Called with each round's record (a dict); returning True stops the fit, after the
        rounds already submitted (at most two: the factors are updated in place).

    Attributes
    ----------
    user_factors_ : ndarray (n_users, k)
    components_ : ndarray (k, n_items)
        The item factors.
    intercept_ : float
        The global mean (0 without biases).
    user_bias_, item_bias_ : ndarray (n_users,), (n_items,)
        Zero without biases.
    user_ids_, item_ids_ : ndarray (n_users,), (n_items,)
        The ids of the rows and columns: those of the pairs or triplets of the fit (sorted),
        else ``0..n-1``.
    fitted_on_pairs_ : bool
        Whether the fit took (user, item) pairs and ratings y: ``predict`` and ``score`` then
        take pairs.
    n_iter_ : int
    history_ : dask_strads.engine.History
        Per iteration: objective, train RMSE (``rmse``), relative decrease and time; the engine's
        totals in ``history_.stats``.

    The client is not a parameter: set ``est.client = client`` (it is not pickled or cloned).
    """

    _parameter_constraints = {
        **SHARED_CONSTRAINTS,
        "n_components": [NumberInterval(Integral, 1, None, closed="left")],
        "alpha_W": [NumberInterval(Real, 0, None, closed="left")],
        "alpha_H": [NumberInterval(Real, 0, None, closed="left"), StrOptions({"same"})],
        "alpha_bias": [NumberInterval(Real, 0, None, closed="left")],
        "biases": ["boolean"],
        "duplicates": [StrOptions({"error", "mean"})],
        "tol": [NumberInterval(Real, 0, None, closed="left")],
        "inner_iter": [NumberInterval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_components: int = 10, *, alpha_W: float = 18.0,
                 alpha_H: float | Literal["same"] = "same", alpha_bias: float = 5.0,
                 biases: bool = True, duplicates: Literal["error", "mean"] = "error",
                 max_iter: int = 100, tol: float = 1e-4, inner_iter: int = 1,
                 random_state: int | np.random.RandomState | None = None,
                 keep_on_cluster: bool = False, checkpoint_interval: int = 10,
                 checkpoint_dir: str | os.PathLike | None = None,
                 progress: bool | Literal["plot"] = False,
                 callback: Callable[..., Any] | None = None) -> None:
        self.n_components = n_components
        self.alpha_W = alpha_W
        self.alpha_H = alpha_H
        self.alpha_bias = alpha_bias
        self.biases = biases
        self.duplicates = duplicates
        self.max_iter = max_iter
        self.tol = tol
        self.inner_iter = inner_iter
        self.random_state = random_state
        self.keep_on_cluster = keep_on_cluster
        self.checkpoint_interval = checkpoint_interval
        self.checkpoint_dir = checkpoint_dir
        self.progress = progress
        self.callback = callback

    # -- fitting ------------------------------------------------------------------------------
    def fit(self, X: Any, y: ArrayLike | None = None) -> "MatrixFactorization":
        """Fit the factors to the stored entries of X (users x items), or to the ratings ``y``
        of the (user, item) pairs X.

        X is read as pairs when y is given and X is a pandas DataFrame (columns ``user`` and
        ``item``, or exactly two columns) or an array of two columns of ids that are not
        floats (ints, strings, objects): the model is then a regressor (``predict`` and
        ``score`` take pairs too), so that ``cross_val_score`` and ``GridSearchCV`` split
        ratings. Any other X is a ratings matrix and y is ignored; two columns of whole floats
        with a y are refused as ambiguous.

        X may also be a pandas or Dask DataFrame of ``user``, ``item`` and ``rating`` columns,
        one row per observation, ids of any sortable type: it is fitted as the matrix
        :meth:`dask_strads.RatingsMatrix.from_triplets` builds (a repeated pair is an error,
        or the mean of its ratings with ``duplicates="mean"``),
        assembled on the workers for a Dask DataFrame on a cluster, and the ids are kept in
        ``user_ids_`` and ``item_ids_``, as those of a :class:`dask_strads.RatingsMatrix` X are.

        Ratings beyond ``inputs.MAX_MAGNITUDE`` (1e150) in absolute value are refused before any
        work, and a fit whose factors end non-finite raises a ValueError; either way the
        estimator is left as it was."""
        self._check_params()
        data = checked_ratings(X, y, self, "explicit", self.duplicates)
        checked, executor = data.matrix, data.executor
        n_ratings = int(data.per_user.sum())
        n_users = checked.shape[0]
        c, user_edges, item_edges = block_layout(data.per_user, data.per_item,
                                                 self.n_components + 2 * self.biases,
                                                 len(executor.workers))
        program = self._new_program(user_edges, item_edges, n_ratings,
                                    data.total / n_ratings if self.biases else 0.0,
                                    seed=self._seed(), sub_rounds=c)
        raw, slots = user_item_blocks(checked, user_edges, item_edges)
        result = self._run_engine(program, raw, executor, 2 * c * self.max_iter, (checked,),
                                  slots=slots)
        rows = self._parameters(result)  # users then items: factors, then the bias
        finite = (executor.compute(np.isfinite(rows).all())[0] if is_dask_array(rows)
                  else np.isfinite(rows).all())
        if not finite:
            raise ValueError(
                "the fit diverged: its factors are not finite (ratings too large for the "
                "penalties? rescale them or raise alpha_W, alpha_H and alpha_bias)")
        k = self.n_components
        seen = seen_pattern(checked, _stored_entries, executor)

        self._reset_features(data.given)
        self.user_factors_ = _contiguous(rows[:n_users, :k])
        self.user_bias_ = _contiguous(rows[:n_users, k])
        self.components_ = _contiguous(rows[n_users:, :k].T)
        self.item_bias_ = _contiguous(rows[n_users:, k])
        self.intercept_ = program.mean
        self.user_ids_ = data.user_ids
        self.item_ids_ = data.item_ids
        self.fitted_on_pairs_ = data.on_pairs
        self.history_ = per_iteration(result.history, c)
        self.n_iter_ = len(self.history_)
        self._seen = seen
        self._executor = executor
        return self

    def _new_program(self, user_edges, item_edges, n_ratings, mean, **options):
        """The program of a fit with these hyperparameters."""
        return MFProgram(
            self.n_components, user_edges=user_edges, item_edges=item_edges, n_ratings=n_ratings,
            alpha_W=self.alpha_W,
            alpha_H=self.alpha_W if self.alpha_H == "same" else self.alpha_H,
            alpha_bias=self.alpha_bias,
            biases=self.biases, mean=mean, sweeps=self.inner_iter, tol=self.tol, **options)

    def _fitted_program(self):
        """The program's row layout and penalties for the fitted users and items, which fold
        rows in: a fitted estimator (and its model file) keeps no program."""
        return self._new_program([0, len(self.user_ids_)], [0, len(self.item_ids_)], 1,
                                 self.intercept_)

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray | DaskArray:
        """Fit (as :meth:`fit` reads ``X`` and ``y``), and return the user factors."""
        return self.fit(X, y).user_factors_

    # -- transforming and predicting --------------------------------------------------------
    def transform(self, X: Any) -> np.ndarray | DaskArray:
        """User factors of the rows of X, fitted to their stored entries with the item factors
        fixed (fold-in); lazy for a dask array."""
        check_is_fitted(self)
        announce_compiling("mf", emit=logger.info)
        factors, program = self._factors(), self._fitted_program()
        item_rows = program.rows(factors.components.T, factors.item_bias, ITEMS)
        if is_dask_array(X):
            X = check_dask_matrix(X, self, self.n_features_in_)
            return X.rechunk({1: -1}).map_blocks(
                _fold_in, program, item_rows, dtype=np.float64,
                chunks=(X.chunks[0], (self.components_.shape[0],)))
        return _fold_in(validate_data(self, to_scipy_if_pydata(X), reset=False,
                                      accept_sparse=["csr", "csc"], dtype=np.float64),
                        program, item_rows)

    @available_if(_fitted_on_pairs)
    def predict(self, X: Any) -> np.ndarray:
        """Predicted ratings of the (user, item) pairs X, for a model fitted on pairs (a model
        fitted on a matrix has ``predict_entries`` and ``transform`` instead).

        A pair whose user or item was not in the fit is predicted from what is known: the
        global mean, plus the bias of the known user or item (the mean alone when neither is
        known, 0 with ``biases=False``)."""
        users, items = check_pairs(X)
        return self._factors().predict_known(positions(self.user_ids_, users),
                                             positions(self.item_ids_, items))

    def predict_entries(self, rows: ArrayLike, cols: ArrayLike) -> np.ndarray:
        """Predicted ratings of the (user, item) pairs ``(rows[n], cols[n])``."""
        check_is_fitted(self)
        rows = _check_indices(rows, len(self.user_factors_), "rows")
        cols = _check_indices(cols, self.components_.shape[1], "cols")
        if rows.shape != cols.shape:
            raise ValueError(f"rows and cols differ in shape: {rows.shape} and {cols.shape}")
        return self._factors().predict(rows, cols)

    def _folded_in_users(self, matrix):
        """``({fitted per-user array: rows}, seen)`` of users fitted to their ratings ``matrix``
        (CSR over the fitted items), the items held fixed."""
        factors, bias, seen = self._fold_in(matrix, USERS)
        return {"user_factors_": factors, "user_bias_": bias}, seen

    def _folded_in_items(self, matrix):
        """As :meth:`_folded_in_users`, for items rated by fitted users (``matrix``: items x
        users), the users held fixed."""
        factors, bias, seen = self._fold_in(matrix, ITEMS)
        return {"components_": factors, "item_bias_": bias}, seen

    def _fold_in(self, matrix, side):
        """``(factors, biases, seen)`` of rows of ``side`` fitted to their ratings ``matrix``
        (CSR over the other side's fitted rows), the other side held fixed; ``seen``: the
        entries rated (a boolean CSR matrix)."""
        announce_compiling("mf", emit=logger.info)
        factors, program = self._factors(), self._fitted_program()
        other = (program.rows(factors.components.T, factors.item_bias, ITEMS)
                 if side == USERS else
                 program.rows(factors.user_factors, factors.user_bias, USERS))
        rows = program.fold_in(*observed(matrix, axis=0), other, FOLD_IN_SWEEPS, FOLD_IN_TOL,
                               side=side)
        return (*program.split(rows, side),
                pattern(matrix.indptr, matrix.indices, matrix.shape[1]))

    def _scoring_rows(self):
        """User and item rows (Dask arrays for factors kept on the cluster) whose product is
        the predicted rating less ``intercept_``: ``[w, b_u, 1] . [h, 1, b_i]`` with biases,
        the kernels' layout."""
        items = self.components_.T
        users = self._user_scoring_rows(self.user_factors_, self.user_bias_)
        if not self.biases:
            return users, items
        item_bias = self.item_bias_[:, None]
        return users, np.hstack([items, np.ones_like(item_bias), item_bias])

    def _user_scoring_rows(self, user_factors_, user_bias_):
        """Users' rows ``[w, b_u, 1]`` from their fitted arrays (``w`` without biases)."""
        if not self.biases:
            return user_factors_
        bias = user_bias_[:, None]
        return np.hstack([user_factors_, bias, np.ones_like(bias)])

    def _score_offset(self):
        return float(self.intercept_)

    def _held_out_entries(self):
        """Every stored rating of held-out data is a relevant item (see ``ranking_metrics``)."""
        return _stored_entries, "stored entry"

    def similar_items(self, items: ArrayLike, n: int = 10) -> np.ndarray:
        """The ``n`` items whose factors have the highest cosine similarity with those of each
        of ``items`` (item ids), most similar first, the item itself left out: an array
        (len(items), n) of item ids (-1 or None where fewer are left, as in ``recommend``)."""
        check_is_fitted(self)
        return similar_ids(self.item_ids_, self._factors().components.T, items, n, "item")

    def similar_users(self, users: ArrayLike, n: int = 10) -> np.ndarray:
        """As ``similar_items``, for users: user ids in, user ids out."""
        check_is_fitted(self)
        return similar_ids(self.user_ids_, self._factors().user_factors, users, n, "user")

    def score(self, X: Any, y: ArrayLike | None = None) -> float:
        """For a model fitted on pairs: R² of the predictions of the ratings ``y`` of the
        (user, item) pairs X (scikit-learn's regressor score). For a model fitted on a matrix:
        minus the RMSE of the predictions over the stored entries of X, a matrix of the fitted
        users and items (e.g. held-out ratings); y is ignored."""
        check_is_fitted(self)
        if self.fitted_on_pairs_:
            if y is None:
                raise ValueError("this model was fitted on (user, item) pairs: score(X, y) "
                                 "needs their ratings y")
            return float(r2_score(np.asarray(y, dtype=np.float64), self.predict(X)))
        X = checked_user_matrix(self, X, "score")
        if is_dask_array(X):
            errors = X.map_blocks(_squared_errors, self._factors(), chunks=(1, 1, 2),
                                  new_axis=2, dtype=float)
            squared, count = self._data_executor(X.size).compute(errors.sum(axis=(0, 1)))[0]
        else:
            squared, count = _squared_errors(X, self._factors())[0, 0]
        if count == 0:
            raise ValueError("X stores no entries: there is no rating to score")
        return -float(np.sqrt(squared / count))

    def _factors(self):
        return Factors(self.intercept_, *map(self._in_memory, (
            self.user_bias_, self.item_bias_, self.user_factors_, self.components_)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    @property
    def _n_features_out(self):
        return self.components_.shape[0]


class Factors(NamedTuple):
    """A fitted model, as sent to the tasks that score a dask array."""

    intercept: float
    user_bias: np.ndarray
    item_bias: np.ndarray
    user_factors: np.ndarray
    components: np.ndarray

    def predict(self, rows, cols):
        products = np.einsum("ij,ji->i", self.user_factors[rows], self.components[:, cols])
        return self.intercept + self.user_bias[rows] + self.item_bias[cols] + products

    def predict_known(self, rows, cols):
        """``predict``, where a row or column of -1 (unknown) adds neither bias nor product."""
        known_user, known_item = rows >= 0, cols >= 0
        out = np.full(rows.shape, self.intercept, dtype=np.float64)
        out[known_user] += self.user_bias[rows[known_user]]
        out[known_item] += self.item_bias[cols[known_item]]
        both = known_user & known_item
        out[both] += np.einsum("ij,ji->i", self.user_factors[rows[both]],
                               self.components[:, cols[both]])
        return out


def _fold_in(X, program, item_rows):
    X = check_array(to_scipy_if_pydata(X), accept_sparse="csr", dtype=np.float64)
    rows = program.fold_in(*observed(X, axis=0), item_rows, FOLD_IN_SWEEPS, FOLD_IN_TOL)
    return program.split(rows, USERS)[0]


def _squared_errors(X, factors, block_info=None):
    """[[[sum of squared errors, count]]] over the stored entries of a chunk of X."""
    first_row, first_col = ((block_info[0]["array-location"][0][0],
                             block_info[0]["array-location"][1][0]) if block_info else (0, 0))
    indptr, indices, values = observed(to_scipy_if_pydata(X), axis=0)
    rows = first_row + np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    errors = factors.predict(rows, first_col + indices) - values
    return np.array([[[float(np.dot(errors, errors)), float(len(values))]]])


def _check_indices(values, size, name):
    values = np.asarray(values)
    if values.ndim != 1 or not (np.issubdtype(values.dtype, np.integer) or values.size == 0):
        raise ValueError(f"{name} must be a 1D array of integer indices, got {values!r}")
    if values.size and (values.min() < 0 or values.max() >= size):
        raise ValueError(f"{name} must be in [0, {size}), got values in "
                         f"[{values.min()}, {values.max()}]")
    return values.astype(np.int64)


def _stored_entries(chunk):
    return observed(chunk, axis=0)[:2]


def _contiguous(array):
    return array if is_dask_array(array) else np.ascontiguousarray(array)
