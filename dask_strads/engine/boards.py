"""Boards: what a fused epoch's task on one worker posts for the others, round by round.

In a fused epoch (see :mod:`.epochs`) one task per worker runs several rounds, so the order the
task graph gave a round's reads (a push after the pushes it reads from, the pull after the
pushes) comes from the workers' boards instead: each worker's task posts, per round, that its
pushes are done and their partials, and the hub's task posts each round's pull. A read of
another worker's cell, partials or pull waits for the post it needs, on the worker that posts
it (a request over the message plane waits on the answering worker's event loop), within the
plane's timeout. Boards belong to a run, so a new incarnation of a fit (after a lost worker)
never reads the posts of the one before; a run's boards go when its epoch tasks end.
"""
import asyncio
import threading

#: The key of the client's request that the run stop (see :func:`ask_to_stop`).
STOP = ("stop",)
#: The key of the exception that ended this worker's epoch task: a wait on the board ends with
#: it at once, rather than at its timeout.
FAILED = ("failed",)
#: Boards of this process's workers: (worker address, run id) -> Board.
_BOARDS: dict[tuple[str, str], "Board"] = {}
_LOCK = threading.Lock()


class Board:
    """Posts of one worker for one run: ``done`` (the newest round whose pushes it finished),
    and values by key (a round's partials, a round's pull). Posts are made from the worker's
    task thread; waits run on the worker's event loop."""

    def __init__(self, loop):
        self.loop = loop
        self.done = -2
        self.values = {}
        self._changed = None  # an asyncio.Event of the loop, made there

    def post(self, key=None, value=None, done=None):
        """Post ``value`` under ``key`` and/or that rounds up to ``done`` are finished (from the
        worker's task thread, or its event loop)."""
        if key is not None:
            self.values[key] = value
        if done is not None:
            self.done = done
        self.loop.add_callback(self._notify)

    def _notify(self):
        if self._changed is not None:
            self._changed.set()

    async def until(self, ready, timeout):
        """Wait on the event loop until ``ready()``; TimeoutError after ``timeout`` seconds."""
        async def waiting():
            while not ready():
                if self._changed is None:
                    self._changed = asyncio.Event()
                self._changed.clear()
                if ready():
                    return
                await self._changed.wait()

        await asyncio.wait_for(waiting(), timeout)


def board(worker, run_id):
    """The board of ``worker`` (a distributed Worker) for run ``run_id``."""
    with _LOCK:
        found = _BOARDS.get((worker.address, run_id))
        if found is None:
            found = _BOARDS[(worker.address, run_id)] = Board(worker.loop)
        return found


def find(address, run_id):
    """The board of the worker at ``address`` for run ``run_id`` in this process, or None."""
    with _LOCK:
        return _BOARDS.get((address, run_id))


def drop_with_cell(cell_key):
    """Drop the boards of the run whose cell ``cell_key`` (whose key ends with the run's id)
    is released: the run is over on this worker."""
    with _LOCK:
        for address, run_id in [k for k in _BOARDS if cell_key.endswith(f"-{k[1]}")]:
            del _BOARDS[(address, run_id)]


def ask_to_stop(run_id, dask_worker):
    """Post on ``dask_worker``'s board of run ``run_id`` that the client stops the fit (run by
    ``Client.run`` on the run's hub)."""
    board(dask_worker, run_id).post(STOP, True)
