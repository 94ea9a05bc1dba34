"""Writing block states and models to files and reading them back, without pickle.

A value (the programs' dataclasses and objects, tuples, lists, dicts, numpy arrays of numbers or
strings, scipy.sparse matrices and scalars) is stored as one ``.npz`` file (:mod:`.archive`):
its arrays, and a JSON description of the structure around them, with a SHA-256 digest of both
if asked. Reading never unpickles, and builds only the classes of :data:`STORABLE` the
reader allows (model files: those of the estimator's fitted state); a damaged, modified (when
it has a digest) or foreign file, or one naming another class, raises :class:`StorageError`.
"""
import dataclasses
import importlib

import numpy as np
import scipy.sparse as sp

from ..local_files import NotARegularFile, check_regular_file
from .archive import ForeignFile, StorageError, read, write

__all__ = ["STORABLE", "ForeignFile", "StorageError", "decode", "entries", "load", "read_parts",
           "save"]


def save(value, path, digest=False):
    """Write ``value`` to ``path`` (``.npz``; a local path or an fsspec URL), atomically: a
    reader sees all of it or nothing. ``digest``: also store a SHA-256 digest of it (which
    costs a pass over the arrays) for :func:`load` to check."""
    arrays: list[np.ndarray] = []
    structure = _encode(value, arrays)
    write(path, structure, arrays, digest)


#: The classes files may hold, by module: the programs' block states and shared values (disk
#: checkpoints), the engine's records and the objects fitted estimators keep (model files).
#: Reading builds no other class and imports no other module; writing refuses any other
#: dask_strads class, so that a file that can be written can be read back.
STORABLE = {
    "dask_strads.engine.history": ("FitStats", "History"),
    "dask_strads.estimators.sampling_schedule": ("SamplingSchedule",),
    "dask_strads.engine.tasks": ("Pulled",),
    "dask_strads.programs.elastic_net": ("BlockState", "PackedState", "Shared"),
    "dask_strads.programs.elastic_net_path": ("PathShared",),
    "dask_strads.programs.implicit_mf": ("ImplicitMFProgram",),
    "dask_strads.programs.lasso": ("BlockState", "Pending", "Residual"),
    "dask_strads.programs.lda": ("ShardState", "TopicTotals", "WordBlock"),
    "dask_strads.programs.mf": ("BlockObjective", "MFProgram", "SharedFactor", "Side"),
    "dask_strads.programs.prox_newton": ("BlockState", "Margins"),
}
STORABLE_NAMES = frozenset(f"{module}:{name}" for module, names in STORABLE.items()
                           for name in names)
#: The kinds of numpy scalars a file may hold (no strings of any width, no void).
SCALAR_KINDS = "biuf"


def load(path, require_digest=False, classes=STORABLE_NAMES):
    """The value stored at ``path``, checked against its digest when it has one; with
    ``require_digest`` a file without one is refused. ``classes``: the names
    (``module:qualname``) of the classes it may hold, some of :data:`STORABLE`."""
    structure, arrays = read_parts(path, require_digest)
    try:
        return decode(structure, arrays, classes)
    except StorageError as error:
        raise StorageError(f"{path} cannot be read: {error}") from None


def read_parts(path, require_digest=False):
    """``(structure, arrays)`` of the file at ``path``, checked (see :mod:`.archive`), for
    :func:`decode`."""
    try:
        check_regular_file(path)
    except NotARegularFile as error:
        raise StorageError(str(error)) from None
    try:
        return read(path, require_digest)
    except StorageError:
        raise
    except Exception as error:
        raise StorageError(f"{path} cannot be read: {error}") from error


def decode(node, arrays, classes):
    """The value a node of :func:`read_parts`'s structure describes, building only the
    ``classes`` named (a StorageError for any other, or for a node that describes nothing)."""
    classes = frozenset(classes)
    if not classes <= STORABLE_NAMES:
        raise ValueError(f"not classes files hold: {sorted(classes - STORABLE_NAMES)}")
    try:
        return _decode(node, arrays, classes)
    except StorageError:
        raise
    except Exception as error:  # a node of the wrong shape
        raise StorageError(f"{type(error).__name__}: {error}") from error


