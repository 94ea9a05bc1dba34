"""Placing data blocks on the workers of a cluster and keeping them there."""
from dataclasses import dataclass

import uuid

import dask
import numpy as np
import scipy.sparse as sp
import sparse
from dask._task_spec import DataNode
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.sizeof import sizeof
from distributed import Future, wait

#: A collection's graph may hold data (``da.from_array`` of a numpy array holds its chunks):
#: past this many bytes they are scattered to the cluster instead of sent inside the graphs
#: that read them (Dask warns of a "large graph" from 10 MB).
SCATTER_ABOVE_BYTES = 1 << 20
_DATA = (np.ndarray, sp.spmatrix, sp.sparray, sparse.SparseArray)


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


def scatter_one(client, value, worker, key):
    """A future for ``value`` on ``worker`` under ``key``."""
    return client.scatter({key: value}, workers=[worker], hash=False)[key]


def persist_blocks(client, blocks):
    """Compute lazy blocks where the cluster puts them and pin each to the worker that holds it.

    This is how xgboost.dask and lightgbm.dask place partitions: persist, wait, ask who_has.
    The blocks never pass through the client.
    """
    held = scatter_held_data(client, *blocks)  # kept while the blocks compute from its futures
    futures = client.compute(held)
    with client.as_current():  # distributed.wait uses the default client, which may be another
        wait(futures)
    who_has = client.who_has(futures)
    return [PinnedBlock(f, sorted(who_has[f.key])[0]) for f in futures]


def place_blocks(client, blocks, workers=None, slots=None, prefix="strads-data"):
    """Pin a list of blocks: in memory ones are scattered straight to the worker that will own
    them (see :func:`spread`), under the keys ``<prefix>-<block>-<random>``; lazy ones (dask
    collections) persisted where the cluster computes them."""
    if blocks and all(dask.is_dask_collection(b) for b in blocks):
        return persist_blocks(client, blocks)
    owners = spread(len(blocks), workers or worker_addresses(client), slots)
    run = uuid.uuid4().hex[:8]
    return [PinnedBlock(scatter_one(client, block, owner, f"{prefix}-{b}-{run}"), owner)
            for b, (block, owner) in enumerate(zip(blocks, owners))]


def scatter_held_data(client, *collections):
    """The ``collections`` with the data their graphs hold (layers of in-memory arrays, as
    ``da.from_array`` of a numpy array makes) replaced by futures of them on ``client``'s
    cluster, each layer scattered once, when it exceeds :data:`SCATTER_ABOVE_BYTES`; the
    collections without such data are returned as they are."""
    scattered = {}  # layer name -> its layer of futures, or None: left as it is
    result = []
    for collection in collections:
        graph = collection.__dask_graph__()
        if not isinstance(graph, HighLevelGraph):
            result.append(collection)
            continue
        for name, layer in graph.layers.items():
            if name not in scattered:
                scattered[name] = _scattered(layer, client)
        if all(scattered[name] is None for name in graph.layers):
            result.append(collection)
            continue
        layers = {name: scattered[name] or layer for name, layer in graph.layers.items()}
        rebuild, args = collection.__dask_postpersist__()
        result.append(rebuild(HighLevelGraph(layers, graph.dependencies), *args))
    return result


def _scattered(layer, client):
    """A layer of futures of the arrays ``layer`` holds, or None for a layer of tasks or of
    little data."""
    if not isinstance(layer, MaterializedLayer):
        return None
    data = {key: _held(value) for key, value in layer.items()}
    if any(value is None for value in data.values()) or (
            sum(map(sizeof, data.values())) <= SCATTER_ABOVE_BYTES):
        return None
    # fresh keys: the graph's own may still be held, or being released, from an earlier scatter
    return MaterializedLayer(dict(zip(data, client.scatter(list(data.values()), hash=False))))


def _held(value):
    """The array a graph entry holds, or None for a task."""
    value = value.value if isinstance(value, DataNode) else value
    return value if isinstance(value, _DATA) else None
