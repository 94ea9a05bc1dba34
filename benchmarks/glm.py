"""Penalised regression datafits: dask_strads.GeneralizedLinearRegressor beside skglm's
GeneralizedLinearEstimator on the same objectives, on real text (the tweets' TF-IDF).

One process run, both libraries on the same objective

    1/n sum_i loss(x_i w + b, y_i) + alpha sum_j v_j |w_j|

(skglm's datafits are scaled by 1/n as ours; both fit an unpenalised intercept). Per problem
it prints the median wall and CPU time of ``--repeats`` timed fits, interleaved (each library
fits once untimed first: numba compilation), the relative suboptimality ``(P - P*) / P*`` of the
objective computed here in numpy (``P*``: the best of a reference fit of each at tol 1e-10 and
everything reached), the nonzero coefficients, and ``dask_strads time / skglm's``. Each stops
by its own rule at ``tol=1e-4``: ours when no coordinate violates its optimality condition by
more than ``tol`` times the largest feature gradient at w = 0, skglm on its largest violation
(absolute, in the 1/n-scaled objective's units).

Problems (``load_trump_tweets_tfidf(min_df=5)``: 20761 tweets x 5151 unigrams, 302k stored
values; its target is log(1 + favourites))
  huber     Huber's loss (delta 1.35) of log(1 + favourites), the l1 penalty
  poisson   Poisson's loss of the favourites (counts), the l1 penalty
  weighted  squared error of log(1 + favourites), the weighted l1 penalty of an adaptive Lasso
            (v_j = 1 / (|ridge coefficient_j| + 1e-3), normalised to mean 1)

Usage
  python benchmarks/glm.py --repeats 7 --markdown
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from benchmarks._common import arguments  # noqa: E402

from dask_strads import GeneralizedLinearRegressor  # noqa: E402
from dask_strads.datasets import load_trump_tweets_tfidf  # noqa: E402

DELTA = 1.35
ALPHAS = {"huber": 2e-3, "poisson": 1e-2, "weighted": 1e-3}


def problems():
    X, target, _ = load_trump_tweets_tfidf(min_df=5)
    X = X.tocsc()
    counts = np.round(np.expm1(target))
    ridge = _ridge(X, target)
    weights = 1.0 / (np.abs(ridge) + 1e-3)
    return {"huber": (X, target, None), "poisson": (X, counts, None),
            "weighted": (X, target, weights / weights.mean())}


def _ridge(X, y):
    from sklearn.linear_model import Ridge

    return Ridge(alpha=1.0).fit(X, y).coef_


def losses(name):
    if name == "huber":
        return "huber", lambda r: np.where(np.abs(r) <= DELTA, 0.5 * r * r,
                                           DELTA * (np.abs(r) - 0.5 * DELTA))
    if name == "poisson":
        return "poisson", None
    return "squared_error", lambda r: 0.5 * r * r


def objective(name, X, y, weights, coef, intercept):
    z = X @ coef + intercept
    if name == "poisson":
        data = float(np.mean(np.exp(z) - y * z))
    else:
        data = float(np.mean(losses(name)[1](z - y)))
    v = np.ones(len(coef)) if weights is None else weights
    return data + ALPHAS[name] * float(v @ np.abs(coef))


def solvers(name, weights, tol=1e-4):
    from skglm import GeneralizedLinearEstimator, datafits, penalties, solvers as skglm_solvers

    alpha = ALPHAS[name]
    datafit = {"huber": lambda: datafits.Huber(DELTA), "poisson": datafits.Poisson,
               "weighted": datafits.Quadratic}[name]()
    penalty = (penalties.L1(alpha) if weights is None
               else penalties.WeightedL1(alpha, weights))
    solver = (skglm_solvers.ProxNewton(tol=tol, fit_intercept=True) if name == "poisson"
              else skglm_solvers.AndersonCD(tol=tol, fit_intercept=True))
    return {
        "dask_strads": lambda: GeneralizedLinearRegressor(
            losses(name)[0], alpha=alpha, epsilon=DELTA, penalty_weights=weights, tol=tol,
            max_iter=1000),
        "skglm": lambda: GeneralizedLinearEstimator(datafit, penalty, solver),
    }


def fitted(model):
    return np.ravel(model.coef_), float(np.ravel(model.intercept_)[0])


def run(name, X, y, weights, repeats):
    best = min(objective(name, X, y, weights, *fitted(make().fit(X, y)))
               for make in solvers(name, weights, tol=1e-10).values())
    makers = solvers(name, weights)
    for make in makers.values():
        make().fit(X, y)  # numba
    wall = {key: [] for key in makers}
    cpu = {key: [] for key in makers}
    reached = {}
    for _ in range(repeats):
        for key, make in makers.items():
            model = make()
            start, start_cpu = time.perf_counter(), time.process_time()
            model.fit(X, y)
            wall[key].append(time.perf_counter() - start)
            cpu[key].append(time.process_time() - start_cpu)
            reached[key] = fitted(model)
    rows = []
    for key in makers:
        value = objective(name, X, y, weights, *reached[key])
        best = min(best, value)
        rows.append((key, statistics.median(wall[key]), statistics.median(cpu[key]), value,
                     np.count_nonzero(reached[key][0])))
    ours = rows[0]
    return [(name, key, w, c, (value - best) / abs(best), nnz, ours[1] / w, ours[2] / c)
            for key, w, c, value, nnz in rows]


def main():
    args = arguments(__doc__, repeats=5)
    rows = []
    for name, (X, y, weights) in problems().items():
        rows += run(name, X, y, weights, args.repeats)
    header = ("problem", "solver", "median s", "median CPU s", "rel. subopt.", "nonzeros",
              "dask_strads / solver (s)", "dask_strads / solver (CPU s)")
    formats = ("{}", "{}", "{:.3f}", "{:.3f}", "{:.1e}", "{}", "{:.2f}", "{:.2f}")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(f.format(v) for f, v in zip(formats, row)) + " |")
    else:
        for row in rows:
            print("  ".join(f.format(v) for f, v in zip(formats, row)))
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
