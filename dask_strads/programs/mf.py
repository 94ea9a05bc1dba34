"""The STRADS matrix-factorization program: row-wise coordinate descent, users and items in turn.

Model of a rating: ``mu + b_i + c_j + w_i . h_j`` (or ``w_i . h_j`` without biases), fitted to
the stored entries only, with the L2 penalty ``alpha_W ||W||^2 + alpha_H ||H||^2 +
alpha_bias (||b||^2 + ||c||^2)``. The biases ride in the factors as two extra coordinates: a user
row is ``[w_i, b_i, 1]`` and an item row ``[h_j, 1, c_j]``, so their dot product is the model
(the global mean ``mu`` is subtracted from the ratings once) and one kernel updates factors and
biases alike.

Blocks: users are cut into U row blocks (ids ``0 .. U-1``, ratings by rows) and items into I
column blocks (ids ``U .. U+I-1``, ratings by columns). An iteration updates every item block
from the user factor ``W``, then every user block from the item factor ``H``, each side in
``sub_rounds`` rounds (``c``): round ``j`` of a side updates its blocks ``j, j + c, j + 2c, ...``
(with ``c`` blocks a worker in runs, one block on each worker), and the other side sits those
rounds out. A push runs coordinate descent on its rows against the other
side's rows that its ratings touch, which reach it as *messages* (see
:class:`~dask_strads.programs.Program`): each block of the other side sends the rows of its
factor that the pushing block's ratings touch, worker to worker. No block and no worker holds a
whole factor, and the pull only adds up the objective. A push recomputes its residuals from its
own factor and the other side's new rows (that costs one sweep), so no residual is kept between
rounds. A fit ends with user factors fitted to the final item factors.

Memory: a push updates its block's rows in place (``updates_in_place``), so a worker holds one
copy of its rows; what it receives in a round is the other side's rows that one block's ratings
touch, so more, smaller blocks (larger ``c``) shrink the messages towards a fraction of the
factor. What it sends costs it no copy: a message refers to the rows where they are and is
gathered only as Dask moves it to another worker (:class:`~dask_strads.kernels.row_pieces.RowsOf`;
the rows it refers to change only in a later round, after the push that reads it). Once an
iteration meets ``tol`` the engine runs no push submitted behind it, so the result is the state
the stop refers to.

Rows of one side are independent given the other side, so the result does not depend on the
blocks: the same seed gives the same factors on any number of workers, up to the order in which
the pull adds up the objective. Every coordinate update is an exact minimisation, so the
objective never increases.
"""
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..kernels.columns import index_type
from ..kernels.mf import update_rows
from ..kernels.row_pieces import RowsOf
from ..sizes import register_dataclasses
from .base import Instruction, Program, Report, StopRule

USERS, ITEMS = "users", "items"
#: Sub-rounds (see :func:`sub_rounds_for`): a block's messages are small enough once they are
#: at most this share of a worker's own rows (``model / P``) or this many bytes.
MESSAGE_SHARE = 0.15
SMALL_MESSAGES = 10 * 2**20
#: More sub-rounds must cut a block's messages by at least this factor a doubling.
WORTHWHILE_CUT = 0.75
#: An iteration is ``2 c`` rounds, each of a round's latency whatever its size.
MAX_SUB_ROUNDS = 32
#: Rows drawn from one seed for the initial user factors: the draw of a row does not depend on
#: the block that holds it.
SEED_ROWS = 4096


@dataclass(frozen=True)
class Ratings:
    """The ratings of a block, minus the global mean: a user block's rows (CSR) or an item
    block's columns (CSC); ``start`` is the first user or item of the block.

    ``indices`` count the other side's rows that the block's ratings touch, in order: the rows
    from the other side's block ``b`` are ``piece_edges[b]:piece_edges[b + 1]``. The block's own
    rows that the other side's block ``b`` touches are ``send_rows[send_ptr[b]:send_ptr[b + 1]]``.
    """

    side: str
    start: int
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    piece_edges: np.ndarray
    send_ptr: np.ndarray
    send_rows: np.ndarray


