"""The model-agnostic engine: each round of a program becomes one Dask graph of pinned tasks."""
import inspect
import os
import uuid
from collections import deque
from dataclasses import dataclass
from functools import cached_property
from time import perf_counter


from ..kernels.compilation import announce_compiling
from ..log import logger
from ..programs.base import carried_id, check_carried_assignment, check_reads, reads
from . import disk, tasks
from .history import History
from .hubs import claim_hub, release_hub
from .blocks import PlacedBlocks
from .cells import CellRef
from .compat import Task, TaskRef, parse_input
from .plane import FETCH_SECONDS, Source
from .errors import ClusterError, WorkerLost
from .progress import watchers
from .recovery import KEPT, add_checkpoint, checkpoint_items, usable
from .runtime import executor_for
from .stalls import patience


#: Rounds between in-memory checkpoints on a cluster (by default).
CHECKPOINT_INTERVAL = 10
#: A block whose worker is lost this many times in one fit stops it (a worker dying on it).
MAX_LOSSES_PER_BLOCK = 3
#: Rounds between two cuts of the lineage Dask keeps of a run on a cluster (see
#: ``Engine._cut_lineage``): each cut waits for its round to end, one round's latency.
LINEAGE_ROUNDS = 64


@dataclass
class EngineResult:
    """What a run leaves: the parameter blocks and carried blocks (handles on the workers that
    hold them: futures on a cluster), the history, and how to read them."""

    params: list
    carried: list
    history: History
    executor: object
    param_workers: list
    carried_workers: list

    def gather(self):
        """The parameter blocks, in memory."""
        return self.executor.gather(self.params, self.param_workers)

    def gather_carried(self):
        return self.executor.gather(self.carried, self.carried_workers)

    def parameters(self, axis=0):
        """The parameter blocks as one Dask array, a chunk per block, left on its worker."""
        return self.executor.as_array(self.params, self.param_workers, axis)

    def carried_parameters(self, axis=0):
        """The carried blocks' parameters as one Dask array, a chunk per carried block."""
        return self.executor.as_array(self.carried, self.carried_workers, axis)


class _Run:
    """The handles and bookkeeping of one run, from start to collect."""

    def __init__(self, name, owners, start):
        self.name = name
        self.owners = owners
        self.hub = claim_hub(owners)
        self.start = start
        self.history = History()
        self.pending = deque()  # (round, report handle), oldest first
        self.final_round = None
        self.pulled = {}  # round -> handle of that round's Pulled
        self.submitted = -1
        self.checkpoints = []  # the newest KEPT, oldest first
        self.disk_writes = []  # (round, handles of its writes) not yet marked complete
        self.writes_to_disk = True  # until a write fails (a full disk)
        self.guards = {}  # carried block -> the copy its next push must follow
        self.losses = {}  # block -> times its worker was lost
        self.collected = []  # the handles of the result, once collected

    def handles(self):
        """Every handle the run holds (not the data blocks: their owner placed them)."""
        held_carried = [c for c in self.carried if not isinstance(c, Source)]  # else in a cell
        return [*self.cells, *self.pushed, *held_carried, *self.pulled.values(),
                *(h for _, h in self.pending), *(h for c in self.checkpoints for p in c.pairs()
                                                 for h in p),
                *(h for _, hs in self.disk_writes for h in hs), *self.guards.values(),
                *self.collected, self.program]

    def key(self, kind, *parts):
        return "-".join(["strads", self.name, kind, *map(str, parts)])


