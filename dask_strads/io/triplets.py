"""(user, item, rating) triplets from Parquet or CSV files, and the ratings matrix of a table
of triplets (pandas or Dask DataFrame)."""
import os
import re

import dask
import fsspec
import numpy as np

from ..local_files import check_regular_file
from ..ratings import RatingsMatrix, _unique
from .placement import coordinates_matrix, reading_client
from .text import CHUNK_BYTES, MalformedFileError

#: The columns of a table of triplets, as the readers return it and MatrixFactorization takes it.
COLUMNS = ("user", "item", "rating")
#: A field of a CSV line that is a number: a line with one is data, not a header of names.
_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")


def require_pandas(purpose="reading (user, item, rating) tables"):
    """pandas, with pyarrow beside it, or an ImportError saying that ``purpose`` needs them."""
    try:
        import pandas
        import pyarrow  # noqa: F401  (Parquet, and dask.dataframe's strings)
    except ImportError as error:
        raise ImportError(f"{purpose} needs pandas and pyarrow ({error}): "
                          "pip install 'dask_strads[io]'") from None
    return pandas


def read_triplets(path, columns=None, format=None, client=None):
    """A DataFrame of ``user, item, rating`` columns from a Parquet file (or folder of them)
    or a CSV file with a header.

    ``columns``: the file's names of the user, item and rating columns (default: ``user``,
    ``item`` and ``rating`` when the file has them, else its first three columns). ``format``:
    "parquet" or "csv" (default: from the name; a folder is Parquet). Ids keep their type (ints,
    strings, ...). On the workers of ``client`` (or of the active client) a Dask DataFrame whose
    partitions each worker read (and holds), else a pandas DataFrame.
    """
    return read_table(path, COLUMNS, columns, format, reading_client(client))


def read_table(path, names, columns=None, format=None, client=None):
    """The columns ``columns`` of a Parquet or CSV table (default: those called ``names``, else
    the first ``len(names)``), renamed ``names``: a Dask DataFrame read on the workers of
    ``client`` when given, else a pandas DataFrame."""
    pandas = require_pandas()
    path = os.fspath(path)
    format = format or ("csv" if path.lower().endswith((".csv", ".csv.gz", ".tsv")) else "parquet")
    if format not in ("parquet", "csv"):
        raise ValueError(f"format must be 'parquet' or 'csv', got {format!r}")
    check_regular_file(path, folder=format == "parquet")
    sep = "\t" if path.endswith(".tsv") else ","
    header = "infer" if format == "parquet" or _has_header(path, sep) else None
    if client is not None:
        import dask.dataframe as dd

        blocksize = None if path.endswith(".gz") else CHUNK_BYTES
        frame = (dd.read_parquet(path) if format == "parquet" else
                 dd.read_csv(path, sep=sep, blocksize=blocksize, header=header))
    else:
        try:
            frame = (pandas.read_parquet(path) if format == "parquet" else
                     pandas.read_csv(path, sep=sep, header=header))
        except pandas.errors.ParserError as error:
            raise MalformedFileError(path, None, str(error)) from None
    if header is None and columns is not None and not set(columns) <= set(frame.columns):
        raise ValueError(f"{path} has no header (its first line is data): give columns by "
                         f"position, e.g. columns={list(range(len(names)))}")
    frame = _named(frame, names, columns, path)
    return client.persist(frame) if client is not None else frame


def _has_header(path, sep):
    """Whether the first line of a CSV file names its columns: not when a field is a number
    (a file of ratings without a header starts with one)."""
    with fsspec.open(path, "rt", compression="infer", errors="replace") as file:
        first = file.readline()
    return not any(_NUMBER.fullmatch(field.strip('"')) for field in first.rstrip("\r\n").split(sep))


def _named(frame, names, columns, path):
    found = list(frame.columns)
    if columns is None:
        columns = names if set(names) <= set(found) else found[:len(names)]
    if len(columns) != len(names) or not set(columns) <= set(found):
        raise ValueError(f"{path}: need the ({', '.join(names)}) columns {list(columns)}, the "
                         f"file has columns {found}")
    return frame[list(columns)].rename(columns=dict(zip(columns, names)))


def is_triplet_frame(X):
    """Whether X is a pandas or Dask DataFrame with ``user``, ``item`` and ``rating`` columns."""
    columns = getattr(X, "columns", None)
    return columns is not None and hasattr(X, "dtypes") and set(COLUMNS) <= set(columns)


def ratings_of_frame(frame, client=None, duplicates="error"):
    """The :class:`~dask_strads.RatingsMatrix` of a table of triplets. For a Dask DataFrame on
    a cluster (``client``, or the active one) its ``matrix`` is a Dask array of CSR row blocks,
    each assembled on a worker: only the distinct ids reach the client."""
    if not hasattr(frame, "to_delayed"):  # pandas
        return RatingsMatrix.from_triplets(frame["user"].to_numpy(), frame["item"].to_numpy(),
                                           frame["rating"].to_numpy(), duplicates)
    client = reading_client(client)
    if client is None:
        return ratings_of_frame(frame.compute(), None, duplicates)
    require_pandas()
    distinct_users, distinct_items, missing, bad_ratings, n_ratings = client.compute(
        [frame["user"].drop_duplicates(split_out=1), frame["item"].drop_duplicates(split_out=1),
         frame["user"].isna().sum() + frame["item"].isna().sum(),
         frame["rating"].map_partitions(_non_finite, meta=("rating", bool)).sum(),
         frame["rating"].size], sync=True)
    if missing:
        raise ValueError(f"{missing} missing user or item ids (NaN or None)")
    if bad_ratings:
        raise ValueError(f"ratings must be finite numbers: {bad_ratings} are not")
    if n_ratings == 0:
        raise ValueError("no ratings: the table is empty")
    user_ids, _ = _unique(np.asarray(distinct_users), "users")
    item_ids, _ = _unique(np.asarray(distinct_items), "items")
    ids = dask.delayed(user_ids), dask.delayed(item_ids)
    parts = [dask.delayed(_coordinates)(part, *ids) for part in frame.to_delayed()]
    matrix = coordinates_matrix(client, parts, (len(user_ids), len(item_ids)), duplicates)
    return RatingsMatrix(matrix=matrix, user_ids=user_ids, item_ids=item_ids)


def _non_finite(ratings):
    import pandas

    return ~np.isfinite(pandas.to_numeric(ratings, errors="coerce").astype(np.float64))


def _coordinates(part, user_ids, item_ids):
    import pandas

    return (pandas.Index(user_ids).get_indexer(part["user"]),
            pandas.Index(item_ids).get_indexer(part["item"]),
            part["rating"].to_numpy(dtype=np.float64))
