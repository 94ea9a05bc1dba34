"""Fused epochs: one task per worker runs F consecutive rounds of its blocks.

A round graph costs the scheduler a task per push and a graph's worth of latency; an epoch of F
rounds is one graph of one task per worker (plus the hub's pull and report, as a round's), so
the scheduler's work falls F-fold. Each epoch task runs, round by round, what the round graphs
would have run on its worker: it asks the program for the round's instructions (a static
schedule: every task computes the same), pushes its blocks (:func:`.tasks.push`, fetching
messages and carried blocks over the message plane), and posts on its board (:mod:`.boards`)
that the round's pushes are done. The partials go up a binary tree of the run's workers with the
hub at its root (:class:`Tree`): each task posts its own with those of its children's subtrees
(added up into one, for a program whose partials add up: a reduction, every link then carrying
one partial whatever P), so the hub's task gets every partial of the round in two requests,
lists them in the schedule's order (as the round graph's pull does), pulls (:func:`.tasks.pull`,
with the engine's stopping test) and posts the pull, which comes down the same tree before the
next round: no worker answers more than two requests for a round's partials or pull, whatever P,
and a round's collective takes 2 log2(P) hops. The rounds stay bulk-synchronous, and the results
are the round graphs' (and :func:`~dask_strads.programs.base.run_sequential`'s), up to the order
in which partials added up on the way are summed. A stop found at any round reaches every task
with that round's pull, and the rounds left in the epoch then run nothing of the program, as
rounds submitted behind a stop do. The hub streams each round's report to the client as it pulls
it (:mod:`.streams`); a stop the client asks for (its callback's) reaches the hub's board, and
the hub stops at the next round it pulls. At the checkpoint rounds inside an epoch the tasks copy
their blocks' states, replicas and the pull into their boards (:mod:`.epoch_checkpoints`).
"""
from dataclasses import dataclass, replace
from time import perf_counter
from typing import NamedTuple

from ..programs.base import checked_instructions, combines
from . import boards, epoch_checkpoints, plane, streams, tasks
from .cells import CellRef
from .compat import current_worker


@dataclass(frozen=True)
class EpochPlan:
    """What the tasks of one epoch share: the run, where each block's cell is, the hub, the
    rounds ``first .. first + rounds - 1``, how many rounds behind the one it runs a cell (and
    the hub's board, of the pulls) keeps (``keep_behind``: 0 for a program that updates in
    place; else as far back as a stop found later may take the result from), the plane's
    timeout and the rounds inside it after which its tasks take a checkpoint (see
    :mod:`.epoch_checkpoints`)."""

    run_id: str
    owners: tuple
    cell_keys: tuple
    hub: str
    first: int
    rounds: int
    keep_behind: int
    timeout: float
    checkpoints: tuple = ()

    def source(self, block, ready):
        """Where a push of this epoch reads ``block``: once its worker has posted round
        ``ready`` done."""
        return plane.Source(block, self.owners[block], CellRef(self.cell_keys[block]), None,
                            self.timeout, ready, self.run_id)


@dataclass(frozen=True)
class EpochEnd:
    """What the hub's task returns: each round's report, the seconds between the hub's pulls
    (the first from the task's start), the last round's pull, and when the task started and
    ended (``perf_counter`` on the hub)."""

    reports: list
    seconds: list
    pulled: object
    started: float
    ended: float


def epoch(program, plan, cells, pulled, carried, *after):
    """The epoch's rounds for the blocks whose cells this worker holds (``cells``: block ->
    its cell), from ``pulled`` (the pull of the round before); ``carried``: the carried blocks
    a block of this worker takes first in the epoch, and where they are. ``after``: what the
    epoch follows (the tasks that last changed these cells). The hub's task returns an
    :class:`EpochEnd`, the others None."""
    worker = current_worker()
    board = boards.board(worker, plan.run_id)
    board.post(done=plan.first - 1)  # what the epoch follows has run, here
    try:
        return _rounds(program, plan, cells, pulled, carried, worker, board)
    except BaseException as error:  # the others' waits on this board end with it now
        board.post(boards.FAILED, error)
        raise