@dataclass(frozen=True)
class BlockObjective:
    """A push's partial: the loss over the block's ratings and its factor's penalty (and, where
    the program needs it, the Gramian of its rows); partials add up field by field."""

    side: str
    loss: float
    penalty: float
    gramian: object = 0.0

    def __add__(self, other):
        return BlockObjective(self.side, self.loss + other.loss, self.penalty + other.penalty,
                              self.gramian + other.gramian)


@dataclass(frozen=True)
class SharedFactor:
    """What the next pushes see: the side and sub-round the last round updated, the penalty and
    Gramian of the side whose update was completed last, the objective after the last complete
    iteration, the sum of the partials of the blocks updated so far in the current side's
    update (None at its start)."""

    side: str
    sub_round: int
    penalty: float
    iteration_objective: float
    gramian: object = 0.0
    so_far: object = None


@dataclass(frozen=True, kw_only=True)
class FactorReport(Report):
    """The side a round updated and its sub-round; the round that completes a side has the
    objective, the loss and its ``rmse``, and the one completing the users the iteration's
    relative decrease of the objective."""

    side: str
    sub_round: int | None = None
    loss: float | None = None
    rmse: float | None = None
    relative_decrease: float | None = None


@dataclass(frozen=True)
class Side:
    """How one side's rows are updated: which coordinates, with which penalties."""

    size: int
    coords: np.ndarray
    lam: np.ndarray


def make_raw_block(part, side, start):
    """A block as sent to its worker: part of X (rows for users, columns for items)."""
    return {"part": part, "side": side, "start": start}


def observed(part, axis):
    """``(indptr, indices, values)`` of the stored entries of X by rows (axis 0) or columns
    (axis 1). Every entry of a dense array is stored; a sparse one keeps its explicit zeros."""
    if sp.issparse(part):
        part = sp.csr_matrix(part, copy=True) if axis == 0 else sp.csc_matrix(part, copy=True)
        part.sum_duplicates()
        # int32 row pointers where the entries allow: half the bytes a block keeps (the
        # kernels' wrappers widen a push's pointers for the call)
        return (part.indptr.astype(index_type(part.nnz)), part.indices.astype(np.int64),
                part.data.astype(np.float64))
    part = np.asarray(part, dtype=np.float64)
    lines, length = part.shape if axis == 0 else part.shape[::-1]
    values = part.ravel(order="C" if axis == 0 else "F")
    return (np.arange(lines + 1, dtype=index_type(values.size)) * length,
            np.tile(np.arange(length, dtype=np.int64), lines), values)


def touched_rows(indptr, indices, other_edges):
    """How a block's ratings meet the other side's blocks (edges ``other_edges``):
    ``(local_indices, piece_edges, send_ptr, send_rows)`` as :class:`Ratings` holds them."""
    touched, local = np.unique(indices, return_inverse=True)
    piece_edges = np.searchsorted(touched, other_edges)
    n_rows = len(indptr) - 1
    other_block = np.searchsorted(other_edges, indices, side="right") - 1
    pairs = np.unique(other_block * n_rows + np.repeat(np.arange(n_rows), np.diff(indptr)))
    send_ptr = np.searchsorted(pairs, np.arange(len(other_edges)) * n_rows)
    # int32 (a block's rows and the rows it touches are far fewer than 2^31): 4 bytes a
    # rating less than int64, in the largest arrays a block keeps
    return (local.astype(np.int32), piece_edges, send_ptr,
            (pairs % max(n_rows, 1)).astype(np.int32))


def expected_message_bytes(n_users, n_items, n_ratings, width, n_blocks):
    """The larger of what an item block and a user block receive in a round, with ``n_blocks``
    blocks a side and ratings spread at random: the other side's rows their ratings touch (a
    row with ``r`` ratings meets a given block with probability ``1 - (1 - 1/n_blocks)^r``), for
    rows with the mean number of ratings each: uneven counts touch fewer rows."""
    def touched(n_rows):
        return n_rows * -np.expm1(n_ratings / n_rows * np.log1p(-1 / n_blocks)) if (
            n_blocks > 1) else n_rows
    return 8 * width * max(touched(n_users), touched(n_items))


