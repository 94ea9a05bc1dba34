"""The model-agnostic engine: each round of a program becomes one Dask graph of pinned tasks, or,
on a cluster, several rounds one graph of a task per worker (:mod:`.epochs`)."""
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from statistics import median_high
from time import perf_counter
from typing import Any

import dask
import numpy as np

from ..kernels.compilation import announce_compiling
from ..log import logger
from ..programs.base import Program, checked_instructions
from . import disk, epoch_checkpoints, epochs, tasks
from .blocks import PlacedBlocks
from .callbacks import call_back, needs_round_graphs
from .compat import TaskRef
from .errors import ClusterError, WorkerLost
from .executors import Executor
from .graph import RoundGraph
from .history import History
from .plane import FETCH_SECONDS, Source
from .progress import watchers
from .recovery import add_checkpoint, checkpoint_items, usable
from .run import Run
from .runtime import executor_for
from .stalls import patience


#: Rounds between in-memory checkpoints on a cluster (by default).
CHECKPOINT_INTERVAL = 10
#: A block whose worker is lost this many times in one fit stops it (a worker dying on it).
MAX_LOSSES_PER_BLOCK = 3
#: Rounds between two cuts of the lineage Dask keeps of a run on a cluster (see
#: ``Engine._cut_lineage``): each cut waits for its round to end, one round's latency.
LINEAGE_ROUNDS = 64
#: The most rounds one fused epoch runs (by default), and the share of an epoch's compute its
#: graph's cost may take (F is chosen so): see :mod:`.epochs`.
MAX_EPOCH_ROUNDS = 256
EPOCH_OVERHEAD_SHARE = 0.05


def epoch_length(graph_seconds: float, compute_seconds: float, bounds: Sequence[int]) -> int:
    """The fewest rounds (at least 1, at most ``min(bounds)``) over which a graph costing
    ``graph_seconds`` beyond its compute is at most ``EPOCH_OVERHEAD_SHARE`` of the compute,
    ``compute_seconds`` a round."""
    wanted = (min(bounds) if compute_seconds <= 0
              else int(graph_seconds / (EPOCH_OVERHEAD_SHARE * compute_seconds)) + 1)
    return max(1, min(wanted, *bounds))


@dataclass
class EngineResult:
    """What a run leaves: the parameter blocks and carried blocks (handles on the workers that
    hold them: futures on a cluster), the history, and how to read them."""

    params: list
    carried: list
    history: History
    executor: Executor
    param_workers: list
    carried_workers: list

    def gather(self) -> list[np.ndarray]:
        """The parameter blocks, in memory."""
        return self.executor.gather(self.params, self.param_workers)

    def gather_carried(self) -> list[np.ndarray]:
        return self.executor.gather(self.carried, self.carried_workers)

    def parameters(self, axis: int = 0) -> Any:
        """The parameter blocks as one Dask array, a chunk per block, left on its worker."""
        return self.executor.as_array(self.params, self.param_workers, axis)

    def carried_parameters(self, axis: int = 0) -> Any:
        """The carried blocks' parameters as one Dask array, a chunk per carried block."""
        return self.executor.as_array(self.carried, self.carried_workers, axis)