def _rounds(program, plan, cells, pulled, carried, worker, board):
    """The epoch's rounds on this worker (see :func:`epoch`)."""
    holders = dict(carried)
    tree = Tree.of(plan, worker.address)
    outbox = streams.Outbox(plan.run_id)
    reports, seconds, start = [], [], perf_counter()
    started = start
    last_run = plan.first - 1  # the newest round whose pull ran (not behind a stop)
    for t in range(plan.first, plan.first + plan.rounds):
        instructions = checked_instructions(program, program.schedule(t, []))
        pushed = {}
        for b, instruction in instructions.items():
            if b in cells:
                c = instruction.carried
                pushed[b] = tasks.push(program, cells[b], None, pulled, instruction, t,
                                       t - plan.keep_behind, None if c is None else holders[c],
                                       [plan.source(s, t - 1) for s in instruction.reads])
        for b, instruction in instructions.items():
            if instruction.carried is not None:
                holders[instruction.carried] = plan.source(b, t)
        board.post(done=t)  # the round's messages and carried blocks can be read
        checkpointed = t in plan.checkpoints and not pulled.stopped
        if checkpointed:
            epoch_checkpoints.copy_blocks(board, plan, t, cells, worker.address)
        gathered = _gathered(program, plan, t, pushed, tree)
        if worker.address == plan.hub:
            if not pulled.stopped:
                last_run = t
            ids = [b for b in instructions if b in gathered]  # in the schedule's order
            pulled = tasks.pull(program, pulled, ids, *(gathered[b] for b in ids))
            if boards.STOP in board.values and not pulled.stopped:  # the client stopped the fit
                pulled = replace(pulled, stopped=True)
            # every task has read the pull before (they posted t); the last keep_behind + 1
            # pulls that ran stay, for a result taken from before a stop (see posted_pull)
            if last_run == t:
                board.values.pop(("pulled", t - 1 - plan.keep_behind), None)
            elif t - 1 > last_run:  # a pull behind the stop
                board.values.pop(("pulled", t - 1), None)
            board.post(("pulled", t), pulled)
            if checkpointed:
                epoch_checkpoints.copy_pull(board, t, pulled)
            reports.append(tasks.report(pulled))
            # a checkpoint is resumed from only once its round's record has reached the client:
            # sent at once, it stays usable if this worker is lost before its next event
            outbox.add(t, reports[-1], now=(pulled.stopped and last_run == t)  # the stop
                       or checkpointed or t == plan.first + plan.rounds - 1)
            seconds.append(perf_counter() - start)
            start = perf_counter()
        else:
            board.post(("partials", t), gathered)
            # the children have read the pull before: they posted this round's partials
            board.values.pop(("pulled", t - 1), None)
            pulled = plane.posted([tree.parent], plan.run_id, ("pulled", t), None,
                                  plan.timeout)[tree.parent]
            if tree.children:
                board.post(("pulled", t), pulled)
            if checkpointed:
                epoch_checkpoints.copy_pull(board, t, pulled)
    if worker.address != plan.hub:
        return None
    return EpochEnd(reports, seconds, pulled, started, perf_counter())


class Tree(NamedTuple):
    """A worker's place in the run's binary tree over its workers, the hub at the root: a
    round's partials go up it and its pull comes down it, so no worker (the hub included)
    answers more than its two children and asks more than its parent, whatever P."""

    parent: str | None
    children: list

    @classmethod
    def of(cls, plan, address):
        workers = [plan.hub, *(w for w in dict.fromkeys(plan.owners) if w != plan.hub)]
        i = workers.index(address)
        return cls(workers[(i - 1) // 2] if i else None, workers[2 * i + 1:2 * i + 3])


def _gathered(program, plan, t, pushed, tree):
    """``{block: partial}`` of round ``t``'s pushes on this worker and below it in the tree:
    its own and those its children posted (each once its own children's were in). A program
    whose partials add up gets them as one, under the first block's id, added up in the
    tree's order (this worker's, then its first child's, then its second's)."""
    gathered = dict(pushed)
    posted = plane.posted(tree.children, plan.run_id, ("partials", t), None, plan.timeout,
                          take=True)
    for child in tree.children:
        gathered.update(posted[child])
    if len(gathered) > 1 and combines(program):
        return {next(iter(gathered)): tasks.combined(program, list(gathered.values()))}
    return gathered


def posted_pull(run_id, round_index):
    """Round ``round_index``'s pull, from the board of the run's hub (the worker running this):
    a pull inside a fused epoch, which only the hub's board keeps."""
    posts = boards.board(current_worker(), run_id).values
    if ("pulled", round_index) not in posts:
        raise KeyError(f"the pull of round {round_index} of run {run_id} is no longer kept")
    return posts[("pulled", round_index)]


def gate(after):
    """Nothing: a task that ends once something an epoch follows has run."""


def last_pull(end):
    return end.pulled


def reports(end):
    return end.reports, end.seconds, (end.started, end.ended)


def first_takers(instructions_by_round):
    """``{carried block: the block that takes it first}`` over a sequence of rounds'
    instructions, and ``{carried block: the block holding it after them}``."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for instructions in instructions_by_round:
        for b, instruction in instructions.items():
            c = instruction.carried
            if c is not None:
                first.setdefault(c, b)
                last[c] = b
    return first, last


def gang_lock(client, workers):
    """A lock over ``workers`` for a run's fused epochs (see ``Engine._gang``)."""
    from distributed import MultiLock

    return MultiLock(names=[f"dask-strads-gang-{w}" for w in sorted(set(workers))],
                     client=client)
