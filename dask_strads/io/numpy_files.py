"""``.npy`` arrays and ``.npz`` scipy.sparse matrices."""
import os

import dask
import fsspec
from fsspec.implementations.local import LocalFileSystem
import numpy as np
import scipy.sparse as sp

from ..local_files import check_regular_file
from .placement import n_workers, reading_client, stack_rows, stacked


def read_npy(path, client=None):
    """The array of a ``.npy`` file (never unpickled). On the workers of ``client`` (or of the
    active client) a Dask array whose row blocks each worker reads from the file itself (by
    memory map for a local file), else a numpy array."""
    check_regular_file(path)
    client = reading_client(client)
    if client is None:
        with fsspec.open(os.fspath(path), "rb") as file:
            return np.load(file, allow_pickle=False)
    fs, local = fsspec.core.url_to_fs(os.fspath(path))
    with fs.open(local, "rb") as file:
        shape, dtype = _npy_header(file)
    edges = np.linspace(0, shape[0], max(1, min(n_workers(client), shape[0])) + 1).astype(int)
    pairs = list(zip(edges[:-1], edges[1:]))
    return stacked(client, [dask.delayed(_npy_rows)(path, lo, hi) for lo, hi in pairs],
                   [(hi - lo,) + shape[1:] for lo, hi in pairs], dtype)


def read_npz(path, client=None):
    """The scipy.sparse matrix of an ``.npz`` file written by ``scipy.sparse.save_npz`` (never
    unpickled), as CSR; on the workers of ``client`` (or of the active client) a Dask array of
    one CSR block read by a worker."""
    check_regular_file(path)
    client = reading_client(client)
    if client is None:
        return _load_npz(path)
    with fsspec.open(os.fspath(path), "rb") as file, np.load(file, allow_pickle=False) as f:
        shape = tuple(int(n) for n in f["shape"])
    return stack_rows(client, [dask.delayed(_load_npz)(path)], [shape[0]], shape[1])


def _load_npz(path):
    with fsspec.open(os.fspath(path), "rb") as file:
        return sp.csr_matrix(sp.load_npz(file))


def _npy_header(file):
    read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}[np.lib.format.read_magic(file)]
    shape, fortran, dtype = read_header(file)
    if dtype.hasobject:
        raise ValueError("object arrays need pickle and are not read")
    if fortran and len(shape) > 1:
        raise ValueError("Fortran-ordered .npy files are read without a cluster only")
    return shape, dtype


def _npy_rows(path, lo, hi):
    fs, local = fsspec.core.url_to_fs(os.fspath(path))
    if isinstance(fs, LocalFileSystem):
        return np.array(np.load(local, mmap_mode="r", allow_pickle=False)[lo:hi])
    with fs.open(local, "rb") as file:
        return np.load(file, allow_pickle=False)[lo:hi]
