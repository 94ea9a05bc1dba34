"""Block-Jacobi for ``A x = b``: the smallest complete STRADS program.

Block ``k`` holds rows ``A[rows_k]`` and ``b[rows_k]``; its parameter block is ``x[rows_k]``. A push
recomputes its rows from the whole ``x`` of the last pull; the pull concatenates the blocks.
Converges when ``A`` is strictly diagonally dominant, also with staleness (chaotic relaxation).
It documents the protocol and tests the engine against :func:`run_sequential`.
"""
from dataclasses import dataclass

import numpy as np

from ..sizes import register_dataclasses
from .base import Instruction, Program, Report, StopRule


@dataclass(frozen=True, kw_only=True)
class JacobiReport(Report):
    change: float | None = None  # the largest move of an entry of x in the round


class BlockJacobi(Program):

    name = "jacobi"
    static_schedule = True

    def __init__(self, row_starts, *, tol=0.0):
        """``tol``: stop when no entry of ``x`` moved more than this in a round (0: never)."""
        self.row_starts = list(row_starts)
        self.tol = tol
        self.stop_rule = StopRule("change", tol) if tol > 0 else None

    def initial_shared(self):
        return np.zeros(self.row_starts[-1])

    def init_block(self, data, block_id):
        x_block = np.zeros(data["A"].shape[0])
        return x_block, x_block

    def schedule(self, round_index, history):
        return dict.fromkeys(range(len(self.row_starts) - 1), Instruction())

    def push(self, block_id, data, state, instruction, shared, inbox):
        A, rhs = data["A"], data["b"]
        lo = self.row_starts[block_id]
        diagonal = A[np.arange(A.shape[0]), lo + np.arange(A.shape[0])]
        off_diagonal = A @ shared - diagonal * shared[lo:lo + A.shape[0]]
        x_block = (rhs - off_diagonal) / diagonal
        return x_block, x_block

    def pull(self, partials, shared):
        x = shared.copy()
        for b, x_block in partials.items():
            x[self.row_starts[b]:self.row_starts[b + 1]] = x_block
        return x, JacobiReport(change=float(np.max(np.abs(x - shared))))

    def collect(self, data, state, shared):
        return state


def jacobi_blocks(A, b, n_blocks):
    """Split ``A x = b`` by rows into ``n_blocks`` data blocks, with the program that solves it."""
    row_starts = np.linspace(0, A.shape[0], n_blocks + 1).astype(int)
    blocks = [{"A": A[lo:hi], "b": b[lo:hi]} for lo, hi in zip(row_starts[:-1], row_starts[1:])]
    return BlockJacobi(row_starts), blocks


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