class Engine:
    """Runs a :class:`~dask_strads.programs.Program` on Dask, one task graph per round.

    Every block has a cell (its data and state) on one worker for the whole fit. A round is one
    graph: a push task per scheduled block, pinned to the block's worker; one pull on the run's
    hub (one of its blocks' workers, see :mod:`.hubs`); and one task that extracts the report
    for the client. The messages and carried blocks a push needs from other blocks travel
    worker to worker over the message plane (:mod:`.plane`), outside the graph. Keys read
    ``strads-<program>-<kind>-<block>-<round>-<run>``. The client may submit
    ``pipeline_depth`` rounds beyond the newest report it has read, so that round latencies
    overlap. The pull applies the program's stopping test; the rounds submitted behind the
    round that meets it run no push and change nothing.

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
        with ``update(record, run)`` and ``close(run)``, and optionally ``started(run)``, called
        once the data is placed; see :mod:`.progress`).
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
    max_epoch_rounds : int, optional
        On a distributed cluster, the most rounds one graph may run as a fused epoch: one task
        per worker running consecutive rounds (see :mod:`.epochs`), for programs with a static
        schedule, at staleness 0, unless the callback takes the running fit (or the program
        has carried blocks and a callback). The rounds an
        epoch runs are chosen so that a graph's cost (measured between consecutive epochs; as
        many as allowed before) stays within 5% of the epoch's compute. Epochs take their
        checkpoints inside (see :mod:`.epoch_checkpoints`), or end at them when they go to
        ``checkpoint_dir``, the program has carried blocks or one worker holds every block.
        1: a graph a round.
        By default ``dask.config``'s ``dask-strads.max-epoch-rounds``, else 256: a fit by an
        estimator runs round graphs under ``dask.config.set({"dask-strads.max-epoch-rounds":
        1})``.
    """

    def __init__(self, program: Program, *, client: Any = None, staleness: int = 0,
                 max_rounds: int = 100, pipeline_depth: int = 2,
                 progress: bool | str | list = False,
                 callback: Callable[..., Any] | None = None,
                 executor: Executor | None = None,
                 checkpoint_interval: int = CHECKPOINT_INTERVAL,
                 checkpoint_dir: str | os.PathLike | None = None,
                 fingerprint: Mapping | Callable[[], Mapping] | None = None,
                 max_epoch_rounds: int | None = None):
        if max_epoch_rounds is None:  # estimators leave it to the configuration
            max_epoch_rounds = dask.config.get("dask-strads.max-epoch-rounds", MAX_EPOCH_ROUNDS)
        for name, value, low in (("staleness", staleness, 0), ("max_rounds", max_rounds, 1),
                                 ("pipeline_depth", pipeline_depth, 1),
                                 ("checkpoint_interval", checkpoint_interval, 0),
                                 ("max_epoch_rounds", max_epoch_rounds, 1)):
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
        self.max_epoch_rounds = int(max_epoch_rounds)
        self.checkpoint_dir = None if checkpoint_dir is None else os.fspath(checkpoint_dir)
        if self.checkpoint_dir and self.checkpoint_interval:
            disk.check_writable(self.checkpoint_dir)
        self._fingerprint = fingerprint

    @cached_property
    def fingerprint(self) -> dict:
        """What identifies the fit, computed on first use."""
        return dict((self._fingerprint() if callable(self._fingerprint) else self._fingerprint)
                    or {})

    # -- the steps of a run ---------------------------------------------------------------------
    def run(self, blocks: Sequence[Any] | PlacedBlocks,
            slots: Sequence[int] | None = None) -> EngineResult:
        """Fit from data blocks (in memory or dask collections, or
        :class:`~.blocks.PlacedBlocks` that several runs share); ``slots`` optionally puts
        blocks of equal slot on one worker."""
        if self.program.kernels:
            announce_compiling(self.program.kernels, emit=logger.info)
        watching = (self.progress if isinstance(self.progress, list) else
                    watchers(self.progress, self.program.name, self.max_rounds))
        run = self.start(blocks, slots, self._saved(blocks))
        for watcher in watching:
            if hasattr(watcher, "started"):  # a phase of its own for the data's placement
                watcher.started(run)
        try:
            while True:
                try:
                    self._rounds(run, watching)
                    # a worker lost before its blocks' parameters are out is recovered too
                    result = self.collect(run)
                    self.executor.wait(result.params + result.carried, run.owners)
                    self._finish_writes(run)
                    return result
                except WorkerLost as error:
                    run = self._recover(run, blocks, slots, error)
        except BaseException:  # Ctrl-C too: the cluster forgets the run's tasks and values now
            self.executor.release(h for h in run.handles() if h is not None)
            raise
        finally:
            run.end()
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
        # Locally a round runs when a report of it or after it is read (see LocalExecutor): a
        # callback reads each round's report and parameters, and its stop takes effect, before
        # the next round runs, as in the sequential loop.
        depth = 0 if self.executor.local and self.callback is not None else self.pipeline_depth
        while run.submitted + 1 < self.max_rounds:
            first = run.submitted + 1
            n_rounds = self._epoch_rounds(run, first)
            if n_rounds > 1:
                self.submit_epoch(run, first, n_rounds)
            else:
                self.submit_round(run, first)
            if self.read_reports(run, depth, watching):
                break
            if (not self.executor.local and not self.program.n_carried
                    and (run.submitted + 1) // LINEAGE_ROUNDS > first // LINEAGE_ROUNDS):
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
        run.cut({r: self.executor.put(value, run.hub, run.key("kept-pull", r, run.id))
                 for r, value in zip(rounds, values)})

    def start(self, blocks: Sequence[Any] | PlacedBlocks, slots: Sequence[Any] | None = None,
              restore: tuple | None = None) -> Run:
        """Place the blocks, build their cells and the carried blocks, and pull once; or, with
        ``restore`` (a checkpoint, the handles or values of its copies and optionally the
        history records up to it), put them back as they were after its round."""
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
        run = Run(program.name, uuid.uuid4().hex[:8], owners, program.n_carried, start,
                  executor.local)
        run.stream = executor.round_stream(run.id)
        run.program = executor.share(program, run.key("program", run.id))
        graph = RoundGraph()
        cells = [graph.add(worker, key, tasks.prepare, run.program, block, b, restore is None,
                           key)
                 for b, (block, worker) in enumerate(zip(raw, owners))
                 for key in [run.key("block", b, run.id)]]
        begun = (self._fresh(graph, run, cells) if restore is None
                 else self._restored(graph, run, cells, *restore))
        run.started(executor.submit(graph.layers), cells, *begun)
        return run

    def _fresh(self, graph, run, cells):
        """The tasks starting a run from scratch: ``(initial partials, carried blocks, {-1:
        the first pull})``."""
        seed = graph.hold(self.executor.put(tasks.Pulled(self.program.initial_shared(), {}),
                                            run.hub, run.key("shared-init", run.id)))
        inits = [graph.add(w, run.key("init", b, run.id), tasks.initial_partial, cell)
                 for b, (w, cell) in enumerate(zip(run.owners, cells))]
        carried = [graph.add(w, run.key("carried-init", c, run.id), tasks.initial_carried,
                             run.program, c) for c, w in enumerate(run.home)]
        return inits, carried, {-1: graph.add(run.hub, run.key("pull-init", run.id),
                                              tasks.initial_pull, run.program, seed,
                                              list(range(len(cells))), *inits)}

    def _restored(self, graph, run, cells, checkpoint, copies, records=None):
        """The tasks putting a run back at ``checkpoint``: ``copies`` are handles of its
        in-memory copies, or values read from disk (placed first); ``records``: the history up
        to it (from disk)."""
        where = [*run.owners, *run.home, *([run.hub] * len(checkpoint.pulled))]
        copies = [c if isinstance(c, TaskRef)
                  else graph.hold(self.executor.put(c, w, run.key("from-disk", i, run.id)))
                  for i, (c, w) in enumerate(zip(copies, where))]
        states, rest = copies[:len(cells)], copies[len(cells):]
        if records is not None:
            for record in records:
                run.history.append(record)
            run.history.stats.resumed_from = checkpoint.round + 1
        inits = [graph.add(w, run.key("restore", b, run.id), tasks.restore, cell, state,
                           checkpoint.round)
                 for b, (w, cell, state) in enumerate(zip(run.owners, cells, states))]
        carried = [graph.add(w, run.key("carried-restore", c, run.id), tasks.snapshot,
                             tasks.itself, rest[c]) for c, w in enumerate(run.home)]
        run.submitted = checkpoint.round
        # the restored pulls follow the restored cells, as a round's pull follows its pushes
        pulls = [graph.add(run.hub, run.key("pull-restore", r, run.id), tasks.after,
                           pulled, *inits)
                 for r, pulled in zip(checkpoint.pulled, rest[len(carried):])]
        return inits, carried, dict(zip(checkpoint.pulled, pulls))

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
        # the records of the rounds up to it are known: the reports of the rounds a lost hub
        # streamed last may not have arrived
        newest = min(self._last_resumable_round, run.history.last_round)
        restore = None
        for checkpoint in reversed(run.checkpoints):
            if checkpoint.round > newest:
                continue
            copies = usable(executor, checkpoint, alive)
            if copies is not None:
                restore = (checkpoint, copies)
                break
        if not executor.local and self._checkpoints_inside_epochs(run):
            inside = epoch_checkpoints.adopted(executor, run, alive,
                                               restore[0].round if restore else -1, newest)
            if inside is not None:
                restore = (inside, [copy for copy, in inside.pairs()])
        resumed = restore[0].round if restore else -1
        logger.warning("%s; going on from round %d on the %d workers left", error, resumed + 1,
                       len(alive))
        new = self.start(placed, slots, restore)
        if restore:  # a worker lost before the new run's first checkpoint goes back to it
            new.checkpoints = [restore[0]]
        run.end()
        new.going_on_from(run)
        new.history.truncate(resumed)
        new.history.stats.recoveries.append({
            "round": resumed, "lost": [*error.workers, *sorted(before - alive)],
            "blocks_moved": sum(a != b for a, b in zip(run.owners, new.owners)),
            "seconds": perf_counter() - started})
        return new

    def submit_round(self, run: Run, t: int) -> None:
        """Emit round ``t`` as one graph: the pushes the schedule asks for, the pull, the report
        and, every ``checkpoint_interval`` rounds, the checkpoint's copies and writes."""
        program = self.program
        instructions = checked_instructions(program, program.schedule(t, run.history.records))
        graph = RoundGraph()
        pushes, hand_offs = self._add_pushes(graph, run, t, instructions)
        run.carried_moved(hand_offs)
        pull = graph.add(run.hub, run.key("pull", t, run.id), tasks.pull, run.program,
                         run.pulled[t - 1], list(pushes), *pushes.values())
        report = graph.add(run.hub, run.key("report", t, run.id), tasks.report, pull)
        run.history.stats.tasks_per_round = graph.n_tasks  # a checkpoint's copies left out
        checkpoint, writes = self._add_checkpoint(graph, run, t, pushes, hand_offs, pull)
        run.history.stats.graphs += 1
        run.submitted_round(t, self.executor.submit(graph.layers), pushes, hand_offs, pull,
                            report, checkpoint, writes)
        if writes and self.executor.local:  # they read the cells, which the next push changes
            self.executor.wait(run.disk_writes[-1][1])
        self._forget_pulls(run, t)

    def submit_epoch(self, run: Run, first: int, n_rounds: int) -> None:
        """Emit rounds ``first .. first + n_rounds - 1`` as one fused epoch (see
        :mod:`.epochs`): a task per worker, the last round's pull and the reports."""
        program = self.program
        last = first + n_rounds - 1
        planned = [checked_instructions(program, program.schedule(t, []))
                   for t in range(first, last + 1)]
        takers, holders = epochs.first_takers(planned)
        timeout = patience(FETCH_SECONDS, run.history.typical_round_seconds())
        inside = self._checkpoints_inside_epochs(run)
        plan = epochs.EpochPlan(run.id, tuple(run.owners), tuple(c.key for c in run.cells),
                                run.hub, first, n_rounds, self._rounds_kept_behind(), timeout,
                                tuple(t for t in range(first, last) if inside
                                      and (t + 1) % self.checkpoint_interval == 0))
        graph = RoundGraph()
        # a gate a prerequisite: Dask refuses a task whose inputs add up past a worker's limit
        gates = [graph.add(w, run.key("gate", first, i, run.id), epochs.gate, after)
                 for i, (w, after) in enumerate(self._epoch_prerequisites(run))]
        tasks_of = {}
        for w in dict.fromkeys(run.owners):
            blocks = [b for b, owner in enumerate(run.owners) if owner == w]
            carried = {c: run.carried[c] for c, b in takers.items() if run.owners[b] == w}
            # the cells by their keys: as inputs Dask would count their sizes against the
            # worker's memory limit (the gates order the epoch after them)
            tasks_of[w] = graph.add(
                w, run.key("epoch", first, run.owners.index(w), run.id), epochs.epoch,
                run.program, plan, {b: run.cell_named(b) for b in blocks},
                run.pulled[first - 1], carried, *gates)
        end = tasks_of[run.hub]
        pull = graph.add(run.hub, run.key("pull", last, run.id), epochs.last_pull, end)
        report = graph.add(run.hub, run.key("report", first, last, run.id), epochs.reports,
                           end)
        pushes = {b: tasks_of[w] for b, w in enumerate(run.owners)}
        hand_offs = {c: run.source(b, pushes[b], timeout) for c, b in holders.items()}
        run.carried_moved(hand_offs)
        run.history.stats.tasks_per_round = graph.n_tasks / n_rounds  # no checkpoint's copies
        checkpoint, writes = self._add_checkpoint(graph, run, last, pushes, hand_offs, pull)
        run.history.stats.graphs += 1
        run.submitted_round(last, self.executor.submit(graph.layers), pushes, hand_offs, pull,
                            report, checkpoint, writes, first)
        self._forget_pulls(run, last)

    @staticmethod
    def _epoch_prerequisites(run):
        """``[(worker, handle on it)]`` of what an epoch follows: the blocks' last pushes (or
        their checkpoint copies) and the carried blocks' (or their copies). Each is waited for
        by a gate task on its worker, and every epoch task waits for every gate: no epoch task
        takes a worker's thread, waiting for the others, while a task another one needs is
        still queued behind it there."""
        found = list(zip(run.owners, run.pushed))
        for c, held in enumerate(run.carried):
            guard = run.guards.pop(c, None)
            if guard is not None:
                found.append((run.home[c], guard))
            found.append((held.worker, held.after) if isinstance(held, Source)
                         else (run.home[c], held))
        return found

    def _epoch_rounds(self, run, first):
        """The rounds the next graph runs: 1 (a round graph) unless a fused epoch applies,
        else as many as keep the graph's measured cost within ``EPOCH_OVERHEAD_SHARE`` of the
        epoch's compute, up to ``max_epoch_rounds``, the rounds left, the next lineage cut and
        the next checkpoint if it cannot be taken inside the epoch."""
        program = self.program
        if (self.max_epoch_rounds == 1 or self.executor.local or self.staleness
                or needs_round_graphs(self.callback, program) or not program.static_schedule
                # not yet in cells: as an epoch's inputs, a worker's carried blocks all at once
                # could pass its memory limit, which Dask then refuses the task for
                or not all(isinstance(c, Source) for c in run.carried)
                or not self._gang(run)):
            return 1
        bounds = [self.max_epoch_rounds, self.max_rounds - first]
        if self.checkpoint_interval and not self._checkpoints_inside_epochs(run):
            bounds.append(self.checkpoint_interval - first % self.checkpoint_interval)
        if not program.n_carried:
            bounds.append(LINEAGE_ROUNDS - first % LINEAGE_ROUNDS)
        if run.graph_seconds is None:  # not measured yet: as long as allowed
            return max(1, min(bounds))
        compute = median_high(r.get("compute_seconds", 0.0) for r in run.history.records[-10:])
        return epoch_length(run.graph_seconds, compute, bounds)

    def _checkpoints_inside_epochs(self, run):
        """Whether a fused epoch takes the checkpoints of its rounds on the workers' boards (see
        :mod:`.epoch_checkpoints`), rather than ending at each: for a program without carried
        blocks whose blocks are on two workers or more, unless checkpoints go to disk."""
        return bool(self.checkpoint_interval and not self.checkpoint_dir
                    and not self.program.n_carried and len(set(run.owners)) > 1)

    def _gang(self, run):
        """Whether the run holds its workers for fused epochs: a ``distributed.MultiLock``
        over them (as xgboost.dask takes), so that the epochs of two fits never wait for each
        other's tasks on the same workers. A fit that cannot take it at once runs round
        graphs meanwhile."""
        if run.gang is None:
            lock = epochs.gang_lock(self.executor.client, run.owners)
            run.gang = lock if lock.acquire(timeout=0.1) else False
        return bool(run.gang)

    def _rounds_kept_behind(self):
        """How many rounds behind the newest a block's cell keeps its states: none for a
        program that updates in place, else back to the round a stop found in the reports of
        the rounds in flight takes the result from."""
        program = self.program
        return 0 if program.updates_in_place else self.pipeline_depth + program.report_lag

    def _add_pushes(self, graph, run, t, instructions):
        """The round's pushes, ``{block: reference}``, and ``{carried block: the Source of the
        push that takes it}``."""
        keep_from = t - self._rounds_kept_behind()
        source = run.pulled[max(-1, t - 1 - self.staleness)]
        timeout = patience(FETCH_SECONDS, run.history.typical_round_seconds())
        # Bulk-synchronous, a push follows the pull of the round before, which follows every
        # task that made what the push reads (see _restored): the reads need no task of their
        # own to follow, which would be P dependencies a push, each a value fetched, for MF.
        ordered = not self.staleness
        pushes, hand_offs = {}, {}
        for b, instruction in instructions.items():
            c = instruction.carried
            sources = [run.source(s, None if ordered else run.pushed[s], timeout)
                       for s in instruction.reads]
            carried = None if c is None else run.carried[c]
            if ordered and isinstance(carried, Source):
                carried = carried._replace(after=None)
            pushes[b] = graph.add(run.owners[b], run.key("push", b, t, run.id), tasks.push,
                                  run.program, run.cells[b], run.previous_push(b, c), source,
                                  instruction, t, keep_from, carried, sources)
            if c is not None:
                hand_offs[c] = run.source(b, pushes[b], timeout)
        return pushes, hand_offs

    def _add_checkpoint(self, graph, run, t, pushes, hand_offs, pull):
        """Every ``checkpoint_interval`` rounds, the copies of round ``t`` (on a cluster, where
        a worker can be lost) and their writes to ``checkpoint_dir``: ``(Checkpoint or None,
        references to the writes)``."""
        interval = self.checkpoint_interval
        if not interval or (t + 1) % interval:
            return None, []
        items = checkpoint_items(run, t, pushes, hand_offs, pull, self.staleness)
        checkpoint = None
        if not self.executor.local:
            owners = sorted(set(run.owners))
            # a fit of one block replicates to another worker of the cluster
            workers = owners if len(owners) > 1 else self.executor.refresh()
            checkpoint = add_checkpoint(graph, run, t, items, workers)
        writes = []
        if self.checkpoint_dir and run.writes_to_disk:
            writes = disk.add_writes(graph, run, self.checkpoint_dir, t, items,
                                     checkpoint and checkpoint.pairs())
        return checkpoint, writes

    def read_reports(self, run: Run, keep_pending: int, watching: Sequence[Any] = ()) -> bool:
        """Read reports, oldest first, until at most ``keep_pending`` are unread (reading on
        while the oldest is done). Returns True once a report stops the fit. After a stop the
        rounds in flight are dropped, unless the program updates in place: then the result is
        the newest state, and their reports are recorded too. The rounds of a fused epoch are
        recorded as its hub streams them, and the epoch's own reports fill in any that did not
        arrive."""
        executor = self.executor
        streamed = None if run.stream is None else (lambda: self._read_streamed(run, watching))
        if streamed:
            streamed()

        def caught_up():  # rounds submitted and not yet recorded (streamed ones are)
            return run.submitted - run.history.last_round <= keep_pending

        while run.pending:
            if run.final_round is not None and not self.program.updates_in_place:
                run.pending.clear()
                break
            first, handle = run.pending[0]
            if not executor.done(handle) and (
                    caught_up() or not executor.wait([handle], run.owners, streamed, caught_up)):
                break
            run.pending.popleft()
            reports, seconds, timing = _rounds_of(executor.result(handle, run.owners, streamed))
            executor.release([handle])  # read once
            if timing is not None:
                run.timed_epoch(first, seconds, *timing)
            now = perf_counter() - run.start
            for i, report in enumerate(reports):
                if run.final_round is not None and not self.program.updates_in_place:
                    break  # rounds behind the stop, which change nothing of the result
                if first + i > run.history.last_round:  # not streamed
                    # each at the time the hub pulled it (in this process: the pull's own time,
                    # as one local graph runs several rounds)
                    at = (report.made - run.start if executor.local
                          else now - sum(seconds[i + 1:]))
                    self._record(run, first + i, at, report, watching)
            executor.round_seconds = run.history.typical_round_seconds()
            self._complete_on_disk(run, first + len(reports) - 1)
        return run.final_round is not None

    def _read_streamed(self, run, watching):
        """Record the rounds a fused epoch's hub streamed since the last look, in order (after
        a stop, those behind it only for a program that updates in place, as in
        :meth:`read_reports`)."""
        for t, report in run.stream.take():
            if run.final_round is not None and not self.program.updates_in_place:
                break
            if t == run.history.last_round + 1:  # else out of order or recorded: the epoch has it
                self._record(run, t, perf_counter() - run.start, report, watching)

    def _record(self, run, t, seconds, report, watching):
        """Round ``t``'s record (``seconds`` into the fit) in the history, to the watchers and
        to the stopping test. A stop the client finds (a callback's) is sent to the hub of the
        run's fused epochs, whose rounds in flight then run nothing from the next pull on."""
        newest = run.history.records[-1]["time"] if len(run.history) else 0.0
        record = {"round": t, "time": max(seconds, newest), **report.record}
        run.history.append(record)
        for watcher in watching:
            watcher.update(record, run)
        if run.final_round is None and self._stops(run, record, report.stopped):
            run.final_round = t
            if run.stream is not None and not report.stopped:
                self.executor.ask_to_stop(run.id, run.hub)

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

    def _finish_writes(self, run):
        """Wait for the checkpoint files still being written once every report is read (a
        fused epoch's rounds can run past its checkpoint's writes) and mark them complete."""
        if run.disk_writes:
            self.executor.wait([h for _, handles in run.disk_writes for h in handles],
                               run.owners)
            self._complete_on_disk(run, float("inf"))

    def collect(self, run: Run) -> EngineResult:
        """The parameter blocks and carried blocks of the round the result comes from."""
        program = self.program
        if program.updates_in_place or run.final_round is None:
            last = run.submitted  # in place, only the newest values exist
        else:
            last = run.final_round
        run.history.stats.rounds = last + 1
        kept = max(-1, last - (0 if program.updates_in_place else program.report_lag))
        graph = RoundGraph()
        # nothing reads a cell after this, unless a checkpoint is still being written from it
        params = self._collect_tasks(graph, run, "collect", kept, release=not run.disk_writes)
        carried = [graph.add(w, run.key("collect-carried", c, run.id), tasks.collect_carried,
                             run.program, value, c)
                   for c, (w, value) in enumerate(zip(run.home, run.carried))]
        handles = self.executor.submit(graph.layers)
        run.history.stats.wall_seconds = perf_counter() - run.start
        result = EngineResult([handles[t.key] for t in params], [handles[t.key] for t in carried],
                              run.history, self.executor, list(run.owners), list(run.home))
        run.collected = result.params + result.carried
        return result

    # -- helpers ------------------------------------------------------------------------------
    @staticmethod
    def _collect_tasks(graph, run, name, round_index, release=False):
        """Add to ``graph`` a task per block giving its parameters after ``round_index``
        (``release``: and letting go of the block's states, see :func:`.tasks.collect`)."""
        pulled = run.pulled.get(round_index)
        if pulled is None:  # a round inside a fused epoch: its pull is on the hub's board
            pulled = graph.add(run.hub, run.key("posted-pull", round_index, run.id),
                               epochs.posted_pull, run.id, round_index)
        return [graph.add(w, run.key(name, b, round_index, run.id), tasks.collect, run.program,
                          cell, pushed, pulled, round_index, release)
                for b, (w, cell, pushed) in enumerate(zip(run.owners, run.cells, run.pushed))]

    def _stops(self, run, record, converged):
        """Whether the fit stops at ``record``'s round: its program's stopping test
        (``converged``, applied by the round's pull) or the callback."""
        stop = converged
        if stop:
            run.history.stats.converged = True  # the program's test, not a callback's stop
        if self.callback is not None and call_back(self.callback, record, _RunningFit(self, run)):
            stop = True
        return stop

    def _forget_pulls(self, run, t):
        """Drop the pulls no later push or result can read."""
        oldest = t - self.staleness  # what the next round's pushes read
        if not self.program.updates_in_place:
            # what a stop in a round still in flight takes the result from (inside a fused
            # epoch the hub's board keeps it)
            unread = run.pending[0][0] if run.pending else t + 1
            oldest = min(oldest, t - self._rounds_kept_behind(),
                         unread - self.program.report_lag)
        run.forget_pulls_before(oldest)


class _RunningFit:
    """What a callback may ask of a fit in progress."""

    def __init__(self, engine, run):
        self._engine, self._run = engine, run

    def parameters(self, axis: int = 0) -> Any:
        """The parameter blocks after the newest round run, as a Dask array."""
        run, executor = self._run, self._engine.executor
        graph = RoundGraph()
        refs = self._engine._collect_tasks(graph, run, "peek", run.submitted)
        handles = executor.submit(graph.layers)
        return executor.as_array([handles[r.key] for r in refs], run.owners, axis)


def _rounds_of(value):
    """``(reports, seconds between them, an epoch's (start, end) on its hub or None)`` of a
    round's report or an epoch's."""
    if isinstance(value, tasks.RoundReport):
        return [value], [0.0], None
    return value
