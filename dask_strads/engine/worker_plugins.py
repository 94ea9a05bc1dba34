"""What the engine installs on a Dask worker with its first block cell (see :mod:`.cells`):
the release of cells whose keys Dask releases, and the handler through which other workers
read this worker's cells (:mod:`.plane`). Only a worker imports this module, so a fit in this
process does not load distributed."""
import asyncio

from distributed import WorkerPlugin
from distributed.protocol import to_serialize

from . import boards, parking
from .cells import CellRef, drop, opened
from .plane import FETCH_SECONDS, HANDLER, answer


class ReleaseCells(WorkerPlugin):
    """Drops a cell from the registry when its worker releases its key, or closes (workers of
    a LocalCluster without processes share this process, which outlives them)."""

    def transition(self, key, start, finish, **kwargs):
        if finish in ("released", "forgotten"):
            drop(key)

    def teardown(self, worker):
        for key in list(worker.data):
            drop(key)
        parking.close(worker)


class ServePlane(WorkerPlugin):
    """Answers other workers' requests for the messages and carried blocks of this worker's
    cells."""

    def teardown(self, worker):
        worker.handlers.pop(HANDLER, None)

    def setup(self, worker):
        worker.handlers[HANDLER] = self.serve
        self.worker = worker

    async def serve(self, kind, cell=None, run_id=None, ready=None, timeout=FETCH_SECONDS,
                    key=None, take=False, **what):
        if run_id is not None:  # a fused epoch's request, answered once its round is posted
            board = boards.board(self.worker, run_id)
            failed = boards.FAILED
            try:  # answered before the asker's own timeout, so that it learns what is missing
                if ready is not None:
                    await board.until(lambda: board.done >= ready or failed in board.values,
                                      0.9 * timeout)
                if kind == "posted":
                    key = tuple(key)
                    if ready is None:
                        await board.until(lambda: key in board.values or failed in board.values,
                                          0.9 * timeout)
                if failed in board.values:  # its epoch task failed: the asker fails with it
                    return {"status": "failed", "value": to_serialize(board.values[failed])}
            except asyncio.TimeoutError:
                return {"status": f"waiting for round {ready} or {key}; rounds posted done up "
                                  f"to {board.done}"}
            if kind == "posted":
                value = board.values.pop(key, None) if take else board.values.get(key)
                return {"status": "OK", "value": to_serialize(value)}
        try:
            found = opened(CellRef(cell))
        except RuntimeError:
            return {"status": "missing"}
        return {"status": "OK", "value": to_serialize(answer(found, kind, **what))}
