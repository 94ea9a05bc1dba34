"""``dask_strads.ElasticNet``: scikit-learn's ElasticNet, fitted by a STRADS program on Dask."""
import os
import warnings
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, Final, Literal, TypeVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ..kernels.elastic_net import dot
from ..partition import block_edges
from ..programs.elastic_net import ElasticNetProgram
from ..programs.lasso import SCHEDULES, LassoProgram, make_raw_block
from .base import (SHARED_CONSTRAINTS, DaskEstimatorMixin, NumberInterval,
                   default_block_count)
from .inputs import (KEPT_FLOATS, DaskArray, blocks_along, check_dask_design,
                     check_dask_matrix, check_finite_block, check_in_memory_design, column_means,
                     fitted_dtype, is_dask_array, is_sparse, to_scipy_if_pydata)
from .sampling_schedule import SamplingSchedule

#: The default schedule; the others are the STRADS sampling schedules (Lasso only).
WORKING_SET: Final = "working_set"
#: scikit-learn's parameters that change nothing here (see the class docstring).
SKLEARN_ONLY = {"precompute": ["boolean", StrOptions({"auto"}), "array-like"],
                "copy_X": ["boolean"], "selection": [StrOptions({"cyclic", "random"})]}

_ElasticNetT = TypeVar("_ElasticNetT", bound="ElasticNet")


