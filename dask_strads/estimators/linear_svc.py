"""``dask_strads.LinearSVC``: scikit-learn's linear SVM (liblinear's objective), fitted by the
STRADS SVM dual program over sample blocks or the prox-Newton program over feature blocks."""
import os
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.linear_model._base import LinearClassifierMixin, SparseCoefMixin
from sklearn.utils._param_validation import StrOptions

from ..partition import block_edges
from ..programs.datafits import Hinge, SquaredHinge
from ..programs.penalties import Penalty
from ..programs.prox_newton import ProxNewtonProgram, make_raw_block
from ..programs.svm_dual import SVMDualProgram
from .base import SHARED_CONSTRAINTS, DaskEstimatorMixin, NumberInterval, default_block_count
from .elastic_net import rounds_to_stop
from .inputs import blocks_along, is_sparse, one_vs_rest_signs
from .linear_classifiers import (checked_classification_data, convergence_message,
                                 liblinear_weights, with_constant_column,
                                 without_constant_column)

_CONSTRAINTS = {key: SHARED_CONSTRAINTS[key] for key in
                ("max_iter", "random_state", "checkpoint_interval", "checkpoint_dir", "progress",
                 "callback")}

#: The datafits by the name ``loss`` gives them.
LOSSES = {datafit.name: datafit for datafit in (Hinge, SquaredHinge)}

#: The formulations liblinear solves, as scikit-learn's ``_get_liblinear_solver_type``: for
#: each loss and penalty, the values of ``dual`` it takes.
FORMULATIONS = {"hinge": {"l2": (True,)}, "squared_hinge": {"l1": (False,), "l2": (False, True)}}


