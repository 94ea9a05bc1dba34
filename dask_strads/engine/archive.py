"""The file :mod:`.storage` keeps a value in: an ``.npz`` archive (a zip of uncompressed ``.npy``
members, as ``numpy.savez`` writes it) of the value's arrays, ``array_0.npy`` ..., and
``structure.npy``, a JSON description of the rest with a SHA-256 digest of both if asked.

Reading believes nothing the file declares before checking it. The member names, each
member's size in the zip directory and each ``.npy`` header must agree, and the sizes declared
must stay under a limit from the file's own size (a file written here declares about its
size; a zip bomb, a few MB declaring GB of zeros, does not) and an absolute cap: only then is
an array made, of its declared size, and read into a chunk at a time, each chunk hashed as it
is read. Object (pickled) arrays are never read.
"""
import hashlib
import json
import math
import os
import re
import zipfile

import numpy as np

FORMAT = 1
#: The members of a file may declare at most EXPANSION times its size plus SLACK bytes...
EXPANSION = 4
SLACK = 2**20
#: ... and never more than MAX_BYTES.
MAX_BYTES = 2**36
#: Bytes read and hashed at a time.
CHUNK = 2**20

STRUCTURE = "structure.npy"
_ARRAY = re.compile(r"array_(\d+)\.npy")
_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0,
            (2, 0): np.lib.format.read_array_header_2_0}


class StorageError(ValueError):
    """A stored value cannot be read: damaged, foreign, or of another format."""


class ForeignFile(StorageError):
    """A file that was not written by :func:`write` at all (``reason`` says why not)."""

    def __init__(self, path, reason):
        super().__init__(f"{path} is not a dask_strads file: {reason}")
        self.path, self.reason = path, reason


def write(path, value, arrays, digest=False):
    """Write the JSON-able ``value`` and its ``arrays`` to ``path`` (a local path or an fsspec
    URL) atomically: a reader sees all of it or nothing; with ``digest`` a SHA-256 digest
    of both too."""
    described = {"format": FORMAT, "value": value}
    if digest:
        described["sha256"] = _digest(value, arrays)
    payload = {f"array_{i}": a for i, a in enumerate(arrays)}
    payload["structure"] = np.array(json.dumps(described))
    import fsspec  # here: a fit in this process writes no file

    fs, path = fsspec.core.url_to_fs(os.fspath(path))
    with fs.open(f"{path}.partial", "wb") as file:
        np.savez(file, **payload)
    fs.mv(f"{path}.partial", path)


def read(path, require_digest=False):
    """``(value, arrays)`` of the file at ``path``, checked against its digest when it has one
    (``require_digest``: a file without one is refused)."""
    import fsspec

    with fsspec.open(os.fspath(path), "rb") as file:
        if not zipfile.is_zipfile(file):
            raise ForeignFile(path, "it is no .npz (zip) archive")
        size = file.seek(0, os.SEEK_END)
        file.seek(0)
        with zipfile.ZipFile(file) as archive:
            structure, *members = _members(archive, path, size)
            described = json.loads(str(_read_array(archive, structure, path)))
            if not isinstance(described, dict) or described.get("format") != FORMAT:
                raise StorageError(f"{path} is of format {_format_of(described)!r}, this "
                                   f"version reads format {FORMAT}")
            expected = described.get("sha256")
            if expected is None and require_digest:
                raise StorageError(f"{path} has no SHA-256 digest to check it against")
            digest = None if expected is None else _structure_digest(described["value"])
            arrays = [_read_array(archive, member, path, digest) for member in members]
    if digest is not None and digest.hexdigest() != expected:
        raise StorageError(f"{path} was modified or damaged: its content does not match the "
                           "SHA-256 digest written with it")
    return described["value"], arrays


def _format_of(described):
    return described.get("format") if isinstance(described, dict) else None


def _members(archive, path, size):
    """The archive's structure member, then its arrays in order, once their names and sizes
    are checked."""
    infos = archive.infolist()
    names = [info.filename for info in infos]
    if STRUCTURE not in names:
        raise ForeignFile(path, "it is an .npz archive without a structure member")
    indices = sorted(int(match.group(1)) for match in map(_ARRAY.fullmatch, names) if match)
    if len(set(names)) != len(names) or indices != list(range(len(names) - 1)):
        raise StorageError(f"{path} holds members {names[:8]}: expected {STRUCTURE} and "
                           "array_0.npy, array_1.npy, ... once each")
    declared = sum(info.file_size for info in infos)
    limit = min(EXPANSION * size + SLACK, MAX_BYTES)
    if declared > limit:
        raise StorageError(
            f"{path} declares {declared:,} bytes of arrays in a file of {size:,} bytes, more "
            f"than the {limit:,} it may (a file written by dask_strads declares about its own "
            "size): a compressed or crafted archive (zip bomb), refused before reading it")
    by_name = {info.filename: info for info in infos}
    return [by_name[STRUCTURE]] + [by_name[f"array_{i}.npy"] for i in indices]


def _read_array(archive, info, path, digest=None):
    """The array of one member, read a chunk at a time once its header agrees with the size
    the zip directory declares; hashed into ``digest`` as :func:`_digest` does."""
    where = f"{path}: member {info.filename}"
    with archive.open(info) as member:
        try:
            shape, fortran, dtype = _HEADERS[np.lib.format.read_magic(member)](member)
        except (KeyError, ValueError) as error:
            raise StorageError(f"{where} is no .npy array of format 1 or 2 ({error})") from None
        if dtype.hasobject:
            raise StorageError(f"{where} is an object array, which would need pickle: refused")
        nbytes = math.prod(shape) * dtype.itemsize
        held = info.file_size - member.tell()
        if min(shape, default=0) < 0 or nbytes != held:
            raise StorageError(f"{where} declares an array {shape} of {dtype} ({nbytes:,} "
                               f"bytes) and holds {held:,} bytes")
        array = np.empty(shape, dtype, order="F" if fortran else "C")
        if digest is not None:
            digest.update(f"{dtype.str}{shape}".encode())
        for piece in _pieces(array.T if fortran else array):
            if member.readinto(piece) != len(piece):
                raise StorageError(f"{where} ends before its array does")
            if digest is not None and not fortran:
                digest.update(piece)
    if digest is not None and fortran:  # the digest is of the bytes in C order
        for piece in _pieces(array):
            digest.update(piece)
    return array


def _pieces(array):
    """The bytes of ``array`` in C order, CHUNK bytes at a time: views of it when it is
    C-contiguous (so that they can be read into), else copies of a few of its rows."""
    if array.nbytes == 0:
        return
    if array.flags.c_contiguous:
        flat = array.reshape(-1).view(np.uint8)
        for start in range(0, len(flat), CHUNK):
            yield flat[start:start + CHUNK]
        return
    rows = max(1, CHUNK // array[0].nbytes)
    for start in range(0, len(array), rows):
        yield np.ascontiguousarray(array[start:start + rows]).reshape(-1).view(np.uint8)


def _structure_digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode())


def _digest(value, arrays):
    """SHA-256 of the JSON of ``value`` (keys sorted), then of each array's dtype, shape and
    bytes in C order."""
    digest = _structure_digest(value)
    for array in arrays:
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        for piece in _pieces(array):
            digest.update(piece)
    return digest.hexdigest()