class ElasticNet(DaskEstimatorMixin, RegressorMixin, BaseEstimator):
    """Elastic net by model-parallel coordinate descent with STRADS scheduling.

    Minimises ``(1 / (2 n)) ||y - Xw - b||^2 + alpha l1_ratio ||w||_1
    + alpha (1 - l1_ratio) / 2 ||w||^2``, the objective of
    :class:`sklearn.linear_model.ElasticNet`, with the same meaning of ``tol`` (stop when the
    duality gap is at most ``tol * ||y - mean(y)||^2 / n``).

    The features are split into ``n_blocks`` blocks pinned to the workers (default: one per ten
    million stored values, at most one per worker). With the default
    ``schedule="working_set"`` every round makes one full pass over each block in parallel
    (duality gap, gap-safe screening, each feature's violation of the optimality conditions) and
    solves the most violating features of all blocks jointly, by
    coordinate descent with Anderson extrapolation, on one worker. A
    :class:`~dask_strads.SamplingSchedule` (or ``"priority"``, ``"cyclic"``, ``"random"``: one
    with its defaults) runs the STRADS sub-rounds of the paper instead (Lasso only): sample
    coordinates, drop those correlated with another kept one, update the rest in parallel.

    float32 data (numpy, scipy.sparse or dask) stay float32 on the workers, half the memory of
    their values, with every schedule: the kernels read them as float32 and compute in float64
    (the residual, coefficients and sums); any other dtype is fitted as float64.

    Parameters
    ----------
    alpha, l1_ratio, fit_intercept, max_iter, tol, warm_start, positive, random_state
        As in :class:`sklearn.linear_model.ElasticNet`; ``max_iter`` counts rounds that update
        the coefficients (a fit runs one more, which measures where they got).
    precompute, copy_X, selection
        scikit-learn's spellings, accepted and without effect on the result: the working set
        computes the products it needs from the blocks (no Gram matrix), X is never modified,
        and the order of the coordinates is the solver's.
    schedule : "working_set", SamplingSchedule or {"priority", "cyclic", "random"}
        The working-set solver, or a STRADS sampling schedule (dynamic priority and its
        ablations, with their settings: :class:`~dask_strads.SamplingSchedule`; a name is that
        schedule with its defaults), which needs ``l1_ratio=1``.
    n_blocks : int or None
        Feature blocks; None: one per ten million stored values of X (non-zeros, or entries of
        a dense X), at least one and at most one per worker; a dask array X: one per worker.
        At most one per feature.
    keep_on_cluster : bool
        Keep ``coef_`` as a Dask array whose chunks stay on the workers instead of gathering it.
    checkpoint_interval : int
        On a cluster, copy the blocks' state every this many iterations, ``max_iter``'s unit
        (rounds for the linear models; an iteration's rounds for LDA, the factorizations and
        BPR), in the workers' memory with a replica on another worker, so that the fit goes on
        from there when a worker is lost; 0 turns it off (a lost worker then stops the fit with
        a ``ClusterError``). Fused epochs take their checkpoints inside, except with
        ``checkpoint_dir`` and for LDA and BPR, whose epochs end at them.
    checkpoint_dir : str, path or None
        Also write the checkpoints to this directory (without pickle; on a cluster it must be
        reachable by the workers). A fit of the same data, hyperparameters (``max_iter`` aside)
        and ``random_state`` finding a complete checkpoint there resumes from it
        (``history_.stats.resumed_from``); another fit's checkpoint raises a ValueError.
    progress : bool or "plot"
        Show a progress bar (tqdm): the way from the first duality gap to ``tol``, on a log
        scale; ``"plot"`` redraws a convergence plot in Jupyter (a bar elsewhere).
    callback : callable or None
        Called with each round's record (a dict); returning True stops the fit at that round.
        On a cluster the fit then runs a graph a round, unless the callback has an attribute
        ``round_graphs = False`` (it only watches: its stop may come rounds later).

    Attributes
    ----------
    coef_, intercept_, n_iter_, dual_gap_, n_features_in_, sparse_coef_
        As in sklearn (float32 for float32 X; a 2-D y gives one row of ``coef_`` per target,
        each target fitted on its own). ``n_iter_`` has scikit-learn's meaning, the iterations
        whose updates ``coef_`` includes: the rounds but the last, which measures the duality
        gap of the state the others reached (0 for a warm start at the solution). ``dual_gap_``
        bounds the objective's distance to its minimum from above. With ``alpha=0`` (least
        squares, which has no dual) it is that distance, from the least-squares solution of the
        features' columns gathered on one worker (as dense arrays): the working set then solves
        least squares exactly (non-negative least squares with ``positive``).
    n_blocks_ : int
        The feature blocks the fit used.
    history_ : dask_strads.engine.History
        One record per round up to the stop (round, time, objective, gap, working-set size,
        features screened out, ...) and ``history_.stats`` (the rounds run, with the working-set
        schedule the few submitted behind the stop too; wall and compute seconds, overhead
        share).

    The client is not a parameter: set ``est.client = client`` (it is not pickled or cloned).
    """

    _parameter_constraints = {
        **SHARED_CONSTRAINTS,
        "alpha": [NumberInterval(Real, 0, None, closed="left")],
        "l1_ratio": [NumberInterval(Real, 0, 1, closed="both")],
        "fit_intercept": ["boolean"],
        "tol": [NumberInterval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "positive": ["boolean"],
        "schedule": [StrOptions({WORKING_SET, *SCHEDULES}), SamplingSchedule],
        "n_blocks": [NumberInterval(Integral, 1, None, closed="left"), None],
        **SKLEARN_ONLY,
    }

    def __init__(self, alpha: float = 1.0, *, l1_ratio: float = 0.5, fit_intercept: bool = True,
                 max_iter: int = 1000, tol: float = 1e-4, warm_start: bool = False,
                 positive: bool = False, random_state: int | np.random.RandomState | None = None,
                 precompute: bool | Literal["auto"] | ArrayLike = False, copy_X: bool = True,
                 selection: Literal["cyclic", "random"] = "cyclic",
                 schedule: Literal["working_set", "priority", "cyclic", "random"]
                 | SamplingSchedule = WORKING_SET, n_blocks: int | None = None,
                 keep_on_cluster: bool = False, checkpoint_interval: int = 10,
                 checkpoint_dir: str | os.PathLike | None = None,
                 progress: bool | Literal["plot"] = False,
                 callback: Callable[..., Any] | None = None) -> None:
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.precompute = precompute
        self.copy_X = copy_X
        self.selection = selection
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.positive = positive
        self.random_state = random_state
        self.schedule = schedule
        self.n_blocks = n_blocks
        self.keep_on_cluster = keep_on_cluster
        self.checkpoint_interval = checkpoint_interval
        self.checkpoint_dir = checkpoint_dir
        self.progress = progress
        self.callback = callback

    def _check_params(self):
        super()._check_params()
        sampling = self._sampling()
        if sampling is not None and self.l1_ratio != 1:
            raise ValueError(f"schedule={self.schedule!r} samples Lasso coordinates and needs "
                             f"l1_ratio=1, got l1_ratio={self.l1_ratio!r}; use "
                             f"schedule={WORKING_SET!r}")
        if sampling is not None and self.alpha == 0:
            raise ValueError(f"schedule={self.schedule!r} has no stopping test for alpha=0 "
                             f"(least squares): use schedule={WORKING_SET!r}, or "
                             "sklearn.linear_model.LinearRegression")

    def _sampling(self):
        """The sampling schedule of ``schedule``; None: the working set."""
        if self.schedule == WORKING_SET:
            return None
        if isinstance(self.schedule, SamplingSchedule):
            return self.schedule
        return SamplingSchedule(self.schedule)

    def fit(self: _ElasticNetT, X: Any, y: ArrayLike, sample_weight: ArrayLike | None = None,
            check_input: bool = True) -> _ElasticNetT:
        """Fit on X (numpy, scipy.sparse, pydata sparse or dask array) and y.

        ``sample_weight``: a weight per sample (or one number for all), as in scikit-learn:
        they are rescaled to sum to the number of samples, and the objective's squared
        errors weighted by them, ``(1 / (2 sum(s))) sum_i s_i (y_i - x_i w - b)^2``; integer
        weights give the fit of the data with each row repeated that many times. The
        working-set schedule only. ``check_input`` is accepted for scikit-learn's signature;
        the inputs are always checked."""
        self._check_params()
        if not is_dask_array(y) and np.asarray(y).ndim == 2:
            return self._fit_each_target(X, y, sample_weight)
        sampling = self._sampling()
        if sample_weight is not None and sampling is not None:
            raise ValueError(f"sample_weight needs schedule={WORKING_SET!r}, got "
                             f"schedule={self.schedule!r}")
        if self.alpha == 0:
            warnings.warn("With alpha=0 the fit is least squares, solved exactly on one "
                          "worker from a dense copy of the features' columns: you are advised "
                          "to use the LinearRegression estimator", UserWarning, stacklevel=2)
        given = X
        # the working set centres implicitly, each block by its own column means on its worker:
        # no copy of a dense X, no means on the client
        centre_dense = self.fit_intercept and sampling is not None
        if is_dask_array(X):
            X, means, y, executor = check_dask_design(X, y, self._fit_executor, self._client,
                                                      floats=KEPT_FLOATS)
            stored = None
        else:
            X, y = check_in_memory_design(X, y, self)
            means = column_means(X) if centre_dense else None
            stored = X.nnz if sp.issparse(X) else X.size
            executor = self._fit_executor(stored)
        weights = None if sample_weight is None else check_weights(sample_weight, X, executor)
        n_features = X.shape[1]
        if not self.fit_intercept:
            means = zeros(n_features)
        elif weights is not None:
            means = None  # each block centres by its weighted means
        y_mean = float(np.average(y, weights=weights)) if self.fit_intercept else 0.0
        y_centred = y - y_mean if weights is None else np.sqrt(weights) * (y - y_mean)
        coef_init = self._initial_coef(n_features)

        edges = block_edges(n_features, self.n_blocks or default_block_count(
            stored, len(executor.workers)))

        def make_block(columns, lo, hi):
            return make_raw_block(columns, y_centred, coef_init[lo:hi],
                                  None if means is None else means[lo:hi], centre_dense)

        gap_tolerance = gap_target(self.tol, y_centred)
        program = self._program(np.diff(edges), y_centred, gap_tolerance, is_sparse(X), weights,
                                X.dtype)
        result = self._run_engine(program, blocks_along(X, edges, make_block, axis=1), executor,
                                  self.max_iter + program.report_lag, (X, y, coef_init),
                                  staleness=0 if sampling is None else sampling.staleness)
        history = result.history
        self._reset_features(given)
        self.coef_, self.intercept_, self.dual_gap_ = in_fitted_dtype(
            solution(self, result, X, means, y_mean, executor, weights), given,
            self.fit_intercept)
        self.n_iter_ = iterations_run(history, program)
        self.n_blocks_ = len(edges) - 1
        self.history_ = history
        self._executor = executor
        self._warn_unless_converged(history, not_converged(self.max_iter, self.dual_gap_,
                                                           gap_tolerance))
        return self

    def _fit_each_target(self, X, Y, sample_weight):
        """A fit of each column of a 2-D ``Y`` (scikit-learn's multi-output elastic net: the
        targets are independent problems), on clones of this estimator."""
        X, Y = check_in_memory_design(X, Y, self, multi_output=True)
        previous = getattr(self, "coef_", None) if self.warm_start else None
        fits = []
        for k in range(Y.shape[1]):
            fit = clone(self)
            fit.client = self._client
            if previous is not None and np.shape(previous) == (Y.shape[1], X.shape[1]):
                fit.coef_ = np.asarray(self._in_memory(previous))[k]
            fits.append(fit.fit(X, Y[:, k], sample_weight))
        self._reset_features(X)
        coef = np.array([np.asarray(f._in_memory(f.coef_)) for f in fits])
        self.coef_ = coef[0] if len(fits) == 1 else coef
        self.intercept_ = np.array([f.intercept_ for f in fits])
        gaps = np.array([f.dual_gap_ for f in fits])
        self.dual_gap_ = gaps[0] if len(fits) == 1 else gaps
        iterations = [f.n_iter_ for f in fits]
        self.n_iter_ = iterations[0] if len(fits) == 1 else iterations
        self.n_blocks_ = fits[-1].n_blocks_
        self.history_ = [f.history_ for f in fits]
        self._executor = fits[-1]._executor
        return self

    @property
    def sparse_coef_(self) -> sp.csr_matrix:
        """``coef_`` as a scipy CSR matrix (one row per target)."""
        return sp.csr_matrix(np.atleast_2d(self._in_memory(self.coef_)))

    def _program(self, widths, y_centred, gap_tolerance, sparse, weights=None,
                 dtype=np.float64):
        sampling = self._sampling()
        if sampling is None:
            return ElasticNetProgram(widths, y_centred=y_centred, alpha=self.alpha,
                                     l1_ratio=self.l1_ratio, positive=self.positive,
                                     gap_tolerance=gap_tolerance, seed=self._seed(), sparse=sparse,
                                     sample_weight=weights, dtype=dtype)
        return LassoProgram(
            widths, y_centred=y_centred, alpha=self.alpha, positive=self.positive,
            gap_tolerance=gap_tolerance, schedule=sampling.kind,
            n_candidates=sampling.n_candidates, sub_rounds=sampling.sub_rounds,
            rho=sampling.dependency_threshold, eta=sampling.priority_floor,
            power=sampling.priority_power, staleness=sampling.staleness, seed=self._seed(),
            sparse=sparse, dtype=dtype)

    def _initial_coef(self, n_features):
        if self.warm_start and hasattr(self, "coef_"):
            coef = np.asarray(self._in_memory(self.coef_))
            if coef.shape == (n_features,):
                return coef.astype(np.float64)
        return zeros(n_features)

    def predict(self, X: Any) -> np.ndarray | DaskArray:
        """Predictions ``X @ coef_ + intercept_``; lazy for a dask array X."""
        return linear_predictor(self, X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        return tags


def gap_target(tol, y_centred):
    """The duality gap (divided by n) a fit stops at: ``tol`` in scikit-learn's meaning, a
    fraction of ``||y||^2 / n``."""
    return tol * dot(y_centred, y_centred) / len(y_centred)


def iterations_run(history, program):
    """scikit-learn's ``n_iter_``: the rounds whose updates the fitted coefficients include, at
    most ``max_iter``. A fit runs up to ``max_iter + program.report_lag`` rounds: the report of
    a round measures the state before its updates (the first, the starting point: a warm start
    at the solution stops there, with 0), so the last ``report_lag`` rounds only measure."""
    return max(0, rounds_to_stop(history) - program.report_lag)


def not_converged(max_iter, gap, tolerance):
    """The ConvergenceWarning's message of an elastic-net fit, in scikit-learn's words."""
    return (f"Objective did not converge. You might want to increase the number of iterations "
            f"(max_iter={max_iter} rounds). Duality gap: {gap:.3e}, tolerance: "
            f"{tolerance:.3e}")


def rounds_to_stop(history):
    """The rounds up to the stop; ``history`` loses the records of the rounds submitted behind
    it, which change nothing (the working-set program updates in place and stops exactly)."""
    kept = [r for r in history.records if not r.get("after_stop")]
    behind = len(history.records) - len(kept)
    history.records[:] = kept
    return history.stats.rounds - behind


def zeros(n):
    """``n`` zeros as a read-only view of one: what a block of them is sent to a worker as (Dask
    sends an array broadcast along an axis as its one value; ``np.zeros`` would travel, and stay
    on the worker until the block is prepared, 8 bytes a feature)."""
    return np.broadcast_to(np.float64(0.0), (n,))


def check_weights(sample_weight, X, executor):
    """Sample weights as scikit-learn checks them (one number for all, or one per sample,
    finite and non-negative, not all zero), in memory, scaled to sum to the samples."""
    if is_dask_array(sample_weight):
        sample_weight = np.asarray(executor.compute(sample_weight)[0])
    weights = _check_sample_weight(sample_weight, np.empty((X.shape[0], 0)), dtype=np.float64,
                                   ensure_non_negative=True)
    total = weights.sum()
    if total <= 0:
        raise ValueError("sample_weight must not be all zero")
    return weights * (len(weights) / total)


def in_fitted_dtype(solved, given, fit_intercept):
    """``(coef, intercept, dual gap)`` in the dtype scikit-learn's linear models give them for
    the data ``given``: float32 for float32 X (the fit computes in float64), else float64; the
    intercept a Python 0.0 without one."""
    dtype = fitted_dtype(given)
    coef, intercept, gap = solved
    return (coef.astype(dtype, copy=False), dtype(intercept) if fit_intercept else intercept,
            dtype(gap))


def solution(estimator, result, X, means, y_mean, executor, weights=None):
    """``(coef, intercept, dual gap)`` of an engine run of the elastic-net program."""
    coef = estimator._parameters(result)
    gaps = [r["gap"] for r in result.history if "gap" in r]
    return (coef, y_mean - _means_dot(X, means, coef, executor, weights),
            gaps[-1] if gaps else np.inf)


def _means_dot(X, means, coef, executor, weights=None):
    """``column means . coef``; with ``means`` None (the blocks centred by their own, weighted
    by ``weights`` if given), from the means of the non-zero columns, or of every column when
    ``coef`` stays on the cluster."""
    if is_dask_array(coef):
        means = _column_means(X, weights, executor) if means is None else means
        return float(executor.compute(np.dot(means, coef))[0])
    if means is None and is_dask_array(X):  # every column: pydata sparse's slicing compiles
        means = _column_means(X, weights, executor)
    if means is None:
        nonzero = np.flatnonzero(coef)
        return dot(_column_means(X[:, nonzero], weights, executor), coef[nonzero])
    return dot(means, coef)


def _column_means(X, weights, executor):
    """X's column means, weighted by ``weights`` (summing to the rows) if given."""
    if weights is None:
        return column_means(X)
    if is_dask_array(X):  # chunk by chunk as scipy matrices (pydata sparse's dot compiles)
        import dask.array as da

        column = da.from_array(weights[:, None], chunks=(X.chunks[0], 1))
        sums = X.map_blocks(_weighted_column_sums, column, dtype=np.float64,
                            chunks=((1,) * X.numblocks[0], X.chunks[1]))
        return np.asarray(executor.compute(sums.sum(axis=0))[0]).ravel() / len(weights)
    return np.asarray(safe_sparse_dot(weights, X)).ravel() / len(weights)


def _weighted_column_sums(block, weights):
    return np.asarray(to_scipy_if_pydata(block).T @ weights.ravel()).reshape(1, -1)


def linear_predictor(estimator, X):
    """``X @ coef_ + intercept_`` of a fitted regressor; lazy for a dask array X."""
    check_is_fitted(estimator)
    if is_dask_array(X):
        X = check_dask_matrix(X, estimator, estimator.n_features_in_)
        return X.rechunk({1: -1}).map_blocks(
            _predict_block, estimator.coef_, estimator.intercept_, drop_axis=1,
            dtype=np.result_type(X.dtype, estimator.coef_.dtype, estimator.intercept_))
    X = validate_data(estimator, to_scipy_if_pydata(X), accept_sparse=["csr", "csc"],
                      reset=False, dtype=list(KEPT_FLOATS))
    coef = np.asarray(estimator._in_memory(estimator.coef_))
    if coef.ndim == 2:  # several targets
        return safe_sparse_dot(X, coef.T, dense_output=True) + estimator.intercept_
    return safe_sparse_dot(X, coef, dense_output=True).ravel() + estimator.intercept_


def _predict_block(X_block, coef, intercept):
    X_block = to_scipy_if_pydata(check_finite_block(X_block))
    if sp.issparse(X_block):
        return np.asarray(X_block @ coef).ravel() + intercept
    return np.asarray(X_block) @ coef + intercept
