"""Placing data blocks on workers and keeping them there."""
from dataclasses import dataclass

import dask
from distributed import Future, wait


@dataclass(frozen=True)
class PinnedBlock:
    """A data block held by one worker for the whole fit."""

    future: Future
    worker: str


def worker_addresses(client, timeout=30):
    """The cluster's workers; waits up to ``timeout`` seconds for one (a cluster starting, or a
    nanny restarting a worker)."""
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    if not workers:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError as error:
            raise RuntimeError(f"the Dask cluster has no workers after {timeout} s") from error
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    return workers


def spread(n_blocks, workers):
    """Worker of each block: contiguous runs of blocks, as even as the counts allow."""
    return [workers[b * len(workers) // n_blocks] for b in range(n_blocks)]


def scatter_one(client, value, worker):
    """One future for ``value`` on ``worker`` (scatter alone would split lists and dicts)."""
    return client.scatter([value], workers=[worker], hash=False)[0]


def scatter_blocks(client, blocks):
    """Send in-memory blocks from the client, each straight to the worker that will own it."""
    owners = spread(len(blocks), worker_addresses(client))
    futures = [scatter_one(client, block, owner) for block, owner in zip(blocks, owners)]
    return [PinnedBlock(f, w) for f, w in zip(futures, owners)]


def persist_blocks(client, blocks):
    """Compute lazy blocks where the cluster puts them and pin each to the worker that holds it.

    This is how xgboost.dask and lightgbm.dask place partitions: persist, wait, ask who_has.
    The blocks never pass through the client.
    """
    futures = client.compute(list(blocks))
    with client.as_current():  # distributed.wait uses the default client, which may be another
        wait(futures)
    who_has = client.who_has(futures)
    return [PinnedBlock(f, sorted(who_has[f.key])[0]) for f in futures]


def place_blocks(client, blocks):
    """Pin a list of blocks, in memory (scattered) or lazy (dask collections, persisted)."""
    if all(dask.is_dask_collection(b) for b in blocks):
        return persist_blocks(client, blocks)
    return scatter_blocks(client, blocks)


def futures_to_array(futures, shapes, dtype, axis=0):
    """A Dask array whose chunks are the given futures (kept where they are)."""
    import dask.array as da  # only here: workers import this module and need no dask.array

    parts = [da.from_delayed(f, shape=shape, dtype=dtype) for f, shape in zip(futures, shapes)]
    return da.concatenate(parts, axis=axis)
