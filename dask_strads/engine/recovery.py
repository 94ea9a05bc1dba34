"""Checkpoints in the cluster's memory, and going on after a lost worker.

Every ``interval`` rounds the round's graph also copies each block's state, each carried block
and the shared values the next rounds read, and places a second copy of each on another worker.
When a worker holding blocks is lost, the engine starts the fit again on the workers left from
the newest checkpoint of which a copy of everything survived (or from the start), placing the
data blocks again from the client's copy (in-memory input) or their collection (Dask input), and
replays the rounds since: with the same per-round seeds and schedule, the replay computes what
the lost rounds computed.
"""
from dataclasses import dataclass, field

from . import tasks
from ..log import logger

#: Checkpoints kept: the newest may be incomplete when a worker dies.
KEPT = 2


@dataclass
class Checkpoint:
    """Handles of the copies taken after round ``round``: per block, per carried block and per
    shared round, a pair (copy on its worker, replica on another)."""

    round: int
    states: list
    carried: list
    pulled: dict = field(default_factory=dict)

    def pairs(self):
        return [*self.states, *self.carried, *self.pulled.values()]

    def resolved(self, handles):
        """The same checkpoint with the graph's references replaced by their handles."""
        def pair(refs):
            return tuple(handles[ref.key] for ref in refs)

        return Checkpoint(self.round, [pair(p) for p in self.states],
                          [pair(p) for p in self.carried],
                          {r: pair(p) for r, p in self.pulled.items()})


def checkpoint_items(run, t, pushes, hand_offs, pull, staleness):
    """What a checkpoint of round ``t`` holds, each as ``(kind, index, worker, read, args)``
    (``read(*args)`` gives it on ``worker``): every block's state, every carried block, and the
    shared values the next rounds read, in that order."""
    return ([("block", b, w, tasks.state_at, (run.cells[b], pushes.get(b, run.pushed[b]), t))
             for b, w in enumerate(run.owners)]
            + [("carried", c, run.home[c], tasks.carried_as_is,
                (hand_offs.get(c, run.carried[c]), c)) for c in range(len(run.carried))]
            + [("shared", r, run.hub, tasks.itself, (pull if r == t else run.pulled[r],))
               for r in range(max(-1, t - staleness), t + 1)])


def add_checkpoint(graph, run, t, items, workers):
    """Add the copies of round ``t``'s ``items`` (see :func:`checkpoint_items`) and their
    replicas to its :class:`~.graph.RoundGraph`; returns the :class:`Checkpoint` (of
    references into the graph). The next push of a block, or of a carried block, must follow
    its copy: in-place programs change them afterwards. A replica goes to another of
    ``workers``: those holding blocks of the fit (whose loss the fit watches for), or, when one
    worker holds them all (a fit of one block), the cluster's."""
    pairs = []
    for kind, index, worker, read, args in items:
        first = graph.add(worker, run.key("checkpoint", kind, index, t, run.id), tasks.snapshot,
                          read, *args)
        # The replica reads the copy through a key of its own: Dask's memory manager keeps one
        # of a key's copies and may keep the one moved to the replica's worker, leaving both
        # halves of the pair on one worker. The moved key is released once the replica is made.
        sent = graph.add(worker, run.key("checkpoint-sent", kind, index, t, run.id),
                         tasks.itself, first)
        pairs.append((first, graph.add(replica_worker(worker, workers),
                                       run.key("replica", kind, index, t, run.id), tasks.itself,
                                       sent)))
    n_blocks, n_carried = len(run.owners), len(run.carried)
    shared = [index for kind, index, *_ in items if kind == "shared"]
    return Checkpoint(t, pairs[:n_blocks], pairs[n_blocks:n_blocks + n_carried],
                      dict(zip(shared, pairs[n_blocks + n_carried:])))


def replica_worker(worker, workers):
    """The worker after ``worker`` in the sorted ``workers``, cyclically; ``worker`` itself only
    when it is the cluster's only one."""
    others = sorted(set(workers) - {worker})
    return next((w for w in others if w > worker), others[0]) if others else worker


def usable(executor, checkpoint, alive):
    """Per copied item, a handle of a finished copy on a live worker; None if any is missing."""
    pairs = checkpoint.pairs()
    finished = [h for pair in pairs for h in pair if h.status == "finished"]
    where = executor.client.who_has(finished) if finished else {}
    chosen = []
    for pair in pairs:
        live = [h for h in pair if set(where.get(h.key, ())) & alive]
        if not live:
            logger.info("the checkpoint of round %d is lost: no live copy of %s", checkpoint.round,
                        ", ".join(f"{h.key} ({h.status}, on {where.get(h.key, [])})" for h in pair))
            return None
        chosen.append(live[0])
    return chosen