def sub_rounds_for(n_users, n_items, n_ratings, width, n_workers):
    """``c``, the rounds each side's update is cut into (``c`` blocks a side a worker), a power
    of two up to ``MAX_SUB_ROUNDS`` and one row a block: the smallest whose expected block
    messages (:func:`expected_message_bytes`) are within ``MESSAGE_SHARE`` of a worker's rows
    or ``SMALL_MESSAGES``. Where none is, ``c`` is doubled from 1 as long as a doubling cuts
    them to at most ``WORTHWHILE_CUT`` of what they were (a row with many ratings touches most
    blocks however small they are: there more rounds would only move more bytes). A round's
    tasks do not depend on ``c`` (a push receives one message a worker); the bytes an iteration
    moves grow with it, up to a row per rating."""
    allowed = max(MESSAGE_SHARE * 8 * width * (n_users + n_items) / n_workers, SMALL_MESSAGES)

    def received(c):
        return expected_message_bytes(n_users, n_items, n_ratings, width, c * n_workers)

    candidates = [c for c in 2 ** np.arange(int(np.log2(MAX_SUB_ROUNDS)) + 1)
                  if c == 1 or c * n_workers <= min(n_users, n_items)]
    within = [c for c in candidates if received(c) <= allowed]
    if within:
        return int(within[0])
    c = 1
    while 2 * c in candidates and received(2 * c) <= WORTHWHILE_CUT * received(c):
        c *= 2
    return c


