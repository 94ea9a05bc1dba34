"""Writing block states to files and reading them back, without pickle.

A value (the programs' dataclasses, tuples, lists, dicts, numpy arrays and scalars) is stored as
one ``.npz`` file: its arrays, and a JSON description of the structure around them. Reading
never unpickles (``allow_pickle=False``) and rebuilds only dataclasses defined in
``dask_strads``: a damaged or foreign file raises :class:`StorageError`.
"""
import dataclasses
import importlib
import json
import os

import fsspec
import numpy as np

FORMAT = 1


class StorageError(ValueError):
    """A stored value cannot be read: damaged, foreign, or of another format."""


def save(value, path):
    """Write ``value`` to ``path`` (``.npz``; a local path or an fsspec URL), atomically: a
    reader sees all of it or nothing."""
    arrays = []
    structure = _encode(value, arrays)
    payload = {f"array_{i}": a for i, a in enumerate(arrays)}
    payload["structure"] = np.array(json.dumps({"format": FORMAT, "value": structure}))
    fs, path = fsspec.core.url_to_fs(os.fspath(path))
    with fs.open(f"{path}.partial", "wb") as file:
        np.savez(file, **payload)
    fs.mv(f"{path}.partial", path)


def load(path):
    try:
        with fsspec.open(os.fspath(path), "rb") as file, \
                np.load(file, allow_pickle=False) as stored:
            described = json.loads(str(stored["structure"]))
            if described.get("format") != FORMAT:
                raise StorageError(f"{path} is of format {described.get('format')!r}, this "
                                   f"version reads format {FORMAT}")
            arrays = {int(name[6:]): stored[name] for name in stored.files
                      if name.startswith("array_")}
            return _decode(described["value"], arrays)
    except StorageError:
        raise
    except Exception as error:
        raise StorageError(f"{path} cannot be read: {error}") from error


def _encode(value, arrays):
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"array": len(arrays) - 1}
    if isinstance(value, np.generic):
        return {"scalar": value.item(), "dtype": value.dtype.str}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
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
    raise TypeError(f"cannot store a {type(value).__name__}")


def _decode(node, arrays):
    if "array" in node:
        return arrays[node["array"]]
    if "scalar" in node:
        return np.dtype(node["dtype"]).type(node["scalar"])
    if "dataclass" in node:
        module, name = node["dataclass"].split(":")
        if module != "dask_strads" and not module.startswith("dask_strads."):
            raise StorageError(f"refusing to build {node['dataclass']}: not a dask_strads class")
        cls = getattr(importlib.import_module(module), name)
        if not dataclasses.is_dataclass(cls):
            raise StorageError(f"{node['dataclass']} is not a dataclass")
        return cls(**{k: _decode(v, arrays) for k, v in node["fields"].items()})
    if "tuple" in node:
        return tuple(_decode(v, arrays) for v in node["tuple"])
    if "list" in node:
        return [_decode(v, arrays) for v in node["list"]]
    if "dict" in node:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in node["dict"]}
    if "value" in node:
        return node["value"]
    raise StorageError(f"unknown node {sorted(node)}")
