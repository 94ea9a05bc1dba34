"""Bayesian personalised ranking (Rendle et al. 2009) as a STRADS program: stochastic gradient
steps on sampled (user, liked item, other item) triples, model-parallel by rotation.

The users are cut into P blocks (the program's blocks, each with its users' interactions) and
the items, shuffled (seeded), into P blocks (carried blocks: their factor rows, with a bias
column). A step compares two items of one block: with blocks of contiguous item ids, popular and
rare items would rarely meet and the ranking suffers (precision@10 on MovieLens 0.154 against
0.172 for one block); shuffled, each block is a sample of all items (0.171). In round ``t``
user block ``b`` takes item block ``(b + t) mod P``: the P pushes of a round touch disjoint
users and disjoint items, so they run at once without conflicting writes, and every P rounds
(an iteration) each user block has met every item block. A push takes as many steps as its
users have interactions with the block's items, each on a triple of those items
(:mod:`dask_strads.kernels.bpr`), seeded by round and block: the fit is the same on any
executor, and equal to the sequential loop's.

A user row is ``[w, 1]`` and an item row ``[h, b]``: their product ``w . h + b`` is the score.
"""
from dataclasses import dataclass

import numpy as np

from ..kernels.bpr import sgd_steps
from ..partition import block_edges
from ..sizes import register_dataclasses
from .base import Instruction, Program, Report, round_seed


@dataclass(frozen=True, kw_only=True)
class Pass(Instruction):
    """A user block's steps on the item block it takes, from ``seed``."""

    seed: int


@dataclass(frozen=True, kw_only=True)
class RankingReport(Report):
    """``objective``: the mean of ``-ln sigmoid(w_u . (h_i - h_j))`` over the round's sampled
    triples, before their steps; ``accuracy``: the share of them already ranked right."""

    accuracy: float | None = None


@dataclass
class UserBlock:
    """A user block's interactions, cut by item block: ``indptr[c]``, ``indices[c]`` the CSR
    layout (item indices local to block ``c``) of its users' interactions with block ``c``."""

    indptr: list
    indices: list


class BPRProgram(Program):
    """``n_components`` factors a row (float32, as the ``implicit`` library's); the items, of
    ``item_counts`` interactions each, shuffled into ``n_blocks`` blocks of about equal
    interactions (the user blocks come cut as the program's blocks)."""

    name = "bpr"
    kernels = ("bpr",)
    static_schedule = True
    updates_in_place = True  # rows change in place, one reader each round

    def __init__(self, n_components, *, item_counts, n_blocks, learning_rate, regularization,
                 seed=0, init_scale=0.01):
        self.n_components = n_components
        #: block position -> item: items[item_order] are the blocks' rows, one after another
        self.item_order = np.random.default_rng([seed, 2]).permutation(len(item_counts))
        self.item_edges = block_edges(len(item_counts), n_blocks,
                                      np.asarray(item_counts)[self.item_order])
        self.n_carried = len(self.item_edges) - 1
        self.learning_rate = learning_rate
        self.regularization = regularization
        self.seed = seed
        self.init_scale = init_scale

    def prepare_block(self, raw, block_id):
        """``raw``: the block's users' interactions with every item (CSR)."""
        raw = raw.tocsc()[:, self.item_order]
        pieces = [raw[:, lo:hi].tocsr() for lo, hi in zip(self.item_edges[:-1],
                                                           self.item_edges[1:])]
        for piece in pieces:
            piece.sort_indices()
        return UserBlock([p.indptr.astype(np.int64) for p in pieces],
                         [p.indices.astype(np.int64) for p in pieces])

    def initial_shared(self):
        return None

    def init_block(self, data, block_id):
        rows = len(data.indptr[0]) - 1
        rng = np.random.default_rng([self.seed, 0, block_id])
        users = np.ones((rows, self.n_components + 1), dtype=np.float32)
        users[:, :self.n_components] = rng.normal(0.0, self.init_scale,
                                                  (rows, self.n_components))
        return users, None

    def init_carried(self, carried_id):
        rows = int(self.item_edges[carried_id + 1] - self.item_edges[carried_id])
        rng = np.random.default_rng([self.seed, 1, carried_id])
        items = np.zeros((rows, self.n_components + 1), dtype=np.float32)
        items[:, :self.n_components] = rng.normal(0.0, self.init_scale,
                                                  (rows, self.n_components))
        return items

    def schedule(self, round_index, history):
        return {b: Pass(carried=(b + round_index) % self.n_carried,
                        seed=round_seed(self.seed, round_index, b))
                for b in range(self.n_carried)}

    def push(self, block_id, data, state, instruction, shared, inbox):
        c, items = instruction.carried, inbox.carried
        indptr, indices = data.indptr[c], data.indices[c]
        sums = sgd_steps(indptr, indices, state, items, indptr[-1], instruction.seed,
                         self.learning_rate, self.regularization, fixed_user_columns=1)
        return state, sums, items

    def combine(self, partials):
        sums = [p for p in partials if p is not None]  # none from init_block
        return np.sum(sums, axis=0) if sums else None

    def pull(self, partials, shared):
        total = self.combine(list(partials.values()))
        loss, correct, taken = (0.0, 0, 0) if total is None else total
        if not taken:
            return shared, RankingReport()
        return shared, RankingReport(objective=float(loss / taken),
                                     accuracy=float(correct / taken))

    def collect(self, data, state, shared):
        return state

    def collect_carried(self, carried, carried_id):
        return carried

    def in_item_order(self, rows):
        """The carried blocks' rows, one after another (numpy or Dask), in the items' order."""
        return rows[np.argsort(self.item_order)]


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
