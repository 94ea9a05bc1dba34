"""The state of one run of a program on an executor, from its start to its result: the handles
of its cells, pushes, pulls, carried blocks and checkpoints, and its history. The engine and its
checkpoints read it through the methods here; only this class changes it."""
from collections import deque
from statistics import median_high

from .cells import CellRef
from .history import History
from .hubs import claim_hub, release_hub
from .plane import Source
from .recovery import KEPT


class Run:
    """One run. ``owners[b]``: the worker of block ``b``; ``home[c]``: the worker holding
    carried block ``c``; ``hub``: the worker of the pulls (see :mod:`.hubs`). ``local``: the
    executor runs in this process (a cell is then referred to as itself)."""

    def __init__(self, name, run_id, owners, n_carried, start, local):
        self.name = name
        self.id = run_id
        self.owners = list(owners)
        self.home = [self.owners[c % len(self.owners)] for c in range(n_carried)]
        self.hub = claim_hub(self.owners)
        self.start = start
        self.local = local
        self.program = None  # the handle of the program, shared by the run's tasks
        self.history = History()
        self.cells = []
        self.pushed = []  # per block, its newest push (None once a lineage cut dropped it)
        self.carried = []  # per carried block, a handle or the Source of the push holding it
        self.pending: deque[tuple[int, object]] = deque()  # (round, report handle), oldest first
        self.final_round = None
        self.pulled = {}  # round -> handle of that round's Pulled
        self.submitted = -1
        self.checkpoints = []  # the newest KEPT, oldest first
        self.disk_writes = []  # (round, handles of its writes) not yet marked complete
        self.writes_to_disk = True  # until a write fails (a full disk)
        self.guards = {}  # carried block -> the copy its next push must follow
        self.losses = {}  # block -> times its worker was lost
        self.collected = []  # the handles of the result, once collected
        self.gang = None  # the lock over its workers for fused epochs: None untried, False none
        self.graph_seconds = None  # what a graph costs beyond its compute, once measured
        self._epoch_end = None  # (last round, when it ended on the hub) of the newest epoch read
        self.stream = None  # the rounds its fused epochs stream (see .streams), on a cluster

    def key(self, kind, *parts):
        """The key of one of the run's tasks: ``strads-<program>-<kind>-<parts>``."""
        return "-".join(["strads", self.name, kind, *map(str, parts)])

    def handles(self):
        """Every handle the run holds (not the data blocks: their owner placed them)."""
        held_carried = [c for c in self.carried if not isinstance(c, Source)]  # else in a cell
        return [*self.cells, *self.pushed, *held_carried, *self.pulled.values(),
                *(h for _, h in self.pending), *(h for c in self.checkpoints for p in c.pairs()
                                                 for h in p),
                *(h for _, hs in self.disk_writes for h in hs), *self.guards.values(),
                *self.collected, self.program]

    # -- what a round's tasks refer to ----------------------------------------------------------
    def cell_named(self, b):
        """Block ``b``'s cell as a :class:`.plane.Source` refers to it. On a cluster, by its key
        only: as a dependency, Dask would copy the reference to the reading worker, and its
        memory manager may then drop the copy on the cell's own worker, which lets go of the
        cell."""
        cell = self.cells[b]
        return cell if self.local else CellRef(cell.key)

    def source(self, b, after, timeout):
        """Where a push fetches block ``b``'s message or carried block: its cell, once ``after``
        (the push that made it) has run."""
        return Source(b, self.owners[b], self.cell_named(b), after, timeout)

    def previous_push(self, b, c=None):
        """What the push of block ``b`` (taking carried block ``c``) must follow: its last push,
        and the checkpoint's copy of ``c`` when one was just taken."""
        return self.pushed[b] if c not in self.guards else (self.pushed[b], self.guards.pop(c))

    # -- changes --------------------------------------------------------------------------------
    def started(self, handles, cells, inits, carried, pulls):
        """Take the handles of the start's graph (``pulls``: round -> reference or handle)."""
        self.cells = [handles[c.key] for c in cells]
        self.pushed = [handles[i.key] for i in inits]
        self.carried = [handles[c.key] for c in carried]
        self.pulled = {r: handles.get(getattr(p, "key", None), p) for r, p in pulls.items()}

    def submitted_round(self, t, handles, pushes, hand_offs, pull, report, checkpoint, writes,
                        first=None):
        """Take the handles of round ``t``'s graph (of an epoch's, from round ``first``)."""
        if writes:
            self.disk_writes.append((t, [handles[w.key] for w in writes]))
        for b, task in pushes.items():
            self.pushed[b] = handles[task.key]
        for c, held in hand_offs.items():
            self.carried[c] = held._replace(after=handles[held.after.key])
        self.pulled[t] = handles[pull.key]
        if checkpoint is not None:
            checkpoint = checkpoint.resolved(handles)
            self.checkpoints = self.checkpoints[1 - KEPT:] + [checkpoint]
            self.pushed = [state for state, _ in checkpoint.states]  # pushes follow the copies
            self.guards = {c: copy for c, (copy, _) in enumerate(checkpoint.carried)}
        self.pending.append((t if first is None else first, handles[report.key]))
        self.submitted = t

    def behind_stop(self, record):
        """Whether ``record`` is of a round in flight when the fit's stop was found."""
        return self.final_round is not None and record["round"] > self.final_round

    def carried_moved(self, hand_offs):
        """The carried blocks of ``hand_offs`` (carried block -> the Source of the push that
        takes it) now live on those pushes' workers."""
        for c, held in hand_offs.items():
            self.home[c] = held.worker

    def timed_epoch(self, first, seconds, started, ended):
        """Measure what a graph costs beyond its compute from the epoch of rounds ``first``
        on, which started and ended at ``started`` and ``ended`` on the hub (``seconds``: between
        its pulls, the first from its start), when the epoch before it on the same hub ran the
        round before: the hub's wait between the two (the scheduler ending one graph and
        starting the next) plus what the first round took beyond a typical one (the epoch's
        tasks on other workers starting later)."""
        if self._epoch_end is not None and self._epoch_end[0] == first - 1:
            late = max(0.0, seconds[0] - median_high(seconds[1:])) if seconds[1:] else 0.0
            self.graph_seconds = max(0.0, started - self._epoch_end[1]) + late
        self._epoch_end = (first + len(seconds) - 1, ended)

    def going_on_from(self, lost):
        """Take over what the ``lost`` run (the one a lost worker ended) knew: its start, its
        history, the losses per block and whether disk writes still work."""
        self.start, self.history, self.losses = lost.start, lost.history, lost.losses
        self.writes_to_disk = lost.writes_to_disk

    def end(self):
        """Let go of what the run holds besides its values: its hub, the lock over its workers
        for fused epochs and its round stream."""
        release_hub(self.hub)
        if self.gang:
            self.gang.release()
            self.gang = False
        if self.stream is not None:
            self.stream.close()

    def forget_pulls_before(self, oldest):
        for r in [r for r in self.pulled if r < oldest]:
            del self.pulled[r]

    def cut(self, kept_pulls):
        """After a lineage cut: the pulls later rounds read, as data of their own, and no
        handle ordering the pushes."""
        self.pulled = dict(kept_pulls)
        self.pushed = [None] * len(self.pushed)
        self.guards = {}
