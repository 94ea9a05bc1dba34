"""MatrixMarket files (``.mtx``, ``.mtx.gz``)."""
import os

import dask
import fsspec
import scipy.io
import scipy.sparse as sp

from ..local_files import check_regular_file
from .coordinates import read_coordinates
from .placement import reading_client, stack_rows
from .text import MalformedFileError

#: The coordinate files read in byte ranges; any other kind is read whole by scipy.
RANGED = {"real", "integer", "pattern"}


def read_matrix_market(path, client=None):
    """The matrix of a MatrixMarket file, as the estimators take it.

    General coordinate files of real, integer or pattern values are read in byte ranges, on
    the workers of ``client`` (or of the active client) as a Dask array of CSR row blocks,
    else in this process as a CSR matrix; other kinds (dense ``array`` files, symmetric or
    complex matrices) are read whole by :func:`scipy.io.mmread`, on one worker with a client.
    Malformed lines raise :class:`~dask_strads.io.MalformedFileError` naming the line.
    """
    check_regular_file(path)
    client = reading_client(client)
    layout, field, symmetry, shape, n_entries, data_offset = _header(path)
    if layout == "coordinate" and field in RANGED and symmetry == "general":
        return read_coordinates(path, data_offset, shape, n_entries, field, client)
    if client is None:
        return _mmread(path)
    return stack_rows(client, [dask.delayed(_mmread)(path)], [shape[0]], shape[1])


def _mmread(path):
    with fsspec.open(os.fspath(path), "rb", compression="infer") as file:
        return sp.csr_matrix(scipy.io.mmread(file))


def _header(path):
    """``(layout, field, symmetry, shape, entries, offset of the first data line)``."""
    with fsspec.open(os.fspath(path), "rb", compression="infer") as file:
        banner = file.readline().decode(errors="replace").split()
        if len(banner) != 5 or banner[0].lower() != "%%matrixmarket" or banner[1] != "matrix":
            raise MalformedFileError(path, 1, "not a MatrixMarket file: expected "
                                     "'%%MatrixMarket matrix <layout> <field> <symmetry>'")
        layout, field, symmetry = (word.lower() for word in banner[2:])
        number = 1
        while True:
            line = file.readline()
            number += 1
            if not line:
                raise MalformedFileError(path, number, "the file ends before its size line")
            if line.strip() and not line.startswith(b"%"):
                break
        sizes = line.split()
        expected = 3 if layout == "coordinate" else 2
        try:
            sizes = [int(s) for s in sizes]
            if len(sizes) != expected or min(sizes) < 0:
                raise ValueError
        except ValueError:
            raise MalformedFileError(path, number, f"expected a size line of {expected} "
                                     f"non-negative integers, got {line.decode().strip()!r}")
        n_entries = sizes[2] if layout == "coordinate" else sizes[0] * sizes[1]
        return layout, field, symmetry, tuple(sizes[:2]), n_entries, file.tell()
