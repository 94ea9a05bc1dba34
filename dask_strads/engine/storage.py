"""Writing block states and models to files and reading them back, without pickle.

A value (the programs' dataclasses and objects, tuples, lists, dicts, numpy arrays of numbers or
strings, scipy.sparse matrices and scalars) is stored as one ``.npz`` file (:mod:`.archive`):
its arrays, and a JSON description of the structure around them, with a SHA-256 digest of both
if asked. Reading never unpickles and rebuilds only classes defined in ``dask_strads``: a
damaged, modified (when it has a digest) or foreign file raises :class:`StorageError`.
"""
import dataclasses
import importlib

import numpy as np
import scipy.sparse as sp

from ..local_files import NotARegularFile, check_regular_file
from .archive import ForeignFile, StorageError, read, write

__all__ = ["ForeignFile", "StorageError", "load", "save"]


def save(value, path, digest=False):
    """Write ``value`` to ``path`` (``.npz``; a local path or an fsspec URL), atomically: a
    reader sees all of it or nothing. ``digest``: also store a SHA-256 digest of it (which
    costs a pass over the arrays) for :func:`load` to check."""
    arrays = []
    structure = _encode(value, arrays)
    write(path, structure, arrays, digest)


def load(path, require_digest=False):
    """The value stored at ``path``, checked against its digest when it has one; with
    ``require_digest`` a file without one is refused."""
    try:
        check_regular_file(path)
    except NotARegularFile as error:
        raise StorageError(str(error)) from None
    try:
        structure, arrays = read(path, require_digest)
        return _decode(structure, arrays)
    except StorageError:
        raise
    except Exception as error:
        raise StorageError(f"{path} cannot be read: {error}") from error


def _encode(value, arrays):
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return {"strings": _encode(_as_strings(value), arrays)}
        arrays.append(value)
        return {"array": len(arrays) - 1}
    if sp.issparse(value):
        value = value.tocsr() if value.format not in ("csr", "csc") else value
        return {"sparse": value.format, "shape": list(value.shape),
                "parts": [_encode(a, arrays) for a in (value.data, value.indices, value.indptr)]}
    if isinstance(value, np.generic):
        return {"scalar": value.item(), "dtype": value.dtype.str}
    if dataclasses.is_dataclass(value) and _ours(type(value).__module__):
        cls = type(value)
        return {"dataclass": f"{cls.__module__}:{cls.__qualname__}",
                "fields": {f.name: _encode(getattr(value, f.name), arrays)
                           for f in dataclasses.fields(value)}}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, arrays) for v in value]}
    if isinstance(value, list):
        return {"list": [_encode(v, arrays) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    if _ours(type(value).__module__) and hasattr(value, "__dict__"):
        cls = type(value)
        return {"object": f"{cls.__module__}:{cls.__qualname__}",
                "attributes": {k: _encode(v, arrays) for k, v in vars(value).items()}}
    cls = type(value)
    raise TypeError(f"cannot store a {cls.__module__}.{cls.__qualname__}: files hold numpy "
                    "arrays, scipy.sparse matrices, scalars, str, None, tuples, lists, dicts and "
                    "dask_strads classes (only those are read back without pickle)")


def _ours(module):
    return module == "dask_strads" or module.startswith("dask_strads.")


def _as_strings(values):
    """An object array of str as a fixed-width str array: object arrays would need pickle."""
    if not all(isinstance(v, str) for v in values.flat):
        raise TypeError("cannot store an object array of anything but str")
    return values.astype(str)


def _decode(node, arrays):
    if "array" in node:
        return arrays[node["array"]]
    if "strings" in node:
        return _decode(node["strings"], arrays).astype(object)
    if "sparse" in node:
        matrix = {"csr": sp.csr_matrix, "csc": sp.csc_matrix}[node["sparse"]]
        return matrix(tuple(_decode(part, arrays) for part in node["parts"]),
                      shape=tuple(node["shape"]))
    if "scalar" in node:
        return np.dtype(node["dtype"]).type(node["scalar"])
    if "dataclass" in node:
        cls = dask_strads_class(node["dataclass"])
        if not dataclasses.is_dataclass(cls):
            raise StorageError(f"{node['dataclass']} is not a dataclass")
        return cls(**{k: _decode(v, arrays) for k, v in node["fields"].items()})
    if "object" in node:
        cls = dask_strads_class(node["object"])
        value = cls.__new__(cls)
        vars(value).update({k: _decode(v, arrays) for k, v in node["attributes"].items()})
        return value
    if "tuple" in node:
        return tuple(_decode(v, arrays) for v in node["tuple"])
    if "list" in node:
        return [_decode(v, arrays) for v in node["list"]]
    if "dict" in node:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in node["dict"]}
    if "value" in node:
        return node["value"]
    raise StorageError(f"unknown node {sorted(node)}")


def dask_strads_class(path):
    """The class ``module:qualname`` names, refused unless defined in dask_strads."""
    module, name = path.split(":")
    if not _ours(module):
        raise StorageError(f"refusing to build {path}: not a dask_strads class")
    return getattr(importlib.import_module(module), name)
