"""``dask_strads.LassoCV`` / ``ElasticNetCV``: alpha (and l1_ratio) chosen by cross-validation
over regularisation paths, then a refit on the whole data."""
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real
from typing import Any, Literal, TypeVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.model_selection import check_cv
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.metadata_routing import (MetadataRouter, MethodMapping, _raise_for_params,
                                            _routing_enabled, process_routing)

from ..engine.blocks import PlacedBlocks, place_blocks
from ..engine.progress import watched_search
from ..engine.runtime import default_cluster_size
from ..log import logger
from ..partition import block_edges
from ..programs.elastic_net import ElasticNetProgram, kernel_csc
from ..programs.elastic_net_path import ElasticNetPathProgram
from ..programs.lasso import make_raw_block
from .base import SHARED_CONSTRAINTS, DaskEstimatorMixin, NumberInterval, default_block_count
from .elastic_net import (SKLEARN_ONLY, ElasticNet, check_weights, gap_target, in_fitted_dtype,
                          iterations_run, not_converged, solution, zeros)
from .inputs import blocks_along, check_in_memory_design, gathered
from .paths import PATH_CONSTRAINTS, path_alphas, path_solutions, rounds_per_alpha

#: The shared parameters a CV estimator takes (a checkpoint directory or a callback would mix
#: the fits of every fold).
_SHARED = ("max_iter", "random_state", "keep_on_cluster", "checkpoint_interval", "progress")

_ElasticNetCVT = TypeVar("_ElasticNetCVT", bound="ElasticNetCV")


