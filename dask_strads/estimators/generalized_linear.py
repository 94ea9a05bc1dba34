"""``dask_strads.GeneralizedLinearRegressor``: a regression datafit (squared error, Huber's,
Poisson's) with a penalty of the elastic-net family (l1 weighted per feature, l2), fitted by the
STRADS prox-Newton program over feature blocks."""
import os
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import _check_sample_weight

from ..partition import block_edges
from ..programs.datafits import Huber, Poisson, SquaredError
from ..programs.penalties import Penalty, checked_weights
from ..programs.prox_newton import ProxNewtonProgram, make_raw_block
from .base import SHARED_CONSTRAINTS, DaskEstimatorMixin, NumberInterval, default_block_count
from .elastic_net import linear_predictor, rounds_to_stop
from .inputs import DaskArray, blocks_along, checked_design, fitted_dtype, is_sparse
from .linear_classifiers import convergence_message

_CONSTRAINTS = {key: SHARED_CONSTRAINTS[key] for key in
                ("max_iter", "random_state", "checkpoint_interval", "checkpoint_dir", "progress",
                 "callback")}

#: The datafits by the name ``loss`` gives them.
LOSSES = {datafit.name: datafit for datafit in (SquaredError, Huber, Poisson)}


class GeneralizedLinearRegressor(DaskEstimatorMixin, RegressorMixin, BaseEstimator):
    """A penalised linear model of a regression loss, by model-parallel prox-Newton with a
    priority schedule.

    Minimises ``1 / sum(s) sum_i s_i loss(x_i w + b, y_i) + alpha (l1_ratio sum_j v_j |w_j| +
    (1 - l1_ratio) / 2 ||w||^2)``, with ``s_i`` the samples' weights (ones by default) and
    ``v_j`` the features' ``penalty_weights`` (ones by default), the intercept ``b``
    unpenalised. The losses:

    - ``"squared_error"``: ``(z - y)^2 / 2``, scikit-learn's :class:`~sklearn.linear_model.
      ElasticNet` objective (whose own estimators here, :class:`dask_strads.ElasticNet` and
      :class:`dask_strads.Lasso`, are faster on it: they screen features and measure a duality
      gap; this one takes ``penalty_weights``);
    - ``"huber"``: Huber's loss of ``z - y``, squared (halved) within ``epsilon``, linear
      beyond: robust to outlying targets, as :class:`sklearn.linear_model.SGDRegressor`'s
      ``loss="huber"`` (scikit-learn's ``HuberRegressor`` also fits a scale, not done here);
    - ``"poisson"``: ``exp(z) - y z``, half the Poisson deviance of the mean ``exp(z)`` up to a
      term of ``y`` alone: with ``l1_ratio=0`` the objective of
      :class:`sklearn.linear_model.PoissonRegressor`; ``predict`` gives ``exp(x w + b)``.

    The weighted l1 penalty is the adaptive Lasso's, and a weight of 0 leaves a feature
    unpenalised by the l1 term. The features are split into ``n_blocks`` blocks pinned to the
    workers; each round every block takes its nonzero coefficients and worst violators of the
    optimality conditions as its working set and runs prox-Newton steps on it; the blocks'
    changes are combined with a step that decreases the objective.

    Parameters
    ----------
    loss : {"squared_error", "huber", "poisson"}
        The datafit (see above).
    alpha : float >= 0
        The penalty's strength; 0: the loss alone.
    l1_ratio : float in [0, 1]
        The l1 share of the penalty: 1 the (weighted) Lasso, 0 ridge.
    epsilon : float > 0
        Huber's threshold on the residual (``loss="huber"`` only).
    penalty_weights : array of shape (n_features,) or None
        Non-negative weights ``v_j`` of the features in the l1 term (None: ones).
    fit_intercept : bool
        Fit an unpenalised intercept.
    tol : float
        Stop when no coefficient or intercept violates its optimality condition by more than
        ``tol`` times the largest feature gradient at ``w = 0``.
    max_iter : int
        Rounds at most.
    warm_start : bool
        Start from the previous fit's coefficients and intercept when the features match.
    n_blocks : int or None
        Feature blocks; None: one per ten million stored values of X, at most one per worker.
    random_state
        Accepted for scikit-learn's spelling; the solver draws nothing at random.
    checkpoint_interval, checkpoint_dir, progress, callback
        As for :class:`dask_strads.Lasso`.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_features_in_ : int
    n_iter_ : int
        Rounds up to the stop.
    history_ : dask_strads.engine.History
        One record per round (objective, relative violation, step, Newton steps).

    The client is not a parameter: set ``est.client = client``.
    """

    _parameter_constraints = {
        **_CONSTRAINTS,
        "loss": [StrOptions(set(LOSSES))],
        "alpha": [NumberInterval(Real, 0, None, closed="left")],
        "l1_ratio": [NumberInterval(Real, 0, 1, closed="both")],
        "epsilon": [NumberInterval(Real, 0, None, closed="neither")],
        "penalty_weights": ["array-like", None],
        "fit_intercept": ["boolean"],
        "tol": [NumberInterval(Real, 0, None, closed="neither")],
        "warm_start": ["boolean"],
        "n_blocks": [NumberInterval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, loss: Literal["squared_error", "huber", "poisson"] = "squared_error", *,
                 alpha: float = 1.0, l1_ratio: float = 1.0, epsilon: float = 1.35,
                 penalty_weights: ArrayLike | None = None, fit_intercept: bool = True,
                 tol: float = 1e-4, max_iter: int = 100, warm_start: bool = False,
                 n_blocks: int | None = None,
                 random_state: int | np.random.RandomState | None = None,
                 checkpoint_interval: int = 10, checkpoint_dir: str | os.PathLike | None = None,
                 progress: bool | Literal["plot"] = False,
                 callback: Callable[..., Any] | None = None) -> None:
        self.loss = loss
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.epsilon = epsilon
        self.penalty_weights = penalty_weights
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.n_blocks = n_blocks
        self.random_state = random_state
        self.checkpoint_interval = checkpoint_interval
        self.checkpoint_dir = checkpoint_dir
        self.progress = progress
        self.callback = callback

    def fit(self, X: Any, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> "GeneralizedLinearRegressor":
        """Fit on X (numpy, scipy.sparse, pydata sparse or dask array) and targets y;
        ``sample_weight``: a non-negative weight per sample (or one number for all) multiplying
        its loss, the losses' sum divided by the weights' sum."""
        self._check_params()
        given = X
        X, y, stored, executor = checked_design(self, X, y)
        datafit_class = LOSSES[self.loss]
        datafit_class.check_targets(y)
        weights = _check_sample_weight(sample_weight, np.empty((len(y), 0)), dtype=np.float64,
                                       ensure_non_negative=True)
        l1_weights = (None if self.penalty_weights is None
                      else checked_weights(self.penalty_weights, X.shape[1]))
        extra = {"delta": self.epsilon} if datafit_class is Huber else {}
        datafit = datafit_class(y[:, None], 1.0 / weights.sum(), weights, **extra)
        coef_init, intercept_init = self._initial_coef(X.shape[1], datafit_class, y, weights)
        edges = block_edges(X.shape[1], self.n_blocks or default_block_count(
            stored, len(executor.workers)))
        penalty = Penalty(self.alpha * self.l1_ratio, self.alpha * (1.0 - self.l1_ratio))
        program = ProxNewtonProgram(len(edges) - 1, datafit=datafit, penalty=penalty,
                                    fit_intercept=self.fit_intercept,
                                    tolerance=self.tol, intercept_init=[intercept_init],
                                    sparse=is_sparse(X))

        def make_block(columns, lo, hi):
            return make_raw_block(columns, coef_init[None, lo:hi],
                                  None if l1_weights is None else l1_weights[lo:hi])

        result = self._run_engine(program, blocks_along(X, edges, make_block, axis=1),
                                  executor, self.max_iter, (X, y, weights, l1_weights))
        coef, intercept = program.coefficients(result.gather())
        self._reset_features(given)
        self.coef_ = np.ascontiguousarray(coef[0], dtype=fitted_dtype(given))
        self.intercept_ = float(intercept[0])
        self.n_iter_ = rounds_to_stop(result.history)
        self.history_ = result.history
        self._executor = executor
        self._warn_unless_converged(result.history, convergence_message(
            self, self.n_iter_, result.history, "violation", "violation"))
        return self

    def _initial_coef(self, n_features, datafit_class, y, weights):
        """``(coef, intercept)`` to start from: the last fit's with ``warm_start``, else 0 and
        the datafit's best constant (0 without ``fit_intercept``)."""
        if self.warm_start and getattr(self, "coef_", np.empty(0)).shape == (n_features,):
            return (np.array(self.coef_, dtype=np.float64),
                    self.intercept_ if self.fit_intercept else 0.0)
        start = datafit_class.initial_intercept(y, weights) if self.fit_intercept else 0.0
        return np.zeros(n_features), start

    def predict(self, X: Any) -> np.ndarray | DaskArray:
        """The predicted mean: the linear predictor ``X @ coef_ + intercept_`` through the
        loss's inverse link (``exp`` for ``loss="poisson"``, the identity otherwise); lazy for a
        dask array X."""
        return LOSSES[self.loss].inverse_link(linear_predictor(self, X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