def fill_initial_user_factors(out, seed, start, scale):
    """Write rows ``start:start + len(out)`` of a seeded N(0, scale^2) matrix into ``out``, the
    same whatever the blocks; one chunk of draws at a time, so the block's factor is the only
    large array."""
    stop = start + len(out)
    for c in range(start // SEED_ROWS, (stop - 1) // SEED_ROWS + 1):
        first, last = max(start, c * SEED_ROWS), min(stop, (c + 1) * SEED_ROWS)
        draw = np.random.default_rng([seed, c]).standard_normal((SEED_ROWS, out.shape[1]))
        out[first - start:last - start] = scale * draw[first - c * SEED_ROWS:last - c * SEED_ROWS]


def relative_decrease(before, after):
    if not np.isfinite(before):
        return np.inf
    return (before - after) / before if before > 0 else 0.0


def penalty(factor, lam):
    return float(np.dot(np.einsum("ij,ij->j", factor, factor), lam))  # no squared copy


class UserItemBlocks(Program):
    """The block layout of the factorization programs: users in row blocks (ids ``0 .. U-1``)
    and items in column blocks (ids ``U .. U+I-1``) cut at ``user_edges`` / ``item_edges``;
    a block holds its side's :class:`Ratings` and sends the other side's blocks the rows of its
    factor their ratings touch. An iteration updates the items, then the users, each side in
    ``sub_rounds`` rounds; the pushes return :class:`BlockObjective` partials, which the pulls
    add up over a side's rounds into the objective reported when the side is complete.
    A subclass sets ``title``, ``tol`` and ``n_loss_terms`` (the terms of the loss: its
    ``rmse`` is the root of their mean)."""

    updates_in_place = True  # a block's rows are read by the sends of the round after its push
    static_schedule = True

    def __init__(self, user_edges, *, item_edges, sub_rounds=1):
        self.user_edges = np.asarray(user_edges)
        self.item_edges = np.asarray(item_edges)
        self.n_user_blocks = len(self.user_edges) - 1
        self.sub_rounds = int(sub_rounds)
        if self.n_user_blocks % self.sub_rounds or (len(self.item_edges) - 1) % self.sub_rounds:
            raise ValueError(f"sub_rounds={sub_rounds} must divide the numbers of user blocks "
                             f"({self.n_user_blocks}) and item blocks "
                             f"({len(self.item_edges) - 1})")

    @property
    def n_blocks(self):
        return self.n_user_blocks + len(self.item_edges) - 1

    def block_ids(self, side):
        return (range(self.n_user_blocks) if side == USERS
                else range(self.n_user_blocks, self.n_blocks))

    def _index_on_side(self, block_id):
        """The block's index among the blocks of its side."""
        return block_id if block_id < self.n_user_blocks else block_id - self.n_user_blocks

    @staticmethod
    def stored_entries(raw):
        """``(indptr, indices, values)`` of a raw block's entries: by rows for a user block, by
        columns for an item block."""
        return observed(raw["part"], axis=0 if raw["side"] == USERS else 1)

    def ratings(self, raw, indptr, indices, values):
        """A raw block's :class:`Ratings` from the entries it keeps."""
        other_edges = self.item_edges if raw["side"] == USERS else self.user_edges
        local, *meeting = touched_rows(indptr, indices, other_edges)
        return Ratings(raw["side"], raw["start"], indptr, local, values, *meeting)

    def message(self, block_id, data, state, to_block):
        """The rows of this block's factor that ``to_block``'s ratings touch, where they are:
        copied only when they leave this worker (see :class:`RowsOf`)."""
        b = self._index_on_side(to_block)
        return RowsOf(state, data.send_rows[data.send_ptr[b]:data.send_ptr[b + 1]])

    # -- schedule / pull ----------------------------------------------------------------------
    def initial_shared(self):
        # the initial pull completes the users' update: the round before it is the one before
        # the users' last sub-round
        c = self.sub_rounds
        return SharedFactor(*((USERS, c - 2) if c > 1 else (ITEMS, 0)), 0.0, np.inf)

    def side_of(self, round_index):
        """The side a round updates (items first), and the round's place among its side's."""
        sub_round = round_index % self.sub_rounds
        return (ITEMS if round_index % (2 * self.sub_rounds) < self.sub_rounds else USERS,
                sub_round)

    def following(self, side, sub_round):
        """The side and sub-round of the round after one of ``side`` and ``sub_round``."""
        if sub_round < self.sub_rounds - 1:
            return side, sub_round + 1
        return (USERS if side == ITEMS else ITEMS), 0

    def schedule(self, round_index, history):
        side, sub_round = self.side_of(round_index)
        other = USERS if side == ITEMS else ITEMS
        blocks = list(self.block_ids(side))[sub_round::self.sub_rounds]
        return dict.fromkeys(blocks, Instruction(reads=tuple(self.block_ids(other))))

    def check_turn(self, block_id, data, shared):
        """Refuse a push that does not follow the round before it: the rows are updated in
        place, so a push that ran before the sends of the round before it had read them would
        change what they send."""
        own_round = data.side, self._index_on_side(block_id) % self.sub_rounds
        if self.following(shared.side, shared.sub_round) != own_round:
            raise RuntimeError(f"{self.title} alternates users and items and needs the other "
                               "side's rows of the previous round: run it with staleness 0")

    def combine(self, partials):
        """The sum of the partials (a block that sat the round out sent None)."""
        added = [p for p in partials if p is not None]
        return sum(added[1:], added[0]) if added else None

    def pull(self, partials, shared):
        """Adds up a side's :class:`BlockObjective` over its sub-rounds; the round that completes
        the side reports the objective (the initial pull completes the users)."""
        side, sub_round = self.following(shared.side, shared.sub_round)
        total = self.combine([*partials.values(), shared.so_far])
        if sub_round < self.sub_rounds - 1:
            return (replace(shared, side=side, sub_round=sub_round, so_far=total),
                    FactorReport(side=side, sub_round=sub_round))
        objective = total.loss + total.penalty + shared.penalty
        iteration_objective, decrease = shared.iteration_objective, None
        if side == USERS:
            decrease = relative_decrease(iteration_objective, objective)
            iteration_objective = objective
        report = FactorReport(side=side, objective=objective, loss=total.loss,
                              rmse=float(np.sqrt(max(total.loss, 0.0) / self.n_loss_terms)),
                              relative_decrease=decrease)
        return SharedFactor(side, sub_round, total.penalty, iteration_objective,
                            total.gramian), report

    @property
    def stop_rule(self):
        return StopRule("relative_decrease", self.tol)


class MFProgram(UserItemBlocks):
    """Matrix factorization of an ``n_users x n_items`` ratings matrix (see the module).

    ``user_edges`` / ``item_edges``: block boundaries. ``mean``: the global mean, subtracted
    from the ratings (0 without biases). ``sweeps``: coordinate-descent sweeps over a row per
    round. ``tol``: stop when an iteration lowers the objective by at most this fraction.
    ``sub_rounds``: rounds per side and iteration; it must divide both sides' block counts.
    """

    name = "mf"
    title = "matrix factorization"
    kernels = ("mf",)

    def __init__(self, n_components, *, user_edges, item_edges, n_ratings, alpha_W, alpha_H,
                 alpha_bias, biases, mean, sweeps=1, tol=1e-4, init_scale=0.1, seed=0,
                 sub_rounds=1):
        super().__init__(user_edges, item_edges=item_edges, sub_rounds=sub_rounds)
        self.n_components = n_components
        self.n_loss_terms = n_ratings
        self.biases = biases
        self.mean = mean
        self.sweeps = sweeps
        self.tol = tol
        self.init_scale = init_scale
        self.seed = seed
        k = n_components
        self.width = k + 2 if biases else k
        factors = np.arange(k)
        user_lam = np.full(self.width, float(alpha_W))
        item_lam = np.full(self.width, float(alpha_H))
        if biases:
            user_lam[k:] = alpha_bias, 0.0
            item_lam[k:] = 0.0, alpha_bias
            user_coords, item_coords = np.append(factors, k), np.append(factors, k + 1)
        else:
            user_coords = item_coords = factors
        self.sides = {USERS: Side(int(self.user_edges[-1]), user_coords, user_lam),
                      ITEMS: Side(int(self.item_edges[-1]), item_coords, item_lam)}

    # -- the layout of a factor's rows ---------------------------------------------------------
    def _bias_column(self, side):
        return self.n_components + (0 if side == USERS else 1)

    def _ones_column(self, side):
        return self.n_components + (1 if side == USERS else 0)

    def blank(self, n_rows, side):
        """``n_rows`` rows of a side with zero factors and biases."""
        out = np.zeros((n_rows, self.width))
        if self.biases:
            out[:, self._ones_column(side)] = 1.0
        return out

    def rows(self, factors, bias, side):
        """A side's rows as the kernel wants them, from factors (n x k) and biases (n)."""
        out = self.blank(len(factors), side)
        out[:, :self.n_components] = factors
        if self.biases:
            out[:, self._bias_column(side)] = bias
        return out

    def split(self, rows, side):
        """``(factors, biases)`` of a side's rows (zero biases when biases are off)."""
        factors = rows[:, :self.n_components]
        bias = rows[:, self._bias_column(side)] if self.biases else np.zeros(len(rows))
        return np.ascontiguousarray(factors), np.ascontiguousarray(bias)

    def fold_in(self, indptr, indices, values, other_rows, sweeps, tol, side=USERS):
        """Rows of ``side`` (users by default) fitted to their ratings (CSR, not centred) with
        the other side's rows fixed, from zero."""
        fitted = self.sides[side]
        factor = self.blank(len(indptr) - 1, side)
        update_rows(indptr, indices, values - self.mean, factor, other_rows, fitted.coords,
                    fitted.lam, sweeps, tol)
        return factor

    # -- blocks -------------------------------------------------------------------------------
    def prepare_block(self, raw, block_id):
        indptr, indices, values = self.stored_entries(raw)
        return self.ratings(raw, indptr, indices, values - self.mean)

    def init_block(self, data, block_id):
        rows = len(data.indptr) - 1
        if data.side == ITEMS:
            return self.blank(rows, ITEMS), None
        factor = self.blank(rows, USERS)
        fill_initial_user_factors(factor[:, :self.n_components], self.seed, data.start,
                                  self.init_scale)
        # with the item factor at zero, the residuals are the ratings themselves
        loss = float(np.dot(data.values, data.values))
        return factor, BlockObjective(USERS, loss, penalty(factor, self.sides[USERS].lam))

    # -- push -------------------------------------------------------------------------------
    def push(self, block_id, data, state, instruction, shared, inbox):
        self.check_turn(block_id, data, shared)
        side = self.sides[data.side]
        rows = tuple(inbox.messages[b] for b in instruction.reads)
        loss = update_rows(data.indptr, data.indices, data.values, state, rows,
                           side.coords, side.lam, self.sweeps, 0.0)
        return state, BlockObjective(data.side, loss, penalty(state, side.lam))

    def collect(self, data, state, shared):
        """The block's factor rows, then their biases (zero without biases): k + 1 columns."""
        factors, bias = self.split(state, data.side)
        return np.column_stack([factors, bias])


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
