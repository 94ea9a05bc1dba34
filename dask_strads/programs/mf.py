"""The STRADS matrix-factorization program: row-wise coordinate descent, users and items in turn.

Model of a rating: ``mu + b_i + c_j + w_i . h_j`` (or ``w_i . h_j`` without biases), fitted to
the stored entries only, with the L2 penalty ``alpha_W ||W||^2 + alpha_H ||H||^2 +
alpha_bias (||b||^2 + ||c||^2)``. The biases ride in the factors as two extra coordinates: a user
row is ``[w_i, b_i, 1]`` and an item row ``[h_j, 1, c_j]``, so their dot product is the model
(the global mean ``mu`` is subtracted from the ratings once) and one kernel updates factors and
biases alike.

Blocks: users are cut into U row blocks (ids ``0 .. U-1``, ratings by rows) and items into I
column blocks (ids ``U .. U+I-1``, ratings by columns). Round ``2t`` updates every item block
from the user factor ``W``, round ``2t + 1`` every user block from the item factor ``H``; the
other side sits the round out. A push runs coordinate descent on its rows against the other
side's rows that its ratings touch, which reach it as *messages* (see
:class:`~dask_strads.programs.Program`): each block of the other side sends the rows of its
factor that the pushing block's ratings touch, worker to worker. No block and no worker holds a
whole factor, and the pull only adds up the objective. A push recomputes its residuals from its
own factor and the other side's new rows (that costs one sweep), so no residual is kept between
rounds. An iteration is an item round then a user round: a fit ends with user factors fitted to
the final item factors.

Rows of one side are independent given the other side, so the result does not depend on the
blocks: the same seed gives the same factors on any number of workers, up to the order in which
the pull adds up the objective. Every coordinate update is an exact minimisation, so the
objective never increases.
"""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..kernels.mf import update_rows
from .base import Program

USERS, ITEMS = "users", "items"
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
    """A push's partial: the squared error over the block's ratings and its factor's penalty."""

    side: str
    loss: float
    penalty: float


@dataclass(frozen=True)
class SharedFactor:
    """The side the last round updated, its factor's penalty, and the objective after the last
    complete iteration."""

    side: str
    penalty: float
    iteration_objective: float


@dataclass(frozen=True)
class Update:
    """A push's instruction: update the block's rows from the messages of the blocks ``reads``
    (the other side's)."""

    reads: tuple


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
        return (part.indptr.astype(np.int64), part.indices.astype(np.int64),
                part.data.astype(np.float64))
    part = np.asarray(part, dtype=np.float64)
    lines, length = part.shape if axis == 0 else part.shape[::-1]
    values = part.ravel(order="C" if axis == 0 else "F")
    return (np.arange(lines + 1, dtype=np.int64) * length,
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
    return local.astype(np.int64), piece_edges, send_ptr, pairs % max(n_rows, 1)


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


class MFProgram(Program):
    """Matrix factorization of an ``n_users x n_items`` ratings matrix (see the module).

    ``user_edges`` / ``item_edges``: block boundaries. ``mean``: the global mean, subtracted
    from the ratings (0 without biases). ``sweeps``: coordinate-descent sweeps over a row per
    round. ``tol``: stop when an iteration lowers the objective by at most this fraction.
    """

    name = "mf"
    kernels = ("mf",)

    def __init__(self, n_components, user_edges, item_edges, n_ratings, alpha_W, alpha_H,
                 alpha_bias, biases, mean, sweeps=1, tol=1e-4, init_scale=0.1, seed=0):
        self.n_components = n_components
        self.user_edges = np.asarray(user_edges)
        self.item_edges = np.asarray(item_edges)
        self.n_user_blocks = len(self.user_edges) - 1
        self.n_ratings = n_ratings
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

    @property
    def n_blocks(self):
        return self.n_user_blocks + len(self.item_edges) - 1

    def block_ids(self, side):
        return (range(self.n_user_blocks) if side == USERS
                else range(self.n_user_blocks, self.n_blocks))

    def _index_on_side(self, block_id):
        """The block's index among the blocks of its side."""
        return block_id if block_id < self.n_user_blocks else block_id - self.n_user_blocks

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

    def fold_in(self, indptr, indices, values, item_rows, sweeps, tol):
        """User rows fitted to ratings (CSR, not centred) with the item rows fixed, from zero."""
        users = self.sides[USERS]
        factor = self.blank(len(indptr) - 1, USERS)
        update_rows(indptr, indices, values - self.mean, factor, item_rows, users.coords,
                    users.lam, sweeps, tol)
        return factor

    # -- blocks -------------------------------------------------------------------------------
    def prepare_block(self, raw, block_id):
        side = raw["side"]
        indptr, indices, values = observed(raw["part"], axis=0 if side == USERS else 1)
        other_edges = self.item_edges if side == USERS else self.user_edges
        local, *meeting = touched_rows(indptr, indices, other_edges)
        return Ratings(side, raw["start"], indptr, local, values - self.mean, *meeting)

    def initial_shared(self):
        # items start at zero (their ones column meets zero user biases), so they add nothing
        return SharedFactor(ITEMS, 0.0, np.inf)

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

    # -- schedule / push / pull ---------------------------------------------------------------
    def schedule(self, round_index, history):
        side, other = (ITEMS, USERS) if round_index % 2 == 0 else (USERS, ITEMS)
        return dict.fromkeys(self.block_ids(side), Update(tuple(self.block_ids(other))))

    def message(self, block_id, data, state, to_block):
        """The rows of this block's factor that ``to_block``'s ratings touch."""
        b = self._index_on_side(to_block)
        return state[data.send_rows[data.send_ptr[b]:data.send_ptr[b + 1]]]

    def push(self, block_id, data, state, instruction, shared, messages):
        if shared.side == data.side:
            raise RuntimeError("matrix factorization alternates users and items and needs the "
                               "other side's factor of the previous round: run it with "
                               "staleness 0")
        side = self.sides[data.side]
        factor = state.copy()
        rows = tuple(messages[b] for b in instruction.reads)
        loss = update_rows(data.indptr, data.indices, data.values, factor, rows,
                           side.coords, side.lam, self.sweeps, 0.0)
        return factor, BlockObjective(data.side, loss, penalty(factor, side.lam))

    def pull(self, partials, shared):
        blocks = [p for p in partials.values() if p is not None]
        side = blocks[0].side
        loss = sum(block.loss for block in blocks)
        side_penalty = sum(block.penalty for block in blocks)
        objective = loss + side_penalty + shared.penalty
        report = {"side": side, "objective": objective, "loss": loss,
                  "rmse": float(np.sqrt(loss / self.n_ratings))}
        iteration_objective = shared.iteration_objective
        if side == USERS:
            report["relative_decrease"] = relative_decrease(iteration_objective, objective)
            iteration_objective = objective
        return SharedFactor(side, side_penalty, iteration_objective), report

    def converged(self, report):
        return report.get("relative_decrease", np.inf) <= self.tol

    def collect(self, data, state, shared):
        """The block's factor rows, then their biases (zero without biases): k + 1 columns."""
        factors, bias = self.split(state, data.side)
        return np.column_stack([factors, bias])
