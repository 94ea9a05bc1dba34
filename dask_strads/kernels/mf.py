"""Numba kernel of matrix factorization: row-wise coordinate descent on one factor.

The model of entry (i, j) is ``F[i] . G[j]``; the factors may carry biases as extra coordinates
(see :mod:`dask_strads.programs.mf`), so one kernel updates factors and biases, on either side.
With ``G`` fixed the rows of ``F`` are independent ridge problems; coordinate ``c`` of row ``i``
is set to the exact minimiser of::

    sum_j (v_ij - F[i] . G[j])^2 + lam[c] * F[i, c]^2

so no update raises the objective. Cost: O(nnz * d) per sweep.

``G`` may come in pieces (see :mod:`.row_pieces`): the rows a block's ratings touch, as they
arrive from the blocks that hold them, used where they are instead of copied into one array.
"""
import numpy as np
from numba import njit

from .compilation import declare_kernel_set
from .row_pieces import as_pieces, gather_rows


@njit(cache=True, nogil=True)
def _update_rows(indptr, indices, values, F, pieces, maps, offsets, coords, lam, sweeps, tol):
    """Coordinate descent on the rows of ``F`` (in place), for a block of rows in CSR form;
    row ``j`` of ``G`` is row ``j - offsets[p]`` of ``pieces[p]``, or row
    ``maps[p][j - offsets[p]]`` where that map is not empty.

    The coordinates ``coords`` of each row are updated in that order, ``sweeps`` times at most;
    a row stops early once no coordinate moved more than ``tol`` in a sweep (``tol=0``: always
    ``sweeps``). Returns the squared error over the block's entries after the update.
    """
    n_rows, d = F.shape
    longest = 0
    for i in range(n_rows):
        longest = max(longest, indptr[i + 1] - indptr[i])
    G_row = np.empty((d, longest))  # G of the row's entries, contiguous per coordinate
    residual = np.empty(longest)
    norms = np.empty(d)
    loss = 0.0
    # one piece: its rows are read where they are, in the pass that computes the fit (on rows
    # of a few entries a separate gather costs a fifth of the update)
    single, G, rows = len(pieces) == 1, pieces[0], maps[0]
    mapped = rows.shape[0] > 0
    for i in range(n_rows):
        start, n = indptr[i], indptr[i + 1] - indptr[i]
        if not single:
            gather_rows(pieces, maps, offsets, indices[start:start + n], G_row[:, :n].T)
        for e in range(n):
            fit = 0.0
            if single:
                j = indices[start + e]
                if mapped:
                    j = rows[j]
                for c in range(d):
                    G_row[c, e] = G[j, c]
                    fit += F[i, c] * G[j, c]
            else:
                for c in range(d):
                    fit += F[i, c] * G_row[c, e]
            residual[e] = values[start + e] - fit
        for c in coords:
            norm = 0.0
            for e in range(n):
                norm += G_row[c, e] * G_row[c, e]
            norms[c] = norm
        for _ in range(sweeps):
            largest = 0.0
            for c in coords:
                denominator = norms[c] + lam[c]
                new = 0.0  # no data and no penalty: every value is a minimiser
                if denominator > 0.0:
                    dot = 0.0
                    for e in range(n):
                        dot += residual[e] * G_row[c, e]
                    new = (dot + F[i, c] * norms[c]) / denominator
                delta = new - F[i, c]
                if delta != 0.0:
                    for e in range(n):
                        residual[e] -= delta * G_row[c, e]
                    F[i, c] = new
                largest = max(largest, abs(delta))
            if largest <= tol:
                break
        for e in range(n):
            loss += residual[e] * residual[e]
    return loss


def update_rows(indptr, indices, values, F, G, coords, lam, sweeps, tol):
    """:func:`_update_rows` of ``G``, an array, a :class:`~.row_pieces.RowsOf` or a sequence of
    them, with int64 ``indptr``, int32 ``indices``, int ``sweeps`` and float ``tol`` (one
    compiled specialisation whatever the caller passes)."""
    return _update_rows(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int32),
                        values, F, *as_pieces(G),
                        coords, lam, int(sweeps), float(tol))


declare_kernel_set("mf", "mf", (_update_rows,))
