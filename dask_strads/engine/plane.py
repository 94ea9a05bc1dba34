"""The message plane: what a push needs of other blocks, worker to worker, outside the scheduler.

A push may read *messages* (parts of other blocks' states, see
:class:`~dask_strads.programs.Program`) and take a *carried block* that an earlier push left in
its cell. Neither is a task: the push is given a :class:`Source` for each (the block, the
address of its worker, a reference to its cell, and the push that made what it reads, which
orders the two), and fetches from the source's cell while it runs:

- from a cell in this process (a local executor, the embedded cluster's worker threads, or two
  blocks on one worker) directly, with no copy;
- from a cell of another worker process by one request to that worker's ``strads_plane``
  handler (:class:`ServePlane`, installed with the cells), answered from its cell registry.

So a round is its pushes, its pull and its report, whatever the program sends: the scheduler
sees none of it. A request that gets no answer within :data:`FETCH_SECONDS` (at least; more when
rounds are long), or whose worker is gone, fails the push with :class:`.errors.PeerUnreachable`
naming that worker; the engine then treats it as lost once the scheduler drops it.
"""
import asyncio
from typing import NamedTuple

from dask.sizeof import sizeof
from distributed import WorkerPlugin, get_worker
from distributed.protocol import to_serialize
from distributed.utils import sync

from .cells import CellRef, local_cell, opened
from .errors import PeerUnreachable

#: A request for a message or a carried block waits at least this long for its answer.
FETCH_SECONDS = 60.0
HANDLER = "strads_plane"


class Source(NamedTuple):
    """Where a push finds what ``block`` sends it: ``cell`` (its cell, or a reference to it)
    on ``worker``, once ``after`` (the block's push that made it) has run; ``timeout``: the
    seconds a request for it may take."""

    block: int
    worker: str
    cell: object
    after: object
    timeout: float = FETCH_SECONDS


class Received:
    """What one push fetched: counts for the round's report."""

    def __init__(self):
        self.messages = 0
        self.bytes = 0  # from other processes only: what crossed a connection

    def count(self, value, remote):
        self.messages += 1
        if remote:
            self.bytes += sizeof(value)
        return value


def message(source, to_block, round_index, received):
    """``source.block``'s message to the push of ``to_block`` in round ``round_index``, from its
    state after the round before."""
    return _fetch(source, received, "message", to_block=to_block, round_index=round_index)


def carried(source, carried_id, received):
    """The carried block ``carried_id`` that ``source.block``'s push left in its cell; the cell
    lets go of it."""
    return _fetch(source, received, "carried", carried_id=carried_id)


def peek_carried(source, carried_id):
    """The carried block as :func:`carried` gives it, left in the cell (for a checkpoint's copy,
    on the cell's worker)."""
    return opened(source.cell).outbox[carried_id]


def _fetch(source, received, kind, **what):
    cell = local_cell(source.cell)
    if cell is not None:
        return received.count(_answer(cell, kind, **what), remote=False)
    worker = get_worker()
    try:
        response = sync(worker.loop, _ask, worker, source, kind, what)
    except (OSError, asyncio.TimeoutError) as error:
        raise PeerUnreachable(
            f"worker {source.worker} holding block {source.block} did not answer a request for "
            f"its {kind} within {source.timeout:.0f} s ({type(error).__name__}: {error})",
            [source.worker]) from None
    if response["status"] != "OK":
        raise PeerUnreachable(f"worker {source.worker} no longer holds block {source.block}'s "
                              f"cell {source.cell.key}", [source.worker])
    return received.count(response["value"], remote=True)


async def _ask(worker, source, kind, what):
    call = getattr(worker.rpc(source.worker), HANDLER)
    return await asyncio.wait_for(call(cell=source.cell.key, kind=kind, **what),
                                  source.timeout)


def _answer(cell, kind, to_block=None, round_index=None, carried_id=None):
    if kind == "message":
        return cell.program.message(cell.block_id, cell.data, _state_before(cell, round_index),
                                    to_block)
    return cell.outbox.pop(carried_id)


def _state_before(cell, round_index):
    """The cell's state after round ``round_index - 1``, which a message of round
    ``round_index`` is made from; a request the cell has moved past (its state updated in place
    since, or no state that old) is refused rather than answered from another round."""
    newest = max(cell.versions)
    if min(cell.versions) >= round_index or (cell.program.updates_in_place
                                             and newest >= round_index):
        raise RuntimeError(f"block {cell.block_id} holds the states of rounds "
                           f"{sorted(cell.versions)}: a message of round {round_index}, made "
                           f"from round {round_index - 1}, can no longer be made")
    return cell.state_at(round_index - 1)


class ServePlane(WorkerPlugin):
    """Answers other workers' requests for the messages and carried blocks of this worker's
    cells."""

    def setup(self, worker):
        worker.handlers[HANDLER] = self.serve

    def teardown(self, worker):
        worker.handlers.pop(HANDLER, None)

    @staticmethod
    def serve(cell, kind, **what):
        try:
            found = opened(CellRef(cell))
        except RuntimeError:
            return {"status": "missing"}
        return {"status": "OK", "value": to_serialize(_answer(found, kind, **what))}
