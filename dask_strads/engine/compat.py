"""The parts of dask's and distributed's API below their public surface that the engine relies
on, in one place, so that a new release touches this file only: dask's task spec (the graphs the
engine writes), distributed's wait on a given client, adding a plugin from inside a task, and
gathering outside the client's batching.

distributed is imported only where a cluster is used: a fit in this process never loads it
(:func:`current_worker`)."""
import asyncio
import sys

import dask

#: The releases of dask and distributed this module was checked against.
TESTED = "dask and distributed 2025.4 to 2026.8"

try:
    from dask._task_spec import DataNode, Task, TaskRef, convert_legacy_graph, parse_input
except ImportError as error:
    raise ImportError(f"dask_strads needs parts of dask that dask {dask.__version__} lacks "
                      f"({error}); it works with {TESTED}") from error

__all__ = ["DataNode", "Task", "TaskRef", "add_plugin_here", "convert_legacy_graph",
           "current_worker", "fetch", "on_loop", "parse_input", "wait_on"]


def current_worker():
    """The Dask worker running this code, or None. Without distributed imported there is none,
    and asking does not import it."""
    if "distributed" not in sys.modules:
        return None
    from distributed import get_worker

    try:
        return get_worker()
    except ValueError:
        return None


def wait_on(client, futures, timeout=None):
    """``distributed.wait(futures, timeout)`` on ``client``. ``distributed.wait`` asks for the
    default client, which may be another, and making ``client`` the current one
    (``client.as_current()``) sets the global dask config's scheduler: fits waiting at once on
    threads (a cross-validation's paths) would leave it set to a client no longer current."""
    try:
        from distributed.client import _wait
    except ImportError as error:
        import distributed

        raise ImportError(f"dask_strads needs distributed.client._wait, which distributed "
                          f"{distributed.__version__} lacks; it works with {TESTED}") from error
    return client.sync(_wait, list(futures), timeout=timeout)


def on_loop(client, awaitable):
    """Start ``awaitable`` on ``client``'s event loop; a ``concurrent.futures.Future`` of its
    outcome, which a caller may stop waiting for without cancelling it."""
    return asyncio.run_coroutine_threadsafe(_awaited(awaitable), client.loop.asyncio_loop)


async def _awaited(awaitable):
    return await awaitable


async def fetch(client, keys):
    """``{key: value}`` of finished keys, gathered through the scheduler's ``gather`` handler,
    as ``Client.gather`` does without a direct connection to the workers, but outside the
    client's batching of gathers: that batching shares one pending request among the client's
    gathers, and a gather cancelled at the wrong moment (by a timeout, or Ctrl-C) leaves a
    cancelled request there that every later gather of the client awaits (distributed 2026.8:
    ``Client._gather_future``), so that no result of that client ever arrives again. Raises
    ``KeyError`` naming the keys no worker holds."""
    response = await client.scheduler.gather(keys=list(keys))
    if response["status"] != "OK":
        raise KeyError(f"no worker holds {', '.join(map(str, response['keys']))}")
    return response["data"]


def add_plugin_here(worker, plugin, name):
    """Add ``plugin`` to ``worker`` from inside one of its tasks (once per ``name``): plugins
    are added on the worker's event loop, which walks them at each transition, and
    ``Client.register_plugin`` would need a client on the worker."""
    from distributed.utils import sync

    if name not in worker.plugins:
        sync(worker.loop, worker.plugin_add, plugin=plugin, name=name)
