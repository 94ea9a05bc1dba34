"""Placing data blocks on the workers of a cluster and keeping them there."""
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


def spread(n_blocks, workers, slots=None):
    """Worker of each block: contiguous runs of blocks, as even as the counts allow; or, with
    ``slots`` (one int per block), blocks of the same slot on the same worker, slot ``s`` of
    ``max(slots) + 1`` placed as block ``s`` of that many would be."""
    if slots is None:
        return [workers[b * len(workers) // n_blocks] for b in range(n_blocks)]
    n_slots = max(slots) + 1
    return [workers[s * len(workers) // n_slots] for s in slots]


def scatter_one(client, value, worker):
    """One future for ``value`` on ``worker`` (scatter alone would split lists and dicts)."""
    return client.scatter([value], workers=[worker], hash=False)[0]


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


def place_blocks(client, blocks, workers=None, slots=None):
    """Pin a list of blocks: in memory ones are scattered straight to the worker that will own
    them (see :func:`spread`), lazy ones (dask collections) persisted where the cluster computes
    them."""
    if blocks and all(dask.is_dask_collection(b) for b in blocks):
        return persist_blocks(client, blocks)
    owners = spread(len(blocks), workers or worker_addresses(client), slots)
    return [PinnedBlock(scatter_one(client, block, owner), owner)
            for block, owner in zip(blocks, owners)]
