"""LDA whose word-topic table is larger than a worker's memory limit: does it train, and how?

Starts a LocalCluster of ``--workers`` single-threaded worker processes with ``--memory-limit``
each (Dask's default thresholds: spill at 60% managed / 70% process memory, pause at 80%,
restart at 95%), warms them up (numba JIT) on a small fit, fits LatentDirichletAllocation on the
corpus of ``memory.py``'s LDA problem, and prints: the word-topic table's size (dense int32 counts,
and with the nonzero-topic lists), the vocabulary blocks, the fit's time per iteration; per
worker the peak resident growth (``VmHWM``, as in ``memory.py``) beside the limit, what Dask
wrote to and read back from disk (count, MB), the vocabulary blocks the message plane parked on
disk (see ``dask_strads.engine.parking``), and the seconds it spent paused (the scheduler's
view, polled twice a second); and the workers restarted (addresses that left the cluster).

Usage
  python benchmarks/lda_beyond_memory.py --topics 2000 --words 250000 --tokens 2e6 \\
      --workers 4 --memory-limit 1GB --iterations 2
"""
import os
import sys
import threading
import time
from types import SimpleNamespace

import dask
from distributed import Client, LocalCluster

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import arguments  # noqa: E402
from memory import MB, LDAProblem, peak_resident_bytes, reset_peak  # noqa: E402
from dask_strads import LatentDirichletAllocation  # noqa: E402
from dask_strads.engine import parking  # noqa: E402

POLL_SECONDS = 0.5


TRAFFIC = (("disk-write", "count"), ("disk-write", "bytes"), ("disk-read", "count"),
           ("disk-read", "bytes"))


def disk_traffic(dask_worker):
    """The worker's spilling so far: values written to disk and read back, and their bytes."""
    totals = dict.fromkeys(TRAFFIC, 0)
    for key, value in dask_worker.digests_total.items():
        if isinstance(key, tuple) and key[-2:] in totals:
            totals[key[-2:]] += value
    return [totals[k] for k in TRAFFIC]


def parked_on_disk(dask_worker):
    return parking.spilled_on(dask_worker)


class PauseWatch:
    """Seconds each worker was seen paused, and every worker address seen, while it runs."""

    def __init__(self, client):
        self.client, self.paused, self.seen = client, {}, set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        while not self._stop.wait(POLL_SECONDS):
            identity = self.client.sync(self.client.scheduler.identity, n_workers=-1)
            for address, info in identity["workers"].items():
                self.seen.add(address)
                if info.get("status") == "paused":
                    self.paused[address] = self.paused.get(address, 0.0) + POLL_SECONDS

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def main():
    args = arguments(__doc__, 1, [
        ("--topics", {"type": int, "default": 2000}),
        ("--words", {"type": float, "default": 2.5e5}),
        ("--tokens", {"type": float, "default": 2e6}),
        ("--workers", {"type": int, "default": 4}),
        ("--memory-limit", {"default": "1GB"}),
        ("--iterations", {"type": int, "default": 2}),
    ])
    problem = LDAProblem(SimpleNamespace(lda_topics=args.topics, lda_words=args.words,
                                         lda_tokens=args.tokens, iterations=args.iterations,
                                         lda_blocks_per_worker=None))
    limit = dask.utils.parse_bytes(args.memory_limit)
    dense = problem.X.shape[1] * args.topics * 4
    print(f"{problem.describe}; word-topic table {dense / MB:.0f} MB as dense int32 counts, "
          f"{problem.model_bytes / MB:.0f} MB with the nonzero-topic lists; {args.workers} "
          f"workers of {limit / MB:.0f} MB", flush=True)
    # The client's periodic refresh of its scheduler information (without the workers) can land
    # between a scheduler_info(n_workers=-1) call and its return, which then lists no worker: a
    # fit checking on its workers would take them all for lost. Not refreshed during this run.
    with dask.config.set({"distributed.client.scheduler-info-interval": "1h"}), \
            LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                         dashboard_address=None, memory_limit=limit) as cluster, \
            Client(cluster) as client:
        problem.fit(client, args.workers, warm_up=True)
        before = client.run(reset_peak)
        workers = set(before)
        model = LatentDirichletAllocation(args.topics, max_iter=args.iterations, random_state=0,
                                          checkpoint_interval=0)
        model.client = client
        with PauseWatch(client) as watch:
            start = time.perf_counter()
            model.fit(problem.X)
            seconds = time.perf_counter() - start
        peaks = client.run(peak_resident_bytes)
        traffic = client.run(disk_traffic)
        parked = client.run(parked_on_disk)
    print(f"trained: {model.n_iter_} iterations of {model.n_vocab_blocks_} vocabulary blocks, "
          f"{seconds:.0f} s ({seconds / model.n_iter_:.0f} s an iteration); "
          f"log-likelihood per token {model.history_[0]['log_likelihood']:.3f} -> "
          f"{model.history_[-1]['log_likelihood']:.3f}")
    print(f"workers restarted: {len((watch.seen | set(peaks)) - workers)} new, "
          f"{len(workers - set(peaks))} lost")
    print("| worker | peak growth MB | of the limit | disk writes (MB) | reads (MB) "
          "| blocks parked on disk | paused s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for w in sorted(peaks):
        growth = peaks[w] - before.get(w, 0)
        writes, written, reads, read = traffic[w]
        print(f"| {w} | {growth / MB:.0f} | {peaks[w] / limit:.0%} | {writes:.0f} "
              f"({written / MB:.0f}) | {reads:.0f} ({read / MB:.0f}) | {parked[w]} | "
              f"{watch.paused.get(w, 0):.1f} |")


if __name__ == "__main__":
    main()
