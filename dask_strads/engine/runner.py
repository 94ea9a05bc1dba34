"""The model-agnostic engine: turns each round of a program into Dask tasks pinned to workers."""
import uuid
from collections import deque
from dataclasses import dataclass
from time import perf_counter

from ..programs.base import carried_id, check_carried_assignment
from .blocks import PinnedBlock, scatter_one
from .cluster import resolve_client
from .history import History


def _prepare(program, raw, block_id):
    return program.prepare_block(raw, block_id)


# A push's value is (state, carried block or None, partial, seconds).

def _init(program, data, block_id):
    start = perf_counter()
    state, partial = program.init_block(data, block_id)
    return state, None, partial, perf_counter() - start


def _push(program, data, previous, instruction, pulled, *carried):
    start = perf_counter()
    if carried:
        state, partial, moved = program.push(data, previous[0], instruction, pulled[0],
                                             carried=carried[0])
    else:
        (state, partial), moved = program.push(data, previous[0], instruction, pulled[0]), None
    return state, moved, partial, perf_counter() - start


def _partial(pushed):
    """``(partial, seconds)`` of a push: all the pull needs, without the block's state."""
    return pushed[2:]


def _carried(pushed):
    return pushed[1]


def _state(pushed):
    """A push's value without its carried block, so that the block can leave the worker."""
    return pushed[:1]


def _received(carried):
    """A carried block, copied to this worker: its last worker may now let go of it."""
    return carried


def _init_carried(program, carried_id):
    return program.init_carried(carried_id)


def _pull(program, pushed, previous):
    """Pushed values are whole pushes (blocks on the hub) or ``(partial, seconds)``."""
    start = perf_counter()
    shared, report = program.pull({b: p[-2] for b, p in pushed.items()}, previous[0])
    report = dict(report)
    slowest_push = max((p[-1] for p in pushed.values()), default=0.0)
    report["compute_seconds"] = slowest_push + perf_counter() - start
    return shared, report


def _report(pulled):
    return pulled[1]


def _result(program, data, pushed, pulled):
    return program.block_result(data, pushed[0], pulled[0])


@dataclass
class EngineResult:
    """Parameter blocks (futures on the blocks' workers), the pinned data, the history, and the
    carried blocks (futures, wherever they were last updated)."""

    params: list
    data: list
    history: History
    carried: list


