"""The message plane: what a push needs of other blocks, worker to worker, outside the scheduler.

A push may read *messages* (parts of other blocks' states, see
:class:`~dask_strads.programs.Program`) and take a *carried block* that an earlier push left in
its cell. Neither is a task: the push is given a :class:`Source` for each (the block, the
address of its worker, a reference to its cell, and the push that made what it reads, which
orders the two), and fetches from the source's cell while it runs:

- from a cell in this process (a local executor, the embedded cluster's worker threads, or two
  blocks on one worker) directly, with no copy;
- from a cell of another worker process by one request to that worker's ``strads_plane``
  handler (:class:`.worker_plugins.ServePlane`, installed with the cells), answered from its
  cell registry.

So a round is its pushes, its pull and its report, whatever the program sends: the scheduler
sees none of it. A request that gets no answer within :data:`FETCH_SECONDS` (at least; more when
rounds are long), or whose worker is gone (nothing listens at its address: failed at once),
fails the push with :class:`.errors.PeerUnreachable` naming that worker; the engine then treats
it as lost once the scheduler drops it.
"""
import asyncio
from typing import NamedTuple

from dask.sizeof import sizeof

from . import boards
from .cells import local_cell, opened
from .compat import current_worker
from .errors import PeerUnreachable

#: A request for a message or a carried block waits at least this long for its answer.
FETCH_SECONDS = 60.0
HANDLER = "strads_plane"


class Source(NamedTuple):
    """Where a push finds what ``block`` sends it: ``cell`` (its cell, or a reference to it)
    on ``worker``, once ``after`` (the block's push that made it) has run; ``timeout``: the
    seconds a request for it may take. In a fused epoch (see :mod:`.epochs`), where no task
    orders the read, once ``worker`` has posted round ``ready`` done on its board for run
    ``run_id``."""

    block: int
    worker: str
    cell: object
    after: object
    timeout: float = FETCH_SECONDS
    ready: int | None = None
    run_id: str | None = None


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


def messages(sources, to_block, round_index, received):
    """``{source.block: its message}`` to the push of ``to_block`` in round ``round_index``,
    each from its block's state after the round before; the requests to other workers go out
    together, so a push waits for the slowest answer, not for their sum."""
    return _fetch_all(sources, received, "message", to_block=to_block,
                      round_index=round_index)


def carried(source, carried_id, received):
    """The carried block ``carried_id`` that ``source.block``'s push left in its cell; the cell
    lets go of it."""
    return _fetch_all([source], received, "carried", carried_id=carried_id)[source.block]


def peek_carried(source, carried_id):
    """The carried block as :func:`carried` gives it, left in the cell (for a checkpoint's copy,
    on the cell's worker)."""
    return opened(source.cell).outbox[carried_id]


def posted(addresses, run_id, key, ready, timeout, take=False):
    """``{address: value}``: the value each worker of ``addresses`` posted under ``key`` on
    its board for run ``run_id`` (None if it posted none), once it has posted round ``ready``
    done (None: once it has posted the value). ``take``: and removed from the board. The
    requests go out together."""
    worker = current_worker()
    found = {}
    others = [a for a in addresses if a != worker.address]
    if len(others) < len(addresses):  # posted by this task, before it asks
        board = boards.board(worker, run_id)
        found[worker.address] = (board.values.pop(key, None) if take
                                 else board.values.get(key))
    request = dict(kind="posted", run_id=run_id, ready=ready, timeout=timeout, key=list(key),
                   take=take)
    answers = _ask_all([(a, f"its {key[0]} of round {key[1]}", timeout, request)
                        for a in others])
    return {**found, **dict(zip(others, answers))}


def _fetch_all(sources, received, kind, **what):
    """``{source.block: value}`` of ``kind`` from each source's cell: read here when the cell
    is in this process and the read is ordered (by a task, or because this worker's own epoch
    task made it), else asked of its worker, all such requests at once."""
    found, asked = {}, []
    for source in sources:
        cell = local_cell(source.cell)
        if cell is not None and (source.ready is None or _this_worker(source.worker)):
            found[source.block] = received.count(answer(cell, kind, **what), remote=False)
        else:
            asked.append((source, cell is None))
    answers = _ask_all([(s.worker, f"block {s.block}'s {kind}", s.timeout,
                         dict(cell=s.cell.key, kind=kind, run_id=s.run_id, ready=s.ready,
                              timeout=s.timeout, **what)) for s, _ in asked])
    for (source, remote), value in zip(asked, answers):
        found[source.block] = received.count(value, remote=remote)
    return {s.block: found[s.block] for s in sources}


def _this_worker(address):
    worker = current_worker()
    return worker is not None and worker.address == address


def _ask_all(asked):
    """The answers to ``asked``, ``(address, what is asked for, timeout, request)`` each, all
    sent at once: their values, in order; :class:`.errors.PeerUnreachable` naming the first
    worker that did not answer, or no longer holds what it was asked for."""
    if not asked:
        return []
    from distributed.utils import sync

    worker = current_worker()
    answers = sync(worker.loop, _ask, worker, asked)
    values = []
    for (address, what, timeout, _), answer in zip(asked, answers):
        if isinstance(answer, (OSError, asyncio.TimeoutError)):
            raise PeerUnreachable(
                f"worker {address} did not answer a request for {what} within {timeout:.0f} s "
                f"({type(answer).__name__}: {answer})", [address]) from None
        if isinstance(answer, BaseException):
            raise answer
        if answer["status"] == "failed":  # the worker's epoch task failed with this
            raise answer["value"]
        if answer["status"] != "OK":
            raise PeerUnreachable(f"worker {address} no longer holds {what} "
                                  f"({answer['status']})", [address])
        values.append(answer["value"])
    return values


async def _ask(worker, asked):
    async def one(address, timeout, request):
        return await asyncio.wait_for(asked_of(address, request), timeout)

    async def asked_of(address, request):
        await _refuse_if_gone(worker.rpc, address)
        return await getattr(worker.rpc(address), HANDLER)(**request)

    return await asyncio.gather(*(one(address, timeout, request)
                                  for address, _, timeout, request in asked),
                                return_exceptions=True)


async def _refuse_if_gone(pool, address):
    """Raise ConnectionRefusedError at once if nothing listens at the TCP ``address`` any more
    (its worker is gone) and the pool holds no open connection to it: distributed's connect
    would retry a refused connection for its whole connect timeout (30 s by default), keeping
    this worker's thread (a push of a round the fit has abandoned) from the recovered fit's
    tasks. A peer that listens, however slow to answer, keeps the long bounds."""
    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme != "tcp" or any(not comm.closed() for comm in pool.available.get(address, ())):
        return
    host, port = parse_host_port(location)
    _, writer = await asyncio.open_connection(host, port)  # refused: raises at once
    writer.close()


def answer(cell, kind, to_block=None, round_index=None, carried_id=None):
    """What ``cell`` gives a request of ``kind``: a message for ``to_block`` made from its state
    before ``round_index``, or the carried block ``carried_id``, taken from its outbox."""
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
