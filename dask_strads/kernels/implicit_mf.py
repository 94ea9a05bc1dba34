"""Numba kernel of implicit-feedback matrix factorization: one least-squares solve per row.

With the other side's factor ``Y`` fixed, row ``x`` of a user (or item) minimises, over *all*
the other side's rows (Hu, Koren & Volinsky 2008)::

    sum_i c_i (p_i - x . y_i)^2 + reg ||x||^2,   c_i = 1 + a_i,  p_i = 1 where liked, else 0

``a_i = alpha * |r_i|`` and ``liked_i`` (``r_i > 0``; a negative ``r_i`` is negative feedback)
are stored for the row's feedback only. The other entries have ``c = 1, p = 0``, so the system
``(G + reg I + sum_i a_i y_i y_i^T) x = sum_liked (1 + a_i) y_i`` needs only the Gramian
``G = Y^T Y`` (k x k, the same for every row) and the ``y_i`` of the row's feedback: the dense
matrix is never formed. Its loss is likewise ``x^T G x + sum_i [(1 + a_i)(p_i - x . y_i)^2 -
(x . y_i)^2]``; the kernel returns the sum of the second terms, the first summed over a block
being ``sum(G * X^T X)``. A row without feedback is solved by ``x = 0``.

``cg_steps = 0`` solves each system exactly (Cholesky, O(k^3 + n_i k^2) a row); ``cg_steps = s``
runs ``s`` conjugate-gradient steps from the row's current value, as the ``implicit`` library
does (O(s (k^2 + n_i k)) a row), each lowering the row's loss.

``Y`` may come in pieces (see :mod:`.row_pieces`): the rows a block's interactions touch, as
they arrive from the blocks that hold them.
"""
import numpy as np
from numba import njit

from .compilation import declare_kernel_set
from .row_pieces import as_pieces, gather_rows

#: Conjugate gradient runs on this many rows at a time (their products with the Gramian are one
#: matrix product), and on at most CHUNK_ENTRIES interactions, whose other-side rows are
#: gathered once for all the steps (CHUNK_ENTRIES * k floats).
CHUNK_ROWS = 256
CHUNK_ENTRIES = 2048


@njit(cache=True, nogil=True, fastmath=True)
def _solve_rows(indptr, indices, weights, liked, F, pieces, maps, offsets, gramian,
                regularization, cg_steps):
    """Update the rows of ``F`` in place (CSR rows of ``weights = alpha * |r|`` and ``liked``,
    see the module); row ``j`` of
    ``Y`` is row ``j - offsets[p]`` of ``pieces[p]`` (through ``maps[p]`` where it is not
    empty). Returns the interactions' part of the loss of the updated rows (see the module)."""
    n_rows, k = F.shape
    if cg_steps == 0:
        return _solve_exactly(indptr, indices, weights, liked, F, pieces, maps, offsets,
                              gramian, regularization)
    loss = 0.0
    lo = 0
    while lo < n_rows:
        hi = lo + 1  # at least a row, then as many as fit the bounds
        while (hi < n_rows and hi - lo < CHUNK_ROWS
               and indptr[hi + 1] - indptr[lo] <= CHUNK_ENTRIES):
            hi += 1
        loss += _conjugate_gradient(indptr[lo:hi + 1] - indptr[lo],
                                    indices[indptr[lo]:indptr[hi]],
                                    weights[indptr[lo]:indptr[hi]],
                                    liked[indptr[lo]:indptr[hi]], F[lo:hi], pieces, maps,
                                    offsets, gramian, regularization, cg_steps)
        lo = hi
    return loss