class ElasticNetCV(DaskEstimatorMixin, RegressorMixin, BaseEstimator):
    """Elastic net with alpha and l1_ratio chosen by cross-validation, as
    :class:`sklearn.linear_model.ElasticNetCV`.

    The data are placed on the workers once, in feature blocks of every row, for all the folds,
    l1_ratios and the refit. For each l1_ratio and fold, the path over the alpha grid is fitted
    in one engine run (each alpha started from the solution of the one before) on the fold's
    training rows, which the blocks select by a row mask (no copy of the data), and scored by
    the mean squared error on the fold's test rows. The alpha and l1_ratio of least mean error
    over the folds are refitted on the whole data by the working-set program of
    :class:`dask_strads.ElasticNet`, on the same blocks.

    Parameters
    ----------
    l1_ratio : float or list of floats
        The l1_ratios tried (an alpha grid is made for each).
    eps, fit_intercept, tol, cv, positive, random_state
        As in :class:`sklearn.linear_model.ElasticNetCV`; ``cv`` takes a count, a splitter
        (``KFold(...)``) or an iterable of (train, test) index pairs.
    alphas : int or array-like
        A count: that many alphas per l1_ratio from ``alpha_max`` (the smallest alpha whose
        solution on the whole data is zero) down to ``eps * alpha_max``, on a log scale. Else the
        grid itself.
    precompute, copy_X, selection
        scikit-learn's spellings, accepted and without effect (see
        :class:`dask_strads.ElasticNet`).
    verbose : bool or int
        As scikit-learn's, a line for each path (its fold and l1_ratio) as it starts and for
        the refit (the package's logger, INFO); by default none.
    max_iter : int
        Rounds per alpha at most, and of the refit.
    n_jobs : int or None
        Paths (folds, l1_ratios) fitted at the same time, each from a thread of this process;
        None: one per worker of the cluster (in this process: per core). A path spends much of
        a round in one task (the working set's solve, on one of its blocks' workers), so
        concurrent paths keep the other workers busy; data in one block are copied to the
        workers the paths in flight use, one path on each.
    n_blocks : int or None
        Feature blocks; None: one per ten million stored values of X (non-zeros, or entries of
        a dense X), at least one and at most one per worker.
    keep_on_cluster, checkpoint_interval
        As in :class:`dask_strads.ElasticNet`, for every fit.
    progress : bool or "plot"
        One progress bar (tqdm) for the whole search, moving on as each path (fold,
        l1_ratio) and the refit ends; its runs show none of their own. ``"plot"`` is the bar
        too. False (the default): nothing.

    Attributes
    ----------
    alpha_, l1_ratio_ : float
        The chosen penalty (``l1_ratio_``: ElasticNetCV only).
    alphas_ : array of shape (n_alphas,) or (n_l1_ratio, n_alphas)
        The grid (one row per l1_ratio when the grid was made from a count and several l1_ratios
        were given).
    mse_path_ : array of shape (n_l1_ratio, n_alphas, n_folds)
        Test mean squared errors (the l1_ratio axis dropped when there is one).
    coef_, intercept_, dual_gap_, n_iter_, n_features_in_
        Of the refit on the whole data.
    """

    _parameter_constraints = {
        **{name: SHARED_CONSTRAINTS[name] for name in _SHARED},
        **PATH_CONSTRAINTS,
        "l1_ratio": [NumberInterval(Real, 0, 1, closed="both"), "array-like"],
        "fit_intercept": ["boolean"],
        "cv": ["cv_object"],
        "n_jobs": [NumberInterval(Integral, 1, None, closed="left"), None],
        **SKLEARN_ONLY,
        "verbose": ["verbose"],
    }

    def __init__(self, *, l1_ratio: float | ArrayLike = 0.5, eps: float = 1e-3,
                 fit_intercept: bool = True, tol: float = 1e-4, cv: Any = None,
                 positive: bool = False, random_state: int | np.random.RandomState | None = None,
                 alphas: int | ArrayLike = 100,
                 precompute: bool | Literal["auto"] | ArrayLike = "auto", copy_X: bool = True,
                 selection: Literal["cyclic", "random"] = "cyclic",
                 verbose: bool | int = 0, max_iter: int = 1000, n_jobs: int | None = None,
                 n_blocks: int | None = None, keep_on_cluster: bool = False,
                 checkpoint_interval: int = 10, progress: bool | Literal["plot"] = False) -> None:
        self.l1_ratio = l1_ratio
        self.eps = eps
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.precompute = precompute
        self.copy_X = copy_X
        self.verbose = verbose
        self.selection = selection
        self.max_iter = max_iter
        self.tol = tol
        self.cv = cv
        self.n_jobs = n_jobs
        self.positive = positive
        self.random_state = random_state
        self.n_blocks = n_blocks
        self.keep_on_cluster = keep_on_cluster
        self.checkpoint_interval = checkpoint_interval
        self.progress = progress

    predict = ElasticNet.predict
    _chooses_l1_ratio = True
    #: not parameters: every run of a fit (folds, l1_ratios, refit) would share them
    callback = checkpoint_dir = None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def fit(self: _ElasticNetCVT, X: Any, y: ArrayLike, sample_weight: ArrayLike | None = None,
            **params: Any) -> _ElasticNetCVT:
        """Cross-validate the paths on X (numpy, scipy.sparse, or a dask array, gathered into
        this process from the cluster it is on: the folds' errors are computed here) and y,
        then refit. ``sample_weight`` as for :meth:`ElasticNet.fit`, on every fold (the
        training rows' weights rescaled to sum to their count, the test errors averaged with
        the test rows' weights) and the refit, as scikit-learn. ``params`` are routed as
        scikit-learn's LinearModelCV routes them (``groups`` to the ``cv`` splitter's ``split``),
        which needs ``sklearn.set_config(enable_metadata_routing=True)``: without it any raises
        a ValueError."""
        _raise_for_params(params, self, "fit")
        self._check_params()
        given = X
        X, y = check_in_memory_design(*gathered((X, y), self._fit_executor), self)
        executor = self._fit_executor(_stored(X))
        weights = None if sample_weight is None else check_weights(sample_weight, X, executor)
        l1_ratios = self._l1_ratios()
        grids = [path_alphas(X, y, self.alphas, ratio, self.eps, self.fit_intercept,
                             self.positive, weights) for ratio in l1_ratios]
        split_params = (process_routing(self, "fit", sample_weight=sample_weight,
                                        **params).splitter.split
                        if _routing_enabled() else {})
        folds = [(np.sort(train), test)
                 for train, test in check_cv(self.cv).split(X, y, **split_params)]
        X = _placeable(X)
        y_mean = float(np.average(y, weights=weights)) if self.fit_intercept else 0.0
        y_centred = y - y_mean
        edges = block_edges(X.shape[1], self.n_blocks or default_block_count(
            _stored(X), len(executor.workers)))
        widths, sparse = np.diff(edges), sp.issparse(X)
        means = None if self.fit_intercept else zeros(X.shape[1])

        def make_block(columns, lo, hi):
            return make_raw_block(columns, y_centred, zeros(hi - lo),
                                  None if means is None else means[lo:hi], False)

        name, say = type(self).__name__, logger.info if self.verbose else logger.debug
        # placing on a cluster may take long enough to say so
        (logger.info if self.verbose or not executor.local else logger.debug)(
            "%s: placing %d feature blocks on the workers, once for every fold and the refit",
            name, len(widths))
        placed = PlacedBlocks.on(executor, blocks_along(X, edges, make_block, axis=1),
                                 prefix="strads-cv-data")
        paths = [(i, f) for i in range(len(l1_ratios)) for f in range(len(folds))]
        n_jobs = min(self.n_jobs or self._concurrent_paths(executor), len(paths))
        placements = _per_worker(placed, executor, n_jobs)

        def test_errors(k):
            i, f = paths[k]
            train, test = folds[f]
            say("%s: the path of %d alphas on fold %d of %d%s", name, len(grids[i]), f + 1,
                len(folds), f" (l1_ratio={l1_ratios[i]:g})" if len(l1_ratios) > 1 else "")
            train_weights = None if weights is None else _summing_to_count(weights[train])
            y_shift = (float(np.average(y_centred[train], weights=train_weights))
                       if self.fit_intercept else 0.0)
            y_fold = _scaled(y_centred[train] - y_shift, train_weights)
            program = ElasticNetPathProgram(
                widths, y_centred=y_fold, alphas=grids[i], l1_ratio=l1_ratios[i],
                positive=self.positive,
                gap_tolerance=gap_target(self.tol, y_fold),
                stage_rounds=rounds_per_alpha(self.max_iter), rows=train,
                seed=self._seed(), sparse=sparse, sample_weight=train_weights, dtype=X.dtype)
            result = self._run_engine(program, placements[k % len(placements)], executor,
                                      len(grids[i]) * program.stage_rounds + 1, (X, y),
                                      watched=False)
            coefs, _, _ = path_solutions(result.history, program, X.shape[1], grids[i])
            support = np.flatnonzero(coefs.any(axis=1))
            fitted = safe_sparse_dot(X[:, support], coefs[support], dense_output=True)
            intercepts = (y_mean + y_shift - np.average(fitted[train], axis=0,
                                                        weights=train_weights)
                          if self.fit_intercept else 0.0)
            errors = np.average((fitted[test] + intercepts - y[test][:, None]) ** 2, axis=0,
                                weights=None if weights is None else weights[test])
            ended()
            return errors

        with watched_search(self.progress, name, len(paths) + 1) as ended:
            with ThreadPoolExecutor(n_jobs) as pool:
                errors = list(pool.map(test_errors, range(len(paths))))
            mse = np.reshape(errors, (len(l1_ratios), len(folds), -1))
            mean_mse = mse.mean(axis=1)
            best = np.unravel_index(np.argmin(mean_mse), mean_mse.shape)  # the first least
            alpha, l1_ratio = grids[best[0]][best[1]], l1_ratios[best[0]]
            say("%s: the refit at alpha=%.3g on the whole data", name, alpha)
            y_refit = _scaled(y_centred, weights)
            refit = ElasticNetProgram(widths, y_centred=y_refit, alpha=alpha, l1_ratio=l1_ratio,
                                      positive=self.positive,
                                      gap_tolerance=gap_target(self.tol, y_refit),
                                      seed=self._seed(),
                                      sparse=sparse, sample_weight=weights, dtype=X.dtype)
            result = self._run_engine(refit, placed, executor,
                                      self.max_iter + refit.report_lag, (X, y), watched=False)
            ended()
        self._reset_features(given)
        self.alpha_ = float(alpha)
        if self._chooses_l1_ratio:
            self.l1_ratio_ = float(l1_ratio)
        self.alphas_ = (np.asarray(grids) if len(l1_ratios) > 1
                        and not np.ndim(self.alphas) else np.asarray(grids[0]))
        self.mse_path_ = np.squeeze(np.moveaxis(mse, 2, 1))
        self.coef_, self.intercept_, self.dual_gap_ = in_fitted_dtype(
            solution(self, result, X, means, y_mean, executor, weights), given,
            self.fit_intercept)
        self.n_iter_ = iterations_run(result.history, refit)
        self._executor = executor
        self._warn_unless_converged(result.history, f"The refit at alpha={alpha:.3e}: "
                                    + not_converged(self.max_iter, self.dual_gap_,
                                                    refit.stop_rule.tolerance))
        return self

    def get_metadata_routing(self) -> MetadataRouter:
        """The metadata routing of the fit, as scikit-learn's LinearModelCV: its own
        ``sample_weight`` and the ``cv`` splitter's ``split`` (``groups``)."""
        return (MetadataRouter(owner=self).add_self_request(self)
                .add(splitter=check_cv(self.cv),
                     method_mapping=MethodMapping().add(caller="fit", callee="split")))

    @staticmethod
    def _concurrent_paths(executor):
        """One path per worker of the cluster a fit runs on; in this process, one per core."""
        return default_cluster_size() if executor.local else len(executor.workers)

    def _l1_ratios(self):
        ratios = np.atleast_1d(np.asarray(self.l1_ratio, dtype=np.float64))
        if ratios.ndim != 1 or len(ratios) == 0 or not ((ratios >= 0) & (ratios <= 1)).all():
            raise ValueError(f"l1_ratio must be a number or a non-empty list of numbers in "
                             f"[0, 1], got {self.l1_ratio!r}")
        return ratios


