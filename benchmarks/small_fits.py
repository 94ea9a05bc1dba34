"""Small problems stay small: one tiny fit, and a grid search, beside scikit-learn's Lasso.

One process run. Prints medians over ``--repeats`` and ``dask_strads / sklearn`` ratios:

- one fit of a 50 x 10 Lasso (per-fit overhead: the fit is microseconds of arithmetic);
- ``GridSearchCV(Lasso(), {"alpha": 5 values}, cv=5)`` on a 500 x 50 problem, with
  ``n_jobs=1``, ``n_jobs=2`` (joblib's process pool) and under
  ``joblib.parallel_backend("dask")`` on a two-worker LocalCluster.

Usage
  python benchmarks/small_fits.py [--repeats 7] [--markdown]
"""
import os
import statistics
import sys
import time

import joblib
from distributed import Client, LocalCluster
from sklearn.linear_model import Lasso as SklearnLasso
from sklearn.model_selection import GridSearchCV

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from benchmarks._common import arguments  # noqa: E402

from dask_strads import Lasso  # noqa: E402
from dask_strads.datasets import make_correlated_regression  # noqa: E402

GRID = {"alpha": [0.01, 0.03, 0.1, 0.3, 1.0]}
TINY_FITS = 50


def seconds(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    args = arguments(__doc__, 7)
    X_tiny, y_tiny, _ = make_correlated_regression(50, 10, 3, random_state=0)
    X, y, _ = make_correlated_regression(500, 50, 10, random_state=0)
    rows = []

    def tiny(estimator):
        return lambda: [estimator.fit(X_tiny, y_tiny) for _ in range(TINY_FITS)]

    tiny(Lasso(alpha=0.1))()  # warm-up: compile
    rows.append(("one 50 x 10 fit", seconds(tiny(Lasso(alpha=0.1)), args.repeats) / TINY_FITS,
                 seconds(tiny(SklearnLasso(alpha=0.1)), args.repeats) / TINY_FITS))

    def search(estimator, n_jobs):
        return lambda: GridSearchCV(estimator, GRID, cv=5, n_jobs=n_jobs).fit(X, y)

    for n_jobs in (1, 2):
        search(Lasso(), n_jobs)()  # warm-up: the process pool and its compilation
        rows.append((f"GridSearchCV 500 x 50, n_jobs={n_jobs}",
                     seconds(search(Lasso(), n_jobs), args.repeats),
                     seconds(search(SklearnLasso(), n_jobs), args.repeats)))
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster), joblib.parallel_backend("dask"):
        search(Lasso(), None)()
        rows.append(("GridSearchCV 500 x 50, dask backend",
                     seconds(search(Lasso(), None), args.repeats),
                     seconds(search(SklearnLasso(), None), args.repeats)))

    if args.markdown:
        print("| case | dask_strads | sklearn | dask_strads / sklearn |\n|---|---:|---:|---:|")
    for name, ours, theirs in rows:
        if args.markdown:
            print(f"| {name} | {1000 * ours:.1f} ms | {1000 * theirs:.1f} ms | "
                  f"{ours / theirs:.1f} |")
        else:
            print(f"{name:38s} dask_strads {1000 * ours:8.1f} ms  sklearn {1000 * theirs:8.1f} ms"
                  f"  ratio {ours / theirs:5.1f}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
