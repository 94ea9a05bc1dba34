"""The STRADS program protocol: schedule on the client, push on the workers, pull to aggregate.

A program holds only hyperparameters; data and model state are passed in and returned, so the same
program runs in a plain Python loop (see :func:`run_sequential`) and on a Dask cluster
(:class:`dask_strads.engine.Engine`) with the same results.
"""
from abc import ABC, abstractmethod

import numpy as np


class Program(ABC):
    """Base class of a STRADS program.

    Parameters live in *blocks*. Block ``b`` has a data block pinned to one worker, and a state
    (its parameter block plus whatever the program keeps beside it) that stays on that worker.
    One round is::

        instructions = schedule(round, history)            # client: which blocks, doing what
        state_b, partial_b = push(b, data_b, state_b, instructions[b], shared)  # on b's worker
        shared, report = pull({b: partial_b}, shared)       # one task, aggregates and commits

    ``shared`` is the small state every block needs (a residual, topic totals, ...). With
    staleness ``s`` the push of round ``t`` sees the ``shared`` of round ``t - 1 - s``.

    *Carried blocks* are parameter blocks that move from worker to worker (LDA's word-topic rows
    of a vocabulary block). A program with ``n_carried > 0`` builds them with ``init_carried``;
    an instruction with an attribute ``carried`` (an id) hands that block to the push, which is
    then called with ``carried=value`` and returns ``(state, partial, new_value)``. The new value
    stays on the push's worker until the next push that asks for it takes it, worker to worker.

    *Messages* carry parts of other blocks' states to a push that needs them (MF: the factor
    rows a block's ratings touch), worker to worker, instead of through ``shared``. An
    instruction with an attribute ``reads`` (block ids) has the push called with
    ``messages={source: message(source, data_source, state_source, block)}``, each computed on
    the source's worker from its state after the previous round. A block read in a round is not
    pushed in it when the program updates in place.
    """

    #: Short name, the ``<program>`` of task keys (``strads-<program>-push-<block>-<round>``).
    name = "program"

    #: The numba kernel sets its pushes call (names of
    #: ``dask_strads.kernels.compilation.KERNEL_SETS``): a fit that will compile them says so.
    kernels = ()

    #: Number of carried blocks (0: every parameter stays with its data block).
    n_carried = 0

    #: Whether push updates ``state`` and the carried block in place (and returns them) instead
    #: of building new ones. The engine then hands every value to exactly one later task and
    #: keeps no earlier rounds: a worker holds one version of its state and of the carried
    #: blocks it works on, and the result is the state after the last round submitted (a stop
    #: takes effect up to ``pipeline_depth`` rounds late; the history covers every round run).
    #: ``shared`` is read by every push and must never be modified.
    updates_in_place = False

    #: Rounds between the state a report describes and the round that sent it. A program that
    #: measures its objective at the start of a push, before updating, reports on the previous
    #: round's state and sets this to 1.
    report_lag = 0

    def prepare_block(self, raw, block_id):
        """Turn a raw data block into the form push needs. Runs once, on the block's worker."""
        return raw

    @abstractmethod
    def initial_shared(self):
        """The shared value before any block has reported (built on the client, sent once)."""

    @abstractmethod
    def init_block(self, data, block_id):
        """``(state, partial)`` of a block before round 0; the partials go through one pull."""

    @abstractmethod
    def schedule(self, round_index, history):
        """``{block_id: instruction}`` for this round; blocks left out sit the round out.

        ``history`` is the list of reports received so far (it may lag a few rounds behind
        when rounds are pipelined).
        """

    @abstractmethod
    def push(self, block_id, data, state, instruction, shared):
        """Update block ``block_id`` from its data: return ``(new_state, partial)``.

        Must not modify ``state`` or ``shared`` in place (unless ``updates_in_place``, and then
        only ``state``): on a worker the previous round's values are still referenced (for
        pipelining and for the final result).
        """

    @abstractmethod
    def pull(self, partials, shared):
        """Aggregate ``{block_id: partial}`` and commit: return ``(new_shared, report)``.

        ``report`` is a small dict (objective, gap, counts) that travels to the client.
        """

    def retained(self, state):
        """What the engine keeps of a block's state once the block has a newer one: whatever
        ``collect`` and ``message`` read of it (by default all of it). A program whose state
        holds more than its parameters (scores, gradients) for the next push returns the
        parameters only, so that the older rounds a stop may refer to cost little memory."""
        return state

    def message(self, block_id, data, state, to_block):
        """What block ``block_id`` sends to the push of ``to_block`` that reads it (see
        ``reads`` above), from its data and state; runs on ``block_id``'s worker."""
        raise NotImplementedError(f"{type(self).__name__} sends no messages")

    def init_carried(self, carried_id):
        """The initial value of a carried block (built on a worker)."""
        raise NotImplementedError(f"{type(self).__name__} has no carried blocks")

    @abstractmethod
    def collect(self, data, state, shared):
        """The block's fitted parameters as an array, committed with ``shared`` of the same
        round: the chunk of the block in the fit's parameter array."""

    def hand_over(self, data, state, shared):
        """The block's parameters as :meth:`collect` gives them, for the fit's result, after
        which nothing reads ``state``: a program may give away the state's arrays instead of
        copying them (by default it collects)."""
        return self.collect(data, state, shared)

    def collect_carried(self, carried, carried_id):
        """A carried block's fitted parameters as an array (by default the block itself)."""
        return carried

    def converged(self, report):
        """Whether the fit may stop after the round that sent ``report``."""
        return False


