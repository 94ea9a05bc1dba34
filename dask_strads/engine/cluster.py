"""Which Dask client a fit runs on: the one given, the active one, or the embedded default."""
import atexit
import os
import threading

from distributed import Client, LocalCluster

_default = None
_default_lock = threading.Lock()


def default_cluster_size():
    """One single-threaded worker process per core: the kernels are numba loops, one per core."""
    n_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, n_cores or 1)


def embedded_client():
    """The process-wide local cluster, started on first use and reused afterwards."""
    global _default
    with _default_lock:
        if _default is None or _default.status in ("closing", "closed"):
            cluster = LocalCluster(
                n_workers=default_cluster_size(),
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
            )
            # Default, so that lazy results (``keep_on_cluster``) compute where they live.
            _default = Client(cluster, set_as_default=True)
            atexit.register(close_embedded_client)
        return _default


def close_embedded_client():
    global _default
    with _default_lock:
        if _default is not None:
            cluster = _default.cluster
            _default.close()
            cluster.close()
            _default = None


def resolve_client(client=None):
    """The client to run on: ``client`` if given, else the active client, else the embedded one."""
    if client is not None:
        if not isinstance(client, Client):
            raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
        return client
    try:
        from distributed import default_client

        return default_client()
    except ValueError:
        return embedded_client()
