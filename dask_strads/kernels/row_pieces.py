"""The other side's rows a block's entries touch, in pieces: the factorization kernels read them
where they arrived (one array a sending block) instead of copying them into one.

The pieces go to numba as a typed ``List`` with the offsets of their first rows, so a kernel is
compiled once whatever their number (a tuple would compile a specialisation per length). Row
``j`` of the stacked pieces is row ``j - offsets[p]`` of ``pieces[p]``, or, for a piece given as
:class:`RowsOf`, row ``maps[p][j - offsets[p]]`` of its whole array.
"""
import numpy as np
from numba import njit
from numba.typed import List

_NO_MAP = np.zeros(0, dtype=np.int32)


class RowsOf:
    """The rows ``rows`` (int32) of a 2-D ``array``, taken where they are: a message that
    costs its sender no copy. Moved to another process (pickled), it becomes the array of
    those rows, gathered at that moment; so the rows must not change while a message refers to
    them (the factorization programs update a side's rows only in rounds after the pushes that
    read them). Dask counts it at the size it has when moved."""

    __slots__ = ("array", "rows")

    def __init__(self, array, rows):
        self.array, self.rows = array, rows

    def __len__(self):
        return len(self.rows)

    def __reduce__(self):
        return np.asarray, (self.array[self.rows],)

    def __sizeof__(self):
        return len(self.rows) * self.array.shape[1] * self.array.itemsize + self.rows.nbytes


def as_pieces(rows):
    """``(pieces, maps, offsets)`` of ``rows``: an array, a :class:`RowsOf` or a sequence of
    them, of the same columns, stacked in order (float64, C-contiguous: converted only where
    they are not). ``maps[p]`` is empty for a piece read as it is."""
    parts = [rows] if isinstance(rows, (np.ndarray, RowsOf)) else list(rows)
    pieces, maps = List(), List()
    for part in parts:
        mapped = isinstance(part, RowsOf)
        pieces.append(np.ascontiguousarray(part.array if mapped else part, dtype=np.float64))
        maps.append(np.asarray(part.rows, dtype=np.int32) if mapped else _NO_MAP)
    return pieces, maps, np.cumsum([0] + [len(part) for part in parts]).astype(np.int64)


@njit(cache=True, nogil=True)
def gather_rows(pieces, maps, offsets, indices, out):
    """``out[e] = `` row ``indices[e]`` of the stacked pieces, for every ``e``. A row's
    indices are sorted as a rule, so the piece (and its map) is looked up only when they leave
    it: a typed list's item is slow to fetch in a loop."""
    p = 0
    piece, rows = pieces[0], maps[0]
    for e in range(len(indices)):
        j = indices[e]
        if j < offsets[p] or j >= offsets[p + 1]:
            p = np.searchsorted(offsets, j, side="right") - 1
            piece, rows = pieces[p], maps[p]
        j -= offsets[p]
        if rows.shape[0] > 0:
            j = rows[j]
        for c in range(out.shape[1]):
            out[e, c] = piece[j, c]
