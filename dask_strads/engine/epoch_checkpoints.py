"""Checkpoints a fused epoch takes inside its rounds, on the workers' boards.

A checkpoint in a graph (see :mod:`.recovery`) is a task per copy, so an epoch would have to end
at every checkpoint: with checkpoints every 10 rounds, the scheduler would pay a graph every 10
rounds whatever the epoch's length allows. Inside an epoch, at a checkpoint round, each worker's
task instead copies its blocks' states into its board right after the round's pushes, fetches
the copies of the worker before it (in the sorted workers, cyclically: the worker whose
replicas :func:`.recovery.replica_worker` puts on it) over the message plane, and keeps a copy of
the round's pull once it has it. Every worker holds the pull, so a checkpoint of round ``t``
survives the loss of any one worker; it is whole once round ``t + 1``'s pull has run, which
needs every worker's partials of that round, posted after its copies were made. A board keeps
its two newest checkpoints.

Nothing of this reaches the scheduler until a worker is lost: the engine then asks the boards
of the workers left which checkpoints they hold, and turns the newest whole one into Dask values
on the workers holding it (:func:`adopted`), a :class:`.recovery.Checkpoint` as a graph's are.
This needs another worker to hold the replicas, no carried blocks (they move between workers
within the epoch) and no ``checkpoint_dir`` (its writes are tasks): otherwise epochs still end at
checkpoints.
"""
import copy

from ..log import logger
from . import boards, plane, tasks
from .compat import current_worker
from .graph import RoundGraph
from .recovery import KEPT, Checkpoint, replica_worker

#: What a board holds of a checkpoint, under ``(kind, round)``: its blocks' state copies, the
#: replicas of another worker's, and the round's pull.
OWN, REPLICAS, PULL = "checkpoint", "replicas", "checkpoint-pull"


def ward(address, owners):
    """The worker whose replicas the worker at ``address`` keeps."""
    workers = sorted(set(owners))
    return next(w for w in workers if replica_worker(w, workers) == address)


def copy_blocks(board, plan, t, cells, address):
    """Round ``t``'s copies of this worker's blocks (``cells``: block -> cell) on its board, and
    the replicas of its ward's, once the ward has posted them."""
    board.post((OWN, t), {b: tasks.snapshot(tasks.state_at, cell, None, t)
                          for b, cell in cells.items()})
    keeps_for = ward(address, plan.owners)
    board.post((REPLICAS, t), plane.posted([keeps_for], plan.run_id, (OWN, t), None,
                                           plan.timeout)[keeps_for])


def copy_pull(board, t, pulled):
    """Round ``t``'s pull beside its copies, and the board's older checkpoints dropped."""
    board.post((PULL, t), copy.deepcopy(pulled))
    rounds = sorted(key[1] for key in _keys(board.values) if key[0] == PULL)
    for key in _keys(board.values):
        if key[1] in rounds[:-KEPT]:
            board.values.pop(key, None)


def _keys(posts):
    """The keys of a board's posts that hold checkpoints."""
    return [key for key in list(posts) if key[0] in (OWN, REPLICAS, PULL)]


def held(run_id, dask_worker):
    """``{round: the blocks it holds copies of}`` of the checkpoints whose pull this worker's
    board of run ``run_id`` holds (and so its copies and replicas: they come first); run by
    ``Client.run``."""
    board = boards.find(dask_worker.address, run_id)
    if board is None:
        return {}
    values = dict(board.values)
    return {key[1]: [*values[(OWN, key[1])], *values[(REPLICAS, key[1])]]
            for key in _keys(values) if key[0] == PULL}


def taken(run_id, t, block=None):
    """A copy of round ``t``'s checkpoint on this worker's board: block ``block``'s state, or
    the round's pull (``block`` None)."""
    values = boards.find(current_worker().address, run_id).values
    if block is None:
        return values[(PULL, t)]
    own = values.get((OWN, t), {})
    return own[block] if block in own else values[(REPLICAS, t)][block]


def adopted(executor, run, alive, newer_than, last_round):
    """The newest whole checkpoint of ``run``'s epochs after round ``newer_than`` and at most
    ``last_round`` on the ``alive`` workers' boards, as a :class:`.recovery.Checkpoint` of
    Dask values on the workers holding them (of one copy each); None if there is none."""
    workers = sorted(alive & set(run.owners))
    try:
        found = executor.run_on(workers, held, run.id)
    except Exception as error:  # the cluster changed again: the checkpoints in graphs
        logger.info("the workers' boards could not be read: %s", error)
        return None
    holders: dict[int, dict] = {}  # round -> {block or None (the pull): a worker holding it}
    for worker, rounds in found.items():
        if isinstance(rounds, dict):  # not an error
            for t, blocks in rounds.items():
                for item in [*blocks, None]:
                    holders.setdefault(t, {}).setdefault(item, worker)
    whole = [t for t, items in holders.items() if newer_than < t <= last_round
             and len(items) == len(run.owners) + 1]
    if not whole:
        return None
    t = max(whole)
    graph = RoundGraph()
    refs = {item: graph.add(worker, run.key("adopted", "pull" if item is None else item, t,
                                            run.id), taken, run.id, t, item)
            for item, worker in holders[t].items()}
    handles = executor.submit(graph.layers)
    copies = [handles[refs[b].key] for b in range(len(run.owners))]
    pull = handles[refs[None].key]
    try:
        executor.wait([*copies, pull], workers)
    except Exception as error:  # a holder lost meanwhile: an older checkpoint, or the start
        logger.info("the checkpoint of round %d on the workers' boards is lost: %s", t, error)
        executor.release([*copies, pull])
        return None
    return Checkpoint(t, [(c,) for c in copies], [], {t: (pull,)})
