"""``dask_strads.lasso_path`` / ``enet_path``: scikit-learn's regularisation paths, each fitted in
one engine run: the data placed on the workers once for the whole path, every alpha started
from the solution of the one before."""
import warnings
from functools import partial
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_scalar
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.extmath import safe_sparse_dot

from ..engine.runtime import executor_for
from ..programs.elastic_net_path import ElasticNetPathProgram
from .base import NumberInterval
from .elastic_net import ElasticNet
from .inputs import check_in_memory_design, column_means, gathered

#: The parameters of a path, checked alike by the path functions and the CV estimators.
PATH_CONSTRAINTS = {
    "eps": [Interval(Real, 0, None, closed="neither")],
    "alphas": [NumberInterval(Integral, 1, None, closed="left"), "array-like"],
    "tol": [NumberInterval(Real, 0, None, closed="left")],
    "max_iter": [NumberInterval(Integral, 1, None, closed="left")],
    "positive": ["boolean"],
    "n_blocks": [NumberInterval(Integral, 1, None, closed="left"), None],
}


class _PathFit(ElasticNet):
    """An :class:`ElasticNet` fit whose program walks down ``path_alphas``, at most
    ``stage_rounds`` rounds each."""

    path_alphas = stage_rounds = path_program = None

    def _program(self, widths, y_centred, gap_tolerance, sparse, weights=None,
                 dtype=np.float64):
        self.path_program = ElasticNetPathProgram(
            widths, y_centred=y_centred, alphas=self.path_alphas, l1_ratio=self.l1_ratio,
            positive=self.positive, gap_tolerance=gap_tolerance,
            stage_rounds=self.stage_rounds, seed=self._seed(), sparse=sparse, sample_weight=weights,
            dtype=dtype)
        return self.path_program


#: scikit-learn's path keywords that change nothing here (see :func:`enet_path`).
PATH_SKLEARN_ONLY = {"precompute": ["boolean", StrOptions({"auto"}), "array-like"],
                     "Xy": ["array-like", None], "copy_X": ["boolean"], "verbose": ["verbose"],
                     "check_input": ["boolean"]}
#: scikit-learn 1.9's deprecated spellings of the paths' grid, accepted with its FutureWarnings
#: (removed in its 1.11): ``n_alphas`` for a count, ``alphas=None`` for 100.
PATH_DEPRECATED = {"n_alphas": [NumberInterval(Integral, 1, None, closed="left"),
                                StrOptions({"deprecated"})],
                   "alphas": [*PATH_CONSTRAINTS["alphas"], None]}


def undeprecated_alphas(alphas, n_alphas):
    """The grid (a count or the alphas) that scikit-learn's deprecated spellings mean, with its
    FutureWarnings."""
    if n_alphas != "deprecated":
        warnings.warn("'n_alphas' was deprecated in 1.9 and will be removed in 1.11 "
                      "(scikit-learn's versions, whose spellings the paths follow): pass the "
                      "count as 'alphas' and leave 'n_alphas' to its default to silence this "
                      "warning.",
                      FutureWarning, stacklevel=4)
        return n_alphas if alphas is None or isinstance(alphas, Integral) else alphas
    if alphas is None:
        warnings.warn("'alphas=None' is deprecated and will be removed in 1.11 (scikit-learn's "
                      "versions): it means alphas=100; set 'alphas=100' to silence this warning.",
                      FutureWarning, stacklevel=4)
        return 100
    return alphas


def alpha_grid(X, y, l1_ratio, eps, n_alphas, fit_intercept, positive, weights=None):
    """scikit-learn's automatic grid: ``n_alphas`` alphas spaced evenly on a log scale from
    ``alpha_max``, the smallest alpha whose solution is zero (under sample ``weights`` summing
    to the samples, if given), down to ``eps * alpha_max``."""
    if l1_ratio == 0:  # no alpha makes the solution zero: no alpha_max
        raise ValueError("Automatic alpha grid generation is not supported for l1_ratio=0. "
                         "Please supply a grid by providing your estimator with the "
                         "appropriate `alphas=` argument.")
    if fit_intercept:
        y = y - np.average(y, weights=weights)
    weighted_y = y if weights is None else weights * y
    X_dot_y = np.asarray(safe_sparse_dot(X.T, weighted_y)).ravel()
    if fit_intercept:
        X_dot_y -= column_means(X) * weighted_y.sum()
    largest = max(0.0, X_dot_y.max()) if positive else np.abs(X_dot_y).max()
    alpha_max = largest / (len(y) * l1_ratio)
    resolution = np.finfo(np.float64).resolution
    if alpha_max <= resolution:
        return np.full(n_alphas, resolution)
    return np.geomspace(alpha_max, alpha_max * eps, num=n_alphas)


