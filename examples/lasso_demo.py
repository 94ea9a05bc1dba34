"""Fit a Lasso over 20,000 correlated features where dask_strads runs it by default.

    python examples/lasso_demo.py [--features 20000] [--samples 2000]

Prints what the fit found (planted features recovered, objective, duality gap), what it cost
(seconds, rounds, share of the time spent in Dask rather than in the kernels), and scikit-learn's
Lasso on the same problem for comparison.
"""
import argparse
import time

import numpy as np
from sklearn.linear_model import Lasso as SklearnLasso

from dask_strads import Lasso
from dask_strads.datasets import alpha_max, make_correlated_regression


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--features", type=int, default=20000)
    parser.add_argument("--informative", type=int, default=100)
    args = parser.parse_args()

    X, y, w_true = make_correlated_regression(args.samples, args.features, args.informative,
                                              rho=0.9, random_state=0)
    alpha = 0.25 * alpha_max(X, y)
    print(f"data: {args.samples} samples x {args.features} features, AR(1) correlation 0.9, "
          f"{args.informative} planted features; alpha = 0.25 * alpha_max = {alpha:.4g}")

    Lasso(alpha=alpha, tol=1e-2).fit(X[:, :600], y)  # compile the kernels
    start = time.perf_counter()
    model = Lasso(alpha=alpha, tol=1e-6).fit(X, y)
    seconds = time.perf_counter() - start

    found = np.flatnonzero(model.coef_)
    planted = np.flatnonzero(w_true)
    near = sum(np.min(np.abs(found - j)) <= 2 for j in planted) if found.size else 0
    stats = model.history_.stats
    print(f"fit time            {seconds:.2f} s")
    print(f"objective           {model.history_[-1]['objective']:.6g}")
    print(f"duality gap         {model.dual_gap_:.3g} (tolerance {1e-6 * np.var(y):.3g})")
    print(f"nonzeros            {found.size}")
    print(f"planted recovered   {near} of {planted.size} (a nonzero within 2 columns)")
    print(f"rounds              {model.n_iter_} ({1000 * stats.seconds_per_round:.1f} ms each, "
          f"{100 * stats.overhead_share:.0f}% Dask overhead)")
    where = model.client.dashboard_link if model.client else "this process, Dask's threaded scheduler"
    print(f"ran on              {where}")

    start = time.perf_counter()
    reference = SklearnLasso(alpha=alpha, tol=1e-6).fit(X, y)
    seconds = time.perf_counter() - start
    residual = y - reference.predict(X)
    objective = 0.5 * np.dot(residual, residual) / len(y) + alpha * np.abs(reference.coef_).sum()
    print(f"scikit-learn        {seconds:.2f} s, objective {objective:.6g}, "
          f"{np.count_nonzero(reference.coef_)} nonzeros")


if __name__ == "__main__":
    main()
