"""The STRADS program protocol: schedule on the client, push on the workers, pull to aggregate.

A program holds only hyperparameters; data and model state are passed in and returned, so the same
program runs in a plain Python loop (see :func:`run_sequential`) and on a Dask cluster
(:class:`dask_strads.engine.Engine`) with the same results. What passes between the program and
the engine is typed: a schedule gives :class:`Instruction` s, a push receives an
:class:`Inbox`, a pull gives a :class:`Report`, and a program states when a fit stops with a
:class:`StopRule` (the engine applies it).
"""
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from ..sizes import register_dataclasses


@dataclass(frozen=True, kw_only=True)
class Instruction:
    """What one block's push does in one round. A program's own instructions subclass it with
    their fields; ``Instruction()`` is a plain push.

    ``carried``: the carried block the push takes (and returns), None for none. ``reads``: the
    blocks whose messages the push reads. Together they declare everything a round moves
    between blocks before it runs (see :func:`routes`).
    """

    carried: int | None = None
    reads: tuple[int, ...] = ()


@dataclass(frozen=True)
class Inbox:
    """What a push receives from other blocks: the carried block its instruction takes (None
    when it takes none) and ``messages``, ``{source block: message}`` for every block it
    reads."""

    carried: object = None
    messages: Mapping[int, object] = field(default_factory=lambda: MappingProxyType({}))


class Route(NamedTuple):
    """One message of a round: ``source``'s message to the push of ``to``."""

    source: int
    to: int


@dataclass(frozen=True, kw_only=True)
class Report:
    """What a pull tells the client of its round: a few numbers, a record of the fit's history.
    A program's reports subclass it with their fields (all with defaults); a field left None
    is not recorded. The initial pull's report is not recorded."""

    objective: float | None = None

    def record(self) -> dict[str, Any]:
        """The report as the history's record keeps it: its fields that are not None."""
        return {f.name: value for f in fields(self)
                if (value := getattr(self, f.name)) is not None}


@dataclass(frozen=True)
class StopRule:
    """A fit stops after the first round whose report has ``field`` at most ``tolerance``."""

    field: str
    tolerance: float

    def met(self, report: Report) -> bool:
        value = getattr(report, self.field, None)
        return value is not None and value <= self.tolerance