@njit(cache=True, nogil=True, fastmath=True)
def _conjugate_gradient(indptr, indices, weights, liked, X, pieces, maps, offsets, gramian,
                        regularization, cg_steps):
    """``cg_steps`` conjugate-gradient steps on every row of ``X`` (a few rows) at once, from
    their current values, in place; the loss term of the module for the new rows."""
    m, k = X.shape
    Y = np.empty((len(indices), k))  # the rows' y_i, gathered once
    gather_rows(pieces, maps, offsets, indices, Y)
    x = np.ascontiguousarray(X)
    scores = np.empty(len(indices))  # x . y_i, kept up to date through the steps
    # r = b - A x, for all rows: the Gramian's part as one matrix product
    R = -np.dot(x, gramian) - regularization * x
    for i in range(m):
        if indptr[i + 1] == indptr[i]:
            x[i, :] = 0.0
            R[i, :] = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            a = weights[e]
            s = 0.0
            for c in range(k):
                s += Y[e, c] * x[i, c]
            scores[e] = s
            scale = (1.0 + a if liked[e] else 0.0) - a * s
            for c in range(k):
                R[i, c] += scale * Y[e, c]
    P = R.copy()
    rs = np.empty(m)
    for i in range(m):
        rs[i] = np.dot(R[i], R[i])
    along = np.empty(len(indices))  # p . y_i
    for _ in range(cg_steps):
        AP = np.dot(P, gramian) + regularization * P
        for i in range(m):
            if rs[i] < 1e-20:
                continue
            for e in range(indptr[i], indptr[i + 1]):
                s = 0.0
                for c in range(k):
                    s += Y[e, c] * P[i, c]
                along[e] = s
                a = weights[e] * s
                for c in range(k):
                    AP[i, c] += a * Y[e, c]
            step = rs[i] / np.dot(P[i], AP[i])
            for e in range(indptr[i], indptr[i + 1]):
                scores[e] += step * along[e]
            for c in range(k):
                x[i, c] += step * P[i, c]
                R[i, c] -= step * AP[i, c]
            rs_new = np.dot(R[i], R[i])
            for c in range(k):
                P[i, c] = R[i, c] + (rs_new / rs[i]) * P[i, c]
            rs[i] = rs_new
    X[:] = x
    loss = 0.0
    for e in range(len(indices)):
        miss = (1.0 if liked[e] else 0.0) - scores[e]
        loss += (1.0 + weights[e]) * miss * miss - scores[e] * scores[e]
    return loss


@njit(cache=True, nogil=True, fastmath=True)
def _solve_exactly(indptr, indices, weights, liked, F, pieces, maps, offsets, gramian,
                   regularization):
    """Each row's system solved exactly (Cholesky-free ``np.linalg.solve``)."""
    n_rows, k = F.shape
    longest = 0
    for i in range(n_rows):
        longest = max(longest, indptr[i + 1] - indptr[i])
    Y = np.empty((longest, k))  # the row's y_i, gathered
    A = np.empty((k, k))
    b = np.empty(k)
    loss = 0.0
    for i in range(n_rows):
        start, n = indptr[i], indptr[i + 1] - indptr[i]
        gather_rows(pieces, maps, offsets, indices[start:start + n], Y)
        x = F[i]
        if n == 0:
            x[:] = 0.0
            continue
        for c in range(k):
            b[c] = 0.0
            for d in range(k):
                A[c, d] = gramian[c, d]
            A[c, c] += regularization
        for e in range(n):
            a = weights[start + e]
            for c in range(k):
                if liked[start + e]:
                    b[c] += (1.0 + a) * Y[e, c]
                for d in range(k):
                    A[c, d] += a * Y[e, c] * Y[e, d]
        x[:] = np.linalg.solve(A, b)
        for e in range(n):
            s = np.dot(Y[e], x)
            miss = (1.0 if liked[start + e] else 0.0) - s
            loss += (1.0 + weights[start + e]) * miss * miss - s * s
    return loss


def solve_rows(indptr, indices, weights, liked, F, Y, gramian, regularization, cg_steps):
    """:func:`_solve_rows` of ``Y``, an array, a :class:`~.row_pieces.RowsOf` or a sequence of
    them (int64 indptr, int32 indices, float weights, bool liked, float rows, int steps: one
    compiled specialisation whatever the caller passes)."""
    return _solve_rows(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int32),
                       np.asarray(weights, dtype=np.float64), np.asarray(liked, dtype=np.bool_),
                       F, *as_pieces(Y),
                       np.ascontiguousarray(gramian, dtype=np.float64), float(regularization),
                       int(cg_steps))


declare_kernel_set("implicit_mf", "implicit mf", (_solve_rows,))
