"""recommend_all on the workers: the memory each worker and the client take, against the blocks.

One process run: a LocalCluster of ``--workers`` worker processes (one thread each), and an
ImplicitMatrixFactorization of ``--users`` x ``--items`` factors of rank ``--rank`` kept on the
cluster (random factors, a user block and an item block a worker, as a fit with
``keep_on_cluster=True`` leaves them; 10 seen items a user), whose ``recommend_all(n=10, path=)``
writes a Parquet file per partition of users, measured (pandas and pyarrow imported in the
workers first). The resident memory of every worker process and of this
process is sampled every 20 ms from just before the call to its end: printed, the rise of each
(its peak less its value before, which holds the worker's blocks), beside a worker's user block,
one item block, all item blocks, the target 1.3 x (its blocks + one item block) and the rise
that target leaves (less its blocks); per worker, (its blocks + its rise) / (its blocks + one
item block), which the target holds to at most 1.3; and the seconds, with the load average at
the start and the end. Tiny factors (``--users 1000 --items 1000``) measure the rise that does
not scale with the blocks (Python, pandas, pyarrow). The workers' statistical profiler is off
unless ``--worker-profile``: its history grows with the seconds a run takes (about 1.5 MB a
100 s of one busy task), not with the blocks.

    python benchmarks/recommend_all.py --users 100000 --items 100000 --rank 64 --workers 4
"""
import os
import tempfile
import threading
import time

import dask
import dask.array as da
import numpy as np
import psutil
import scipy.sparse as sp
from distributed import Client, LocalCluster, wait

from _common import arguments

from dask_strads import ImplicitMatrixFactorization
from dask_strads.engine import DistributedExecutor

MB = 1 << 20
#: A worker's blocks and what it adds while recommending, at most, over (its blocks + one item
#: block).
TARGET = 1.3


def model_on(client, n_users, n_items, rank, n_workers, seed=0):
    """A fitted ImplicitMatrixFactorization's state with its factors on the workers."""
    rng = da.random.RandomState(seed)
    users = rng.standard_normal((n_users, rank), chunks=(-(-n_users // n_workers), rank))
    items = rng.standard_normal((n_items, rank), chunks=(-(-n_items // n_workers), rank))
    users, items = client.persist([users, items])
    wait([users, items])  # measured from when the factors are in memory
    est = ImplicitMatrixFactorization(rank)
    est.user_factors_, est.components_ = users, items.T
    est.user_ids_, est.item_ids_ = np.arange(n_users), np.arange(n_items)
    est.n_features_in_ = n_items
    generator = np.random.default_rng(seed)
    seen_items = generator.integers(0, n_items, size=(n_users, 10))
    est._seen = sp.csr_matrix((np.ones(seen_items.size, dtype=bool), seen_items.ravel(),
                               np.arange(0, seen_items.size + 1, 10)), shape=(n_users, n_items))
    est._executor = DistributedExecutor(client)
    return est, users.nbytes // n_workers, items.nbytes // n_workers


def _import_writers():
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401


def sample_peaks(processes, stop, peaks):
    while not stop.is_set():
        for pid, process in processes.items():
            try:
                peaks[pid] = max(peaks[pid], process.memory_info().rss)
            except psutil.NoSuchProcess:
                pass
        time.sleep(0.02)


def main():
    args = arguments(__doc__, repeats=1, extra=[
        ("--users", dict(type=int, default=100_000)), ("--items", dict(type=int, default=100_000)),
        ("--rank", dict(type=int, default=64)), ("--workers", dict(type=int, default=4)),
        ("--worker-profile", dict(action="store_true"))])
    with dask.config.set({"distributed.worker.profile.enabled": args.worker_profile}), \
            LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                         dashboard_address=None) as cluster, Client(cluster) as client:
        est, user_block, item_block = model_on(client, args.users, args.items, args.rank,
                                               args.workers)
        client.run(_import_writers)  # not measured: importing pandas and pyarrow
        pids = client.run(os.getpid)
        processes = {pid: psutil.Process(pid) for pid in [*pids.values(), os.getpid()]}
        before = {pid: p.memory_info().rss for pid, p in processes.items()}
        peaks, stop = dict(before), threading.Event()
        sampler = threading.Thread(target=sample_peaks, args=(processes, stop, peaks))
        sampler.start()
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            est.recommend_all(n=10, path=os.path.join(folder, "all.parquet"))
            seconds = time.perf_counter() - start
        stop.set()
        sampler.join()
    print(f"{args.users} users x {args.items} items, rank {args.rank}, {args.workers} workers: "
          f"{seconds:.1f} s (load average at the end: {os.getloadavg()[0]:.1f})")
    blocks, bound = user_block + item_block, user_block + 2 * item_block
    print(f"a worker's user block {user_block / MB:.1f} MB, one item block "
          f"{item_block / MB:.1f} MB, all item blocks {args.workers * item_block / MB:.1f} MB; "
          f"target: its blocks and its rise at most {TARGET} x (its blocks + one item block) "
          f"= {TARGET * bound / MB:.1f} MB, a rise of at most "
          f"{(TARGET * bound - blocks) / MB:.1f} MB")
    ratios = []
    for name, pid in pids.items():
        rise = peaks[pid] - before[pid]
        ratios.append((blocks + rise) / bound)
        print(f"  {name}: rose {rise / MB:.1f} MB, (its blocks + rise) / (its blocks + one item "
              f"block) = {ratios[-1]:.2f}")
    print(f"  client: rose {(peaks[os.getpid()] - before[os.getpid()]) / MB:.1f} MB")
    print(f"target {'met' if max(ratios) <= TARGET else 'missed'}: highest ratio "
          f"{max(ratios):.2f} against {TARGET}")


if __name__ == "__main__":
    main()
