"""The other side's rows a block's entries touch, in pieces: the factorization kernels read them
where they arrived (one array a sending block) instead of copying them into one.

The pieces go to numba as a typed ``List`` with the offsets of their first rows, so a kernel is
compiled once whatever their number (a tuple would compile a specialisation per length). Row
``j`` of the stacked pieces is row ``j - offsets[p]`` of ``pieces[p]``.
"""
import numpy as np
from numba import njit
from numba.typed import List


def as_pieces(rows):
    """``(pieces, offsets)`` of ``rows``, an array or a sequence of arrays of the same
    columns, stacked in order (float64, C-contiguous: converted only where they are not)."""
    arrays = [rows] if isinstance(rows, np.ndarray) else list(rows)
    pieces = List(np.ascontiguousarray(piece, dtype=np.float64) for piece in arrays)
    return pieces, np.cumsum([0] + [len(piece) for piece in arrays]).astype(np.int64)


@njit(cache=True, nogil=True)
def gather_rows(pieces, offsets, indices, out):
    """``out[e] = `` row ``indices[e]`` of the stacked pieces, for every ``e``. A row's
    indices are sorted as a rule, so the piece is looked up only when they leave it."""
    p = 0
    piece = pieces[0]
    for e in range(len(indices)):
        j = indices[e]
        if j < offsets[p] or j >= offsets[p + 1]:
            p = np.searchsorted(offsets, j, side="right") - 1
            piece = pieces[p]
        j -= offsets[p]
        for c in range(out.shape[1]):
            out[e, c] = piece[j, c]
