"""Will a fit compile its numba kernels? Said once, before the fit, instead of a silent pause.

The kernels are compiled on first call (``@njit(cache=True)``, no eager signatures) and then
cached on disk by numba (next to the sources, or under ``NUMBA_CACHE_DIR``), so only the first
fit of each kind on a machine compiles: a few seconds per kind (see :data:`KERNEL_SETS`). The
check below neither compiles nor loads anything: it looks at what this process has compiled or
loaded (``dispatcher.overloads``) and at numba's cache index files (one small pickle per
kernel): a few milliseconds the first time (importing the kernel modules), well under one after.

Usage, before a fit::

    from dask_strads.kernels.compilation import announce_compiling
    announce_compiling(["lasso"])   # prints the message to stderr, once per process

or :func:`compiling_message` to get the text and print or log it some other way.
"""
import importlib
import os
import sys
import threading

import numpy as np
from numba.core import types

#: A kernel set: what one kind of fit calls from Python, as (module in dask_strads.kernels,
#: function, which signatures count). Kernels these call (``sampling.tree_*``, the
#: ``columns.column_*`` overloads) are compiled into them and cached with them. Only kernels that
#: every such fit calls are listed: one that a fit may skip (``lda.pack_rows`` when blocks never
#: leave their process; ``documents_log_likelihood``, 0.1 s, after a transform) would leave the
#: set "not compiled" for good. "lda_inference" is LDA's transform (and score).
#: "lasso" is a fit on dense (Fortran float64) blocks, "lasso_sparse" one on CSC blocks: each
#: compiles its own variant of the same kernels; "enet" and "enet_sparse" are the same for the
#: working-set solver (Lasso and ElasticNet by default). A fit on float32 data compiles the
#: float32 variant of its set, named with the suffix "_float32" ("enet_float32", ...).
KERNEL_SETS = {}


def _dense(signature):
    return isinstance(signature[0], types.Array)


def _sparse(signature):
    return isinstance(signature[0], types.BaseTuple)


def _any(signature):
    return True


def _block_of(layout, values):
    """Accepts the signatures whose first argument is a block of ``layout`` (``_dense``: a 2-D
    array, ``_sparse``: a CSC triple) holding ``values`` (a numba type)."""
    def accepts(signature):
        if not layout(signature):
            return False
        block = signature[0]
        return (block if isinstance(block, types.Array) else block[2]).dtype == values
    return accepts


def _csc_arrays_of(values):
    """Accepts the signatures of a kernel given a CSC matrix as its first three arguments
    (``indptr, indices, data``) whose ``data`` hold ``values``."""
    return lambda signature: signature[2].dtype == values


#: The suffix of the name of a set compiled for blocks of float32 values (see :func:`kernel_set`).
FLOAT32 = "_float32"
_LASSO = (("columns", "column_stats"), ("columns", "add_columns"), ("lasso", "_full_pass"),
          ("lasso", "_sub_rounds"))
_ENET = (("columns", "column_norms"), ("columns", "add_columns"), ("columns", "centred_norms"),
         ("elastic_net", "_screen_and_score"), ("elastic_net", "_gradient"),
         ("elastic_net", "_epochs"))


def _linear_model_sets(values, suffix):
    """The kernel sets of the Lasso and the elastic net on blocks holding ``values`` (a numba
    type), their names ending in ``suffix``."""
    dense, sparse = _block_of(_dense, values), _block_of(_sparse, values)
    return {
        "lasso" + suffix: tuple((module, name, dense) for module, name in _LASSO),
        "lasso_sparse" + suffix: tuple((module, name, sparse) for module, name in _LASSO),
        "enet" + suffix: tuple((module, name, dense) for module, name in _ENET),
        "enet_sparse" + suffix: tuple((module, name, sparse) for module, name in _ENET),
        # a fold of a cross-validation on blocks that hold every row: its column statistics
        "enet_folds" + suffix: (("weighted_columns", "weighted_column_stats", dense),),
        "enet_folds_sparse" + suffix: (("weighted_columns", "weighted_column_stats", sparse),
                                       ("weighted_columns", "take_csc_rows",
                                        _csc_arrays_of(values))),
    }


KERNEL_SETS.update(_linear_model_sets(types.float64, ""))
KERNEL_SETS.update(_linear_model_sets(types.float32, FLOAT32))
KERNEL_SETS["lda"] = tuple(("lda", name, _any) for name in (
    "add_counts", "topic_totals", "fill_nonzero", "_sample_block"))
KERNEL_SETS["lda_alias"] = tuple(("lda", name, _any) for name in (
    "add_counts", "topic_totals", "fill_nonzero")) + (("lda_alias", "_sample_block_alias", _any),)
KERNEL_SETS["medlda"] = tuple(("lda", name, _any) for name in (
    "add_counts", "topic_totals", "fill_nonzero")) + (
    ("medlda", "_sample_block_supervised", _any),)
KERNEL_SETS["lda_inference"] = (("lda_inference", "_infer_documents", _any),)
KERNEL_SETS["mf"] = (("mf", "_update_rows", _any),)
KERNEL_SETS["implicit_mf"] = (("implicit_mf", "_solve_rows", _any),)
KERNEL_SETS["bpr"] = (("bpr", "_sgd_steps", _any),)
# the prox-Newton program's block kernels compile a variant per block layout; its datafit's loss
# kernels (a set of their own) serve both
_PROX_NEWTON = (("prox_newton", "_column_dots"), ("prox_newton", "_column_range_dots"),
                ("prox_newton", "_newton_direction"))
KERNEL_SETS["prox_newton"] = (tuple((module, name, _dense) for module, name in _PROX_NEWTON)
                              + (("prox_newton", "_violations", _any),))
