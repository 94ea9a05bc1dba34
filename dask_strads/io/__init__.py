"""Readers of standard data files, returning what the estimators take.

With a Dask client (given, or the active one) each worker reads its own part of the file
(byte ranges of whole lines, Parquet/CSV partitions, row blocks) and keeps it: the results are
Dask arrays / DataFrames held on the workers, and only small summaries reach the client.
Without one they are read in this process into numpy, scipy.sparse or pandas objects.

=============  =========================================  ========================================
format         files                                      reader (returns)
=============  =========================================  ========================================
svmlight       ``.svm``, ``.libsvm``, ``.svmlight``       :func:`read_svmlight` (X, y)
matrixmarket   ``.mtx``                                   :func:`read_matrix_market` (X)
bagofwords     ``docword.NAME.txt`` (+ ``vocab.NAME.txt``)  :func:`read_bag_of_words` (X, words)
parquet, csv   ``.parquet``, ``.pq``, a folder; ``.csv``  :func:`read_triplets` (user/item/rating)
npz, npy       ``.npz`` (scipy.sparse), ``.npy``          :func:`read_npz`, :func:`read_npy` (X)
=============  =========================================  ========================================

Text formats may be compressed (``.gz``, ``.bz2``, ``.xz``); paths may be fsspec URLs.
"""
import os
from typing import Callable, NamedTuple

import fsspec

from ..log import logger
from .bagofwords import read_bag_of_words, read_vocabulary
from .matrixmarket import read_matrix_market
from .numpy_files import read_npy, read_npz
from .placement import reading_client
from .svmlight import read_svmlight
from .text import MalformedFileError
from .triplets import ratings_of_frame, read_table, read_triplets

__all__ = ["Data", "FORMATS", "Format", "MalformedFileError", "format_of", "ratings_of_frame",
           "read", "read_bag_of_words", "read_matrix_market", "read_npy", "read_npz",
           "read_svmlight", "read_table", "read_triplets", "read_vocabulary"]


class Data(NamedTuple):
    """What :func:`read` found: ``X`` (a matrix, or a user/item/rating table), the targets
    ``y`` (svmlight) and the ``vocabulary`` (bag-of-words with a word list), else None."""

    X: object
    y: object = None
    vocabulary: object = None


class Format(NamedTuple):
    """A file format: ``read(path, client)`` returning :class:`Data`, the name endings that say
    it (``extensions``), and whether it is read as a table of (user, item, rating) rows."""

    read: Callable
    extensions: tuple = ()
    table: bool = False


def _counts_and_words(path, client):
    counts, words = read_bag_of_words(path, client=client)
    return Data(counts, None, words)


#: The formats :func:`read` reads (a bag of words is told by its name, ``docword.NAME.txt``).
FORMATS = {
    "svmlight": Format(lambda path, client: Data(*read_svmlight(path, client=client)),
                       (".svm", ".libsvm", ".svmlight")),
    "matrixmarket": Format(lambda path, client: Data(read_matrix_market(path, client=client)),
                           (".mtx",)),
    "bagofwords": Format(_counts_and_words),
    "parquet": Format(lambda path, client: Data(read_triplets(path, format="parquet",
                                                              client=client)),
                      (".parquet", ".pq"), table=True),
    "csv": Format(lambda path, client: Data(read_triplets(path, format="csv", client=client)),
                  (".csv", ".tsv"), table=True),
    "npz": Format(lambda path, client: Data(read_npz(path, client=client)), (".npz",)),
    "npy": Format(lambda path, client: Data(read_npy(path, client=client)), (".npy",)),
}
_EXTENSIONS = {extension: name for name, format in FORMATS.items()
               for extension in format.extensions}


def format_of(path):
    """The format of ``path`` from its name (compression suffixes aside); a folder is Parquet."""
    name = os.path.basename(os.fspath(path).rstrip("/"))
    stem, suffix = os.path.splitext(name)
    if fsspec.utils.infer_compression(name) is not None:
        stem, suffix = os.path.splitext(stem)
    if stem.startswith("docword.") and suffix == ".txt":
        return "bagofwords"
    if suffix.lower() in _EXTENSIONS:
        return _EXTENSIONS[suffix.lower()]
    fs, local = fsspec.core.url_to_fs(os.fspath(path))
    if fs.isdir(local):
        return "parquet"
    raise ValueError(f"cannot tell the format of {path} from its name: give it (one of "
                     f"{', '.join(FORMATS)})")


def read(path, format=None, client=None):
    """:class:`Data` of the file at ``path`` in ``format`` (default: from its name)."""
    format = format or format_of(path)
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}: one of {', '.join(FORMATS)}")
    client = reading_client(client)
    logger.info("reading %s (%s) %s", path, format,
                "on the workers" if client is not None else "in this process")
    return FORMATS[format].read(path, client)
