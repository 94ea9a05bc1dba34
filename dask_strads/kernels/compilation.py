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
import pkgutil
import sys
import threading

import numpy as np
from numba.core import types

#: A kernel set: what one kind of fit calls from Python, as (dispatcher, which signatures count)
#: pairs. Kernels these call (``sampling.tree_*``, the ``columns.column_*`` overloads) are
#: compiled into them and cached with them. Only kernels that every such fit calls are listed: one
#: that a fit may skip (``lda.pack_rows`` when blocks never leave their process;
#: ``documents_log_likelihood``, 0.1 s, after a transform) would leave the set "not compiled" for
#: good. Each kernel module declares its sets where it defines their kernels
#: (:func:`declare_kernel_set`, :func:`declare_block_kernel_sets`), so the registry holds the sets
#: of the modules imported so far; :func:`all_kernel_sets` imports every kernel module first.
KERNEL_SETS: dict = {}
#: How a kernel set is named to the user.
LABELS: dict = {}
#: The suffix of the name of a set compiled for blocks of float32 values (see :func:`kernel_set`).
FLOAT32 = "_float32"


def _dense(signature):
    return isinstance(signature[0], types.Array)


def _sparse(signature):
    return isinstance(signature[0], types.BaseTuple)


def _any(signature):
    return True


def _block_of(layout, values):
    """Accepts the signatures whose first argument is a block of ``layout`` (``_dense``: a 2-D
    array, ``_sparse``: a CSC triple) holding ``values`` (a numba type; None: any)."""
    def accepts(signature):
        if not layout(signature):
            return False
        if values is None:
            return True
        block = signature[0]
        return (block if isinstance(block, types.Array) else block[2]).dtype == values
    return accepts


def _csc_arrays_of(values):
    """Accepts the signatures of a kernel given a CSC matrix as its first three arguments
    (``indptr, indices, data``) whose ``data`` hold ``values``."""
    return lambda signature: signature[2].dtype == values


def declare_kernel_set(name, label, kernels):
    """Declare the kernel set ``name``, told to the user as ``label``: ``kernels``, each a
    dispatcher (any signature of it counts) or a ``(dispatcher, accepts)`` pair, ``accepts``
    telling which of its signatures count."""
    KERNEL_SETS[name] = tuple(kernel if isinstance(kernel, tuple) else (kernel, _any)
                              for kernel in kernels)
    LABELS[name] = label


def declare_block_kernel_sets(kind, label, block_kernels, other_kernels=(), csc_kernels=(),
                              values=None):
    """Declare the sets of a kind of fit that compiles a variant of ``block_kernels`` (whose
    first argument is a block) per block layout: ``kind`` on dense blocks and ``kind_sparse`` on
    CSC blocks ("sparse <label>"), each with ``other_kernels`` (any signature) and the sparse one
    with ``csc_kernels`` (given a CSC matrix's three arrays). With ``values`` ("float64" and
    "float32"), a variant per block dtype too, named as :func:`kernel_set` names them; without,
    any dtype counts."""
    for sparse in (False, True):
        for dtype in values or (None,):
            numba_type = None if dtype is None else getattr(types, np.dtype(dtype).name)
            accepts = _block_of(_sparse if sparse else _dense, numba_type)
            kernels = [(kernel, accepts) for kernel in block_kernels] + list(other_kernels)
            if sparse:
                kernels += [(kernel, _csc_arrays_of(numba_type)) for kernel in csc_kernels]
            float32 = dtype is not None and np.dtype(dtype) == np.float32
            declare_kernel_set(kernel_set(kind, sparse, dtype or np.float64),
                               ("sparse " if sparse else "") + label
                               + (" (float32)" if float32 else ""), kernels)


def all_kernel_sets():
    """:data:`KERNEL_SETS`, every kernel module of the package imported (declared) first."""
    for module in pkgutil.iter_modules(importlib.import_module(__package__).__path__):
        importlib.import_module(f"{__package__}.{module.name}")
    return KERNEL_SETS


def kernel_set(kind, sparse, values):
    """The name of the kernel set of ``kind`` ("lasso", "enet", "enet_folds", ...) that a fit on
    blocks of that layout (``sparse``: CSC) holding ``values`` (a numpy dtype: float64 or
    float32) compiles."""
    return (kind + ("_sparse" if sparse else "")
            + (FLOAT32 if np.dtype(values) == np.float32 else ""))


_announced = set()
_lock = threading.Lock()


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
    if unknown:  # perhaps declared by a module not imported yet
        unknown = [name for name in unknown if name not in all_kernel_sets()]
    if unknown:
        raise ValueError(f"unknown kernel set(s) {unknown}; known: {sorted(KERNEL_SETS)}")
    return names


def pending(kernels):
    """The kernel sets among ``kernels`` (a name of :data:`KERNEL_SETS` or several) that a fit
    would compile: some kernel of the set neither compiled in this process nor in the cache."""
    result = []
    for name in _names(kernels):
        for dispatcher, accepts in KERNEL_SETS[name]:
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
    caching = all(getattr(getattr(KERNEL_SETS[name][0][0], "_cache", None),
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
