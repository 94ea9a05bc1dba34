"""Peak memory per worker of dask_strads.LatentDirichletAllocation with 1, 2 and 4 workers.

A worker should hold its document shard and the vocabulary blocks it is sampling, not the
whole word-topic table, so the memory a fit adds to a worker should fall roughly as 1/P. For
each worker count P and number of vocabulary blocks U (1 and 2 per worker) the script starts a
fresh LocalCluster (one single-threaded process per worker), warms the workers up (numba JIT)
on a fit with tiny tables, resets each worker's resident high-water mark (``VmHWM``), fits the
big model and reads the high-water marks. It prints the per-worker peak (median, max), the
growth over the pre-fit resident memory (what the fit costs a worker), the word-topic table's
share per worker (table / P) and the growth in units of that share.

Usage
  python benchmarks/lda_memory.py              # K=1000, V=100k, 2M tokens; P=1,2,4; U=P,2P
  python benchmarks/lda_memory.py --workers 1,2 --tokens 5e5 --markdown
"""
import argparse
import os
import sys

import numpy as np
from distributed import Client, LocalCluster

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from dask_strads import LatentDirichletAllocation  # noqa: E402
from dask_strads.datasets import make_lda_corpus  # noqa: E402
from dask_strads.kernels.lda import topic_dtype  # noqa: E402

MB = 2**20


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak():
    """Start the process's resident high-water mark afresh (Linux: ``clear_refs`` 5); it is
    inherited over fork, so without this a worker reports its parent's peak."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    return resident_bytes()


def peak_resident_bytes():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024  # kB


def table_bytes(rows, n_topics):
    """Counts (int32) plus nonzero-topic lists, as kernels/lda.py stores rows of a table."""
    return rows * n_topics * (4 + np.dtype(topic_dtype(n_topics)).itemsize)


def measure(n_workers, blocks_per_worker, X, n_topics, iterations):
    """Per-worker peak resident bytes and their growth over the pre-fit resident bytes."""
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit=0) as cluster, \
            Client(cluster) as client:
        def model(max_iter):
            lda = LatentDirichletAllocation(n_topics, max_iter=max_iter, random_state=0,
                                            n_vocab_blocks=blocks_per_worker * n_workers)
            lda.client = client
            return lda

        model(2).fit(X[:200, :2000])  # numba JIT, with tables too small to count
        before = client.run(reset_peak)
        model(iterations).fit(X)
        peaks = client.run(peak_resident_bytes)
    peak = np.array([peaks[w] for w in sorted(peaks)], dtype=float)
    return peak, peak - np.array([before[w] for w in sorted(before)], dtype=float)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--blocks-per-worker", default="1,2",
                        help="vocabulary blocks U per worker (comma-separated)")
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--words", type=int, default=100_000)
    parser.add_argument("--tokens", type=float, default=2e6)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    n_docs = int(args.tokens) // 100
    X, _, _ = make_lda_corpus(n_docs=n_docs, n_words=args.words, n_topics=100, doc_length=100,
                              random_state=0)
    word_table = table_bytes(args.words, args.topics)
    doc_table = table_bytes(n_docs, args.topics)
    print(f"corpus: {n_docs} docs x {args.words} words, {X.sum():,} tokens; K = {args.topics}; "
          f"word-topic table {word_table / MB:.0f} MB, document-topic table "
          f"{doc_table / MB:.0f} MB (dense counts + topic lists)")
    header = ("workers P", "blocks U", "peak RSS / worker MB (max)", "growth in fit MB (max)",
              "word table / P MB", "growth / (word table / P)")
    rows = []
    for n in (int(w) for w in args.workers.split(",")):
        for per_worker in (int(b) for b in args.blocks_per_worker.split(",")):
            peak, growth = measure(n, per_worker, X, args.topics, args.iterations)
            share = word_table / n
            rows.append((n, n * per_worker, f"{np.median(peak) / MB:.0f} ({peak.max() / MB:.0f})",
                         f"{np.median(growth) / MB:.0f} ({growth.max() / MB:.0f})",
                         f"{share / MB:.0f}", f"{growth.max() / share:.2f}"))
            print("  ".join(f"{h}: {v}" for h, v in zip(header, rows[-1])), flush=True)
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---:|" * len(header))
        for row in rows:
            print("| " + " | ".join(map(str, row)) + " |")


if __name__ == "__main__":
    main()