class Engine:
    """Runs a :class:`~dask_strads.programs.Program` on a Dask cluster.

    Data blocks are pinned: every task that touches block ``b`` is restricted to ``b``'s worker,
    and the block's state is a chain of futures on that worker. Per round the client submits one
    push task per scheduled block and one pull task; it may run ``pipeline_depth`` rounds ahead
    of the newest report it has read, so that round latencies overlap.

    Parameters
    ----------
    program : Program
    client : distributed.Client, optional
        Defaults to the active client, else the embedded local cluster.
    staleness : int
        ``s``: the push of round ``t`` sees the pull of round ``t - 1 - s``. 0 is bulk-synchronous.
    max_rounds : int
    pipeline_depth : int
        Rounds submitted beyond the newest report read by the client.
    progress : bool
        Show a tqdm progress bar.
    callback : callable, optional
        Called with each round's record; returning True stops the fit.
    """

    def __init__(self, program, client=None, staleness=0, max_rounds=100, pipeline_depth=2,
                 progress=False, callback=None):
        if staleness < 0 or int(staleness) != staleness:
            raise ValueError(f"staleness must be a non-negative integer, got {staleness!r}")
        if max_rounds < 1 or int(max_rounds) != max_rounds:
            raise ValueError(f"max_rounds must be a positive integer, got {max_rounds!r}")
        if pipeline_depth < 1 or int(pipeline_depth) != pipeline_depth:
            raise ValueError(f"pipeline_depth must be a positive integer, got {pipeline_depth!r}")
        self.program = program
        self.client = resolve_client(client)
        self.staleness = int(staleness)
        self.max_rounds = int(max_rounds)
        self.pipeline_depth = int(pipeline_depth)
        self.progress = progress
        self.callback = callback

    def _submit(self, function, *args, worker, name):
        return self.client.submit(
            function, self.program, *args, workers=[worker], allow_other_workers=False,
            pure=False, key=f"strads-{name}-{self._run_id}",
        )

    def _for_pull(self, pushed, owners, hub):
        """What the pull reads of each push: blocks away from the hub send only their partial,
        so that block states never leave their workers."""
        return {b: future if owners[b] == hub else self._submit_plain(_partial, future, worker=owners[b])
                for b, future in pushed.items()}

    def _submit_plain(self, function, *args, worker):
        return self.client.submit(function, *args, workers=[worker], allow_other_workers=False,
                                  pure=False)

    def run(self, blocks):
        """Fit from pinned data blocks (see :mod:`dask_strads.engine.blocks`)."""
        if not blocks or not all(isinstance(b, PinnedBlock) for b in blocks):
            raise TypeError("blocks must be a non-empty list of PinnedBlock")
        self._run_id = uuid.uuid4().hex[:8]
        owners = [b.worker for b in blocks]
        hub = owners[0]
        program, lag = self.program, self.program.report_lag
        in_place = program.updates_in_place
        history = History()
        start = perf_counter()

        data = [self._submit(_prepare, blk.future, b, worker=w, name=f"prepare-{b}")
                for b, (blk, w) in enumerate(zip(blocks, owners))]
        pushed = [self._submit(_init, d, b, worker=w, name=f"init-{b}")
                  for b, (d, w) in enumerate(zip(data, owners))]
        seed = scatter_one(self.client, (program.initial_shared(), None), hub)
        pulled = {-1: self._submit(_pull, self._for_pull(dict(enumerate(pushed)), owners, hub),
                                   seed, worker=hub, name="pull-init")}
        states = {-1: list(pushed)}
        home = [owners[c % len(owners)] for c in range(program.n_carried)]
        carried = {-1: [self._submit(_init_carried, c, worker=w, name=f"carried-init-{c}")
                        for c, w in enumerate(home)]}
        pending = deque()
        final_round = None
        bar = _progress_bar(self.max_rounds) if self.progress else None

        def read_oldest(may_stop=True):
            round_index, future = pending.popleft()
            report = future.result()
            record = {"round": round_index, "time": perf_counter() - start, **report}
            history.append(record)
            if bar is not None:
                bar.update(1)
                bar.set_postfix({k: v for k, v in report.items() if k in ("objective", "gap")})
            if not may_stop:
                return None
            stop = program.converged(report)
            if stop:
                history.stats.converged = True  # the program's test, not a callback's stop
            if self.callback is not None and self.callback(record):
                stop = True
            return round_index if stop else None

        try:
            for t in range(self.max_rounds):
                instructions = program.schedule(t, history.records)
                check_carried_assignment(instructions)
                source = pulled[max(-1, t - 1 - self.staleness)]
                current = list(states[t - 1])
                moving = list(carried[t - 1])
                round_pushes = {}
                for b, instruction in instructions.items():
                    c = carried_id(instruction)
                    if c is None:
                        current[b] = round_pushes[b] = self._submit(
                            _push, data[b], current[b], instruction, source,
                            worker=owners[b], name=f"push-{b}-{t}")
                        continue
                    if home[c] != owners[b]:
                        moving[c] = self._submit_plain(_received, moving[c], worker=owners[b])
                    round_pushes[b] = self._submit(
                        _push, data[b], current[b], instruction, source, moving[c],
                        worker=owners[b], name=f"push-{b}-{t}")
                    current[b] = self._submit_plain(_state, round_pushes[b], worker=owners[b])
                    moving[c] = self._submit_plain(_carried, round_pushes[b], worker=owners[b])
                    home[c] = owners[b]
                carried[t] = moving
                pulled[t] = self._submit(_pull, self._for_pull(round_pushes, owners, hub),
                                         pulled[t - 1], worker=hub, name=f"pull-{t}")
                states[t] = current
                pending.append((t, self._submit_plain(_report, pulled[t], worker=hub)))
                while final_round is None and pending and (
                        len(pending) > self.pipeline_depth or pending[0][1].done()):
                    final_round = read_oldest()
                if final_round is not None:
                    break
                # the oldest round the result may still come from: a stop can only come from a
                # report not read yet, of round t - pipeline_depth + 1 or later
                kept_from = t if in_place else t - self.pipeline_depth + 1 - lag
                _forget_before((states, carried), kept_from)
                _forget_before((pulled,), min(kept_from, t - self.staleness))
            while final_round is None and pending:
                final_round = read_oldest()
            while in_place and pending:  # rounds that ran after the stop
                read_oldest(may_stop=False)
        finally:
            if bar is not None:
                bar.close()
        if in_place:  # only the newest values exist
            last, lag = len(history.records) - 1, 0
        else:
            last = final_round if final_round is not None else len(history.records) - 1
        history.stats.rounds = last + 1
        kept = max(-1, last - lag)
        params = [self._submit(_result, data[b], states[kept][b], pulled[kept], worker=owners[b],
                               name=f"result-{b}")
                  for b in range(len(blocks))]
        history.stats.wall_seconds = perf_counter() - start
        return EngineResult(params=params,
                            data=[PinnedBlock(d, w) for d, w in zip(data, owners)],
                            history=history, carried=carried[kept])


def _forget_before(tables, round_index):
    for table in tables:
        for t in [t for t in table if -1 <= t < round_index]:
            del table[t]


def _progress_bar(total):
    try:
        from tqdm.auto import tqdm
    except ImportError as error:
        raise ImportError("progress=True needs tqdm: pip install tqdm") from error
    return tqdm(total=total, unit="round")
