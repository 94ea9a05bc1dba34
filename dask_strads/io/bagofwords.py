"""UCI bag-of-words files: ``docword.NAME.txt[.gz]`` and its ``vocab.NAME.txt``."""
import os
import posixpath
import re

import fsspec
import numpy as np

from ..local_files import check_regular_file
from .coordinates import read_coordinates
from .placement import reading_client
from .text import MalformedFileError


def read_bag_of_words(path, vocabulary="auto", client=None):
    """``(counts, vocabulary)`` of a UCI bag-of-words corpus.

    ``path`` holds three header lines (documents D, words W, entries NNZ), then one
    ``document word count`` line per entry, 1-based. ``counts`` is D x W: a Dask array of CSR
    row blocks read on the workers of ``client`` (or of the active client), else a CSR
    matrix. ``vocabulary``: the path of a word list (one word a line, W lines), "auto" for
    ``vocab.NAME.txt`` beside ``docword.NAME.txt`` when it exists, or None; the words come back
    as an array of str (None without a list).
    """
    check_regular_file(path)
    client = reading_client(client)
    (n_documents, n_words, n_entries), data_offset = _header(path)
    counts = read_coordinates(path, data_offset, (n_documents, n_words), n_entries, "integer",
                              client)
    if vocabulary == "auto":
        vocabulary = _vocabulary_beside(path)
    words = None if vocabulary is None else read_vocabulary(vocabulary)
    if words is not None and len(words) != n_words:
        raise MalformedFileError(vocabulary, None, f"{len(words)} words, but {path} has "
                                 f"{n_words}")
    return counts, words


def read_vocabulary(path):
    """The words of a vocabulary file, one a line, as an array of str."""
    check_regular_file(path)
    with fsspec.open(os.fspath(path), "rt", encoding="utf-8", compression="infer") as file:
        return np.array([line.rstrip("\r\n") for line in file], dtype=object)


def _vocabulary_beside(path):
    folder, name = posixpath.split(os.fspath(path))
    match = re.fullmatch(r"docword\.(.+)\.txt(\.\w+)?", name)
    if not match:
        return None
    candidate = posixpath.join(folder, f"vocab.{match.group(1)}.txt")
    fs, local = fsspec.core.url_to_fs(candidate)
    return candidate if fs.exists(local) else None


def _header(path):
    with fsspec.open(os.fspath(path), "rb", compression="infer") as file:
        sizes = []
        for number, name in enumerate(("documents", "words", "entries"), start=1):
            line = file.readline()
            try:
                sizes.append(int(line))
                if sizes[-1] < 0:
                    raise ValueError
            except ValueError:
                raise MalformedFileError(path, number, f"expected the number of {name} (a "
                                         f"bag-of-words header), got "
                                         f"{line.decode(errors='replace').strip()!r}") from None
        return sizes, file.tell()
