"""STRADS scheduling ablation for dask_strads.Lasso: coordinates evaluated to reach the gap.

On an AR(1)-correlated design, fits the same Lasso to the same tolerance with the candidate
schedules "priority" (STRADS dynamic priority, |delta beta| or delta beta^2), "cyclic" and
"random", with and without the dependency check, and prints per variant the medians over seeds
of: coordinates evaluated (candidates whose update was computed; the unit of work), coordinates
changed, rounds, seconds, and the evaluated count relative to "cyclic".

    python benchmarks/lasso_schedules.py [--samples 1000] [--features 10000] [--seeds 3]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from dask_strads import Lasso  # noqa: E402
from dask_strads.datasets import alpha_max, make_correlated_regression  # noqa: E402

VARIANTS = {
    "priority |d beta|, rho 0.1": dict(schedule="priority", priority_power=1),
    "priority d beta^2, rho 0.1": dict(schedule="priority", priority_power=2),
    "priority |d beta|, no check": dict(schedule="priority", dependency_threshold=1.0),
    "cyclic, rho 0.1": dict(schedule="cyclic"),
    "random, rho 0.1": dict(schedule="random"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--features", type=int, default=10000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--tol", type=float, default=1e-6)
    args = parser.parse_args()

    X, y, _ = make_correlated_regression(args.samples, args.features, 50, rho=0.9,
                                         random_state=0)
    alpha = 0.1 * alpha_max(X, y)
    print(f"AR(1) rho=0.9 design {args.samples} x {args.features}, alpha = 0.1 alpha_max, "
          f"tol = {args.tol:g}, default blocks (one per worker), {args.seeds} seeds")
    Lasso(alpha=alpha, tol=1e-2).fit(X[:, :100], y)  # cluster start, JIT
    rows = {}
    for name, params in VARIANTS.items():
        runs = []
        for seed in range(args.seeds):
            start = time.perf_counter()
            model = Lasso(alpha=alpha, tol=args.tol, random_state=seed, **params).fit(X, y)
            runs.append((sum(r["evaluated"] for r in model.history_),
                         sum(r["updates"] for r in model.history_), model.n_iter_,
                         time.perf_counter() - start))
        rows[name] = [statistics.median(column) for column in zip(*runs)]
    cyclic = rows["cyclic, rho 0.1"][0]
    print("\n| schedule | evaluated | changed | rounds | seconds | evaluated / cyclic |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (evaluated, changed, rounds, seconds) in rows.items():
        print(f"| {name} | {evaluated:,.0f} | {changed:,.0f} | {rounds:.0f} | {seconds:.2f} "
              f"| {evaluated / cyclic:.2f} |")


if __name__ == "__main__":
    main()