class Program(ABC):
    """Base class of a STRADS program.

    Parameters live in *blocks*. Block ``b`` has a data block pinned to one worker, and a state
    (its parameter block plus whatever the program keeps beside it) that stays on that worker.
    One round is::

        instructions = schedule(round, history)            # client: {block: Instruction}
        state_b, partial_b = push(b, data_b, state_b, instructions[b], shared, inbox_b)
        shared, report = pull({b: partial_b}, shared)       # one task: aggregate and commit

    ``shared`` is the small state every block needs (a residual, topic totals, ...). With
    staleness ``s`` the push of round ``t`` sees the ``shared`` of round ``t - 1 - s``. The fit
    stops after the first round whose report meets the program's :attr:`stop_rule` (or
    :meth:`converged`); the engine then runs no more pushes or pulls of the program, and a
    stopping round's shared value is what :meth:`at_stop` makes of it.

    *Carried blocks* are parameter blocks that move from worker to worker (LDA's word-topic rows
    of a vocabulary block). A program with ``n_carried > 0`` builds them with ``init_carried``;
    an instruction with ``carried=c`` hands block ``c`` to the push (``inbox.carried``), which
    then returns ``(state, partial, new_value)``. The new value stays on the push's worker
    until the next push that asks for it takes it, worker to worker.

    *Messages* carry parts of other blocks' states to a push that needs them (MF: the factor
    rows a block's ratings touch), worker to worker, instead of through ``shared``. An
    instruction with ``reads=(blocks)`` has the push given ``inbox.messages = {source:
    message(source, data_source, state_source, block)}``, each computed on the source's
    worker from its state after the previous round. A block read in a round is not pushed in
    it when the program updates in place.
    """

    #: Short name, the ``<program>`` of task keys (``strads-<program>-push-<block>-<round>``).
    name: str = "program"

    #: The numba kernel sets its pushes call (names of
    #: ``dask_strads.kernels.compilation.KERNEL_SETS``): a fit that will compile them says so.
    kernels: tuple[str, ...] = ()

    #: Number of carried blocks (0: every parameter stays with its data block).
    n_carried: int = 0

    #: Whether push updates ``state`` and the carried block in place (and returns them) instead
    #: of building new ones. The engine then hands every value to exactly one later task and
    #: keeps no earlier rounds: a worker holds one version of its state and of the carried
    #: blocks it works on, and the result is the state after the last round that ran (the
    #: rounds submitted behind a stop run no push). ``shared`` is read by every push and must
    #: never be modified.
    updates_in_place: bool = False

    #: Rounds between the state a report describes and the round that sent it. A program that
    #: measures its objective at the start of a push, before updating, reports on the previous
    #: round's state and sets this to 1.
    report_lag: int = 0

    #: When the fit stops (None: after ``max_rounds``); see :meth:`converged`.
    stop_rule: StopRule | None = None

    #: Whether ``schedule(t, history)`` ignores ``history``: the engine may then ask for the
    #: instructions, and so for the messages (:func:`routes`), of rounds ahead of the reports.
    static_schedule: bool = False

    def prepare_block(self, raw: Any, block_id: int) -> Any:
        """Turn a raw data block into the form push needs. Runs once, on the block's worker."""
        return raw

    @abstractmethod
    def initial_shared(self) -> Any:
        """The shared value before any block has reported (built on the client, sent once)."""

    @abstractmethod
    def init_block(self, data: Any, block_id: int) -> tuple[Any, Any]:
        """``(state, partial)`` of a block before round 0; the partials go through one pull."""

    @abstractmethod
    def schedule(self, round_index: int,
                 history: list[dict[str, Any]]) -> dict[int, Instruction]:
        """``{block_id: Instruction}`` for this round; blocks left out sit the round out.

        ``history`` is the list of records received so far (it may lag a few rounds behind
        when rounds are pipelined).
        """

    @abstractmethod
    def push(self, block_id: int, data: Any, state: Any, instruction: Instruction, shared: Any,
             inbox: Inbox) -> tuple:
        """Update block ``block_id`` from its data: return ``(new_state, partial)`` (and the
        carried block, when the instruction takes one). ``inbox``: an :class:`Inbox`.

        Must not modify ``state`` or ``shared`` in place (unless ``updates_in_place``, and then
        only ``state``): on a worker the previous round's values are still referenced (for
        pipelining and for the final result).
        """

    @abstractmethod
    def pull(self, partials: dict[int, Any], shared: Any) -> tuple[Any, Report]:
        """Aggregate ``{block_id: partial}`` and commit: return ``(new_shared, report)``, the
        report a :class:`Report`."""

    def combine(self, partials: list[Any]) -> Any:
        """One partial standing for ``partials`` (of different blocks, in the schedule's order):
        ``pull`` given it in their place commits the same, up to the order of floating-point
        sums. A program whose partials add up (topic totals, objectives, counts) defines it,
        and a fused epoch then adds them up on their way to the pull: every link of its tree
        carries one partial, whatever the number of workers. By default partials do not add up
        (the pull needs each block's own) and travel to the pull as they are."""
        raise NotImplementedError(f"{type(self).__name__}'s partials do not add up")

    def retained(self, state: Any) -> Any:
        """What the engine keeps of a block's state once the block has a newer one: whatever
        ``collect`` and ``message`` read of it (by default all of it). A program whose state
        holds more than its parameters (scores, gradients) for the next push returns the
        parameters only, so that the older rounds a stop may refer to cost little memory."""
        return state

    def message(self, block_id: int, data: Any, state: Any, to_block: int) -> Any:
        """What block ``block_id`` sends to the push of ``to_block`` that reads it (see
        ``reads`` above), from its data and state; runs on ``block_id``'s worker."""
        raise NotImplementedError(f"{type(self).__name__} sends no messages")

    def init_carried(self, carried_id: int) -> Any:
        """The initial value of a carried block (built on a worker)."""
        raise NotImplementedError(f"{type(self).__name__} has no carried blocks")

    @abstractmethod
    def collect(self, data: Any, state: Any, shared: Any) -> np.ndarray:
        """The block's fitted parameters as an array, committed with ``shared`` of the same
        round: the chunk of the block in the fit's parameter array."""

    def hand_over(self, data: Any, state: Any, shared: Any) -> np.ndarray:
        """The block's parameters as :meth:`collect` gives them, for the fit's result, after
        which nothing reads ``state``: a program may give away the state's arrays instead of
        copying them (by default it collects)."""
        return self.collect(data, state, shared)

    def collect_carried(self, carried: Any, carried_id: int) -> np.ndarray:
        """A carried block's fitted parameters as an array (by default the block itself)."""
        return carried

    def converged(self, report: Report) -> bool:
        """Whether the fit stops after the round that sent ``report``: by default what
        :attr:`stop_rule` says."""
        return self.stop_rule is not None and self.stop_rule.met(report)

    def at_stop(self, shared: Any, new_shared: Any) -> Any:
        """The shared value a stopping round leaves (``shared``: the one its pushes read,
        ``new_shared``: its pull's): by default the pull's. A program whose report measures
        the state its pushes started from, and whose pull gives the blocks a step they have
        not taken yet, returns one without that step."""
        return new_shared


