"""Files of ``row column [value]`` lines with 1-based indices after a header (MatrixMarket
coordinate files, UCI bag-of-words files), read in byte ranges, on the workers when a cluster
is used."""
import dask
import numpy as np

from .placement import coordinates_in_memory, coordinates_matrix, n_workers
from .text import MalformedFileError, byte_ranges, line_number_at, read_range


def read_coordinates(path, data_offset, shape, n_entries, values, client):
    """The sparse matrix of the coordinate lines of ``path`` from byte ``data_offset`` (in the
    decompressed stream): a Dask array on the workers of ``client``, else a CSR matrix.

    ``values``: "real", "integer" or "pattern" (no value: every entry is 1). Refuses lines that
    are not ``row column [value]`` with the file's kind of value, indices outside ``shape``, and
    a number of entries other than ``n_entries``.
    """
    n_parts = n_workers(client) if client is not None else 1
    read = dask.delayed(_read_part, nout=2) if client is not None else _read_part
    parts = [read(path, offset, length, data_offset, shape, values)
             for offset, length in byte_ranges(path, n_parts, start=data_offset)]
    if client is not None:
        parts = client.persist(parts)
        counts = client.compute([part[1] for part in parts], sync=True)
        coordinates = [part[0] for part in parts]
    else:
        coordinates, counts = zip(*parts)
    if sum(counts) != n_entries:
        raise MalformedFileError(path, None, f"its header announces {n_entries} entries, the "
                                 f"file holds {sum(counts)}")
    if client is not None:
        return coordinates_matrix(client, coordinates, shape)
    return coordinates_in_memory(coordinates, shape)


def _read_part(path, offset, length, data_offset, shape, values):
    """The 0-based ``(rows, cols, values)`` of the lines of one byte range, and their number."""
    lines = read_range(path, offset, length).splitlines()
    n_fields = 2 if values == "pattern" else 3
    try:
        tokens = np.array([line.split() for line in lines if line.strip()], dtype=bytes)
        tokens = tokens.reshape(-1, n_fields) if tokens.size == 0 else tokens
        if tokens.ndim != 2 or tokens.shape[1] != n_fields:
            raise ValueError
        rows, cols = tokens[:, 0].astype(np.int64) - 1, tokens[:, 1].astype(np.int64) - 1
        data = (np.ones(len(tokens)) if values == "pattern" else
                tokens[:, 2].astype(np.int64 if values == "integer" else np.float64))
        if len(rows) and (rows.min() < 0 or cols.min() < 0 or rows.max() >= shape[0]
                          or cols.max() >= shape[1]):
            raise ValueError
    except ValueError:
        index, reason = _first_problem(lines, n_fields, shape, values)
        raise MalformedFileError(path, line_number_at(path, offset) + index, reason) from None
    return (rows, cols, data.astype(np.float64)), len(rows)


def _first_problem(lines, n_fields, shape, values):
    """``(index, reason)`` of the first line of ``lines`` that is no valid coordinate line."""
    number = {"integer": int, "real": float}.get(values)
    for index, line in enumerate(lines):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != n_fields:
            return index, (f"expected {n_fields} fields (row column"
                           f"{'' if values == 'pattern' else ' value'}), got {len(fields)}: "
                           f"{line.decode(errors='replace')!r}")
        for name, field, size in (("row", fields[0], shape[0]), ("column", fields[1], shape[1])):
            try:
                at = int(field)
            except ValueError:
                return index, f"{name} index {field.decode(errors='replace')!r} is not an integer"
            if not 1 <= at <= size:
                return index, f"{name} index {at} outside 1..{size} (1-based)"
        if number is not None:
            try:
                number(fields[2])
            except ValueError:
                return index, (f"value {fields[2].decode(errors='replace')!r} is not "
                               f"{'an integer' if values == 'integer' else 'a number'}")
    return 0, "unreadable lines"