KERNEL_SETS["prox_newton_sparse"] = (tuple((module, name, _sparse)
                                           for module, name in _PROX_NEWTON)
                                     + (("prox_newton", "_violations", _any),))
KERNEL_SETS["logistic_loss"] = tuple(("margin_losses", name, _any) for name in (
    "_logistic", "_logistic_derivatives", "_logistic_change"))
KERNEL_SETS.update({f"{loss}_loss": tuple(
    ("margin_losses", f"_{loss}{part}", _any) for part in ("", "_derivatives", "_change"))
    for loss in ("squared_hinge", "squared_error", "huber", "poisson")})
# the SVM dual program's, on dense rows or CSR ones
_SVM_DUAL = (("svm_dual", "_measure"), ("svm_dual", "_dual_sweep"))
KERNEL_SETS["svm_dual"] = (tuple((module, name, _dense) for module, name in _SVM_DUAL)
                           + (("svm_dual", "_change_terms", _any),))
KERNEL_SETS["svm_dual_sparse"] = (tuple((module, name, _sparse) for module, name in _SVM_DUAL)
                                  + (("svm_dual", "_change_terms", _any),))

#: How a kernel set is named to the user.
LABELS = {"lasso_sparse": "sparse lasso", "enet": "elastic net",
          "enet_sparse": "sparse elastic net", "lda_inference": "lda transform",
          "enet_folds": "elastic-net folds", "enet_folds_sparse": "sparse elastic-net folds",
          "lda_alias": "lda (alias sampler)", "medlda": "MedLDA",
          "prox_newton": "prox-Newton", "prox_newton_sparse": "sparse prox-Newton",
          "logistic_loss": "logistic loss", "squared_hinge_loss": "squared hinge",
          "squared_error_loss": "squared error", "huber_loss": "Huber loss",
          "poisson_loss": "Poisson loss",
          "svm_dual": "SVM dual", "svm_dual_sparse": "sparse SVM dual"}

LABELS.update({name: f"{LABELS.get(plain, plain)} (float32)"
               for name, plain in ((name, name.removesuffix(FLOAT32)) for name in KERNEL_SETS)
               if name != plain})


def kernel_set(kind, sparse, values):
    """The name of the kernel set of ``kind`` ("lasso", "enet" or "enet_folds") that a fit on
    blocks of that layout (``sparse``: CSC) holding ``values`` (a numpy dtype: float64 or
    float32) compiles."""
    return (kind + ("_sparse" if sparse else "")
            + (FLOAT32 if np.dtype(values) == np.float32 else ""))


_announced = set()
_lock = threading.Lock()


def _dispatcher(module, name):
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def _in_process(dispatcher, accepts):
    """Compiled, or loaded from the disk cache, in this process."""
    return any(accepts(signature) for signature in list(dispatcher.overloads))


def _on_disk(dispatcher, accepts):
    """numba's cache holds a usable entry: same source file (its index checks the file's stamp),
    same bytecode, same CPU, data file present. Reads one small index file; loads nothing."""
    cache = getattr(dispatcher, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if cache_file is None:  # caching off (NullCache)
        return False
    try:
        index = cache_file._load_index()
        codegen = dispatcher.targetctx.codegen()
        for key, data_name in index.items():
            if (accepts(key[0]) and key == cache._index_key(key[0], codegen)
                    and os.path.exists(cache_file._data_path(data_name))):
                return True
    except Exception:  # an unreadable index, or numba's internals changed: assume it compiles
        return False
    return False


def _names(kernels):
    names = [kernels] if isinstance(kernels, str) else list(kernels)
    unknown = [name for name in names if name not in KERNEL_SETS]
    if unknown:
        raise ValueError(f"unknown kernel set(s) {unknown}; known: {sorted(KERNEL_SETS)}")
    return names


def pending(kernels):
    """The kernel sets among ``kernels`` (a name of :data:`KERNEL_SETS` or several) that a fit
    would compile: some kernel of the set neither compiled in this process nor in the cache."""
    result = []
    for name in _names(kernels):
        for module, function, accepts in KERNEL_SETS[name]:
            dispatcher = _dispatcher(module, function)
            if not hasattr(dispatcher, "overloads"):  # NUMBA_DISABLE_JIT: plain Python
                continue
            if not (_in_process(dispatcher, accepts) or _on_disk(dispatcher, accepts)):
                result.append(name)
                break
    return result


def _message(names):
    if not names:
        return None
    labels = [LABELS.get(name, name) for name in names]
    caching = all(getattr(getattr(_dispatcher(*KERNEL_SETS[name][0][:2]), "_cache", None),
                          "_cache_file", None) is not None for name in names)
    where = ("first use on this machine; cached afterwards" if caching
             else "numba's on-disk cache is off: every new process compiles")
    return f"compiling numba kernels for {' and '.join(labels)} ({where})"


def compiling_message(kernels):
    """A line for the user if a fit that uses ``kernels`` (a name of :data:`KERNEL_SETS`, or
    several) will compile, e.g. "compiling numba kernels for lasso (first use on this machine;
    cached afterwards)"; None if everything it needs is compiled in this process or cached."""
    return _message(pending(kernels))


def announce_compiling(kernels, emit=None):
    """:func:`compiling_message`, emitted at most once per process and kernel set: a set already
    announced is not checked again. ``emit`` takes the message (default: print it to stderr).
    Returns the message emitted, or None."""
    with _lock:
        names = [name for name in _names(kernels) if name not in _announced]
        names = pending(names) if names else []
        _announced.update(names)
    message = _message(names)
    if message is not None:
        (emit or _print)(message)
    return message


def reset_announced():
    """Forget what was announced (for tests)."""
    with _lock:
        _announced.clear()


def _print(message):
    print(message, file=sys.stderr, flush=True)
