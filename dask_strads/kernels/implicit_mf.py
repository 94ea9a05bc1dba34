"""Numba kernel of implicit-feedback matrix factorization: one least-squares solve per row.

With the other side's factor ``Y`` fixed, row ``x`` of a user (or item) minimises, over *all*
the other side's rows (Hu, Koren & Volinsky 2008)::

    sum_i c_i (p_i - x . y_i)^2 + reg ||x||^2,   c_i = 1 + a_i,  p_i = 1 where a_i > 0, else 0

``a_i = alpha * r_i`` is stored for the row's interactions only. The rows without one have
``c = 1, p = 0``, so the system ``(G + reg I + sum_i a_i y_i y_i^T) x = sum_i (1 + a_i) y_i``
needs only the Gramian ``G = Y^T Y`` (k x k, the same for every row) and the ``y_i`` of the
row's interactions: the dense matrix is never formed. Its loss is likewise
``x^T G x + sum_i [(1 + a_i)(1 - x . y_i)^2 - (x . y_i)^2]``; the kernel returns the sum of the
second terms, the first summed over a block being ``sum(G * X^T X)``. A row without
interactions is solved by ``x = 0``.

``cg_steps = 0`` solves each system exactly (Cholesky, O(k^3 + n_i k^2) a row); ``cg_steps = s``
runs ``s`` conjugate-gradient steps from the row's current value, as the ``implicit`` library
does (O(s (k^2 + n_i k)) a row), each lowering the row's loss.

``Y`` may come in pieces (see :mod:`.row_pieces`): the rows a block's interactions touch, as
they arrive from the blocks that hold them.
"""
import numpy as np
from numba import njit

from .row_pieces import as_pieces, gather_rows


@njit(cache=True, nogil=True, fastmath=True)
def _solve_rows(indptr, indices, weights, F, pieces, maps, offsets, gramian, regularization,
                cg_steps):
    """Update the rows of ``F`` in place (CSR rows of ``weights = alpha * r``); row ``j`` of
    ``Y`` is row ``j - offsets[p]`` of ``pieces[p]`` (through ``maps[p]`` where it is not
    empty). Returns the interactions' part of the loss of the updated rows (see the module)."""
    n_rows, k = F.shape
    longest = 0
    for i in range(n_rows):
        longest = max(longest, indptr[i + 1] - indptr[i])
    Y = np.empty((longest, k))  # the row's y_i, gathered
    A = np.empty((k, k))
    b = np.empty(k)
    r = np.empty(k)
    p = np.empty(k)
    Ap = np.empty(k)
    loss = 0.0
    for i in range(n_rows):
        start, n = indptr[i], indptr[i + 1] - indptr[i]
        gather_rows(pieces, maps, offsets, indices[start:start + n], Y)
        x = F[i]
        if n == 0:
            x[:] = 0.0
        elif cg_steps == 0:
            for c in range(k):
                b[c] = 0.0
                for d in range(k):
                    A[c, d] = gramian[c, d]
                A[c, c] += regularization
            for e in range(n):
                a = weights[start + e]
                for c in range(k):
                    b[c] += (1.0 + a) * Y[e, c]
                    for d in range(k):
                        A[c, d] += a * Y[e, c] * Y[e, d]
            x[:] = np.linalg.solve(A, b)
        else:
            # r = b - A x
            r[:] = -np.dot(gramian, x) - regularization * x
            for e in range(n):
                a = weights[start + e]
                s = 0.0
                for c in range(k):
                    s += Y[e, c] * x[c]
                scale = 1.0 + a - a * s
                for c in range(k):
                    r[c] += scale * Y[e, c]
            p[:] = r
            rs_old = np.dot(r, r)
            for _ in range(cg_steps):
                if rs_old < 1e-20:
                    break
                Ap[:] = np.dot(gramian, p) + regularization * p
                for e in range(n):
                    a = weights[start + e]
                    s = 0.0
                    for c in range(k):
                        s += Y[e, c] * p[c]
                    for c in range(k):
                        Ap[c] += a * s * Y[e, c]
                step = rs_old / np.dot(p, Ap)
                for c in range(k):
                    x[c] += step * p[c]
                    r[c] -= step * Ap[c]
                rs_new = np.dot(r, r)
                for c in range(k):
                    p[c] = r[c] + (rs_new / rs_old) * p[c]
                rs_old = rs_new
        for e in range(n):
            s = 0.0
            for c in range(k):
                s += Y[e, c] * x[c]
            loss += (1.0 + weights[start + e]) * (1.0 - s) ** 2 - s * s
    return loss


def solve_rows(indptr, indices, weights, F, Y, gramian, regularization, cg_steps):
    """:func:`_solve_rows` of ``Y``, an array, a :class:`~.row_pieces.RowsOf` or a sequence of
    them (int64 indptr, int32 indices, float rows, int steps: one compiled specialisation
    whatever the caller passes)."""
    return _solve_rows(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int32),
                       weights, F, *as_pieces(Y),
                       np.ascontiguousarray(gramian, dtype=np.float64), float(regularization),
                       int(cg_steps))
