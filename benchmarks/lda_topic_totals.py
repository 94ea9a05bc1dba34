"""How often LDA's topic totals are shared, and what it does to quality: the LDA program run
in a loop (``run_sequential``, the draws a cluster of P workers makes) on a real corpus with P
shards and P vocabulary blocks, ``topic_totals_every="sub_round"`` against ``"iteration"`` (the
STRADS reference's choice), same seeds. Prints the training log-likelihood per token after
some iterations, for each P, and its difference.

Usage
  python benchmarks/lda_topic_totals.py                          # P = 2, 8, 32; K = 100
  python benchmarks/lda_topic_totals.py --shards 8 --topics 50 --iterations 10,40 --seeds 0,1
"""
import argparse

import numpy as np
import scipy.sparse as sp

from dask_strads import run_sequential
from dask_strads.datasets import load_news_articles
from dask_strads.partition import block_edges
from dask_strads.programs.lda import LDAProgram, make_shard, vocabulary_blocks

SETTINGS = ("sub_round", "iteration")


def log_likelihoods(X, n_shards, n_topics, iterations, seed, every):
    """Training log-likelihood per token after each of ``iterations`` (ascending)."""
    word_counts = np.asarray(X.sum(axis=0)).ravel()
    block_of_word, local_index, sizes = vocabulary_blocks(word_counts, n_shards)
    edges = block_edges(X.shape[0], n_shards, weights=np.asarray(X.sum(axis=1)).ravel())
    shards = [make_shard(X[lo:hi], block_of_word, local_index, n_shards)
              for lo, hi in zip(edges[:-1], edges[1:])]
    program = LDAProgram(n_topics, alpha=0.1, beta=0.01, n_vocab=X.shape[1], block_sizes=sizes,
                         n_shards=n_shards, seed=seed,
                         topic_totals_every=every)
    _, reports, _ = run_sequential(program, shards, iterations[-1] * n_shards)
    per_token = []
    for it in iterations:
        last = reports[(it - 1) * n_shards:it * n_shards]
        per_token.append(sum(r["log_likelihood"] for r in last) / sum(r["tokens"] for r in last))
    return per_token


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", default="2,8,32", help="comma-separated P")
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--iterations", default="10,25,50",
                        help="comma-separated iterations at which to report")
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args(argv)
    shards = [int(p) for p in args.shards.split(",")]
    iterations = sorted(int(i) for i in args.iterations.split(","))
    seeds = [int(s) for s in args.seeds.split(",")]
    X = sp.csr_matrix(load_news_articles()[0])
    print(f"NewsArticles: {X.shape[0]} documents x {X.shape[1]} words, {int(X.sum()):,} tokens;"
          f" K = {args.topics}, seeds {seeds}; median log-likelihood per token over the seeds")
    print(f"{'P':>4}  {'iteration':>9}  {'sub_round':>10}  {'iteration':>10}  {'difference':>10}")
    for p in shards:
        runs = {every: np.median([log_likelihoods(X, p, args.topics, iterations, seed, every)
                                  for seed in seeds], axis=0) for every in SETTINGS}
        for i, it in enumerate(iterations):
            a, b = runs["sub_round"][i], runs["iteration"][i]
            print(f"{p:>4}  {it:>9}  {a:>10.4f}  {b:>10.4f}  {b - a:>+10.4f}", flush=True)


if __name__ == "__main__":
    main()