class LassoCV(ElasticNetCV):
    """Lasso with alpha chosen by cross-validation, as :class:`sklearn.linear_model.LassoCV`:
    :class:`ElasticNetCV` with ``l1_ratio=1``, whose documentation describes the parameters and
    attributes (it has no ``l1_ratio_``)."""

    _chooses_l1_ratio = False

    _parameter_constraints = {name: constraint for name, constraint
                              in ElasticNetCV._parameter_constraints.items()
                              if name != "l1_ratio"}

    def __init__(self, *, eps: float = 1e-3, fit_intercept: bool = True, tol: float = 1e-4,
                 cv: Any = None, positive: bool = False,
                 random_state: int | np.random.RandomState | None = None,
                 alphas: int | ArrayLike = 100,
                 precompute: bool | Literal["auto"] | ArrayLike = "auto", copy_X: bool = True,
                 selection: Literal["cyclic", "random"] = "cyclic",
                 verbose: bool | int = False, max_iter: int = 1000, n_jobs: int | None = None,
                 n_blocks: int | None = None, keep_on_cluster: bool = False,
                 checkpoint_interval: int = 10, progress: bool | Literal["plot"] = False) -> None:
        super().__init__(l1_ratio=1.0, eps=eps, alphas=alphas, fit_intercept=fit_intercept,
                         precompute=precompute, max_iter=max_iter, tol=tol, cv=cv,
                         copy_X=copy_X, verbose=verbose, n_jobs=n_jobs, positive=positive,
                         random_state=random_state, selection=selection, n_blocks=n_blocks,
                         keep_on_cluster=keep_on_cluster,
                         checkpoint_interval=checkpoint_interval, progress=progress)


