"""Saving a fitted estimator to one file and loading it back, without pickle.

A model file is an ``.npz`` archive written by :mod:`dask_strads.engine.storage`: the fitted
arrays as ``.npy`` members, and a JSON member describing the rest with a SHA-256 digest of the
whole. Its JSON document::

    {"format": "dask_strads-model", "version": 1, "dask_strads": "0.1.0",
     "estimator": "dask_strads.estimators.lasso:Lasso",
     "params": {...}, "attributes": {...}}

``params`` are the constructor's parameters, ``attributes`` the fitted state (arrays referenced
by position). Loading needs no cluster, never unpickles, builds only dask_strads classes, checks
the digest and the parameters, and refuses a newer format version.
"""
import warnings

from . import __version__
from .engine import storage

FORMAT = "dask_strads-model"
VERSION = 1


class ModelFileError(ValueError):
    """A model file that cannot be loaded: not a model, damaged or modified, or newer."""


def save(estimator, path):
    """Write a dask_strads estimator (fitted or not) to ``path`` (a local path or an fsspec
    URL; ``.npz`` by convention).

    A ``keep_on_cluster`` model's parameters are gathered from its cluster first. A
    ``callback`` is code and is not saved: the loaded estimator has ``callback=None``.
    """
    from .estimators.base import DaskEstimatorMixin

    if not isinstance(estimator, DaskEstimatorMixin):
        raise TypeError(f"save takes a dask_strads estimator, got {type(estimator).__name__}")
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


def load(path):
    """The estimator saved at ``path`` by :func:`save`, ready to predict in any process.

    Raises :class:`ModelFileError` (a ValueError) for a file that is no model, was modified
    or damaged, or was written in a newer format version.
    """
    return read_model(path)[0]


def read_model(path):
    """``(estimator, about)``: :func:`load`'s estimator, and the file's ``format``,
    ``version`` and writing ``dask_strads`` version."""
    from .estimators.base import DaskEstimatorMixin

    try:
        document = storage.load(path, require_digest=True)
    except storage.ForeignFile as error:
        raise ModelFileError(f"{path} is not a dask_strads model file: {error.reason}") from None
    except storage.StorageError as error:
        raise ModelFileError(str(error)) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ModelFileError(f"{path} is not a dask_strads model file")
    version = document.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ModelFileError(
            f"{path} is in model format version {version!r} (written by dask_strads "
            f"{document.get('dask_strads')}); this dask_strads ({__version__}) reads versions up "
            f"to {VERSION}: upgrade dask_strads to load it")
    try:
        cls = storage.dask_strads_class(document["estimator"])
        if not (isinstance(cls, type) and issubclass(cls, DaskEstimatorMixin)):
            raise ModelFileError(f"{document['estimator']} is not a dask_strads estimator")
        estimator = cls(**document["params"])
        estimator._validate_params()
    except ModelFileError:
        raise
    except Exception as error:
        raise ModelFileError(f"{path} holds an estimator that cannot be built: {error}") from None
    vars(estimator).update(document["attributes"])
    return estimator, {key: document.get(key) for key in ("format", "version", "dask_strads")}

