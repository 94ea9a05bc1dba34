"""The functions a round's tasks run on the workers, and the typed values they pass on.

A block's data and state live in a :class:`BlockCell` on the block's worker for the whole fit: a
push reads its state there and leaves the new one there, so its task's value is only what the
pull needs (:class:`Pushed`). The state never travels, and no task is needed to split a push's
output. A carried block stays in the outbox of the cell whose push made it until the next push
that takes it fetches it, as it fetches its messages, over the message plane (:mod:`.plane`).
On a Dask worker the cell is kept out of Dask's data store, which could spill it (see
:mod:`.cells`): the tasks that use it get a reference and open it.
"""
import copy
from dataclasses import dataclass, field
from time import perf_counter
from typing import NamedTuple

from ..programs.base import Inbox, Program, call_push, settled_pull
from ..sizes import register_dataclasses
from . import plane
from .history import PLANE_COUNTS
from .cells import keep, opened


@dataclass
class BlockCell:
    """A block's prepared data and its state, kept on its worker and updated by its pushes.

    ``versions`` maps rounds to states. A push records its state and drops the versions no
    result can come from any more (all but the newest at or before ``keep_from``), so a program
    that builds new states keeps the few rounds a stop may still refer to, and one that updates
    in place keeps one.
    """

    block_id: int
    data: object
    #: the fit's program, which answers other blocks' requests for messages: a value of its own
    #: in Dask's store, shared by the worker's cells, so not part of a cell's size
    program: object = field(default=None, metadata={"shared": True})
    versions: dict = field(default_factory=dict)
    outbox: dict = field(default_factory=dict)

    def latest(self):
        return self.versions[max(self.versions)]

    def state_at(self, round_index):
        return self.versions[max(t for t in self.versions if t <= round_index)]

    def record(self, round_index, state, keep_from, retained=None):
        """Add the state of ``round_index``; the one it replaces as the newest becomes
        ``retained(it)`` (the part later reads need)."""
        if retained is not None and self.versions:
            newest = max(self.versions)
            self.versions[newest] = retained(self.versions[newest])
        self.versions[round_index] = state
        old = sorted(t for t in self.versions if t <= keep_from)
        for t in old[:-1]:
            del self.versions[t]


@dataclass(frozen=True)
class Pushed:
    """What a push sends to the pull: the program's partial, the seconds it computed, and the
    messages (and carried blocks) it fetched over the plane, with their bytes from other
    worker processes."""

    partial: object
    seconds: float
    messages: int = 0
    message_bytes: int = 0


@dataclass(frozen=True)
class Pulled:
    """What a pull hands to the next pushes (``shared``) and to the client (``record``, the
    round's record for the history), whether the fit stopped at this round or before, and
    when (``perf_counter`` of its process) it was made."""

    shared: object
    record: dict
    stopped: bool = False
    made: float = field(default_factory=perf_counter)


class RoundReport(NamedTuple):
    """What the client reads of a round: its record, whether the fit stops there and when its
    pull was made (``perf_counter`` of the pull's process)."""

    record: dict
    stopped: bool
    made: float


def prepare(program, raw, block_id, initialise=True, key=None):
    """The block's cell (kept under the task's ``key``, see :func:`.cells.keep`): its prepared
    data and, unless it will be restored from a checkpoint, its initial state."""
    cell = BlockCell(block_id, program.prepare_block(raw, block_id), program)
    if initialise:
        start = perf_counter()
        state, partial = program.init_block(cell.data, block_id)
        cell.record(-1, state, -1)
        cell.outbox["init"] = Pushed(partial, perf_counter() - start)
    return keep(cell, key)


def initial_partial(cell):
    """What the block's initial state sends to the first pull."""
    return opened(cell).outbox.pop("init")


def initial_carried(program, carried_id):
    return program.init_carried(carried_id)


def push(program, cell, previous, pulled, instruction, round_index, keep_from, carried=None,
         sources=()):
    """Round ``round_index`` of one block. ``previous`` (the block's last push) only orders the
    pushes of a block; ``carried`` is the carried block the instruction asks for (a value, or
    the :class:`.plane.Source` of the push that left it), ``sources`` the
    :class:`.plane.Source` of each block whose message it reads. Behind a stop (a round
    submitted before the client read the stopping report) it leaves the cell as it is."""
    if pulled.stopped:
        return Pushed(None, 0.0)
    start = perf_counter()
    cell = opened(cell)
    received = plane.Received()
    c = instruction.carried
    inbox = Inbox(None if c is None else take_carried(carried, c, received),
                  plane.messages(sources, cell.block_id, round_index, received))
    state, partial, new_carried = call_push(
        program, cell.block_id, cell.data, cell.latest(), instruction, pulled.shared, inbox)
    if c is not None:
        cell.outbox[c] = new_carried
    cell.record(round_index, state, keep_from, program.retained)
    return Pushed(partial, perf_counter() - start, received.messages, received.bytes)


