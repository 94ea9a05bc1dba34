"""svmlight / libsvm files (``.svm``, ``.libsvm``, ``.svmlight``, compressed or not)."""
import io

import dask
import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from ..local_files import check_regular_file
from .placement import n_workers, reading_client, stack_rows, stacked
from .text import MalformedFileError, byte_ranges, line_number_at, read_range


def read_svmlight(path, n_features=None, zero_based="auto", client=None):
    """``(X, y)`` of an svmlight / libsvm file: ``target index:value ...`` lines, target first.

    Parsed by scikit-learn's ``load_svmlight_file``, in byte ranges of whole lines on the
    workers of ``client`` (or of the active client): X comes back as a Dask array of CSR row
    blocks and y as a Dask array, both held on the workers; without a client as a CSR matrix
    and an array. ``zero_based``: whether feature indices start at 0; "auto" takes the file as
    1-based unless some index is 0 (over the whole file, as scikit-learn does). ``n_features``:
    the width of X (default: the largest index seen). ``qid:`` fields are ignored.
    A malformed line raises :class:`~dask_strads.io.MalformedFileError` naming it.
    """
    if zero_based not in ("auto", True, False):
        raise ValueError(f"zero_based must be 'auto', True or False, got {zero_based!r}")
    check_regular_file(path)
    client = reading_client(client)
    ranges = byte_ranges(path, n_workers(client) if client is not None else 1)
    if client is None:
        parts = [_read_part(path, offset, length) for offset, length in ranges]
        summaries = [_summary(part) for part in parts]
    else:
        parts = client.persist([dask.delayed(_read_part)(path, offset, length)
                                for offset, length in ranges])
        summaries = client.compute([dask.delayed(_summary)(part) for part in parts], sync=True)
    rows, widths, smallest = map(np.array, zip(*summaries))
    one_based = (not (smallest == 0).any()) if zero_based == "auto" else not zero_based
    if one_based and (smallest == 0).any():
        raise MalformedFileError(path, None, "feature index 0 in a file read as one-based "
                                 "(zero_based=False)")
    width = int(widths.max()) - int(one_based)
    if n_features is not None and n_features < width:
        raise ValueError(f"{path} has feature indices up to {width - 1 + int(one_based)}, "
                         f"more than n_features={n_features} allows")
    width = n_features or width
    if client is None:
        X = sp.vstack([_columns(part[0], one_based, width) for part in parts], format="csr")
        return X, np.concatenate([part[1] for part in parts])
    X = stack_rows(client, [dask.delayed(_columns)(part[0], one_based, width) for part in parts],
                   rows, width)
    return X, stacked(client, [part[1] for part in parts], [(n,) for n in rows], np.float64)


def _read_part(path, offset, length):
    """The rows (CSR, columns as written) and targets of the lines of one byte range."""
    text = read_range(path, offset, length)
    if not text.strip():
        return sp.csr_matrix((0, 1)), np.zeros(0)
    try:
        X, y = load_svmlight_file(io.BytesIO(text), zero_based=True)
    except ValueError as error:
        found = _first_problem(text.splitlines())
        if found is None:
            raise MalformedFileError(path, None, f"lines from byte {offset}: {error}") from None
        index, reason = found
        raise MalformedFileError(path, line_number_at(path, offset) + index, reason) from None
    return X, y


def _summary(part):
    """Rows, columns and smallest stored column index of a part."""
    X = part[0]
    return X.shape[0], X.shape[1], int(X.indices.min()) if X.nnz else 1


def _columns(X, one_based, width):
    """X with its columns shifted to 0-based and ``width`` of them."""
    X = X.tocoo()
    cols = X.col - 1 if one_based else X.col
    return sp.csr_matrix((X.data, (X.row, cols)), shape=(X.shape[0], width))


def _first_problem(lines):
    """``(index, reason)`` of the first line of ``lines`` that is no svmlight line, or None."""
    for index, line in enumerate(lines):
        fields = line.split(b"#", 1)[0].split()
        if not fields:
            continue
        try:
            float(fields[0])
        except ValueError:
            return index, f"target {fields[0].decode(errors='replace')!r} is not a number"
        previous = -1
        for field in fields[1:]:
            name, colon, value = field.partition(b":")
            shown = field.decode(errors="replace")
            if name == b"qid":
                continue
            if not colon:
                return index, f"expected index:value, got {shown!r}"
            try:
                at = int(name)
            except ValueError:
                return index, f"feature index in {shown!r} is not an integer"
            try:
                float(value)
            except ValueError:
                return index, f"value in {shown!r} is not a number"
            if at < 0 or at <= previous:
                return index, (f"feature indices must be non-negative, increasing and unique: "
                               f"{at} after {previous}" if previous >= 0 else
                               f"negative feature index {at}")
            previous = at
    return None
