"""Where a reader reads: on the workers of a Dask cluster, or in this process.

With a client (given, or the active one) every part of a file is read by a task on a worker and
stays there; the client only sees small summaries (row counts, ids). Matrices come back as Dask
arrays of ``scipy.sparse`` CSR chunks, computed and held on the workers.
"""
import dask
import numpy as np
import scipy.sparse as sp

from ..engine.blocks import worker_info
from ..engine.runtime import active_client, check_client


def reading_client(client):
    """The client to read on: the one given, else the active one, else None (this process)."""
    return check_client(client) if client is not None else active_client()


def n_workers(client):
    return max(1, len(worker_info(client)))


def sparse_meta():
    return sp.csr_matrix((0, 0))


def stack_rows(client, chunks, rows, n_columns):
    """A Dask array of the CSR matrices ``chunks`` (delayed values, ``rows[i]`` rows each)
    stacked vertically, persisted on the workers."""
    return stacked(client, chunks, [(n, n_columns) for n in rows], np.float64, sparse_meta())


def stacked(client, chunks, shapes, dtype, meta=None):
    """A Dask array of the arrays ``chunks`` (delayed values of ``shapes``) stacked along the
    first axis, persisted on the workers."""
    import dask.array as da

    blocks = [da.from_delayed(chunk, shape=shape, dtype=dtype, meta=meta)
              for chunk, shape in zip(chunks, shapes)]
    return client.persist(da.concatenate(blocks))


def coordinates_matrix(client, parts, shape, duplicates="sum"):
    """A Dask array of CSR row blocks from coordinate parts (delayed ``(rows, cols, values)``
    arrays, 0-based, in any order), one block per worker, each assembled on a worker from the
    entries of every part that fall in its rows.

    ``duplicates``: "sum" repeated cells (as scipy does), "mean" them, or "error": raise a
    ValueError naming how many cells repeat.
    """
    n_blocks = max(1, min(n_workers(client), shape[0]))
    edges = np.linspace(0, shape[0], n_blocks + 1).astype(np.int64)
    parts = client.persist(list(parts))
    built = [dask.delayed(_assemble, nout=2)(lo, hi, shape[1], duplicates, *parts)
             for lo, hi in zip(edges[:-1], edges[1:])]
    built = client.persist(built)
    if duplicates == "error":
        repeated = sum(client.compute([b[1] for b in built], sync=True))
        if repeated:
            raise ValueError(f"{repeated} repeated (user, item) pairs; pass duplicates='mean' to "
                             "store the mean rating of each pair")
    return stack_rows(client, [b[0] for b in built], np.diff(edges), shape[1])


def coordinates_in_memory(parts, shape, duplicates="sum"):
    """:func:`coordinates_matrix` in this process: one CSR matrix."""
    return _assemble(0, shape[0], shape[1], duplicates, *parts)[0]


def _assemble(lo, hi, n_columns, duplicates, *parts):
    """The CSR block of rows ``[lo, hi)`` and the number of its cells stored more than once."""
    kept = [(r[(r >= lo) & (r < hi)], c[(r >= lo) & (r < hi)], v[(r >= lo) & (r < hi)])
            for r, c, v in parts]
    rows, cols, values = (np.concatenate(x) if kept else np.zeros(0) for x in zip(*kept))
    shape = (int(hi - lo), int(n_columns))
    block = sp.csr_matrix((values.astype(np.float64), (rows - lo, cols)), shape=shape)
    repeated = len(values) - block.nnz
    if repeated and duplicates == "mean":
        block.data /= sp.csr_matrix((np.ones(len(values)), (rows - lo, cols)), shape=shape).data
    return block, repeated
