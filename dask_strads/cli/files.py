"""What the commands write (predictions, recommendations) and read besides data files (ids)."""
import os

import numpy as np

from ..io.triplets import read_table, require_pandas
from ..local_files import check_regular_file
from .parameters import UsageError

#: Output extensions and what they hold.
OUTPUTS = (".npy", ".csv", ".parquet")


def check_output(path):
    """``path`` if its extension names an output format, else a UsageError."""
    if not os.fspath(path).lower().endswith(OUTPUTS):
        raise UsageError(f"cannot tell the output format of {path}: end it in "
                         f"{', '.join(OUTPUTS)}")
    return path


def write_table(columns, path):
    """Columns (name: 1-D array) to ``path``: a table for .csv/.parquet; for .npy the last
    column, or all of them side by side when they are numbers."""
    path = os.fspath(path)
    if path.lower().endswith(".npy"):
        values = list(columns.values())
        array = np.column_stack(values) if len(values) > 1 else np.asarray(values[0])
        np.save(path, array.astype(str) if array.dtype == object else array,
                allow_pickle=False)
        return
    frame = require_pandas().DataFrame(columns)
    if path.lower().endswith(".csv"):
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)


def read_ids(path, name, known):
    """The ids of column ``name`` (or the first) of a table, or of a ``.txt`` file (one a
    line) or ``.npy`` array, as values of the type of ``known`` (the model's ids)."""
    path = os.fspath(path)
    check_regular_file(path)
    if path.lower().endswith(".npy"):
        ids = np.load(path, allow_pickle=False)
    elif path.lower().endswith(".txt"):
        with open(path) as file:
            ids = np.array([line.strip() for line in file if line.strip()], dtype=object)
    else:
        ids = read_table(path, (name,))[name].to_numpy()
    return as_ids(ids, known, name)


def as_ids(ids, known, name):
    """``ids`` comparable with the model's ids ``known``: numbers of 64 bits when those are
    numbers (so that an id beyond the model's dtype stays itself, and is unknown), else str."""
    ids = np.asarray(ids)
    if known.dtype.kind in "iuf":
        wide = np.float64 if known.dtype.kind == "f" else np.int64
        try:
            return ids.astype(wide)
        except (ValueError, OverflowError):
            raise UsageError(f"{name} ids must be numbers, as the model's are: got "
                             f"{ids[:3].tolist()}") from None
    return ids.astype(str).astype(object)


def absolute(path):
    """A local ``path`` made absolute against this process's working directory (the workers
    of a cluster have their own); an fsspec URL unchanged."""
    path = os.fspath(path)
    return path if "://" in path or "::" in path else os.path.abspath(path)
