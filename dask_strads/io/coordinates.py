"""Files of ``row column [value]`` lines with 1-based indices after a header (MatrixMarket
coordinate files, UCI bag-of-words files), read in byte ranges, on the workers when a cluster
is used. Each range is parsed by numpy's C reader (``numpy.loadtxt``), which refuses any line
that is not ``row column [value]`` of the file's kind; only then are the lines read one by one,
to name the first bad one."""
import io

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


#: The numpy type of each field of a line, by the file's kind of value.
FIELDS = {kind: [("row", np.int64), ("column", np.int64)] + value for kind, value in (
    ("pattern", []), ("integer", [("value", np.int64)]), ("real", [("value", np.float64)]))}


def _read_part(path, offset, length, data_offset, shape, values):
    """The 0-based ``(rows, cols, values)`` of the lines of one byte range, and their number."""
    text = read_range(path, offset, length)
    try:
        rows, cols, data = _parsed(text, values)
        if len(rows) and (rows.min() < 0 or cols.min() < 0 or rows.max() >= shape[0]
                          or cols.max() >= shape[1]):
            raise ValueError
    except ValueError as error:
        n_fields = len(FIELDS[values])
        index, reason = _first_problem(text.splitlines(), n_fields, shape, values, error)
        raise MalformedFileError(path, line_number_at(path, offset) + index, reason) from None
    return (rows, cols, data), len(rows)


def _parsed(text, values):
    """The 0-based rows and columns and the float values of the coordinate lines ``text``
    (blank lines skipped); ValueError for any other line."""
    if not text.strip():
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    table = np.loadtxt(io.BytesIO(text), dtype=FIELDS[values], comments=None, ndmin=1)
    data = np.ones(len(table)) if values == "pattern" else table["value"].astype(np.float64)
    return table["row"] - 1, table["column"] - 1, data


def _first_problem(lines, n_fields, shape, values, error):
    """``(index, reason)`` of the first line of ``lines`` that is no valid coordinate line
    (``error``: the parser's, when each line passes Python's checks, e.g. ``1_000``)."""
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
    return 0, f"the lines from this one on cannot be parsed: {error}"
