"""Ablation of dask_strads.Lasso's schedules and solver parts: work and time to reach the gap.

On an AR(1)-correlated design, fits the same Lasso to the same tolerance with
- the working-set solver (the default: priority over all blocks, joint solve with Anderson
  extrapolation, gap-safe screening) and the same with one part switched off: no screening,
  no Anderson extrapolation, no working set (every feature not screened out solved jointly);
- the STRADS sampling schedules: "priority" (dynamic priority, |delta beta| or delta beta^2),
  with and without the dependency check, "cyclic" and "random".
Per variant, medians over seeds of: coordinates evaluated (updates computed, full passes
included for the working set), rounds, seconds (one process, default blocks), and the seconds
relative to the default.

    python benchmarks/lasso_schedules.py [--samples 1000] [--features 10000] [--seeds 3]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from dask_strads import Lasso, SamplingSchedule  # noqa: E402
from dask_strads.datasets import alpha_max, make_correlated_regression  # noqa: E402


class AblatedLasso(Lasso):
    """A Lasso whose working-set program has some parts switched off (``parts``)."""

    parts = {}

    def _program(self, *args):
        program = super()._program(*args)
        for name, value in self.parts.items():
            setattr(program, name, value)
        return program


DEFAULT = "working set + Anderson + screening"
VARIANTS = {
    DEFAULT: ({}, {}),
    "  without screening": ({}, {"screening": False}),
    "  without Anderson": ({}, {"anderson": False}),
    "  without working set": ({}, {"working_set": False}),
    "priority |d beta|, rho 0.1": (dict(schedule=SamplingSchedule(priority_power=1)), {}),
    "priority d beta^2, rho 0.1": (dict(schedule=SamplingSchedule(priority_power=2)), {}),
    "priority |d beta|, no check": (dict(schedule=SamplingSchedule(dependency_threshold=1.0)),
                                    {}),
    "cyclic, rho 0.1": (dict(schedule="cyclic"), {}),
    "random, rho 0.1": (dict(schedule="random"), {}),
}


def fit(X, y, alpha, tol, seed, params, parts):
    model = type("Variant", (AblatedLasso,), {"parts": parts})(
        alpha=alpha, tol=tol, random_state=seed, **params)
    start = time.perf_counter()
    model.fit(X, y)
    return (sum(r.get("evaluated", 0) for r in model.history_), model.n_iter_,
            time.perf_counter() - start)


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
          f"tol = {args.tol:g}, default blocks, {args.seeds} seeds; load average "
          f"{os.getloadavg()[0]:.1f}")
    for params, _ in VARIANTS.values():  # compile every kernel first
        Lasso(alpha=alpha, tol=1e-2, **params).fit(X[:, :100], y)
    rows = {name: [statistics.median(column) for column in zip(
                *(fit(X, y, alpha, args.tol, seed, params, parts)
                  for seed in range(args.seeds)))]
            for name, (params, parts) in VARIANTS.items()}
    default = rows[DEFAULT][2]
    print("\n| schedule / solver | evaluated | rounds | seconds | seconds / default |")
    print("|---|---:|---:|---:|---:|")
    for name, (evaluated, rounds, seconds) in rows.items():
        print(f"| {name} | {evaluated:,.0f} | {rounds:.0f} | {seconds:.2f} "
              f"| {seconds / default:.2f} |")


if __name__ == "__main__":
    main()
