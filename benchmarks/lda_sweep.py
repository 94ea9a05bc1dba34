"""LDA's sampler alone: nanoseconds a token, in one kernel call over the whole corpus and in a
fit's pushes.

- "one call": ``kernels.lda.sample_block`` over every token of the corpus (one shard, one
  block, tokens in document order), ``--sweeps`` sweeps from random topics; the median of the
  sweeps after the fourth (the first ones, from random topics, touch far more topics a token),
  and apart the first sweep and the operations a token (bucket terms, walks, list scans) of
  every sweep;
- "pushes alone" / "pushes side by side": a ``LatentDirichletAllocation`` fit (2 shards and 2
  vocabulary blocks in this process, priors fixed) on Dask's threaded scheduler with one thread
  (its pushes one at a time) and with two (the two shards' pushes at once), timed by
  ``dask.diagnostics.Profiler``: the median push of the rounds after the tenth, per token of
  the push's share of the corpus.

Each figure is the median over ``--repeats`` runs, alternated; the load average is printed.

    python benchmarks/lda_sweep.py --topics 100 --repeats 5
"""
import os
import statistics
import time

import dask
import numpy as np
from dask.diagnostics import Profiler

from _common import arguments

from dask_strads import LatentDirichletAllocation
from dask_strads.datasets import load_news_articles
from dask_strads.kernels import lda


def one_call(X, n_topics, sweeps):
    X = X.tocsr()
    doc = np.repeat(np.repeat(np.arange(X.shape[0]), np.diff(X.indptr)), X.data)
    word = np.repeat(X.indices, X.data).astype(np.int64)
    z = lda.random_topics(len(doc), n_topics, 0)
    (n_dk, doc_topics, doc_nnz), (n_wk, word_topics, word_nnz), n_k = lda.initial_counts(
        doc, word, z, X.shape[0], X.shape[1], n_topics)
    seconds, operations = [], []
    n_k = n_k.astype(np.int64)
    for sweep in range(sweeps):
        start = time.perf_counter()
        terms, *_ = lda.sample_block(doc, word, z, n_dk, doc_topics, doc_nnz, n_wk, word_topics,
                                     word_nnz, n_k, 0.1, 0.01, X.shape[1], sweep)
        seconds.append(time.perf_counter() - start)
        operations.append(terms / len(doc))
    return statistics.median(seconds[4:]) / len(doc), seconds[0] / len(doc), operations


def pushes(X, n_topics, threads):
    model = LatentDirichletAllocation(n_topics, max_iter=20, doc_topic_prior=0.1,
                                      topic_word_prior=0.01, optimize_interval=0,
                                      random_state=0)
    with dask.config.set(num_workers=threads), Profiler() as profile:
        model.fit(X)
    rounds = {}  # round -> its pushes' seconds
    for result in profile.results:
        if "-push-" in str(result.key):
            rounds.setdefault(int(str(result.key).split("-")[-2]), []).append(
                result.end_time - result.start_time)
    late = [seconds for t, pushed in rounds.items() if t >= 10 for seconds in pushed]
    shards, vocab_blocks = len(rounds[10]), model.history_.stats.rounds // 20
    return statistics.median(late) / (X.sum() / (shards * vocab_blocks))  # a push's tokens


def main():
    args = arguments(__doc__, repeats=5, extra=[("--topics", dict(type=int, default=100)),
                                                ("--sweeps", dict(type=int, default=12))])
    X, _ = load_news_articles()
    LatentDirichletAllocation(args.topics, max_iter=1).fit(X[:200])  # compiles, untimed
    measured = {"one call": [], "pushes alone": [], "pushes side by side": []}
    first_sweeps = []
    for _ in range(args.repeats):
        late, first, operations = one_call(X, args.topics, args.sweeps)
        measured["one call"].append(late)
        first_sweeps.append(first)
        measured["pushes alone"].append(pushes(X, args.topics, 1))
        measured["pushes side by side"].append(pushes(X, args.topics, 2))
    for name, values in measured.items():
        print(f"{name}: {statistics.median(values) * 1e9:.1f} ns a token "
              f"(K = {args.topics}, medians of {args.repeats})")
    first = statistics.median(first_sweeps) * 1e9
    print(f"one call, the first sweep (from random topics): {first:.1f} ns a token; operations "
          f"a token by sweep: {', '.join(f'{ops:.1f}' for ops in operations)}")
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
