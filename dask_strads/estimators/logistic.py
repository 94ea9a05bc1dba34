"""``dask_strads.LogisticRegression``: sklearn's penalised logistic regression, fitted by the
STRADS logistic program (prox-Newton over feature blocks) on Dask."""
import os
import warnings
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, Final, Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.linear_model._base import LinearClassifierMixin, SparseCoefMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.extmath import softmax
from sklearn.utils.validation import check_is_fitted

from ..engine.history import History
from ..partition import block_edges
from ..programs.datafits import Logistic, Multinomial
from ..programs.penalties import Penalty
from ..programs.prox_newton import ProxNewtonProgram, make_raw_block
from .base import (SHARED_CONSTRAINTS, DaskEstimatorMixin, NumberInterval,
                   default_block_count)
from .elastic_net import rounds_to_stop
from .inputs import blocks_along, fitted_dtype, is_sparse, one_vs_rest_signs
from .linear_classifiers import (checked_classification_data, convergence_message,
                                 sample_weights, with_constant_column, without_constant_column)

_CONSTRAINTS = {key: SHARED_CONSTRAINTS[key] for key in
                ("random_state", "checkpoint_interval", "checkpoint_dir", "progress", "callback")}

#: Our solver, and scikit-learn's names of solvers of the same objective, which run it.
SOLVER: Final = "prox_newton"
SKLEARN_SOLVERS = {"lbfgs", "newton-cg", "newton-cholesky", "sag", "saga"}