def take_carried(carried, carried_id, received=None):
    """A carried block given as a value, or fetched from the cell its last push left it in."""
    if isinstance(carried, plane.Source):
        return plane.carried(carried, carried_id, received or plane.Received())
    return carried


def carried_as_is(carried, carried_id):
    """A carried block as :func:`take_carried` gives it, left where it is (a checkpoint's
    copy, on the worker holding it)."""
    if isinstance(carried, plane.Source):
        return plane.peek_carried(carried, carried_id)
    return carried


def initial_pull(program, seed, block_ids, *pushed):
    """The pull of the blocks' initial partials, which starts the run: no round of it, and no
    stopping test."""
    shared, _ = program.pull({b: p.partial for b, p in zip(block_ids, pushed)}, seed.shared)
    return Pulled(shared, {})


#: The record of a round submitted behind the stop: it changed nothing.
AFTER_STOP = {"after_stop": True}


def pull(program, previous, block_ids, *pushed):
    """The pull of a round, and the engine's stopping test on its report (see
    :func:`~dask_strads.programs.base.settled_pull`); behind a stop, the previous round's
    shared value as it is."""
    if previous.stopped:
        return Pulled(previous.shared, AFTER_STOP, stopped=True)
    start = perf_counter()
    shared, report, stopped = settled_pull(
        program, {b: p.partial for b, p in zip(block_ids, pushed)}, previous.shared)
    slowest_push = max((p.seconds for p in pushed), default=0.0)
    record = {**report.record(), "compute_seconds": slowest_push + perf_counter() - start}
    if uses_plane(program):
        record.update(zip(PLANE_COUNTS, (sum(p.messages for p in pushed),
                                         sum(p.message_bytes for p in pushed))))
    return Pulled(shared, record, stopped)


def combined(program, pushed):
    """One :class:`Pushed` standing for ``pushed`` (in the schedule's order), for a program whose
    partials add up (:meth:`~dask_strads.programs.base.Program.combine`)."""
    return Pushed(program.combine([p.partial for p in pushed]), max(p.seconds for p in pushed),
                  sum(p.messages for p in pushed), sum(p.message_bytes for p in pushed))


def uses_plane(program):
    """Whether a program's pushes fetch messages or carried blocks."""
    return bool(program.n_carried) or type(program).message is not Program.message


def report(pulled):
    return RoundReport(pulled.record, pulled.stopped, pulled.made)


def collect(program, cell, last_push, pulled, round_index, release=False):
    """The block's parameters at ``round_index`` (``last_push`` orders it after the pushes).
    With ``release`` (the fit's result, after which no task reads the cell) the cell lets go of
    its states: a worker then never holds all its blocks' states and all their collected
    parameters at once, which the client gathers only when every block is collected. The
    program then hands its state over (``Program.hand_over``) rather than collecting from it."""
    cell = opened(cell)
    state = cell.state_at(round_index)
    if release:
        cell.versions.clear()
        return program.hand_over(cell.data, state, pulled.shared)
    return program.collect(cell.data, state, pulled.shared)


def collect_carried(program, carried, carried_id):
    return program.collect_carried(take_carried(carried, carried_id), carried_id)


def state_at(cell, last, round_index):
    """A block's state after ``round_index`` (``last`` orders the read after that round's
    push)."""
    return opened(cell).state_at(round_index)


def itself(value):
    return value


def after(value, *tasks):
    """``value``, once ``tasks`` have run."""
    return value


def snapshot(read, *args):
    """A deep copy of ``read(*args)`` (a state, a carried block, a shared value): a checkpoint
    that later pushes, even in place, cannot change."""
    return copy.deepcopy(read(*args))


def restore(cell, state, round_index):
    """Put a block's cell back to a checkpoint's state (a copy: the checkpoint stays as it is,
    for another recovery)."""
    cell = opened(cell)
    cell.versions = {round_index: copy.deepcopy(state)}
    cell.outbox.clear()
    return Pushed(None, 0.0)


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
