"""Where a fit runs: the client given, the active client, this process, or the embedded cluster.

With no cluster given or active, a fit runs in this process on Dask's local schedulers unless its
data are large for this machine: rounds there cost about a millisecond, against 14 ms or more on
any distributed cluster (``benchmarks/engine.py``), so that is faster for everything that fits
in memory with room to spare. Large data go to the embedded cluster, a ``LocalCluster`` of worker
*threads* in this process (one per core, one thread each): Dask's memory management and
dashboard, kernels that release the GIL, no process that re-imports the user's script (a script
without ``if __name__ == "__main__":`` works), and rounds that cost less than between worker
processes. It listens on 127.0.0.1 only and is never made the process-wide default client.
"""
import atexit
import multiprocessing
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

import dask
import psutil

from ..log import logger
from .compat import current_worker
from .executors import DistributedExecutor, Executor, LocalExecutor

if TYPE_CHECKING:
    from distributed import Client

#: Fits whose data hold fewer stored entries run on the synchronous scheduler with one block.
ONE_BLOCK_BELOW = 1_000_000
#: Fits whose data take more than this share of the machine's memory go to the embedded cluster
#: (at 16 bytes a stored entry: a value and an index).
CLUSTER_MEMORY_SHARE = 1 / 8
BYTES_PER_ENTRY = 16

_SYNC_NAMES = ("sync", "synchronous", "single-threaded")
_THREAD_NAMES = ("threads", "threading", "threaded")

_embedded: "Client | None" = None
_embedded_lock = threading.Lock()


def default_cluster_size() -> int:
    """One worker per core: the kernels are numba loops, one per core."""
    n_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, n_cores or 1)


def embedded_client() -> "Client":
    """The embedded cluster's client, started on first use and reused afterwards."""
    global _embedded
    with _embedded_lock:
        if _embedded is None or _embedded.status in ("closing", "closed"):
            from distributed import Client

            from .embedded_cluster import EmbeddedCluster

            n_workers = default_cluster_size()
            logger.info("starting the embedded Dask cluster: %d worker threads", n_workers)
            # workers in this process talk over inproc://, which listens on no network address
            cluster = EmbeddedCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                                      dashboard_address="127.0.0.1:0",
                                      worker_dashboard_address="127.0.0.1:0")
            _embedded = Client(cluster, set_as_default=False)
            atexit.register(close_embedded_client)
        return _embedded


def close_embedded_client() -> None:
    """Close the embedded cluster and its client, if started (the next fit that needs it starts
    a new one); also run at interpreter exit."""
    global _embedded
    with _embedded_lock:
        if _embedded is not None:
            cluster = _embedded.cluster
            _embedded.close()
            if cluster is not None:
                cluster.close()
            _embedded = None


def active_client() -> "Client | None":
    """The distributed client a fit should run on unasked, or None: not inside a Dask task
    (that would pin work to the worker whose thread the task holds). Without distributed
    imported there is none."""
    if "distributed" not in sys.modules or in_dask_task():
        return None
    try:
        from distributed import default_client

        return default_client()
    except ValueError:
        return None


def in_dask_task() -> bool:
    return current_worker() is not None


def check_client(client: Any) -> "Client":
    from distributed import Client

    if not isinstance(client, Client):
        raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
    return client


def executor_for(client: "Client | None" = None,
                 stored_entries: int | None = None) -> Executor:
    """The executor of a fit, in this order: the client given; the active client; fewer than
    ``ONE_BLOCK_BELOW`` stored entries: this process, synchronous, one block; ``dask.config``'s
    scheduler "synchronous" or "threads": this process on it; inside a Dask task or a
    joblib/multiprocessing worker: this process, synchronous; data below
    ``CLUSTER_MEMORY_SHARE`` of the memory: this process, threads; else (or when the size is
    not given) the embedded cluster.
    In this process there are as many blocks as the embedded cluster would have, so the model
    is the same.
    """
    if client is not None:
        return DistributedExecutor(check_client(client))
    client = active_client()
    if client is not None:
        return DistributedExecutor(client)
    if stored_entries is not None and stored_entries < ONE_BLOCK_BELOW:
        return LocalExecutor(dask.local.get_sync, 1)
    scheduler = dask.config.get("scheduler", None)
    if isinstance(scheduler, str) and scheduler.lower() in _SYNC_NAMES + _THREAD_NAMES:
        get = dask.local.get_sync if scheduler.lower() in _SYNC_NAMES else dask.threaded.get
        return LocalExecutor(get, default_cluster_size())
    if scheduler is not None and scheduler not in ("dask.distributed", "distributed"):
        raise ValueError(f"dask_strads runs on a distributed cluster or on the 'synchronous' "
                         f"or 'threads' scheduler, not on scheduler={scheduler!r}: its blocks "
                         "keep their state in memory between rounds")
    if in_dask_task() or multiprocessing.parent_process() is not None:
        # a joblib or multiprocessing worker, or a Dask task: never a nested cluster, and no
        # more threads than the one it was given
        return LocalExecutor(dask.local.get_sync, default_cluster_size())
    if stored_entries is not None and stored_entries * BYTES_PER_ENTRY < (
            CLUSTER_MEMORY_SHARE * psutil.virtual_memory().total):
        return LocalExecutor(dask.threaded.get, default_cluster_size())
    return DistributedExecutor(embedded_client())