def run_sequential(program: Program, data_blocks: Sequence[Any], max_rounds: int,
                   staleness: int = 0) -> tuple:
    """Run a program in a plain loop, without Dask: the reference the engine must reproduce.

    Returns ``(parameter_blocks, records)``, or ``(parameter_blocks, records, carried_blocks)``
    for a program with carried blocks; ``records`` are the reports' records, as a fit's history
    keeps them.

    Parameters
    ----------
    program : Program
        The program to run.
    data_blocks : list
        Each block's data, as the engine would place it.
    max_rounds : int
        Rounds to run, fewer if the program's stop rule stops it.
    staleness : int
        Rounds a push may read behind: it reads the pull of round ``t - 1 - staleness``.
    """
    data = [program.prepare_block(raw, b) for b, raw in enumerate(data_blocks)]
    started = [program.init_block(d, b) for b, d in enumerate(data)]
    states = [state for state, _ in started]
    shared, _ = program.pull({b: p for b, (_, p) in enumerate(started)}, program.initial_shared())
    carried = [program.init_carried(c) for c in range(program.n_carried)]
    shared_by_round = {-1: shared}
    states_by_round = {-1: list(states)}
    carried_by_round = {-1: list(carried)}
    records: list[dict] = []
    final = -1
    for t in range(max_rounds):
        instructions = checked_instructions(program, program.schedule(t, records))
        source = shared_by_round[max(-1, t - 1 - staleness)]
        before = list(states)  # messages come from the states of the previous round
        partials: dict[int, Any] = {}
        for b, instruction in instructions.items():
            c = instruction.carried
            inbox = Inbox(None if c is None else carried[c],
                          {s: program.message(s, data[s], before[s], b)
                           for s in instruction.reads})
            states[b], partials[b], new_carried = call_push(
                program, b, data[b], states[b], instruction, source, inbox)
            if c is not None:
                carried[c] = new_carried
        shared, report, stopped = settled_pull(program, partials, shared)
        shared_by_round[t] = shared
        states_by_round[t] = list(states)
        carried_by_round[t] = list(carried)
        records.append(report.record())
        final = t
        if stopped:
            break
    if not program.updates_in_place:  # in place, earlier rounds' states are gone
        final = max(-1, final - program.report_lag)
    params = [
        program.collect(d, s, shared_by_round[final])
        for d, s in zip(data, states_by_round[final])
    ]
    if program.n_carried:
        return params, records, [program.collect_carried(value, c)
                                 for c, value in enumerate(carried_by_round[final])]
    return params, records


def settled_pull(program: Program, partials: dict[int, Any],
                 shared: Any) -> tuple[Any, Report, bool]:
    """``program.pull`` and the engine's stopping test on its report: ``(shared, report,
    stopped)``, the shared value of a stopping round as :meth:`Program.at_stop` leaves it."""
    new_shared, report = program.pull(partials, shared)
    if not isinstance(report, Report):
        raise TypeError(f"{type(program).__name__}.pull must return (shared, Report), got a "
                        f"{type(report).__name__} report")
    stopped = program.converged(report)
    return (program.at_stop(shared, new_shared) if stopped else new_shared), report, stopped


def combines(program: Program) -> bool:
    """Whether ``program``'s partials add up (it defines :meth:`Program.combine`)."""
    return type(program).combine is not Program.combine


def round_seed(seed: int, round_index: int, block_id: int) -> int:
    """The random seed of one block's push in one round: reproducible, different everywhere."""
    return (seed * 1_000_003 + round_index * 1009 + block_id) % (2**31 - 1)


def call_push(program: Program, block_id: int, data: Any, state: Any, instruction: Instruction,
              shared: Any, inbox: Inbox | None = None) -> tuple[Any, Any, Any]:
    """``program.push`` given its inbox: ``(state, partial, new carried block)``, the last None
    when the instruction takes no carried block."""
    pushed = program.push(block_id, data, state, instruction, shared, inbox or Inbox())
    return pushed if instruction.carried is not None else (*pushed, None)


def routes(instructions: Mapping[int, Instruction]) -> tuple[Route, ...]:
    """The messages a round's ``instructions`` send, as :class:`Route` s in block order."""
    return tuple(Route(s, b) for b, i in instructions.items() for s in i.reads)


def checked_instructions(program: Program,
                         instructions: dict[int, Instruction]) -> dict[int, Instruction]:
    """``instructions`` (a schedule's) once checked: every one an :class:`Instruction`, a
    carried block in one place at a time, and, for a program updating in place, no block read
    in the round that changes it."""
    wrong = {b: i for b, i in instructions.items() if not isinstance(i, Instruction)}
    if wrong:
        b, i = next(iter(wrong.items()))
        raise TypeError(f"{type(program).__name__}.schedule must give each block an "
                        f"Instruction, got {type(i).__name__} for block {b}")
    wanted = [i.carried for i in instructions.values() if i.carried is not None]
    if len(wanted) != len(set(wanted)):
        raise ValueError(f"a carried block is scheduled for two blocks in one round: {wanted}")
    if program.updates_in_place:
        changed = [r.source for r in routes(instructions) if r.source in instructions]
        if changed:
            raise ValueError(f"blocks {changed} are read and updated in place in one round")
    return instructions


def initial_parameters(values: Any) -> np.ndarray:
    """A block's initial parameters as its prepared data keeps them: all zero (a fit from
    scratch), a read-only view of a single zero, so that the block holds no array of zeros of
    its parameters' size beside its state (copy it to start from)."""
    values = np.asarray(values, dtype=np.float64)
    return values if values.any() else np.broadcast_to(np.float64(0.0), values.shape)


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