def entries(node):
    """``{key: node}`` of a node of a dict whose keys are plain values, its values left to
    :func:`decode`."""
    if not (isinstance(node, dict) and isinstance(node.get("dict"), list)):
        raise StorageError("expected a dict")
    found = {}
    for pair in node["dict"]:
        key, value = pair
        if not (isinstance(key, dict) and set(key) == {"value"}) or key["value"] in found:
            raise StorageError(f"a dict key is no plain value, or repeated: {key!r}")
        found[key["value"]] = value
    return found


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
    if isinstance(value, np.generic) and value.dtype.kind in SCALAR_KINDS:
        return {"scalar": value.item(), "dtype": value.dtype.str}
    if dataclasses.is_dataclass(value) and _ours(type(value).__module__):
        return {"dataclass": _storable_name(type(value)),
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
        return {"object": _storable_name(type(value)),
                "attributes": {k: _encode(v, arrays) for k, v in vars(value).items()}}
    cls = type(value)
    raise TypeError(f"cannot store a {cls.__module__}.{cls.__qualname__}: files hold numpy "
                    "arrays, scipy.sparse matrices, numeric numpy scalars, str, None, tuples, "
                    "lists, dicts and the dask_strads classes of storage.STORABLE (only those "
                    "are read back without pickle)")


def _ours(module):
    return module == "dask_strads" or module.startswith("dask_strads.")


def _storable_name(cls):
    name = f"{cls.__module__}:{cls.__qualname__}"
    if name not in STORABLE_NAMES:
        raise TypeError(f"cannot store a {cls.__module__}.{cls.__qualname__}: not one of the "
                        "dask_strads classes files hold (add it to storage.STORABLE)")
    return name


def _as_strings(values):
    """An object array of str as a fixed-width str array: object arrays would need pickle."""
    if not all(isinstance(v, str) for v in values.flat):
        raise TypeError("cannot store an object array of anything but str")
    return values.astype(str)


#: Each kind of node, and the keys it has.
_NODES = {"array": {"array"}, "strings": {"strings"}, "sparse": {"sparse", "shape", "parts"},
          "scalar": {"scalar", "dtype"}, "dataclass": {"dataclass", "fields"},
          "object": {"object", "attributes"}, "tuple": {"tuple"}, "list": {"list"},
          "dict": {"dict"}, "value": {"value"}}
_SPARSE = {"csr": sp.csr_matrix, "csc": sp.csc_matrix}
_PLAIN = (type(None), bool, int, float, str)


def _decode(node, arrays, classes):
    kind = next((k for k, keys in _NODES.items() if isinstance(node, dict) and set(node) == keys),
                None)
    if kind is None:
        raise StorageError(f"unknown node {str(node)[:80]}")
    if kind == "array":
        index = node["array"]
        if type(index) is not int or not 0 <= index < len(arrays):
            raise StorageError(f"no array {index!r} in the file")
        return arrays[index]
    if kind == "strings":
        strings = _decode(node["strings"], arrays, classes)
        if not (isinstance(strings, np.ndarray) and strings.dtype.kind == "U"):
            raise StorageError("a strings node holds no array of str")
        return strings.astype(object)
    if kind == "sparse":
        return _sparse(node, [_decode(part, arrays, classes) for part in node["parts"]])
    if kind == "scalar":
        dtype, value = np.dtype(node["dtype"]), node["scalar"]
        if dtype.kind not in SCALAR_KINDS or not isinstance(value, (bool, int, float)):
            raise StorageError(f"a scalar node of dtype {dtype} holds {value!r}: only numbers")
        return dtype.type(value)
    if kind == "dataclass":
        cls = _class(node["dataclass"], classes)
        return cls(**{k: _decode(v, arrays, classes) for k, v in _fields(node["fields"])})
    if kind == "object":
        cls = _class(node["object"], classes)
        value = cls.__new__(cls)
        vars(value).update({k: _decode(v, arrays, classes)
                            for k, v in _fields(node["attributes"])})
        return value
    if kind in ("tuple", "list"):
        if not isinstance(node[kind], list):
            raise StorageError(f"a {kind} node holds no list")
        items = [_decode(v, arrays, classes) for v in node[kind]]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {_decode(k, arrays, classes): _decode(v, arrays, classes) for k, v in node["dict"]}
    if not isinstance(node["value"], _PLAIN):
        raise StorageError(f"a value node holds {type(node['value']).__name__}: only plain "
                           "values")
    return node["value"]


def _fields(described):
    if not (isinstance(described, dict) and all(isinstance(k, str) for k in described)):
        raise StorageError("the fields of a dataclass or object must be named by str")
    return described.items()


def _sparse(node, parts):
    """A CSR or CSC matrix from its parts, its structure checked whole (indices within the
    shape, pointers in order): an unchecked one would send scipy's C code outside them."""
    shape = node["shape"]
    if (node["sparse"] not in _SPARSE or len(parts) != 3
            or not all(isinstance(part, np.ndarray) for part in parts)
            or not (isinstance(shape, list) and len(shape) == 2
                    and all(type(n) is int and n >= 0 for n in shape))):
        raise StorageError(f"a sparse node must hold a format (csr or csc), a shape of two "
                           f"sizes and three arrays, got {node['sparse']!r}, {shape!r}")
    matrix = _SPARSE[node["sparse"]](tuple(parts), shape=tuple(shape))
    matrix.check_format(full_check=True)
    return matrix


def _class(name, classes):
    """The class ``module:qualname`` names, if it is one of ``classes``: only a module of
    :data:`STORABLE` is ever imported."""
    if not isinstance(name, str) or name not in classes:
        raise StorageError(f"refusing to build {name}: not a dask_strads class this file may "
                           "hold")
    module, qualname = name.split(":")
    return getattr(importlib.import_module(module), qualname)
