"""Where the tasks of a fit run: a distributed cluster, or one of Dask's local schedulers.

Both executors take the same graphs: ``{worker: {key: Task}}``, tasks restricted to the worker
they are listed under, whose arguments refer to other tasks of the graph (``TaskRef``) or to
values of earlier graphs (the handles the executor returned for them). On a cluster a handle is
a :class:`distributed.Future` and the value stays on its worker; locally it holds the value.
What the engine asks of either is :class:`Executor`.
"""
import concurrent.futures
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from time import monotonic, sleep
from typing import Any, Protocol

import dask
import numpy as np
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from .blocks import fresh_copies, place_blocks, spread, worker_addresses, worker_info
from .boards import ask_to_stop
from .compat import DataNode, TaskRef, fetch, on_loop, wait_on
from .errors import ClusterError, PeerUnreachable, WorkerLost
from .stalls import Stalls
from .streams import RoundStream

#: How often a wait on the cluster checks that the workers it depends on are still there.
POLL_SECONDS = 2.0
#: How often a wait that watches something else (a fused epoch's streamed rounds) looks at it.
WATCH_SECONDS = 0.1
#: A result the scheduler holds this long while the client has not heard that it is done stops
#: the fit (the client's connection to the scheduler lost messages).
UNHEARD_SECONDS = 60.0
#: The scheduler not answering within this many seconds is unreachable.
SCHEDULER_SECONDS = 30.0


class Executor(Protocol):
    """What the engine asks of where a fit runs."""

    #: Whether the tasks run in this process (values in memory, no worker lost).
    local: bool
    #: The cluster's ``distributed.Client``, None for a local scheduler.
    client: Any
    #: The workers blocks are placed on.
    workers: list[str]
    #: The fit's typical round in seconds, which bounds the waits on a cluster.
    round_seconds: float

    def refresh(self) -> list[str]:
        """The workers now there, from now on the ones blocks are placed on."""

    def place(self, blocks: Sequence[Any], slots: Sequence[int] | None = None,
              prefix: str = "strads-data") -> tuple[list, list[str]]:
        """Handles of ``blocks`` placed on the workers, and the worker of each."""

    def share(self, value: Any, key: str) -> Any:
        """A handle of ``value`` that every worker may read."""

    def put(self, value: Any, worker: str, key: str) -> Any:
        """A handle of ``value`` kept on ``worker``."""

    def submit(self, graph: dict[str, dict]) -> dict[str, Any]:
        """Run a graph ``{worker: {key: Task}}``; ``{key: handle}`` for every task."""

    def result(self, handle: Any, owners: Sequence[str] = (),
               watch: Callable[[], None] | None = None) -> Any:
        """The value of ``handle``, moved here."""

    def round_stream(self, run_id: str) -> Any:
        """Where a run's fused epochs stream their rounds, None where none run."""

    def ask_to_stop(self, run_id: str, hub: str) -> None:
        """Ask the hub of a run's fused epochs to stop it."""

    def compute(self, *collections: Any) -> list:
        """Dask collections computed here."""

    def done(self, handle: Any) -> bool:
        """Whether ``handle``'s value is computed."""

    def wait(self, handles: Sequence[Any], owners: Sequence[str] = (),
             watch: Callable[[], None] | None = None,
             until: Callable[[], bool] | None = None) -> bool:
        """Wait until ``handles`` are computed, their values left where they are (True), or
        until ``until()`` is true (False), calling ``watch`` meanwhile."""

    def gather(self, handles: Sequence[Any], owners: Sequence[str] = (),
               watch: Callable[[], None] | None = None) -> list:
        """The values of ``handles``, moved here."""

    def release(self, handles: Iterable[Any]) -> None:
        """Let go of ``handles``."""

    def as_array(self, handles: Sequence[Any], workers: Sequence[str], axis: int = 0) -> Any:
        """The values of ``handles`` as one Dask array, each a chunk along ``axis``."""


