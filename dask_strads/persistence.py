"""Saving a fitted estimator to one file and loading it back, without pickle.

A model file is an ``.npz`` archive written by :mod:`dask_strads.engine.storage`: the fitted
arrays as ``.npy`` members, and a JSON member describing the rest with a SHA-256 digest of the
whole. Its JSON document::

    {"format": "dask_strads-model", "version": 1, "dask_strads": "0.1.0",
     "estimator": "dask_strads.estimators.lasso:Lasso",
     "params": {...}, "attributes": {...}}

``params`` are the constructor's parameters, ``attributes`` the fitted state (arrays referenced
by position). Loading needs no cluster and never unpickles. It checks the sizes the file
declares before reading it, and the digest; it builds only a public estimator, from parameters
its constraints accept, and only the attributes and objects its declared state holds
(:mod:`.estimator_states`), of the kinds, dtypes and shapes declared; it refuses a newer format
version.
"""
import os
import warnings
from typing import Any

import fsspec

from . import __version__
from .engine import storage
from .estimator_states import STATES
from .fitted_state import Invalid, read_state

FORMAT = "dask_strads-model"
#: The classes a parameter may hold (an estimator's other parameters are plain values).
PARAMETER_CLASSES = frozenset({"dask_strads.estimators.sampling_schedule:SamplingSchedule"})
VERSION = 1


class ModelFileError(ValueError):
    """A model file that cannot be loaded: not a model, damaged or modified, or newer."""


def save(estimator: Any, path: str | os.PathLike) -> None:
    """Write a dask_strads estimator (fitted or not) to ``path`` (a local path or an fsspec
    URL; ``.npz`` by convention).

    A ``keep_on_cluster`` model's parameters are gathered from its cluster first. A
    ``callback`` is code and is not saved: the loaded estimator has ``callback=None``.
    An existing folder at ``path`` is refused (IsADirectoryError): give a file's path in it.

    Parameters
    ----------
    estimator : dask_strads estimator
        What to save, fitted or not.
    path : str, path or fsspec URL
        The file to write (replaced if it exists).
    """
    from .estimators.base import DaskEstimatorMixin

    if not isinstance(estimator, DaskEstimatorMixin):
        raise TypeError(f"save takes a dask_strads estimator, got {type(estimator).__name__}")
    check_model_path(path)
    params = estimator.get_params(deep=False)
    if params.get("callback") is not None:
        warnings.warn("the estimator's callback is not saved: the loaded one has callback=None")
        params["callback"] = None
    attributes = {k: v for k, v in estimator.__getstate__().items() if k not in params}
    cls = type(estimator)
    document = {"format": FORMAT, "version": VERSION, "dask_strads": __version__,
                "estimator": f"{cls.__module__}:{cls.__qualname__}",
                "params": params, "attributes": attributes}
    try:
        storage.save(document, path, digest=True)
    except TypeError as error:
        raise TypeError(f"{cls.__name__} cannot be saved: {error} (in its parameters or "
                        "fitted attributes)") from None


def check_model_path(path):
    """Raise IsADirectoryError when ``path`` names an existing folder, which a model file
    cannot replace (writing it would move the file into the folder)."""
    fs, local = fsspec.core.url_to_fs(os.fspath(path))
    if fs.isdir(local):
        raise IsADirectoryError(f"{path} is a folder: give the path of the model file to "
                                f"write, e.g. {os.path.join(os.fspath(path), 'model.npz')}")


def load(path: str | os.PathLike) -> Any:
    """The estimator saved at ``path`` by :func:`save`, ready to predict in any process.

    Raises :class:`ModelFileError` (a ValueError) for a file that is no model, was modified
    or damaged, or was written in a newer format version.

    Parameters
    ----------
    path : str, path or fsspec URL
        The model file.
    """
    return read_model(path)[0]


def read_model(path):
    """``(estimator, about)``: :func:`load`'s estimator, and the file's ``format``,
    ``version`` and writing ``dask_strads`` version."""
    try:
        structure, arrays = storage.read_parts(path, require_digest=True)
    except storage.ForeignFile as error:
        raise ModelFileError(f"{path} is not a dask_strads model file: {error.reason}") from None
    except storage.StorageError as error:
        raise ModelFileError(str(error)) from None
    try:
        document = storage.entries(structure)
        about = {key: storage.decode(document[key], arrays, ())
                 for key in ("format", "version", "dask_strads", "estimator") if key in document}
    except storage.StorageError as error:
        raise ModelFileError(f"{path} is not a dask_strads model file: {error}") from None
    if about.get("format") != FORMAT:
        raise ModelFileError(f"{path} is not a dask_strads model file")
    _check_version(about, path)
    cls, state = _estimator(about.get("estimator"), path)
    try:
        estimator = cls(**storage.decode(document.get("params", {"dict": []}), arrays,
                                         PARAMETER_CLASSES))
        estimator._validate_params()
    except Exception as error:
        raise ModelFileError(f"{path} holds a {cls.__name__} that cannot be built: "
                             f"{error}") from None
    try:
        attributes = read_state(state, storage.entries(document.get("attributes")), arrays,
                                estimator)
    except Invalid as error:
        raise ModelFileError(f"{path}: {error.message}") from None
    except storage.StorageError as error:  # the attributes are no dict
        raise ModelFileError(f"{path} cannot be read: its attributes: {error}") from None
    vars(estimator).update(attributes)
    return estimator, {key: about.get(key) for key in ("format", "version", "dask_strads")}


def _check_version(about, path):
    version = about.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ModelFileError(f"{path} declares model format version {version!r}: versions are "
                             f"integers from 1 (this dask_strads reads 1 to {VERSION})")
    if version > VERSION:
        raise ModelFileError(
            f"{path} is in model format version {version!r} (written by dask_strads "
            f"{about.get('dask_strads')}); this dask_strads ({__version__}) reads versions up "
            f"to {VERSION}: upgrade dask_strads to load it")


def _estimator(name, path):
    """The public estimator class a file names (``module:qualname``) and its state's
    declaration; no other class is looked up."""
    import dask_strads

    qualname = name.rpartition(":")[2] if isinstance(name, str) else None
    cls = getattr(dask_strads, qualname) if qualname in STATES else None
    if cls is None or name != f"{cls.__module__}:{cls.__qualname__}":
        raise ModelFileError(f"{path} names the estimator {name!r}, which is not one of "
                             f"dask_strads' estimators ({', '.join(sorted(STATES))})")
    return cls, STATES[qualname]