class Engine:
    """Runs a :class:`~dask_strads.programs.Program` on Dask, one task graph per round.

    Every block has a cell (its data and state) on one worker for the whole fit. A round is one
    graph: a push task per scheduled block, pinned to the block's worker; one pull on the run's
    hub (one of its blocks' workers, see :mod:`.hubs`); one task that extracts the report for
    the client; and, for programs with carried blocks, one hand-off task per carried block,
    which Dask then moves to the next worker that asks for it. Keys read
    ``strads-<program>-<kind>-<block>-<round>-<run>``. The client may submit
    ``pipeline_depth`` rounds beyond the newest report it has read, so that round latencies
    overlap.

    Parameters
    ----------
    program : Program
    client : distributed.Client, optional
        Where to run; by default the active client, else a local Dask scheduler when
        ``dask.config`` names one, else the embedded cluster (see :mod:`.runtime`).
    staleness : int
        ``s``: the push of round ``t`` sees the pull of round ``t - 1 - s``. 0 is bulk-synchronous.
    max_rounds : int
    pipeline_depth : int
        Rounds submitted beyond the newest report read by the client.
    progress : bool, "plot" or list
        Show a progress bar (tqdm), a live plot (Jupyter), or call the watchers given (objects
        with ``update(record, run)`` and ``close(run)``, see :mod:`.progress`).
    callback : callable, optional
        ``callback(record)`` or ``callback(record, run)``, called with each round's record;
        returning True stops the fit. ``run.parameters()`` gives the current parameter blocks as
        a Dask array.
    executor : optional
        An executor from :mod:`.executors`; overrides ``client``.
    checkpoint_interval : int
        Every this many rounds (0: never) copy the blocks' state: on a cluster in the workers'
        memory, so that the fit goes on when a worker holding blocks is lost (see
        :mod:`.recovery`); and to ``checkpoint_dir`` when given.
    checkpoint_dir : path, optional
        Where to write checkpoints (see :mod:`.disk`); a run finding there a complete
        checkpoint of the same fit (``fingerprint``) resumes from it.
    fingerprint : dict or callable, optional
        What identifies the fit (data, hyperparameters, seed, blocks): a checkpoint with another
        raises a ValueError naming what differs. A function returning it is called once, when a
        checkpoint is first written or found (hashing the data costs a pass over it, which a fit
        that ends before its first checkpoint never pays).
    """

    def __init__(self, program, client=None, staleness=0, max_rounds=100, pipeline_depth=2,
                 progress=False, callback=None, executor=None,
                 checkpoint_interval=CHECKPOINT_INTERVAL, checkpoint_dir=None, fingerprint=None):
        for name, value, low in (("staleness", staleness, 0), ("max_rounds", max_rounds, 1),
                                 ("pipeline_depth", pipeline_depth, 1),
                                 ("checkpoint_interval", checkpoint_interval, 0)):
            if int(value) != value or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        self.program = program
        self.executor = executor or executor_for(client)
        self.staleness = int(staleness)
        self.max_rounds = int(max_rounds)
        self.pipeline_depth = int(pipeline_depth)
        self.progress = progress
        self.callback = callback
        self.checkpoint_interval = int(checkpoint_interval)
        self.checkpoint_dir = None if checkpoint_dir is None else os.fspath(checkpoint_dir)
        if self.checkpoint_dir and self.checkpoint_interval:
            disk.check_writable(self.checkpoint_dir)
        self._fingerprint = fingerprint

    @cached_property
    def fingerprint(self):
        """What identifies the fit, computed on first use."""
        return dict((self._fingerprint() if callable(self._fingerprint) else self._fingerprint)
                    or {})

    # -- the steps of a run ---------------------------------------------------------------------
    def run(self, blocks, slots=None):
        """Fit from data blocks (in memory or dask collections, or
        :class:`~.blocks.PlacedBlocks` that several runs share); ``slots`` optionally puts
        blocks of equal slot on one worker."""
        if self.program.kernels:
            announce_compiling(self.program.kernels, emit=logger.info)
        run = self.start(blocks, slots, self._saved(blocks))
        watching = (self.progress if isinstance(self.progress, list) else
                    watchers(self.progress, self.program.name, self.max_rounds))
        try:
            while True:
                try:
                    self._rounds(run, watching)
                    # a worker lost before its blocks' parameters are out is recovered too
                    result = self.collect(run)
                    self.executor.wait(result.params + result.carried, run.owners)
                    return result
                except WorkerLost as error:
                    run = self._recover(run, blocks, slots, error)
        except BaseException:  # Ctrl-C too: the cluster forgets the run's tasks and values now
            self.executor.release(h for h in run.handles() if h is not None)
            raise
        finally:
            release_hub(run.hub)
            for watcher in watching:
                watcher.close(run)

    def _saved(self, blocks):
        """The newest checkpoint of this fit in ``checkpoint_dir``, as ``start`` restores it."""
        if not (self.checkpoint_dir and self.checkpoint_interval
                and isinstance(blocks, (list, tuple))):
            return None
        found = disk.latest(self.checkpoint_dir, lambda: self.fingerprint, len(blocks),
                            self.program.n_carried, self.staleness, self._last_resumable_round)
        if found is None:
            return None
        checkpoint, records = found
        logger.info("resuming from the checkpoint of round %d in %s", checkpoint.round,
                    self.checkpoint_dir)
        return checkpoint, checkpoint.pairs(), records

    @property
    def _last_resumable_round(self):
        """The newest round a run can go on from: the result is collected at the state that the
        last round's report measured, ``report_lag`` rounds before it, which a checkpoint of
        the last round alone no longer holds."""
        return self.max_rounds - 1 - self.program.report_lag

    def _rounds(self, run, watching):
        for t in range(run.submitted + 1, self.max_rounds):
            self.submit_round(run, t)
            if self.read_reports(run, self.pipeline_depth, watching):
                break
            if (not self.executor.local and not self.program.n_carried
                    and (t + 1) % LINEAGE_ROUNDS == 0):
                self._cut_lineage(run)
        self.read_reports(run, 0, watching)

    def _cut_lineage(self, run):
        """Let Dask forget the rounds run so far. A worker keeps a finished task's state for as
        long as a task on it that depends on it, however indirectly, is alive, and each round
        depends on the one before: without a cut every worker would keep every round of the fit
        until its end (some 50 kB a round on each worker, growing with the rounds, not with the
        model). Once the newest round submitted has run, the pulls later rounds may read are
        sent back to the hub as data of their own, which depends on no task, and the pushes
        need no handle to order them: nothing alive depends on the rounds before any more. A
        program with carried blocks is not cut: its carried blocks, parameters, would have to
        pass through the client."""
        rounds = sorted(run.pulled)
        # the pushes' handles: the newest push of each block, or a checkpoint's copy of its
        # state that its next push must follow
        self.executor.wait([h for h in run.pushed if h is not None]
                           + [run.pulled[r] for r in rounds] + list(run.guards.values()),
                           run.owners)
        values = self.executor.gather([run.pulled[r] for r in rounds], run.owners)
        for r, value in zip(rounds, values):
            run.pulled[r] = self.executor.put(value, run.hub, run.key("kept-pull", r, run.id))
        run.pushed = [None] * len(run.pushed)
        run.guards = {}

    def start(self, blocks, slots=None, restore=None):
        """Place the blocks, build their cells and the carried blocks, and pull once; or, with
        ``restore`` (a checkpoint and the handles of its copies), put them back as they were
        after its round."""
        if not isinstance(blocks, (list, tuple, PlacedBlocks)):
            raise TypeError(f"blocks must be a list of data blocks, got {type(blocks).__name__}")
        if not blocks:
            raise ValueError("blocks must be a non-empty list")
        program, executor = self.program, self.executor
        start = perf_counter()
        if isinstance(blocks, PlacedBlocks):
            raw, owners = blocks.handles, blocks.owners
        else:
            raw, owners = executor.place(blocks, slots, f"strads-{program.name}-data")
        run = _Run(program.name, owners, start)
        run.id = uuid.uuid4().hex[:8]
        run.program = executor.share(program, run.key("program", run.id))
        run.home = [owners[c % len(owners)] for c in range(program.n_carried)]
        graph = {}
        cells = [self._task(graph, worker, key, tasks.prepare, run.program, block, b,
                            restore is None, key)
                 for b, (block, worker) in enumerate(zip(raw, owners))
                 for key in [run.key("block", b, run.id)]]
        if restore is None:
            seed = executor.put(tasks.Pulled(program.initial_shared(), {}), run.hub,
                                run.key("shared-init", run.id))
            inits = [self._task(graph, w, run.key("init", b, run.id), tasks.initial_partial,
                                cell) for b, (w, cell) in enumerate(zip(owners, cells))]
            carried = [self._task(graph, w, run.key("carried-init", c, run.id),
                                  tasks.initial_carried, run.program, c)
                       for c, w in enumerate(run.home)]
            pulls = {-1: self._task(graph, run.hub, run.key("pull-init", run.id), tasks.pull,
                                    run.program, seed, list(range(len(raw))), *inits)}
        else:
            checkpoint, copies, *records = restore
            where = [*owners, *run.home, *([run.hub] * len(checkpoint.pulled))]
            copies = [c if isinstance(c, TaskRef)
                      else executor.put(c, w, run.key("from-disk", i, run.id))
                      for i, (c, w) in enumerate(zip(copies, where))]
            states, rest = copies[:len(raw)], copies[len(raw):]
            for record in records[0] if records else ():
                run.history.append(record)
            if records:
                run.history.stats.resumed_from = checkpoint.round + 1
            inits = [self._task(graph, w, run.key("restore", b, run.id), tasks.restore, cell,
                                state, checkpoint.round)
                     for b, (w, cell, state) in enumerate(zip(owners, cells, states))]
            carried = [self._task(graph, w, run.key("carried-restore", c, run.id),
                                  tasks.snapshot, tasks.itself, rest[c])
                       for c, w in enumerate(run.home)]
            pulls = dict(zip(checkpoint.pulled, rest[len(carried):]))
            run.submitted = checkpoint.round
        handles = executor.submit(graph)
        run.cells = [handles[c.key] for c in cells]
        run.pushed = [handles[i.key] for i in inits]
        run.carried = [handles[c.key] for c in carried]
        run.pulled = {r: handles[p.key] if isinstance(p, TaskRef) and p.key in handles else p
                      for r, p in pulls.items()}
        return run

    def _recover(self, run, blocks, slots, error):
        """Go on after a lost worker: start again on the workers left from the newest usable
        checkpoint (or from the start) and replay the rounds since."""
        executor = self.executor
        if not self.checkpoint_interval:
            raise error
        started = perf_counter()
        for worker in error.workers:
            for b in (b for b, owner in enumerate(run.owners) if owner == worker):
                run.losses[b] = run.losses.get(b, 0) + 1
                if run.losses[b] >= MAX_LOSSES_PER_BLOCK:
                    raise ClusterError(
                        f"{error}; block {b} has now lost its worker {run.losses[b]} times "
                        "(a worker that runs out of memory on it?): the fit stops") from error
        before = set(executor.refresh())
        if not before:
            raise ClusterError(f"{error}, and no worker is left") from error
        if isinstance(blocks, PlacedBlocks):  # some of them were on the worker lost
            blocks, slots = blocks.blocks, blocks.slots
        # placed before a checkpoint is chosen: a worker lost while they are placed (which
        # places them again, see blocks.place_blocks) is then known to be lost
        placed = PlacedBlocks.on(executor, blocks, slots, f"strads-{self.program.name}-data")
        alive = set(executor.refresh())
        restore = None
        for checkpoint in reversed(run.checkpoints):
            if checkpoint.round > self._last_resumable_round:
                continue
            copies = usable(executor, checkpoint, alive)
            if copies is not None:
                restore = (checkpoint, copies)
                break
        resumed = restore[0].round if restore else -1
        logger.warning("%s; going on from round %d on the %d workers left", error, resumed + 1,
                       len(alive))
        new = self.start(placed, slots, restore)
        release_hub(run.hub)
        new.start, new.history, new.losses = run.start, run.history, run.losses
        new.writes_to_disk = run.writes_to_disk
        new.history.truncate(resumed)
        new.history.stats.recoveries.append({
            "round": resumed, "lost": [*error.workers, *sorted(before - alive)],
            "blocks_moved": sum(a != b for a, b in zip(run.owners, new.owners)),
            "seconds": perf_counter() - started})
        return new

    def submit_round(self, run, t):
        """Emit round ``t`` as one graph."""
        program = self.program
        instructions = program.schedule(t, run.history.records)
        check_carried_assignment(instructions)
        check_reads(program, instructions)
        keep_from = t - (0 if program.updates_in_place else
                         self.pipeline_depth + program.report_lag)
        source = run.pulled[max(-1, t - 1 - self.staleness)]
        graph, pushes = {}, {}
        hand_offs = {}  # carried block -> the Source of the push that now holds it
        timeout = patience(FETCH_SECONDS, run.history.typical_round_seconds())
        for b, instruction in instructions.items():
            worker, c = run.owners[b], carried_id(instruction)
            sources = [Source(s, run.owners[s], self._cell_named(run, s), run.pushed[s],
                              timeout) for s in reads(instruction)]
            previous = run.pushed[b] if c not in run.guards else (run.pushed[b],
                                                                  run.guards.pop(c))
            pushes[b] = self._task(graph, worker, run.key("push", b, t, run.id), tasks.push,
                                   run.program, run.cells[b], previous, source, instruction,
                                   t, keep_from, None if c is None else run.carried[c],
                                   sources)
            if c is not None:
                hand_offs[c] = Source(b, worker, self._cell_named(run, b), pushes[b], timeout)
                run.home[c] = worker
        pull = self._task(graph, run.hub, run.key("pull", t, run.id), tasks.pull, run.program,
                          run.pulled[t - 1], list(pushes), *pushes.values())
        report = self._task(graph, run.hub, run.key("report", t, run.id), tasks.report, pull)
        interval = self.checkpoint_interval
        checkpoint, writes = None, []
        if interval and (t + 1) % interval == 0:
            items = checkpoint_items(self, run, t, pushes, hand_offs, pull)
            if not self.executor.local:  # a worker can be lost only on a cluster
                checkpoint = add_checkpoint(self, run, graph, t, items)
            if self.checkpoint_dir and run.writes_to_disk:
                writes = disk.add_writes(self, run, graph, t, items,
                                         checkpoint and checkpoint.pairs())
        if checkpoint is None and not writes:
            run.history.stats.tasks_per_round = sum(map(len, graph.values()))
        handles = self.executor.submit(graph)
        if writes:
            run.disk_writes.append((t, [handles[w.key] for w in writes]))
        for b, task in pushes.items():
            run.pushed[b] = handles[task.key]
        for c, held in hand_offs.items():
            run.carried[c] = held._replace(after=handles[held.after.key])
        run.pulled[t] = handles[pull.key]
        if checkpoint is not None:
            checkpoint = checkpoint.resolved(handles)
            run.checkpoints = run.checkpoints[1 - KEPT:] + [checkpoint]
            run.pushed = [state for state, _ in checkpoint.states]  # pushes follow the copies
            run.guards = {c: copy for c, (copy, _) in enumerate(checkpoint.carried)}
        run.pending.append((t, handles[report.key]))
        run.submitted = t
        self._forget_pulls(run, t)

    def read_reports(self, run, keep_pending, watching=()):
        """Read reports, oldest first, until at most ``keep_pending`` are unread (reading on
        while the oldest is done). Returns True once a report stops the fit. After a stop the
        rounds in flight are dropped, unless the program updates in place: then the result is
        the newest state, and their reports are recorded too."""
        executor = self.executor
        while run.pending and (len(run.pending) > keep_pending
                               or executor.done(run.pending[0][1])):
            if run.final_round is not None and not self.program.updates_in_place:
                run.pending.clear()
                break
            round_index, handle = run.pending.popleft()
            report = executor.result(handle, run.owners)
            executor.release([handle])  # read once
            record = {"round": round_index, "time": perf_counter() - run.start, **report}
            run.history.append(record)
            executor.round_seconds = run.history.typical_round_seconds()
            for watcher in watching:
                watcher.update(record, run)
            if run.final_round is None and self._stops(run, record):
                run.final_round = round_index
            self._complete_on_disk(run, round_index)
        return run.final_round is not None

    def _complete_on_disk(self, run, newest_read):
        """Mark the checkpoint rounds whose files are all written (and whose report was read);
        once a write failed, remove those of the rounds written since instead."""
        while run.disk_writes and run.disk_writes[0][0] <= newest_read and all(
                self.executor.done(h) for h in run.disk_writes[0][1]):
            t, handles = run.disk_writes.pop(0)
            failures = [e for e in self.executor.gather(handles, run.owners) if e is not None]
            if not run.writes_to_disk:
                disk.abandon(self.checkpoint_dir, t)
                continue
            records = [r for r in run.history.records if r["round"] <= t]
            run.writes_to_disk = disk.complete(self.checkpoint_dir, t, self.fingerprint, records,
                                               failures)

    def collect(self, run):
        """The parameter blocks and carried blocks of the round the result comes from."""
        program = self.program
        if program.updates_in_place or run.final_round is None:
            last = run.submitted  # in place, only the newest values exist
        else:
            last = run.final_round
        run.history.stats.rounds = last + 1
        kept = max(-1, last - (0 if program.updates_in_place else program.report_lag))
        graph = {}
        # nothing reads a cell after this, unless a checkpoint is still being written from it
        params = self._collect_tasks(graph, run, "collect", kept, release=not run.disk_writes)
        carried = [self._task(graph, w, run.key("collect-carried", c, run.id),
                              tasks.collect_carried, run.program, value, c)
                   for c, (w, value) in enumerate(zip(run.home, run.carried))]
        handles = self.executor.submit(graph)
        run.history.stats.wall_seconds = perf_counter() - run.start
        result = EngineResult([handles[t.key] for t in params], [handles[t.key] for t in carried],
                              run.history, self.executor, list(run.owners), list(run.home))
        run.collected = result.params + result.carried
        return result

    # -- helpers ------------------------------------------------------------------------------
    @staticmethod
    def _task(graph, worker, key, function, *args):
        """Add a task to ``graph`` under ``worker``; returns a reference to it. References
        inside tuples, lists and dicts of ``args`` count as dependencies too."""
        graph.setdefault(worker, {})[key] = Task(key, function, *map(parse_input, args))
        return TaskRef(key)

    def _cell_named(self, run, b):
        """Block ``b``'s cell as a :class:`.plane.Source` refers to it. On a cluster, by its key
        only: as a dependency, Dask would copy the reference to the reading worker, and its
        memory manager may then drop the copy on the cell's own worker, which lets go of the
        cell."""
        cell = run.cells[b]
        return cell if self.executor.local else CellRef(cell.key)

    def _collect_tasks(self, graph, run, name, round_index, release=False):
        """Add to ``graph`` a task per block giving its parameters after ``round_index``
        (``release``: and letting go of the block's states, see :func:`.tasks.collect`)."""
        return [self._task(graph, w, run.key(name, b, round_index, run.id), tasks.collect,
                           run.program, cell, pushed, run.pulled[round_index], round_index,
                           release)
                for b, (w, cell, pushed) in enumerate(zip(run.owners, run.cells, run.pushed))]

    def _stops(self, run, record):
        stop = self.program.converged(record)
        if stop:
            run.history.stats.converged = True  # the program's test, not a callback's stop
        if self.callback is not None and _call(self.callback, record, _RunningFit(self, run)):
            stop = True
        return stop

    def _forget_pulls(self, run, t):
        """Drop the pulls no later push or result can read."""
        oldest = t - self.staleness  # what the next round's pushes read
        if not self.program.updates_in_place:  # a stop may still come from round t - depth
            oldest = min(oldest, t - self.pipeline_depth - self.program.report_lag)
        for r in [r for r in run.pulled if r < oldest]:
            del run.pulled[r]


class _RunningFit:
    """What a callback may ask of a fit in progress."""

    def __init__(self, engine, run):
        self._engine, self._run = engine, run

    def parameters(self, axis=0):
        """The parameter blocks after the newest round run, as a Dask array."""
        run, executor = self._run, self._engine.executor
        graph = {}
        refs = self._engine._collect_tasks(graph, run, "peek", run.submitted)
        handles = executor.submit(graph)
        return executor.as_array([handles[r.key] for r in refs], run.owners, axis)


def _call(callback, record, running):
    try:
        inspect.signature(callback).bind(record, running)
    except (TypeError, ValueError):
        return callback(record)
    return callback(record, running)