class DistributedExecutor:
    """Runs graphs on a ``distributed.Client``; every task pinned to its worker.

    Every wait on the cluster is bounded: each :data:`POLL_SECONDS` it checks the scheduler and
    the workers holding the fit's blocks (see :meth:`check` and :mod:`.stalls`), and a value is
    moved to the client by a request that is never cancelled, so that waiting less than a
    transfer takes (on a loaded machine) cannot leave the client unable to receive values.
    """

    local = False

    def __init__(self, client):
        self.client = client
        self.workers = worker_addresses(client)
        #: the fit's typical round in seconds, which sets the bounds of :mod:`.stalls`
        self.round_seconds = 0.0

    def refresh(self):
        """The workers now in the cluster, from now on the ones blocks are placed on."""
        self.workers = worker_addresses(self.client)
        return self.workers

    def place(self, blocks, slots=None, prefix="strads-data"):
        """Handles of the blocks on their workers, and the worker of each; blocks in memory
        are sent under the keys ``<prefix>-<block>``."""
        pinned = place_blocks(self.client, blocks, self.workers, slots, prefix)
        return [p.future for p in pinned], [p.worker for p in pinned]

    def share(self, value, key):
        """A handle of ``value`` on every worker (read by many tasks, sent once)."""
        return self._settle(self.client.scatter({key: value}, broadcast=True, hash=False,
                                                asynchronous=True))[key]

    def put(self, value, worker, key):
        return self._settle(self.client.scatter({key: value}, workers=[worker], hash=False,
                                                asynchronous=True), [worker])[key]

    def submit(self, graph):
        """Send one graph; returns ``{key: handle}`` for every task in it."""
        layers: dict[str, MaterializedLayer] = {}
        dependencies: dict[str, set[str]] = {}
        for worker, tasks in graph.items():
            name = f"strads-on-{worker}"
            layers[name] = MaterializedLayer(
                tasks, annotations={"workers": [worker], "allow_other_workers": False})
            dependencies[name] = set()
        keys = [key for tasks in graph.values() for key in tasks]
        futures = self.client.get(HighLevelGraph(layers, dependencies), keys, sync=False)
        return dict(zip(keys, futures))

    def result(self, handle, owners=(), watch=None):
        """The value of ``handle``, waiting as long as the workers in ``owners`` (their blocks'
        state lives there) are alive and the scheduler answers; else a
        :class:`ClusterError` that says which worker or scheduler was lost. ``watch``: called
        every :data:`WATCH_SECONDS` of the wait."""
        return self.gather([handle], owners, watch)[0]

    def round_stream(self, run_id):
        """The :class:`.streams.RoundStream` of a run's fused epochs on this cluster."""
        return RoundStream(self.client, run_id)

    def ask_to_stop(self, run_id, hub):
        """Ask the hub of a run's fused epochs to stop it at the next round it pulls, without
        waiting for the answer: a hub that is gone or silent then runs its epoch's rounds, or
        fails with it, and the fit stops at the client either way."""
        on_loop(self.client, self.client.run(ask_to_stop, run_id, workers=[hub],
                                             on_error="return", asynchronous=True))

    def run_on(self, workers, function, *args):
        """``{worker: function(*args, dask_worker=the worker)}`` (or the exception it raised)
        on each of ``workers``, outside the task graph, as bounded as :meth:`result`."""
        return self._settle(self.client.run(function, *args, workers=list(workers),
                                            on_error="return", asynchronous=True), workers)

    def check(self, owners, cause=None, stalls=None):
        """Raise :class:`ClusterError` if the scheduler is gone or a worker of ``owners`` left;
        with ``stalls`` (a :class:`.stalls.Stalls`), also watch for paused and silent ones."""
        try:
            if self.client.status != "running":
                raise OSError(f"client {self.client.status}")
            workers = worker_info(self.client, timeout=SCHEDULER_SECONDS)
        except Exception as error:
            raise ClusterError(f"the scheduler at {self.client.scheduler.address} is unreachable "
                               f"({error}): the fit cannot go on") from cause or error
        lost = sorted(set(owners) - set(workers))
        if lost:
            blocks = {w: [b for b, owner in enumerate(owners) if owner == w] for w in lost}
            said = "; ".join(f"worker {w} holding blocks {', '.join(map(str, b))}"
                             for w, b in blocks.items())
            raise WorkerLost(f"{said} was lost during the fit", lost) from cause
        if stalls is not None:
            stalls.see(owners, workers, monotonic())

    def compute(self, *collections):
        """Values of dask collections, computed on the cluster from copies under fresh keys;
        data their graphs hold is scattered first rather than sent inside the graph."""
        held = fresh_copies(self.client, *collections)
        return self.gather(self.client.compute(held))

    def done(self, handle):
        return handle.done()

    def wait(self, handles, owners=(), watch=None, until=None):
        """Wait until ``handles`` are computed, their values left where they are, as long as
        the workers in ``owners`` are alive (else :class:`ClusterError`, as :meth:`result`);
        ``watch``: called every :data:`WATCH_SECONDS` meanwhile. Returns True, or False as
        soon as ``until()`` (asked after each ``watch``) is true."""
        stalls = Stalls(self.round_seconds, self._held_bytes)
        # key -> when the scheduler was first seen holding it, unknown to us
        unheard: dict[str, float] = {}
        pending = [h for h in handles if not h.done()]
        checked = monotonic()
        while pending:
            try:
                wait_on(self.client, pending,
                        timeout=POLL_SECONDS if watch is None else WATCH_SECONDS)
            except Exception as error:  # timed out, or a future cancelled (a key forgotten)
                if watch is not None:
                    watch()
                if until is not None and until():
                    return False
                timed_out = isinstance(error, TimeoutError)
                if not timed_out or monotonic() - checked >= POLL_SECONDS:
                    checked = monotonic()
                    self.check(owners, error, stalls)
                    if timed_out:
                        self._heard(pending, unheard)
            pending = [h for h in pending if not h.done()]
        for handle in handles:
            if handle.status != "finished":
                failure = (handle.exception() if handle.status == "error" else
                           ClusterError(f"the scheduler forgot {handle.key} ({handle.status})"))
                if isinstance(failure, PeerUnreachable):
                    self._await_loss(owners, failure)
                self.check(owners, failure)
                raise failure
        return True

    def _await_loss(self, owners, error):
        """A push (or a gather) found a worker of ``owners`` gone or deaf before the scheduler
        did: give the scheduler :data:`UNHEARD_SECONDS` to drop it (then :class:`WorkerLost`,
        from which a fit recovers), else raise :class:`ClusterError` naming it."""
        deadline = monotonic() + UNHEARD_SECONDS
        while monotonic() < deadline:
            self.check(owners, error)
            sleep(POLL_SECONDS / 4)
        raise ClusterError(f"{error}, and the scheduler still lists it after "
                           f"{UNHEARD_SECONDS:.0f} s: the fit cannot go on",
                           error.workers) from error

    def _heard(self, pending, unheard):
        """Raise :class:`ClusterError` when the scheduler has held a result for
        :data:`UNHEARD_SECONDS` that the client still waits for."""
        held = self._settle(self.client.scheduler.who_has(keys=[h.key for h in pending]))
        now = monotonic()
        for key in [key for key, where in held.items() if where]:
            if now - unheard.setdefault(key, now) > UNHEARD_SECONDS:
                raise ClusterError(
                    f"the scheduler has held {key} for {UNHEARD_SECONDS:.0f} s, but this client "
                    f"({self.client.id}) was never told that it is done: its connection to the "
                    "scheduler lost messages, and the fit cannot go on with it")

    def _held_bytes(self, worker):
        """Bytes of the dask_strads values (keys ``strads-…``) Dask holds on ``worker``."""
        keys = self._settle(self.client.scheduler.has_what(workers=[worker])).get(worker, [])
        ours = [key for key in keys if str(key).startswith("strads-")]
        return sum(self._settle(self.client.scheduler.nbytes(keys=ours, summary=False)).values())

    def gather(self, handles, owners=(), watch=None):
        """The values of ``handles``, once computed (see :meth:`wait`)."""
        handles = list(handles)
        self.wait(handles, owners, watch)
        try:
            values = self._settle(fetch(self.client, [h.key for h in handles]), owners)
        except KeyError as error:  # a holder left after the wait, maybe before the scheduler knew
            self._await_loss(owners, ClusterError(f"values of the fit were lost: {error}"))
        return [values[h.key] for h in handles]

    def _settle(self, awaitable, owners=()):
        """The outcome of one of the client's coroutines, run on its event loop without ever
        being cancelled, checking the cluster (as :meth:`check`) while it takes long."""
        outcome = on_loop(self.client, awaitable)
        stalls = Stalls(self.round_seconds)
        while True:
            try:
                return outcome.result(timeout=POLL_SECONDS)
            except concurrent.futures.TimeoutError:
                self.check(owners, stalls=stalls)

    def release(self, handles):
        """Let the cluster forget ``handles`` and what only they need, now rather than when
        the last reference to them goes (a traceback kept after Ctrl-C holds a run's)."""
        for handle in handles:
            handle.release()

    def as_array(self, handles, workers, axis=0):
        """A Dask array whose chunks are the values of ``handles`` (on ``workers``), left where
        they are."""
        import dask.array as da

        metas = self.gather([self.client.submit(_meta, h, workers=[w], pure=False)
                             for h, w in zip(handles, workers)])
        parts = [da.from_delayed(h, shape=shape, dtype=dtype)
                 for h, (shape, dtype) in zip(handles, metas)]
        return da.concatenate(parts, axis=axis)