def _summing_to_count(weights):
    """``weights`` rescaled to sum to their count (the samples they weigh)."""
    return weights * (len(weights) / weights.sum())


def _scaled(y_centred, weights):
    """The target a weighted program fits: ``sqrt(weights) y_centred`` (``y_centred`` for
    None)."""
    return y_centred if weights is None else np.sqrt(weights) * y_centred


def _per_worker(placed, executor, n_paths):
    """Where the paths run: ``placed``, and when it is one block on a cluster and several paths
    run at once, a copy of it on as many other workers as they can use. A path's solve (its
    pull) runs on one of its blocks' workers: paths on one block would all queue there."""
    if executor.local or len(placed) > 1 or n_paths < 2:
        return [placed]
    others = [w for w in executor.workers if w != placed.owners[0]][:n_paths - 1]
    if others:
        logger.info("placing a copy of the data on %d more workers, one path on each",
                    len(others))
    copies = [place_blocks(executor.client, placed.blocks, [worker], prefix="strads-cv-data")[0]
              for worker in others]
    return [placed] + [PlacedBlocks([c.future], [c.worker], placed.blocks) for c in copies]


def _stored(X):
    return X.nnz if sp.issparse(X) else X.size


def _placeable(X):
    """X as the blocks of every fold read it without copies: a Fortran array, or a CSC matrix
    in canonical format with the kernels' index types (see ``kernel_csc``), whose column
    blocks are views."""
    if not sp.issparse(X):
        return np.asfortranarray(X)
    X = X.tocsc(copy=True)
    X.sum_duplicates()
    placeable = sp.csc_matrix(X.shape, dtype=X.dtype)
    # set, not passed to the constructor, which would give both arrays one type
    placeable.indptr, placeable.indices, placeable.data = kernel_csc(X.indptr, X.indices, X.data,
                                                                     X.shape[0])
    placeable.has_canonical_format = True
    return placeable
