"""Placing data blocks on the workers of a cluster and keeping them there."""
from concurrent.futures import CancelledError
from dataclasses import dataclass
from functools import cache

import uuid

import dask
import numpy as np
import scipy.sparse as sp
from dask.delayed import Delayed
from dask.sizeof import sizeof

from ..log import logger
from .compat import DataNode, convert_legacy_graph, wait_on
from .errors import ClusterError

#: A collection's graph may hold data (``da.from_array`` of a numpy array holds its chunks):
#: past this many bytes they are scattered to the cluster instead of sent inside the graphs
#: that read them (Dask warns of a "large graph" from 10 MB).
SCATTER_ABOVE_BYTES = 1 << 20
#: Attempts at placing a fit's blocks. A worker lost part-way through a placement (more likely
#: on a loaded machine, where a lost worker takes long to be noticed) fails it: the next attempt
#: starts afresh, on the workers then in the cluster, from data sent or scattered again.
PLACEMENT_ATTEMPTS = 3
#: What such a failure raises: a connection closed under it (CommClosedError is an OSError),
#: keys the scheduler forgot with their worker (distributed's FutureCancelledError and
#: FuturesCancelledError are CancelledErrors), a value no worker holds any more (KeyError).
_LOST_UNDER_IT = (OSError, CancelledError, KeyError)


@dataclass(frozen=True)
class PinnedBlock:
    """A data block held by one worker for the whole fit."""

    future: object  # a distributed.Future
    worker: str


@dataclass(frozen=True)
class PlacedBlocks:
    """Blocks already on the workers: runs of one program or of several
    (``Engine(...).run(placed)``) start from them without sending the data again. A run that
    loses a worker places ``blocks`` (what was placed) anew for itself."""

    handles: list
    owners: list
    blocks: list
    slots: list | None = None

    @classmethod
    def on(cls, executor, blocks, slots=None, prefix="strads-data"):
        """Place ``blocks`` with ``executor`` (an engine's: ``engine.executor``)."""
        handles, owners = executor.place(blocks, slots, prefix)
        return cls(handles, owners, list(blocks), slots)

    def __len__(self):
        return len(self.handles)


def worker_info(client, timeout=None):
    """``{address: info}`` of the cluster's workers, asked of the scheduler itself (within
    ``timeout`` seconds): ``client.scheduler_info()`` returns the client's cached copy, which its
    periodic refresh may replace at any moment by one that lists no workers."""
    return client.sync(client.scheduler.identity, n_workers=-1,
                       callback_timeout=timeout)["workers"]


def worker_addresses(client, timeout=30):
    """The cluster's workers that can take blocks; waits up to ``timeout`` seconds for one (a
    cluster starting, or a nanny restarting a worker). Workers paused by Dask's memory manager
    run no task until their memory falls: they are left out while others run."""
    info = worker_info(client)
    if not info:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError as error:
            raise RuntimeError(f"the Dask cluster has no workers after {timeout} s") from error
        info = worker_info(client)
    paused = sorted(w for w, about in info.items() if about.get("status") == "paused")
    if paused and len(paused) < len(info):
        logger.warning("workers %s are paused by Dask's memory manager (memory limit reached): "
                       "the fit places no blocks there", ", ".join(paused))
        return sorted(set(info) - set(paused))
    return sorted(info)


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
    copies = fresh_copies(client, *blocks)  # kept while the blocks compute from its futures
    futures = client.compute(copies)
    wait_on(client, futures)
    for future in futures:
        if future.status != "finished":
            raise RuntimeError(f"placing a data block failed: {future.exception()!r}") from (
                future.exception())
    who_has = client.who_has(futures)
    return [PinnedBlock(f, sorted(who_has[f.key])[0]) for f in futures]


def place_blocks(client, blocks, workers=None, slots=None, prefix="strads-data"):
    """Pin a list of blocks: in memory ones are scattered straight to the worker that will own
    them (see :func:`spread`) among ``workers`` (by default the cluster's), under the keys
    ``<prefix>-<block>-<random>``; lazy ones (dask collections) persisted where the cluster
    computes them. A placement that fails as a lost worker or connection makes it is tried again
    (:data:`PLACEMENT_ATTEMPTS` in all) on the workers then in the cluster."""
    for attempt in range(1, PLACEMENT_ATTEMPTS + 1):
        try:
            return _place(client, blocks, workers, slots, prefix)
        except _LOST_UNDER_IT as error:
            if attempt == PLACEMENT_ATTEMPTS:
                raise ClusterError(f"placing the data blocks failed {attempt} times, the last "
                                   f"with {type(error).__name__}: {error}: the cluster keeps "
                                   "losing workers or connections") from error
            logger.warning("placing the data blocks failed (%s: %s): placing them again on the "
                           "workers in the cluster now (attempt %d of %d)",
                           type(error).__name__, error, attempt + 1, PLACEMENT_ATTEMPTS)
            workers = None


