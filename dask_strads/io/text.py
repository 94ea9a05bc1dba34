"""Text files cut into byte ranges of whole lines, each range read where it is parsed."""
import os

import fsspec

#: Bytes of text a task reads and parses at most.
CHUNK_BYTES = 32 * 2**20


class MalformedFileError(ValueError):
    """A line of a data file that cannot be read: names the file, the line and the reason."""

    def __init__(self, path, line_number, reason):
        where = f"{path}, line {line_number}" if line_number is not None else f"{path}"
        super().__init__(f"{where}: {reason}")
        self.path, self.line_number, self.reason = path, line_number, reason

    def __reduce__(self):  # raised in a task, rebuilt in the client
        return type(self), (self.path, self.line_number, self.reason)


def is_compressed(path):
    return fsspec.utils.infer_compression(os.fspath(path)) is not None


def byte_ranges(path, n_parts=1, chunk_bytes=CHUNK_BYTES, start=0):
    """``(offset, length)`` ranges covering ``path`` from byte ``start``: at least ``n_parts``
    (one per worker) unless the file is small, at most ``chunk_bytes`` each; a compressed file
    is one range (it cannot be read from the middle)."""
    if is_compressed(path):
        return [(start, -1)]
    fs, local = fsspec.core.url_to_fs(os.fspath(path))
    size = fs.size(local) - start
    count = max(1, min(max(n_parts, -(-size // chunk_bytes)), size // 4096 or 1))
    edges = [start + size * i // count for i in range(count + 1)]
    return [(lo, hi - lo) for lo, hi in zip(edges[:-1], edges[1:])]


def read_range(path, offset, length):
    """The whole lines that start in ``[offset, offset + length)`` (all of the file from
    ``offset`` when ``length`` is -1), decompressed if the name says so."""
    with fsspec.open(os.fspath(path), "rb", compression="infer") as file:
        if offset > 0:
            file.seek(offset - 1)
            if file.read(1) != b"\n":
                file.readline()  # the line that started before: the previous range's
        start = file.tell()
        if length < 0:
            return file.read()
        text = file.read(max(0, offset + length - start))
        if text and not text.endswith(b"\n"):
            text += file.readline()
        return text


def line_number_at(path, offset):
    """The 1-based number of the first line :func:`read_range` reads from ``offset`` (used for
    error messages only: it reads the file up to there)."""
    if offset <= 0:
        return 1
    with fsspec.open(os.fspath(path), "rb", compression="infer") as file:
        count, left, last = 1, offset, b"\n"
        while left > 0:
            block = file.read(min(left, 2**24))
            if not block:
                break
            count += block.count(b"\n")
            left -= len(block)
            last = block[-1:]
    return count + (last != b"\n")  # a range starting mid-line begins at the next line
