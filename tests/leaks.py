"""What a test leaves behind: threads, processes and Dask clusters it started and did not stop.

``Watch`` is taken before a test and checked after it (see ``conftest.no_leaks``). What the
session keeps on purpose is not a leak: the clusters of session fixtures (registered with
``keep``) and the package's embedded cluster, with their processes and threads.
"""
import os
import threading
import time
import weakref

import dask.threaded
import psutil
from distributed import Scheduler

#: How long a test's processes and threads may take to end after it.
GRACE_SECONDS = 10.0

#: Processes that libraries start once and keep on purpose: multiprocessing's resource tracker
#: and forkserver, joblib's reusable loky workers (ended after 300 s idle).
KEPT_PROCESS_MARKS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver",
                      "joblib.externals.loky")

#: Threads that libraries keep on purpose: the manager thread of joblib's reusable loky
#: executor (with its workers above).
KEPT_THREAD_NAMES = ("ExecutorManagerThread",)

_kept_pids = set()
_kept_schedulers = weakref.WeakSet()


def keep(*, scheduler=None, pids=()):
    """A session fixture's cluster, kept for the session: its in-process ``scheduler`` (and
    the worker processes it lists) and ``pids`` (and their descendants)."""
    if scheduler is not None:
        _kept_schedulers.add(scheduler)
    _kept_pids.update(pids)


def _embedded_scheduler():
    from dask_strads.engine import runtime

    client = runtime._embedded
    cluster = getattr(client, "cluster", None)
    return getattr(cluster, "scheduler", None)


def _dask_pool_threads():
    """The threads of dask's threaded scheduler: its pools live as long as the process."""
    with dask.threaded.pools_lock:
        pools = [pool for by_size in dask.threaded.pools.values() for pool in by_size.values()]
    pools.append(dask.threaded.default_pool)
    return {thread for pool in pools if pool is not None
            for thread in getattr(pool, "_threads", ())}


def _running(schedulers):
    return [s for s in schedulers if s.status.name not in ("closing", "closed", "failed")]


def _alive(process):
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class Watch:
    """What exists when a test starts."""

    def __init__(self):
        self.threads = set(threading.enumerate())
        self.pids = {p.pid for p in psutil.Process().children(recursive=True)}
        self.schedulers = set(Scheduler._instances)

    def started_schedulers(self):
        """The in-process Dask schedulers the test started (closed or not)."""
        return [s for s in Scheduler._instances if s not in self.schedulers]

    def _kept(self):
        schedulers = list(_kept_schedulers) + [_embedded_scheduler()]
        pids = set(_kept_pids)
        for scheduler in _running(s for s in schedulers if s is not None):
            pids.update(ws.pid for ws in scheduler.workers.values())
        pids.discard(os.getpid())  # a cluster of threads in this process keeps no process
        return schedulers, pids

    def _leaks(self):
        schedulers, kept_pids = self._kept()
        left = [f"a Dask scheduler at {s.address}" for s in _running(self.started_schedulers())
                if s not in schedulers]
        for process in psutil.Process().children(recursive=True):
            if process.pid in self.pids or not _alive(process):
                continue
            try:
                lineage = [process, *process.parents()]
                command = " ".join(process.cmdline())
            except psutil.NoSuchProcess:
                continue
            if any(p.pid in kept_pids for p in lineage) or any(
                    mark in command for mark in KEPT_PROCESS_MARKS):
                continue
            left.append(f"process {process.pid} ({command[:120]})")
        kept_threads = _dask_pool_threads()
        left += [f"thread {t.name!r}" for t in threading.enumerate()
                 if t not in self.threads and t.is_alive() and not t.daemon
                 and t not in kept_threads and t.name not in KEPT_THREAD_NAMES]
        return left

    def leaks(self):
        """What the test started and left running, after ``GRACE_SECONDS`` for it to end."""
        deadline = time.monotonic() + GRACE_SECONDS
        while True:
            left = self._leaks()
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.2)