class LocalHandle(TaskRef):
    """A value computed by a local executor, referred to by its key in later graphs; until the
    graph that makes it runs, ``value`` is :data:`PENDING`."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, key, value):
        super().__init__(key)
        self.value = value


#: The value of a handle whose graph has not run yet.
PENDING = object()


def _ran(handle):
    """The value of ``handle``, whose graph must have run: one another thread submitted and
    has not run yet is an error, never the :data:`PENDING` marker taken for a value."""
    if handle.value is PENDING:
        raise RuntimeError(f"{handle.key} is of a graph another thread submitted and has not "
                           "run yet: a local executor runs each thread's graphs when that "
                           "thread asks for a value")
    return handle.value


class LocalExecutor:
    """Runs graphs in this process on a local Dask scheduler (synchronous or threaded).

    ``n_workers`` virtual workers: blocks are cut and assigned as they would be on a cluster of
    that size, so a fit gives the same model here as there.

    A graph submitted here runs when a value of it, or of a graph submitted after it, is first
    asked for (``result``, ``gather``, ``wait``...): the graphs submitted until then run as one.
    The engine reads a round's report ``pipeline_depth`` rounds after submitting it, so that
    many rounds and the one read run back to back on the scheduler's threads, with no return
    to the engine between them.
    """

    local = True
    client = None
    round_seconds = 0.0  # no wait here is bounded by it

    def __init__(self, get, n_workers):
        self.get = get
        self.workers = [f"local-{w}" for w in range(n_workers)]
        # key -> handle, while someone holds it
        self._live: weakref.WeakValueDictionary[str, LocalHandle] = weakref.WeakValueDictionary()
        self._counter = 0
        # per thread (fits of cross-validation folds share the executor from threads of their
        # own): the tasks submitted and not run yet with their inputs, and their handles
        self._submitted = threading.local()

    def _handle(self, key, value):
        handle = self._live[key] = LocalHandle(key, value)
        return handle

    def _fresh_key(self, prefix):
        self._counter += 1
        return f"{prefix}-{id(self):x}-{self._counter}"

    def place(self, blocks, slots=None, prefix="strads-data"):
        if blocks and all(dask.is_dask_collection(b) for b in blocks):
            blocks = dask.compute(*blocks, scheduler=self.get)
        owners = spread(len(blocks), self.workers, slots)
        return [self._handle(self._fresh_key(f"{prefix}-{b}"), block)
                for b, block in enumerate(blocks)], owners

    def share(self, value, key):
        return self._handle(key, value)

    def put(self, value, worker, key):
        return self.share(value, key)

    def submit(self, graph):
        tasks = {key: task for tasks in graph.values() for key, task in tasks.items()}
        pending, waiting = self._pending()
        pending.update(tasks)
        for task in tasks.values():  # values of earlier graphs, taken while their handles live
            for key in task.dependencies:
                if key not in pending:
                    pending[key] = DataNode(key, _ran(self._live[key]))
        handles = {key: self._handle(key, PENDING) for key in tasks}
        waiting.extend(handles.values())
        return handles

    def __getstate__(self):  # a copy (a fitted model's, deep-copied) starts with nothing to run
        return {k: v for k, v in self.__dict__.items() if k != "_submitted"}

    def __setstate__(self, state):
        self.__dict__.update(state, _submitted=threading.local())

    def _pending(self):
        """``(tasks and inputs, handles)`` this thread submitted and has not run yet."""
        submitted = self._submitted
        if not hasattr(submitted, "graph"):
            submitted.graph, submitted.handles = {}, []
        return submitted.graph, submitted.handles

    def _run_pending(self):
        """Run every graph this thread submitted and has not run yet, as one."""
        graph, waiting = self._pending()
        if not graph:
            return
        self._submitted.graph, self._submitted.handles = {}, []
        keys = [handle.key for handle in waiting]
        values = dict(zip(keys, self.get(graph, keys)))
        for handle in waiting:
            handle.value = values[handle.key]

    def result(self, handle, owners=(), watch=None):
        if handle.value is PENDING:
            self._run_pending()
        return _ran(handle)

    def refresh(self):
        """The virtual workers, which no fit loses."""
        return self.workers

    def round_stream(self, run_id):
        """None: local schedulers run no fused epochs."""

    def ask_to_stop(self, run_id, hub):
        """Local schedulers run no fused epochs to stop."""

    def compute(self, *collections):
        self._run_pending()
        return list(dask.compute(*collections, scheduler=self.get))

    def done(self, handle):
        return handle.value is not PENDING

    def wait(self, handles, owners=(), watch=None, until=None):
        """Runs the graphs submitted so far."""
        self._run_pending()
        return True

    def gather(self, handles, owners=(), watch=None):
        return [self.result(h) for h in handles]

    def release(self, handles):
        """Values here go with their last reference."""

    def as_array(self, handles, workers, axis=0):
        import dask.array as da

        return da.concatenate([da.from_array(np.asarray(v), chunks=np.shape(v))
                               for v in self.gather(handles)], axis=axis)


def _meta(value):
    return np.shape(value), np.asarray(value).dtype