def _place(client, blocks, workers, slots, prefix):
    if blocks and all(dask.is_dask_collection(b) for b in blocks):
        return persist_blocks(client, blocks)
    owners = spread(len(blocks), workers or worker_addresses(client), slots)
    run = uuid.uuid4().hex[:8]
    return [PinnedBlock(scatter_one(client, block, owner, f"{prefix}-{b}-{run}"), owner)
            for b, (block, owner) in enumerate(zip(blocks, owners))]


def fresh_copies(client, *collections):
    """Copies of dask ``collections`` under keys of their own, with the data their graphs hold
    (``da.from_array`` of a numpy array holds its chunks) scattered to ``client``'s cluster when a
    layer of it exceeds :data:`SCATTER_ABOVE_BYTES`, rather than sent inside the graph.

    Fresh keys keep each computation apart from the others on the same collection: the
    scheduler keeps the first definition it was given of a key, so a placement after a lost
    worker, or a check of the same array, would otherwise wait on tasks of an earlier one whose
    scattered inputs are gone."""
    graph = {}
    for collection in collections:
        graph.update(collection.__dask_graph__())
    suffix = f"-{uuid.uuid4().hex[:8]}"
    renamed = {key: _renamed(key, suffix) for key in graph}
    copies = {}
    for key, node in convert_legacy_graph(graph).items():
        copies[renamed[key]] = node.substitute(renamed, key=renamed[key])
    from distributed import Future

    futures = {key: value for key, value in graph.items() if isinstance(value, Future)}
    futures.update(_scattered(client, graph))
    copies.update({renamed[key]: future for key, future in futures.items()})
    names = {_name(key): _name(new) for key, new in renamed.items()}
    return [rebuild(copies, *args, rename=names)
            for rebuild, args in (c.__dask_postpersist__() for c in collections)]


class DataLayer:
    """Values a computation's tasks read, made data of one layer of its graph (keys ``(name,
    i)``) rather than arguments inside its tasks: computed on a cluster (:func:`fresh_copies`),
    a layer above :data:`SCATTER_ABOVE_BYTES` is scattered to the workers. A graph's messages
    to the scheduler are buffers it keeps after their tasks are forgotten (distributed
    2026.8: about 40% of the arrays sent in tasks' arguments, call after call); scattered
    data is not kept so."""

    def __init__(self, name):
        self.name = f"{name}-{uuid.uuid4().hex[:8]}"
        self.count = 0

    def __call__(self, value):
        """``value`` as a Delayed of this layer."""
        key = (self.name, self.count)
        self.count += 1
        return Delayed(key, {key: value})


def _name(key):
    return key[0] if isinstance(key, tuple) else key


def _renamed(key, suffix):
    return (key[0] + suffix, *key[1:]) if isinstance(key, tuple) else key + suffix


def _scattered(client, graph):
    """Futures of the arrays ``graph`` holds, keyed as in the graph, for the names (layers)
    whose arrays together exceed :data:`SCATTER_ABOVE_BYTES`."""
    held: dict[str, dict] = {}
    for key, value in graph.items():
        data = _held(value)
        if data is not None:
            held.setdefault(_name(key), {})[key] = data
    large = {key: data for layer in held.values() if sum(map(sizeof, layer.values()))
             > SCATTER_ABOVE_BYTES for key, data in layer.items()}
    if not large:
        return {}
    return dict(zip(large, client.scatter(list(large.values()), hash=False)))


def _held(value):
    """The array a graph entry holds, or None for a task."""
    value = value.value if isinstance(value, DataNode) else value
    return value if isinstance(value, _data_types()) else None


@cache
def _data_types():
    """The arrays a graph may hold (pydata sparse imported when a placement first asks)."""
    import sparse

    return np.ndarray, sp.spmatrix, sp.sparray, sparse.SparseArray