class LinearSVC(DaskEstimatorMixin, SparseCoefMixin, LinearClassifierMixin, BaseEstimator):
    """Linear support vector classification, model-parallel on Dask.

    Minimises liblinear's objective, as :class:`sklearn.svm.LinearSVC`, for each class against
    the rest (one problem for two classes):
    ``1/2 ||w||^2 + C sum_i s_i loss(y_i z_i)`` (``penalty="l2"``) or
    ``||w||_1 + C sum_i s_i loss(y_i z_i)`` (``penalty="l1"``), ``z_i = x_i w + b``,
    ``loss(m) = max(0, 1 - m)^2`` (``"squared_hinge"``) or ``max(0, 1 - m)`` (``"hinge"``), with
    ``s_i`` the sample's weight (``sample_weight`` times its class's ``class_weight`` as
    liblinear weighs them: for more than two classes, only in its own class's problem). As in
    liblinear the intercept ``b`` is the weight of an extra feature of value
    ``intercept_scaling``, penalised as the others.

    Two programs, as liblinear's two formulations (``dual``):

    - the dual (l2 penalty; liblinear's dual coordinate descent): the samples are split into
      ``n_blocks`` blocks; every round each block runs dual coordinate descent on its samples
      against the weights it was sent, and the blocks' changes of the weights are combined
      with the factors that minimise the dual objective. It stops when the duality gap is at
      most ``tol`` times the primal objective.
    - the primal (squared hinge, l1 or l2 penalty; liblinear's primal Newton solvers): the
      features are split into ``n_blocks`` blocks, each running prox-Newton steps on a working
      set of its coordinates, as :class:`dask_strads.LogisticRegression`. It stops when no
      coefficient violates its optimality condition by more than ``tol`` times the largest
      feature gradient at ``w = 0``.

    Parameters
    ----------
    penalty : {"l2", "l1"}
    loss : {"squared_hinge", "hinge"}
        ``"hinge"`` takes the l2 penalty only, as in scikit-learn.
    dual : "auto" or bool
        True: the dual program; False: the primal one (scikit-learn's combinations: the hinge
        has only a dual, the l1 penalty only a primal). ``"auto"``: the dual when the loss and
        penalty have one, the fit runs one block and X is sparse or has fewer samples than
        features, else the primal. scikit-learn's "auto" looks at the shape only; our dual
        program is the faster on sparse data of more samples than features as well, and its
        sample blocks interfere more than the primal's feature blocks (docs/linear_svc.md).
    tol : float
        The stopping tolerance: the relative duality gap (dual) or relative violation
        (primal), see above.
    C : float
        Inverse of the regularisation strength, as in scikit-learn.
    multi_class : {"ovr"}
        One-vs-rest; ``"crammer_singer"`` (scikit-learn's joint multiclass objective) is refused.
    fit_intercept : bool
    intercept_scaling : float
        The value of the extra feature whose penalised weight times it is the intercept.
    class_weight : dict, "balanced" or None
        Weights of the classes (their labels as keys) multiplying the samples' weights, as in
        scikit-learn; ``"balanced"``: the samples' total weight over ``n_classes`` times the
        class's.
    verbose : int
        scikit-learn's spelling, without effect (``progress`` shows a fit's progress).
    random_state : int, RandomState instance or None
        Seeds the dual program's orders of the samples (as scikit-learn's dual solvers); the
        primal program draws nothing.
    max_iter : int
        Rounds at most.
    n_blocks : int or None
        Sample blocks (dual) or feature blocks (primal); None: one per ten million stored values
        of X, at most one per worker. Blocks updated in the same round interfere, so more blocks
        take more rounds: they pay when a round's work, not its latency, dominates.
    checkpoint_interval, checkpoint_dir, progress, callback
        As for :class:`dask_strads.Lasso`.

    Attributes
    ----------
    classes_, coef_, intercept_, n_features_in_
        As in scikit-learn: ``coef_`` (float64) has shape ``(1, n_features)`` for two classes,
        ``(n_classes, n_features)`` otherwise; ``intercept_`` one value a row (zeros without
        ``fit_intercept``).
    n_iter_ : int
        Rounds up to the stop.
    history_ : dask_strads.engine.History
        One record per round (objective, duality gap or relative violation, step).

    The client is not a parameter: set ``est.client = client``.
    """

    _parameter_constraints = {
        **_CONSTRAINTS,
        "penalty": [StrOptions({"l1", "l2"})],
        "loss": [StrOptions({"hinge", "squared_hinge"})],
        "dual": ["boolean", StrOptions({"auto"})],
        "tol": [NumberInterval(Real, 0, None, closed="neither")],
        "C": [NumberInterval(Real, 0, None, closed="neither")],
        "multi_class": [StrOptions({"ovr", "crammer_singer"})],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [NumberInterval(Real, 0, None, closed="neither")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "verbose": ["verbose"],
        "n_blocks": [NumberInterval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, penalty: Literal["l1", "l2"] = "l2",
                 loss: Literal["hinge", "squared_hinge"] = "squared_hinge", *,
                 dual: bool | Literal["auto"] = "auto", tol: float = 1e-4, C: float = 1.0,
                 multi_class: Literal["ovr", "crammer_singer"] = "ovr",
                 fit_intercept: bool = True, intercept_scaling: float = 1,
                 class_weight: dict[Any, float] | Literal["balanced"] | None = None,
                 verbose: int = 0, random_state: int | np.random.RandomState | None = None,
                 max_iter: int = 1000, n_blocks: int | None = None,
                 checkpoint_interval: int = 10, checkpoint_dir: str | os.PathLike | None = None,
                 progress: bool | Literal["plot"] = False,
                 callback: Callable[..., Any] | None = None) -> None:
        self.penalty = penalty
        self.loss = loss
        self.dual = dual
        self.tol = tol
        self.C = C
        self.multi_class = multi_class
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.verbose = verbose
        self.random_state = random_state
        self.max_iter = max_iter
        self.n_blocks = n_blocks
        self.checkpoint_interval = checkpoint_interval
        self.checkpoint_dir = checkpoint_dir
        self.progress = progress
        self.callback = callback

    def fit(self, X: Any, y: ArrayLike, sample_weight: ArrayLike | None = None) -> "LinearSVC":
        """Fit on X (numpy, scipy.sparse, pydata sparse or dask array) and class labels y;
        ``sample_weight``: a weight per sample (or one number for all) multiplying its loss, as
        in scikit-learn."""
        self._check_params()
        given = X
        X, y, classes, stored, executor = checked_classification_data(self, X, y)
        weights = liblinear_weights(sample_weight, y, classes, self.class_weight)
        Y = one_vs_rest_signs(y, classes)
        if self.fit_intercept:
            X = with_constant_column(X, self.intercept_scaling)
        n_blocks = self.n_blocks or default_block_count(stored, len(executor.workers))
        if self._solves_dual(X, n_blocks):
            program = SVMDualProgram(n_blocks, datafit=LOSSES[self.loss](Y, self.C, weights),
                                     n_features=X.shape[1],
                                     tolerance=self.tol, seed=self._seed(), sparse=is_sparse(X))
            blocks = blocks_along(X, block_edges(X.shape[0], n_blocks), _rows_block, axis=0)
        else:
            l1 = 1.0 if self.penalty == "l1" else 0.0
            program = ProxNewtonProgram(n_blocks, datafit=SquaredHinge(Y, self.C, weights),
                                        penalty=Penalty(l1, 1.0 - l1), fit_intercept=False,
                                        tolerance=self.tol,
                                        sparse=is_sparse(X))
            edges = block_edges(X.shape[1], n_blocks)
            blocks = blocks_along(X, edges, _columns_block(Y.shape[1]), axis=1)
        result = self._run_engine(program, blocks, executor, self.max_iter, (X, y, weights))
        history = result.history
        coef, _ = program.coefficients(result.gather())
        self._reset_features(given)
        self.classes_ = classes
        if self.fit_intercept:
            coef, intercept = without_constant_column(coef, self.intercept_scaling)
        else:
            intercept = np.zeros(len(coef))
        self.coef_ = np.ascontiguousarray(coef, dtype=np.float64)
        self.intercept_ = intercept
        self.n_iter_ = rounds_to_stop(history)
        self.history_ = history
        self._executor = executor
        measure, label = (("gap", "duality gap") if isinstance(program, SVMDualProgram)
                          else ("violation", "violation"))
        self._warn_unless_converged(history, convergence_message(
            self, self.n_iter_, history, measure, label))
        return self

    def _check_params(self):
        super()._check_params()
        if self.multi_class == "crammer_singer":
            raise ValueError("multi_class='crammer_singer' (Crammer and Singer's joint "
                             "multiclass objective) is not supported: dask_strads.LinearSVC "
                             "fits one-vs-rest problems, multi_class='ovr'")
        penalties = FORMULATIONS[self.loss]
        if self.penalty not in penalties:
            problem = (f"The combination of penalty='{self.penalty}' and loss='{self.loss}' is "
                       "not supported")
        elif self.dual != "auto" and self.dual not in penalties[self.penalty]:
            problem = (f"The combination of penalty='{self.penalty}' and loss='{self.loss}' are "
                       f"not supported when dual={self.dual}")
        else:
            return
        raise ValueError(f"Unsupported set of arguments: {problem}, Parameters: "
                         f"penalty={self.penalty!r}, loss={self.loss!r}, dual={self.dual!r}")

    def _solves_dual(self, X, n_blocks):
        """Whether the fit runs the dual program (see ``dual`` in the class docstring)."""
        if self.dual != "auto":
            return bool(self.dual)
        if self.loss == "hinge" or self.penalty == "l1":
            return self.loss == "hinge"
        return n_blocks == 1 and (is_sparse(X) or X.shape[0] < X.shape[1])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _rows_block(rows, lo, hi):
    return {"X": rows, "rows": (lo, hi)}


def _columns_block(n_problems):
    def make_block(columns, lo, hi):
        return make_raw_block(columns, np.zeros((n_problems, hi - lo)))
    return make_block
