"""The STRADS program of implicit-feedback matrix factorization: alternating least squares with
the Gramian trick, users and items in turn.

Model (Hu, Koren & Volinsky 2008): interactions ``r_ui >= 0`` give a preference ``p_ui = 1``
where ``r_ui > 0`` (else 0) and a confidence ``c_ui = 1 + alpha r_ui``; the objective, over
*all* user-item pairs, is ``sum c_ui (p_ui - x_u . y_i)^2 + reg (||X||^2 + ||Y||^2)``.

Blocks and rounds are those of :mod:`dask_strads.programs.mf` (whose block layout, messages
and initial user factors this program shares): users in U row blocks, items in I column
blocks; round ``2t`` solves every item row from the user factor, round ``2t + 1`` every user row
from the item factor. A push receives, as messages, only the other side's rows its interactions
touch, and through ``shared`` the other side's Gramian ``Y^T Y`` (k x k): each push returns the
Gramian of its new rows and the pull adds them up, so the Gramian of a side is computed once per
round, as a sum of per-block Gramians. The dense user x item matrix is never formed (see
:mod:`dask_strads.kernels.implicit_mf`).

Each row's problem given the other side is solved exactly (``cg_steps=0``) or by a few
conjugate-gradient steps from its current value; either way no push raises the objective, and
rows of one side are independent, so the result does not depend on the blocks.

A push solves its rows in place (one copy of a block's rows on its worker). A stop on ``tol``
is exact as in :mod:`dask_strads.programs.mf`: the pull that meets it marks the shared value
stopped, and the pushes submitted behind it leave their rows as they are.
"""
from dataclasses import dataclass, replace

import numpy as np

from ..kernels.implicit_mf import solve_rows
from .mf import (ITEMS, USERS, Update, UserItemBlocks, fill_initial_user_factors,
                 relative_decrease)


@dataclass(frozen=True)
class BlockReport:
    """A push's partial: its side, the Gramian of its rows, its loss and penalty."""

    side: str
    gramian: np.ndarray
    loss: float
    penalty: float


@dataclass(frozen=True)
class SharedGramian:
    """The side the last round solved, the Gramian and penalty of its factor, and the objective
    after the last complete iteration."""

    side: str
    gramian: np.ndarray
    penalty: float
    iteration_objective: float
    stopped: bool = False


def positive_entries(indptr, indices, values):
    """The entries of a CSR (or CSC) layout whose value is positive: the interactions."""
    keep = values > 0
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    return kept_before[indptr].astype(np.int64), indices[keep], values[keep]


class ImplicitMFProgram(UserItemBlocks):
    """Implicit-feedback factorization of an ``n_users x n_items`` interaction matrix (see the
    module). ``user_edges`` / ``item_edges``: block boundaries; ``n_pairs``: users x items (the
    loss is reported per pair as ``rmse``)."""

    name = "implicit_mf"
    kernels = ("implicit_mf",)
    updates_in_place = True  # a block's rows are read by the sends of the round after its push

    def __init__(self, n_components, user_edges, item_edges, alpha, regularization,
                 cg_steps=3, tol=1e-4, init_scale=0.01, seed=0):
        super().__init__(user_edges, item_edges)
        self.n_components = n_components
        self.alpha = float(alpha)
        self.regularization = float(regularization)
        self.cg_steps = cg_steps
        self.tol = tol
        self.init_scale = init_scale
        self.seed = seed
        self.n_pairs = int(self.user_edges[-1]) * int(self.item_edges[-1])

    def solve(self, indptr, indices, interactions, factor, other_rows, gramian, cg_steps):
        """Solve the rows of ``factor`` in place for interactions (CSR, not weighted) against
        ``other_rows`` (an array or pieces) whose Gramian is ``gramian``; returns the
        interactions' part of their loss."""
        return solve_rows(indptr, indices, self.alpha * interactions, factor, other_rows,
                          gramian, self.regularization, cg_steps)

    def _report(self, side, factor, interactions_loss, other_gramian):
        gramian = factor.T @ factor
        # sum_u x_u^T G x_u over the block's rows, G the other side's Gramian
        loss = interactions_loss + float(np.sum(other_gramian * gramian))
        return BlockReport(side, gramian, loss, self.regularization * float(np.trace(gramian)))

    # -- blocks -------------------------------------------------------------------------------
    def prepare_block(self, raw, block_id):
        return self.ratings(raw, *positive_entries(*self.stored_entries(raw)))

    def initial_shared(self):
        return SharedGramian(ITEMS, np.zeros((self.n_components,) * 2), 0.0, np.inf)

    def init_block(self, data, block_id):
        factor = np.zeros((len(data.indptr) - 1, self.n_components))
        if data.side == ITEMS:
            return factor, None
        fill_initial_user_factors(factor, self.seed, data.start, self.init_scale)
        # positive, as the implicit library's uniform ones: precision@10 on MovieLens 0.2208
        # against 0.2176 from centred ones (mean of 4 seeds)
        np.abs(factor, out=factor)
        # with the item factor at zero, each interaction costs its confidence and nothing else
        return factor, self._report(USERS, factor, np.sum(1.0 + self.alpha * data.values),
                                    np.zeros((self.n_components,) * 2))

    # -- schedule / push / pull ---------------------------------------------------------------
    def schedule(self, round_index, history):
        side, other = (ITEMS, USERS) if round_index % 2 == 0 else (USERS, ITEMS)
        return dict.fromkeys(self.block_ids(side), Update(tuple(self.block_ids(other))))

    def push(self, block_id, data, state, instruction, shared, messages):
        if shared.side == data.side:
            raise RuntimeError("implicit matrix factorization alternates users and items and "
                               "needs the other side's Gramian of the previous round: run it "
                               "with staleness 0")
        if shared.stopped:
            return state, None
        loss = self.solve(data.indptr, data.indices, data.values, state,
                          tuple(messages[b] for b in instruction.reads), shared.gramian,
                          self.cg_steps)
        return state, self._report(data.side, state, loss, shared.gramian)

    def pull(self, partials, shared):
        if shared.stopped:
            side = USERS if shared.side == ITEMS else ITEMS
            return replace(shared, side=side), {"side": side, "after_stop": True}
        blocks = [p for p in partials.values() if p is not None]
        side = blocks[0].side
        loss = sum(block.loss for block in blocks)
        side_penalty = sum(block.penalty for block in blocks)
        objective = loss + side_penalty + shared.penalty
        report = {"side": side, "objective": objective, "loss": loss,
                  "rmse": float(np.sqrt(max(loss, 0.0) / self.n_pairs))}
        iteration_objective = shared.iteration_objective
        if side == USERS:
            report["relative_decrease"] = relative_decrease(iteration_objective, objective)
            iteration_objective = objective
        return (SharedGramian(side, sum(block.gramian for block in blocks), side_penalty,
                              iteration_objective, stopped=self.converged(report)), report)

    def converged(self, report):
        return report.get("relative_decrease", np.inf) <= self.tol

    def collect(self, data, state, shared):
        return state
