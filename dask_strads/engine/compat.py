"""The parts of distributed's API below its public surface that the engine relies on, in one
place, so that a new distributed release touches this file only."""
import asyncio

from distributed.client import _wait  # distributed.wait without asking for the default client


def wait_on(client, futures, timeout=None):
    """``distributed.wait(futures, timeout)`` on ``client``. ``distributed.wait`` asks for the
    default client, which may be another, and making ``client`` the current one
    (``client.as_current()``) sets the global dask config's scheduler: fits waiting at once on
    threads (a cross-validation's paths) would leave it set to a client no longer current."""
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