def check_alpha_grid(alphas):
    """A grid given by the user, largest alpha first (as scikit-learn orders it), each alpha
    checked as scikit-learn's CV estimators check them (``check_scalar``: a real number
    >= 0, the error naming ``alphas[i]``), and finite."""
    if np.ndim(alphas) != 1 or len(alphas) == 0:
        raise ValueError(f"alphas must be a count or a non-empty 1-D grid, got shape "
                         f"{np.shape(alphas)}")
    for index, alpha in enumerate(alphas):
        check_scalar(alpha, f"alphas[{index}]", Real, min_val=0.0, include_boundaries="left")
    grid = np.asarray(alphas, dtype=np.float64)
    if not np.isfinite(grid).all():
        raise ValueError(f"alphas must be finite, got {alphas!r}")
    return np.sort(grid)[::-1]


def path_alphas(X, y, alphas, l1_ratio, eps, fit_intercept, positive, weights=None):
    if isinstance(alphas, Integral):
        return alpha_grid(X, y, l1_ratio, eps, alphas, fit_intercept, positive, weights)
    return check_alpha_grid(alphas)


def fit_path(X, y, alphas, l1_ratio, *, fit_intercept, tol, max_iter, positive, n_blocks=None,
             coef_init=None, client=None, **options):
    """The elastic net at each of ``alphas`` (in that order) on checked X and y, in one engine
    run. Returns ``(coefs, intercepts, dual_gaps, n_iters)``: coefs of shape
    ``(n_features, n_alphas)``; a ConvergenceWarning names the alphas not solved to ``tol``
    in ``max_iter`` rounds."""
    stage_rounds = rounds_per_alpha(max_iter)
    fit = _PathFit(alpha=float(alphas[-1]), l1_ratio=l1_ratio, fit_intercept=fit_intercept,
                   tol=tol, max_iter=len(alphas) * stage_rounds, positive=positive,
                   n_blocks=n_blocks, warm_start=coef_init is not None, **options)
    fit.path_alphas, fit.stage_rounds = alphas, stage_rounds
    if coef_init is not None:
        fit.coef_ = np.asarray(coef_init, dtype=np.float64)
    fit.client = client
    fit.fit(X, y)
    coefs, dual_gaps, n_iters = path_solutions(fit.history_, fit.path_program, X.shape[1],
                                               alphas)
    if fit_intercept:
        intercepts = float(np.mean(y)) - column_means(X) @ coefs
    else:
        intercepts = np.zeros(len(alphas))
    return coefs, intercepts, dual_gaps, n_iters


def rounds_per_alpha(max_iter):
    """A path's rounds at an alpha for ``max_iter`` iterations: the first measures the
    previous alpha's solution at this one, each other one the updates of the one before (see
    :func:`~dask_strads.estimators.elastic_net.iterations_run`)."""
    return max_iter + 1


def path_solutions(history, program, n_features, alphas):
    """``(coefs, dual_gaps, n_iters)`` of the path ``program`` (an
    :class:`ElasticNetPathProgram` over ``alphas``) recorded in ``history``, ``n_iters`` the
    iterations whose updates each alpha's solution includes; a ConvergenceWarning names the
    alphas not solved to its tolerance in its rounds per alpha."""
    coefs = np.zeros((n_features, len(alphas)))
    dual_gaps = np.empty(len(alphas))
    n_iters = np.full(len(alphas), -1, dtype=np.int64)  # an alpha's first round measures
    for record in history.records:
        if record.get("after_stop"):  # a round submitted behind the last alpha's
            continue
        stage = record["stage"]
        n_iters[stage] += 1
        if "path_coef" in record:
            positions, values = record["path_coef"]
            coefs[positions, stage] = values
            dual_gaps[stage] = record["gap"]
    unsolved = alphas[dual_gaps * program.n_samples > program.tolerance]
    if len(unsolved):
        warnings.warn(f"Objective did not converge. You might want to increase the number of "
                      f"iterations (max_iter={program.stage_rounds - 1} rounds per alpha): "
                      f"{len(unsolved)} alphas of the path were not solved to the tolerance "
                      f"(the largest: {unsolved[0]:.3e}).", ConvergenceWarning)
    return coefs, dual_gaps, n_iters


@validate_params(
    {"X": ["array-like", "sparse matrix"], "y": ["array-like"],
     "l1_ratio": [Interval(Real, 0, 1, closed="both")], "coef_init": ["array-like", None],
     "return_n_iter": ["boolean"], **PATH_CONSTRAINTS, **PATH_SKLEARN_ONLY,
     **PATH_DEPRECATED},
    prefer_skip_nested_validation=True)