def run_sequential(program, data_blocks, max_rounds, staleness=0):
    """Run a program in a plain loop, without Dask: the reference the engine must reproduce.

    Returns ``(parameter_blocks, reports)``, or ``(parameter_blocks, reports, carried_blocks)``
    for a program with carried blocks.
    """
    data = [program.prepare_block(raw, b) for b, raw in enumerate(data_blocks)]
    started = [program.init_block(d, b) for b, d in enumerate(data)]
    states = [state for state, _ in started]
    shared, report = program.pull({b: p for b, (_, p) in enumerate(started)}, program.initial_shared())
    carried = [program.init_carried(c) for c in range(program.n_carried)]
    shared_by_round = {-1: shared}
    states_by_round = {-1: list(states)}
    carried_by_round = {-1: list(carried)}
    reports = []
    final = -1
    for t in range(max_rounds):
        instructions = program.schedule(t, reports)
        source = shared_by_round[max(-1, t - 1 - staleness)]
        check_carried_assignment(instructions)
        check_reads(program, instructions)
        before = list(states)  # messages come from the states of the previous round
        partials = {}
        for b, instruction in instructions.items():
            c = carried_id(instruction)
            messages = {s: program.message(s, data[s], before[s], b) for s in reads(instruction)}
            states[b], partials[b], new_carried = call_push(
                program, b, data[b], states[b], instruction, source,
                None if c is None else carried[c], messages)
            if c is not None:
                carried[c] = new_carried
        shared, report = program.pull(partials, shared)
        shared_by_round[t] = shared
        states_by_round[t] = list(states)
        carried_by_round[t] = list(carried)
        reports.append(report)
        final = t
        if program.converged(report):
            break
    if not program.updates_in_place:  # in place, earlier rounds' states are gone
        final = max(-1, final - program.report_lag)
    params = [
        program.collect(d, s, shared_by_round[final])
        for d, s in zip(data, states_by_round[final])
    ]
    if program.n_carried:
        return params, reports, [program.collect_carried(value, c)
                                 for c, value in enumerate(carried_by_round[final])]
    return params, reports


def round_seed(seed, round_index, block_id):
    """The random seed of one block's push in one round: reproducible, different everywhere."""
    return (seed * 1_000_003 + round_index * 1009 + block_id) % (2**31 - 1)


def call_push(program, block_id, data, state, instruction, shared, carried=None, messages=None):
    """``program.push`` given the carried block and the messages its instruction asks for:
    ``(state, partial, new carried block)``, the last None when it takes none."""
    extra = {}
    if carried_id(instruction) is not None:
        extra["carried"] = carried
    if messages:
        extra["messages"] = messages
    pushed = program.push(block_id, data, state, instruction, shared, **extra)
    return pushed if "carried" in extra else (*pushed, None)


def carried_id(instruction):
    """The carried block an instruction asks for, or None."""
    return getattr(instruction, "carried", None)


def reads(instruction):
    """The blocks whose messages an instruction's push reads (none by default)."""
    return tuple(getattr(instruction, "reads", ()))


def check_reads(program, instructions):
    """A program updating in place cannot read a block that its round changes."""
    if program.updates_in_place:
        changed = [s for i in instructions.values() for s in reads(i) if s in instructions]
        if changed:
            raise ValueError(f"blocks {changed} are read and updated in place in one round")


def check_carried_assignment(instructions):
    """A carried block can be in one place at a time."""
    wanted = [c for c in map(carried_id, instructions.values()) if c is not None]
    if len(wanted) != len(set(wanted)):
        raise ValueError(f"a carried block is scheduled for two blocks in one round: {wanted}")


def initial_parameters(values):
    """A block's initial parameters as its prepared data keeps them: all zero (a fit from
    scratch), a read-only view of a single zero, so that the block holds no array of zeros of
    its parameters' size beside its state (copy it to start from)."""
    values = np.asarray(values, dtype=np.float64)
    return values if values.any() else np.broadcast_to(np.float64(0.0), values.shape)