class LogisticRegression(DaskEstimatorMixin, SparseCoefMixin, LinearClassifierMixin,
                         BaseEstimator):
    """Penalised logistic regression by model-parallel prox-Newton with a priority schedule.

    Minimises ``l1_ratio ||W||_1 + (1 - l1_ratio) / 2 ||W||^2 + C sum_i s_i loss_i``, with
    ``s_i`` the sample's weight (``sample_weight`` times its class's ``class_weight``; 1 by
    default) and margins ``z_i = x_i W + b``: for two classes the logistic loss
    ``log(1 + exp(-y_i z_i))``, for more the multinomial (softmax) cross-entropy
    ``log sum_k exp(z_ik) - z_i,y_i``, or with ``multi_class="ovr"`` one logistic problem per
    class against the rest. This is the objective of
    :class:`sklearn.linear_model.LogisticRegression` with an unpenalised intercept (as its
    ``saga`` and ``lbfgs`` solvers); with ``solver="liblinear"``, liblinear's objective, whose
    intercept is the weight of an extra feature of value ``intercept_scaling``, penalised as
    the others.

    The features are split into ``n_blocks`` blocks (default: one per ten million stored values,
    at most one per worker) pinned to the workers. Every round each block ranks its coordinates
    by how far they are from their
    optimality condition, takes the nonzero ones and the worst violators as its working set,
    and runs prox-Newton steps on it (coordinate descent on the quadratic model, then a line
    search); the blocks' changes are combined with a step that decreases the objective, and the
    intercept is fitted on the result.

    Parameters
    ----------
    penalty : {"auto", "l1", "l2", "elasticnet"} or None
        ``"auto"``: chosen by ``l1_ratio`` as in scikit-learn >= 1.8 (l2 at 0, l1 at 1, the
        elastic net between); ``"l1"`` and ``"l2"`` override ``l1_ratio``; ``"elasticnet"``
        takes it; None: no penalty, as ``C=np.inf``.
    C : float
        Inverse of the regularisation strength, as in scikit-learn; ``np.inf``: no penalty.
    l1_ratio : float in [0, 1] or None
        The l1 share of the penalty (None: 0).
    dual : bool
        scikit-learn's spelling: ``True`` is liblinear's dual formulation, accepted with
        ``solver="liblinear"`` and an l2 penalty, whose optimum is the primal's (solved here in
        the primal); refused otherwise, as scikit-learn refuses it.
    tol : float
        Stop when no coefficient or intercept violates its optimality condition by more than
        ``tol`` times the largest feature gradient at ``w = 0``.
    fit_intercept : bool
    intercept_scaling : float
        With ``solver="liblinear"``, the value of the extra feature whose penalised weight
        times it is the intercept (as liblinear); no effect otherwise.
    random_state, n_jobs, verbose
        scikit-learn's spellings, accepted and without effect: the solver draws nothing at random,
        fits run on the Dask cluster (``n_jobs`` other than None warns that it has no effect,
        with scikit-learn's FutureWarning: it has none there either since 1.8), and
        ``progress`` shows a fit's progress.
    class_weight : dict, "balanced" or None
        Weights of the classes (their labels as keys), multiplying the samples' weights; as in
        scikit-learn, ``"balanced"`` weighs each class by ``n_samples / (n_classes *`` its
        weighted count``)``.
    multi_class : {"auto", "multinomial", "ovr"}
        With more than two classes: ``"auto"`` and ``"multinomial"`` fit the softmax model
        (scikit-learn's only one since 1.8); ``"ovr"`` one-vs-rest problems side by side on the
        same blocks, whose probabilities are normalised over the classes. No effect for two
        classes.
    solver : {"prox_newton", "lbfgs", "newton-cg", "newton-cholesky", "sag", "saga", "liblinear"}
        ``"prox_newton"``, the model-parallel solver described above. scikit-learn's names of
        solvers of the same objective are accepted and run it; ``"liblinear"`` runs it on
        liblinear's objective (the intercept penalised, see ``intercept_scaling``), for two
        classes, as scikit-learn's liblinear.
    max_iter : int
        Rounds at most (a round runs up to 20 prox-Newton steps with one block, one per block
        with several).
    warm_start : bool
        Start from the previous fit's coefficients when the features and classes match (and
        from its intercepts with ``fit_intercept``).
    n_blocks : int or None
        Feature blocks; None: one per ten million stored values of X, at most one per worker.
        Blocks updated in the same round interfere, so more blocks take more rounds: they pay
        when a round's work, not its latency, dominates.
    checkpoint_interval, checkpoint_dir, progress, callback
        As for :class:`dask_strads.Lasso`.

    Attributes
    ----------
    classes_, coef_, intercept_, n_features_in_
        As in scikit-learn: ``coef_`` has shape ``(1, n_features)`` for two classes,
        ``(n_classes, n_features)`` otherwise.
    n_iter_ : ndarray of shape (1,)
        Rounds up to the stop.
    history_ : dask_strads.engine.History
        One record per round up to the stop (objective, relative violation, step, Newton
        steps) and ``history_.stats`` (the rounds run, the few submitted behind the stop too).

    The client is not a parameter: set ``est.client = client``.
    """

    _parameter_constraints = {
        **_CONSTRAINTS,
        "max_iter": [NumberInterval(Integral, 0, None, closed="left")],
        "penalty": [StrOptions({"auto", "l1", "l2", "elasticnet"}), None],
        "C": [NumberInterval(Real, 0, None, closed="right")],
        "l1_ratio": [NumberInterval(Real, 0, 1, closed="both"), None],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({SOLVER, "liblinear", *SKLEARN_SOLVERS})],
        "dual": ["boolean"],
        "intercept_scaling": [NumberInterval(Real, 0, None, closed="neither")],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "multi_class": [StrOptions({"auto", "multinomial", "ovr"})],
        "tol": [NumberInterval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "n_blocks": [NumberInterval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, penalty: Literal["auto", "l1", "l2", "elasticnet"] | None = "auto", *,
                 C: float = 1.0, l1_ratio: float | None = 0.0, dual: bool = False,
                 tol: float = 1e-4, fit_intercept: bool = True, intercept_scaling: float = 1,
                 random_state: int | np.random.RandomState | None = None,
                 n_jobs: int | None = None, verbose: bool | int = 0,
                 class_weight: dict[Any, float] | Literal["balanced"] | None = None,
                 multi_class: Literal["auto", "multinomial", "ovr"] = "auto",
                 solver: Literal["prox_newton", "lbfgs", "newton-cg", "newton-cholesky", "sag",
                                 "saga"] = SOLVER,
                 max_iter: int = 100, warm_start: bool = False, n_blocks: int | None = None,
                 checkpoint_interval: int = 10, checkpoint_dir: str | os.PathLike | None = None,
                 progress: bool | Literal["plot"] = False,
                 callback: Callable[..., Any] | None = None) -> None:
        self.penalty = penalty
        self.C = C
        self.l1_ratio = l1_ratio
        self.dual = dual
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.multi_class = multi_class
        self.random_state = random_state
        self.solver = solver
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.n_blocks = n_blocks
        self.checkpoint_interval = checkpoint_interval
        self.checkpoint_dir = checkpoint_dir
        self.progress = progress
        self.callback = callback

    def fit(self, X: Any, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> "LogisticRegression":
        """Fit on X (numpy, scipy.sparse, pydata sparse or dask array) and class labels y;
        ``sample_weight``: a weight per sample (or one number for all) multiplying its loss, as
        in scikit-learn (not rescaled)."""
        self._check_params()
        cost, l1, l2 = self._penalties()
        given = X
        X, y, classes, stored, executor = checked_classification_data(self, X, y)
        if self.solver == "liblinear" and len(classes) > 2:
            raise ValueError(
                "The 'liblinear' solver does not support multiclass classification (n_classes "
                f">= 3, got {len(classes)}). Either use another solver or wrap the estimator in a "
                "OneVsRestClassifier to keep applying a one-versus-rest scheme.")
        weights = sample_weights(sample_weight, y, classes, self.class_weight)
        Y = one_vs_rest_signs(y, classes)
        coef_init, intercept_init = self._initial_coef(X.shape[1], classes)
        penalised_intercept = self.solver == "liblinear" and self.fit_intercept
        if penalised_intercept:
            X = with_constant_column(X, self.intercept_scaling)
            coef_init = np.hstack([coef_init, intercept_init[:, None] / self.intercept_scaling])
        n_features = X.shape[1]

        edges = block_edges(n_features, self.n_blocks or default_block_count(
            stored, len(executor.workers)))
        datafit = (Multinomial if self._multinomial(classes) else Logistic)(Y, cost, weights)
        program = ProxNewtonProgram(len(edges) - 1, datafit=datafit, penalty=Penalty(l1, l2),
                                    fit_intercept=self.fit_intercept and not penalised_intercept,
                                    tolerance=self.tol,
                                    intercept_init=intercept_init, sparse=is_sparse(X))

        def make_block(columns, lo, hi):
            return make_raw_block(columns, coef_init[:, lo:hi])

        if self.max_iter == 0:  # the starting point, as scikit-learn gives it
            coef, intercept, history = coef_init, intercept_init, History()
        else:
            result = self._run_engine(program, blocks_along(X, edges, make_block, axis=1),
                                      executor, self.max_iter, (X, y, coef_init))
            history = result.history
            coef, intercept = program.coefficients(result.gather())
        self._reset_features(given)
        self.classes_ = classes
        if datafit.coupled:
            coef, intercept = _symmetric(coef, intercept, l1)
        if penalised_intercept:
            coef, intercept = without_constant_column(coef, self.intercept_scaling)
        # liblinear's coefficients are float64 whatever X's dtype, the other solvers' X's
        dtype = np.float64 if self.solver == "liblinear" else fitted_dtype(given)
        self.coef_ = np.ascontiguousarray(coef, dtype=dtype)
        self.intercept_ = intercept.astype(self.coef_.dtype)
        self.n_iter_ = np.array([rounds_to_stop(history)])
        self.history_ = history
        self._executor = executor
        self._warn_unless_converged(history, convergence_message(
            self, self.n_iter_[0], history, "violation", "violation"))
        return self

    def _check_params(self):
        super()._check_params()
        if self.solver == "liblinear" and (self.penalty is None or np.isinf(self.C)):
            raise ValueError("C=np.inf as well as penalty=None is not supported for the "
                             "liblinear solver")
        if self.dual and self.solver != "liblinear":
            raise ValueError(f"Solver {self.solver} supports only dual=False, got dual=True")
        if self.dual and self._l1_share() > 0:
            raise ValueError("dual=True is liblinear's dual formulation of the l2 penalty "
                             f"alone, got penalty={self.penalty!r}, l1_ratio={self.l1_ratio}")
        if self.penalty == "elasticnet" and self.l1_ratio is None:
            raise ValueError("penalty='elasticnet' needs l1_ratio (a number in [0, 1])")
        if self.n_jobs is not None:
            warnings.warn("'n_jobs' has no effect: the fit runs on dask_strads' engine, in this "
                          "process or on the Dask cluster (as in scikit-learn >= 1.8, which "
                          "removes the parameter in 1.10)", FutureWarning, stacklevel=3)

    def _penalties(self):
        """``(C, l1, l2)`` of the program's objective ``C loss + l1 ||w||_1 + l2/2 ||w||^2``:
        with no penalty (``penalty=None`` or ``C=inf``), the loss alone. Warns as scikit-learn
        does where ``penalty`` makes ``l1_ratio`` or ``C`` meaningless."""
        if (self.penalty not in ("auto", "elasticnet") and self.l1_ratio is not None
                and 0 < self.l1_ratio < 1):
            warnings.warn("l1_ratio parameter is only used when penalty is 'elasticnet'. Got "
                          f"(penalty={self.penalty})")
        if ((self.penalty == "l2" and self.l1_ratio != 0)
                or (self.penalty == "l1" and self.l1_ratio != 1)):
            warnings.warn(f"Inconsistent values: penalty={self.penalty} with "
                          f"l1_ratio={self.l1_ratio}: penalty={self.penalty!r} decides; use "
                          "l1_ratio alone (with penalty='auto') to avoid this warning.")
        if self.penalty is None and self.C != 1.0:
            warnings.warn("Setting penalty=None will ignore the C and l1_ratio parameters")
        if self.penalty is None or np.isinf(self.C):
            return 1.0, 0.0, 0.0
        share = self._l1_share()
        return float(self.C), share, 1.0 - share

    def _l1_share(self):
        """The l1 share of the penalty: ``penalty="l1"`` or ``"l2"`` decides, else
        ``l1_ratio`` (None: 0)."""
        return {"l1": 1.0, "l2": 0.0}.get(self.penalty, float(self.l1_ratio or 0.0))

    def _initial_coef(self, n_features, classes):
        """``(coef, intercept)`` to start from: the last fit's with ``warm_start``, else 0."""
        rows = 1 if len(classes) == 2 else len(classes)
        if (self.warm_start and hasattr(self, "coef_") and self.coef_.shape == (rows, n_features)
                and np.array_equal(self.classes_, classes)):
            coef = self.coef_.toarray() if sp.issparse(self.coef_) else self.coef_
            return (np.array(coef, dtype=np.float64),
                    np.array(self.intercept_, dtype=np.float64))
        return np.zeros((rows, n_features)), np.zeros(rows)

    def _multinomial(self, classes):
        return len(classes) > 2 and self.multi_class != "ovr"

    def predict_proba(self, X: Any) -> np.ndarray:
        """Probability of each class: the softmax of the decisions of a multinomial model, else
        the logistic function of each decision (normalised over the classes for one-vs-rest)."""
        check_is_fitted(self)
        if self._multinomial(self.classes_):
            return softmax(self.decision_function(X))
        return self._predict_proba_lr(X)

    def predict_log_proba(self, X: Any) -> np.ndarray:
        return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _symmetric(coef, intercept, l1):
    """The multinomial model's coefficients and intercepts that sum to zero over the classes,
    as scikit-learn's: the same probabilities (a softmax is unchanged by a shift of all its
    inputs), and for the intercepts and the l2 penalty (``l1 == 0``) no larger an objective."""
    if l1 == 0:
        coef = coef - coef.mean(axis=0)
    return coef, intercept - intercept.mean()