def enet_path(X: Any, y: ArrayLike, *, l1_ratio: float = 0.5, eps: float = 1e-3,
              coef_init: ArrayLike | None = None, return_n_iter: bool = False,
              positive: bool = False, alphas: int | ArrayLike | None = 100,
              n_alphas: int | Literal["deprecated"] = "deprecated",
              precompute: bool | Literal["auto"] | ArrayLike = "auto", Xy: ArrayLike | None = None,
              copy_X: bool = True, verbose: bool | int = False, check_input: bool = True,
              tol: float = 1e-4, max_iter: int = 1000, n_blocks: int | None = None,
              client: Any = None, **params: Any) -> tuple[np.ndarray, ...]:
    """Elastic-net path: the solutions at every alpha of a grid, as
    :func:`sklearn.linear_model.enet_path`, fitted by the working-set STRADS program.

    Minimises ``(1 / (2 n)) ||y - Xw||^2 + alpha l1_ratio ||w||_1
    + alpha (1 - l1_ratio) / 2 ||w||^2`` at each alpha (no intercept: centre X and y first for
    one). The data are placed on the workers once; each alpha starts from the solution of the
    one before (the grid runs from the largest alpha down). Keyword arguments beyond these
    (scikit-learn's ``**params``, its solver's options) raise a ValueError ("Unexpected
    parameters in params"), as scikit-learn's for those it does not know.

    Parameters
    ----------
    X : array or sparse matrix of shape (n_samples, n_features)
        A dask array is gathered into this process, computed on ``client``'s cluster.
    y : array of shape (n_samples,)
        One target: a 2-D y raises a ValueError (scikit-learn's multi-task path, another
        problem than a path per column).
    l1_ratio, eps, coef_init, return_n_iter, positive
        As in scikit-learn.
    alphas : int or array-like
        A count: that many alphas from ``alpha_max`` (the smallest alpha whose solution is zero)
        down to ``eps * alpha_max`` on a log scale. Else the grid itself (sorted largest first).
        None (deprecated, as in scikit-learn 1.9): 100.
    n_alphas : int
        Deprecated, as in scikit-learn 1.9: the count, now given as ``alphas`` (a grid given
        as ``alphas`` wins).
    precompute, Xy, copy_X, verbose, check_input
        scikit-learn's spellings, accepted and without effect: the path computes the products
        it needs (the alpha grid's ``X^T y`` too), never modifies X and always checks it.
    tol : float
        Stop each alpha when the duality gap is at most ``tol * ||y||^2 / n``.
    max_iter : int
        Rounds per alpha at most.
    n_blocks : int or None
        Feature blocks; None: one per ten million stored values of X (non-zeros, or entries of
        a dense X), at least one and at most one per worker.
    client : distributed.Client or None
        Where to run; None: as the estimators choose (the active client, this process for a
        small problem, else the embedded cluster).

    Returns
    -------
    alphas : array of shape (n_alphas,)
    coefs : array of shape (n_features, n_alphas)
        float32 for float32 X (as scikit-learn's), else float64.
    dual_gaps : array of shape (n_alphas,)
        The duality gap (divided by n) at each alpha's solution.
    n_iters : array of shape (n_alphas,)
        Rounds each alpha took (with ``return_n_iter=True``).
    """
    if params:
        raise ValueError(f"Unexpected parameters in params: {', '.join(sorted(params))}")
    alphas = undeprecated_alphas(alphas, n_alphas)
    X, y = gathered((X, y), partial(executor_for, client))
    if np.ndim(y) == 2:
        raise ValueError(
            f"y of shape {np.shape(y)}: scikit-learn's paths fit a 2-D y as one multi-task "
            "problem (MultiTaskElasticNet's penalty on the l2 norms of the coefficients' rows), "
            "for which dask_strads has no program; for independent targets, fit the path of "
            "each column of y")
    X, y = check_in_memory_design(X, y, None)
    if coef_init is not None and np.shape(coef_init) != (X.shape[1],):
        raise ValueError(f"coef_init must have shape ({X.shape[1]},), got "
                         f"{np.shape(coef_init)}")
    grid = path_alphas(X, y, alphas, l1_ratio, eps, False, positive)
    coefs, _, dual_gaps, n_iters = fit_path(
        X, y, grid, l1_ratio, fit_intercept=False, tol=tol, max_iter=max_iter,
        positive=positive, n_blocks=n_blocks, coef_init=coef_init, client=client)
    coefs = coefs.astype(X.dtype, copy=False)  # float32 for float32 X, as scikit-learn's
    return (grid, coefs, dual_gaps, n_iters) if return_n_iter else (grid, coefs, dual_gaps)


def lasso_path(X: Any, y: ArrayLike, *, eps: float = 1e-3, coef_init: ArrayLike | None = None,
               return_n_iter: bool = False, positive: bool = False,
               alphas: int | ArrayLike | None = 100,
               n_alphas: int | Literal["deprecated"] = "deprecated",
               precompute: bool | Literal["auto"] | ArrayLike = "auto",
               Xy: ArrayLike | None = None, copy_X: bool = True, verbose: bool | int = False,
               check_input: bool = True, tol: float = 1e-4, max_iter: int = 1000,
               n_blocks: int | None = None, client: Any = None,
               **params: Any) -> tuple[np.ndarray, ...]:
    """Lasso path: :func:`enet_path` with ``l1_ratio=1`` (as
    :func:`sklearn.linear_model.lasso_path`), whose documentation describes the parameters and
    return values."""
    return enet_path(X, y, l1_ratio=1.0, eps=eps, alphas=alphas, n_alphas=n_alphas,
                     precompute=precompute, Xy=Xy,
                     copy_X=copy_X, coef_init=coef_init, verbose=verbose,
                     return_n_iter=return_n_iter, positive=positive, check_input=check_input,
                     tol=tol, max_iter=max_iter, n_blocks=n_blocks, client=client, **params)
