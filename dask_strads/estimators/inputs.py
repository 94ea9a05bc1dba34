"""Checking the inputs of a fit, and cutting the design matrix into feature blocks.

dask.array and pydata sparse are imported where their arrays are handled: an array of theirs
exists only once they are imported, so a fit on in-memory data loads neither."""
import numbers
import sys
from contextlib import nullcontext
from typing import Any

import dask
import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_X_y


#: Values of larger magnitude are refused: the fits square them, and the squares of such values
#: (1e300 at most) summed over up to 1e8 entries stay below float64's largest, 1.8e308.
MAX_MAGNITUDE = 1e150

#: A Dask array and a pandas DataFrame in annotations, where they are Any: naming their classes
#: would import dask.array (loaded only with a dask array) and pandas (optional).
DaskArray = Any
DataFrame = Any


#: The dtypes the elastic net's fits keep X in, as scikit-learn's linear models: float32 data
#: stay float32 (on the workers too: the kernels have a float32 specialisation), any other
#: becomes float64 (the first).
KEPT_FLOATS = (np.float64, np.float32)


def fitted_dtype(X):
    """The dtype of the parameters fitted on X, as scikit-learn's linear models give them:
    float32 for float32 data, else float64 (the fits compute in float64)."""
    return np.float32 if getattr(X, "dtype", None) == np.float32 else np.float64


def is_dask_array(X):
    return _is_instance(X, "dask.array", "Array")


def _is_instance(X, module, name):
    """Whether X is a ``module.name``, without importing ``module``."""
    imported = sys.modules.get(module)
    return imported is not None and isinstance(X, getattr(imported, name))


def is_sparse(X):
    """Whether X (or, for a dask array, its chunks) is sparse: its blocks reach the kernels as
    CSC matrices."""
    return not isinstance(X._meta if is_dask_array(X) else X, np.ndarray)


def to_scipy_if_pydata(X):
    if _is_instance(X, "sparse", "SparseArray"):
        return X.to_scipy_sparse().tocsc()
    return X


def as_dask_input(X, client=None):
    """A dask array as the estimators take it: its chunk sizes known (computed, on ``client``
    when given, if unknown, as after boolean indexing or ``to_dask_array()``), and scipy.sparse
    chunks turned into pydata sparse ones, which dask's reductions and slicing accept (scipy's
    matrices refuse ``keepdims`` and 0-d indices)."""
    if any(np.isnan(size) for sizes in X.chunks for size in sizes):
        X = X.copy()  # compute_chunk_sizes sets them in place: leave the caller's array alone
        with dask.config.set(scheduler=client.get) if client is not None else nullcontext():
            X.compute_chunk_sizes()
    if sp.issparse(X._meta):
        import sparse as pydata_sparse

        meta = pydata_sparse.COO.from_numpy(np.zeros((0,) * X.ndim, dtype=X.dtype))
        X = X.map_blocks(_as_pydata, dtype=X.dtype, meta=meta)
    return X


def _as_pydata(block):
    import sparse as pydata_sparse

    return pydata_sparse.COO.from_scipy_sparse(block) if sp.issparse(block) else block


def check_dask_design(X, y, choose_executor, client=None, numeric_y=True, floats=(np.float64,)):
    """Shapes and dtypes of dask inputs, then (on the executor ``choose_executor(size)`` gives)
    their finiteness, magnitude and column means (float64) in one pass over the data. Returns
    ``(X, means, y, executor)``: X of its dtype if one of ``floats``, else of the first; y in
    memory, float64 with ``numeric_y``, else labels as given."""
    import dask.array as da

    X = as_dask_input(X, client)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array for X, got {X.ndim}D with shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise TypeError(f"X must hold real numbers, got dtype {X.dtype}")
    y = as_dask_input(y, client) if is_dask_array(y) else da.from_array(np.asarray(y))
    if y.ndim != 1:
        raise ValueError(f"y must be 1-dimensional, got shape {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"Found array with shape {X.shape}: need at least 1 sample and feature")
    X = X.astype(X.dtype if X.dtype in floats else floats[0])
    executor = choose_executor(X.size)
    # chunk by chunk, on scipy's matrices: da.isfinite(X).all() fails on pydata sparse chunks
    # (the reduction concatenates COO arrays of different fill values), and pydata sparse's own
    # sums compile numba code in every process (seconds, uncached)
    largest = X.map_blocks(_largest_magnitude_block, chunks=(1, 1), dtype=float)
    sums = X.map_blocks(_column_sums_block, chunks=((1,) * X.numblocks[0], X.chunks[1]),
                        dtype=np.float64, meta=np.empty((0, 0)))
    sums, largest, y_np = executor.compute(sums.sum(axis=0), largest.max(), y)
    check_magnitude(largest, "X")
    y_np = np.asarray(y_np)
    if numeric_y:
        y_np = y_np.astype(np.float64)
        check_magnitude(largest_magnitude(y_np), "y")
    return X, np.asarray(sums) / X.shape[0], y_np, executor


def gathered(values, choose_executor):
    """``values`` with each Dask array among them computed into this process on the executor
    ``choose_executor(size)`` gives (the estimator's client, or the active one, where a
    reader's arrays live), chunks of scipy.sparse matrices joined into one sparse matrix: for
    the fits that need their data here."""
    lazy = [i for i, value in enumerate(values) if is_dask_array(value)]
    if not lazy:
        return values
    executor = choose_executor(max(values[i].size for i in lazy))
    client = executor.client
    computed = executor.compute(*(as_dask_input(values[i], client) for i in lazy))
    values = list(values)
    for i, value in zip(lazy, computed):
        values[i] = to_scipy_if_pydata(value)
    return values


def check_dask_matrix(X, estimator, n_features=None):
    """A dask X as :func:`as_dask_input` gives it, once its shape and dtype are checked: 2D,
    non-empty, real numbers, and ``n_features`` columns when given (with scikit-learn's
    message). Computes nothing but unknown chunk sizes."""
    X = as_dask_input(X, estimator._client)
    if X.ndim != 2 or 0 in X.shape:
        raise ValueError(f"Expected a non-empty 2D array for X, got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise TypeError(f"X must hold real numbers, got dtype {X.dtype}")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
                         f"expecting {n_features} features as input")
    return X


def stored_values(block):
    """The values a chunk stores: all entries of a dense one, the explicit ones of a sparse one."""
    block = to_scipy_if_pydata(block)
    return block.data if sp.issparse(block) else np.asarray(block)


def largest_magnitude(X):
    """The largest absolute value X stores (NaN if it stores one, 0 if nothing), without a copy
    of X."""
    values = stored_values(X)
    return float(max(values.max(), -values.min())) if values.size else 0.0


def _largest_magnitude_block(block):
    return np.array([[largest_magnitude(block)]])


def _column_sums_block(block):
    """A chunk's column sums, in float64, as a row."""
    block = to_scipy_if_pydata(block)
    return np.asarray(block.sum(axis=0, dtype=np.float64)).reshape(1, -1)


def check_magnitude(largest, name):
    """Refuse data whose largest absolute value is ``largest``: NaN or infinite, or beyond
    ``MAX_MAGNITUDE``."""
    if not np.isfinite(largest):
        raise ValueError(f"Input {name} contains NaN or infinity.")
    if largest > MAX_MAGNITUDE:
        raise ValueError(
            f"Input {name} holds a value of magnitude {largest:.3g}: beyond {MAX_MAGNITUDE:.0e} "
            "the squares the fit sums overflow float64; rescale it (e.g. with "
            "sklearn.preprocessing.MaxAbsScaler)")


def check_in_memory_design(X, y, estimator, multi_output=False, numeric_y=True,
                           floats=KEPT_FLOATS):
    """X and y checked without touching the estimator (a fit sets its features at the end),
    the magnitude of their values included; ``multi_output``: y may have several columns.
    X is kept in one of ``floats`` (the first for any other dtype); y is float64 (the
    residual's type) with ``numeric_y``, else labels as given."""
    X, y = check_X_y(to_scipy_if_pydata(X), y, accept_sparse=["csc", "csr"],
                     dtype=list(floats), y_numeric=numeric_y, multi_output=multi_output,
                     estimator=estimator)
    check_magnitude(largest_magnitude(X), "X")
    if numeric_y:
        y = y.astype(np.float64, copy=False)
        check_magnitude(largest_magnitude(y), "y")
    return X, y


def checked_design(estimator, X, y, numeric_y=True):
    """``(X, y, stored, executor)`` of a fit of the prox-Newton program: X (numpy, scipy.sparse,
    pydata sparse or dask array; float64) and y checked (float64 with ``numeric_y``, else
    labels as given), X's stored values (None for a dask array) and where the fit runs."""
    if is_dask_array(X):
        X, _, y, executor = check_dask_design(X, y, estimator._fit_executor, estimator._client,
                                              numeric_y=numeric_y)
        return X, y, None, executor
    X, y = check_in_memory_design(X, y, estimator, numeric_y=numeric_y, floats=(np.float64,))
    stored = X.nnz if sp.issparse(X) else X.size
    return X, y, stored, estimator._fit_executor(stored)


def check_finite_block(block):
    """A chunk, once its stored values are checked finite (a map_blocks check)."""
    if not np.isfinite(stored_values(block)).all():
        raise ValueError("Input X contains NaN or infinity.")
    return block


def column_means(X):
    """X's column means, summed in float64 whatever X's dtype."""
    return np.asarray(X.mean(axis=0, dtype=np.float64)).ravel()


def one_vs_rest_signs(y, classes):
    """+1 or -1 per sample (rows) for each one-vs-rest problem of the sorted ``classes``
    (columns): one column, the second class's, for two classes."""
    targets = classes[1:] if len(classes) == 2 else classes
    return np.where(np.asarray(y)[:, None] == targets[None, :], 1.0, -1.0)


def check_positive_int(value, name, minimum=1):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def blocks_along(X, edges, make_block, axis):
    """``make_block(part, lo, hi)`` for the parts of X cut at ``edges`` along ``axis`` (1: column
    blocks, 0: row blocks): eagerly, or lazily for dask arrays (computed where they land)."""
    pairs = list(zip(edges[:-1], edges[1:]))
    if is_dask_array(X):
        X = X.rechunk({axis: tuple(np.diff(edges)), 1 - axis: -1})
        chunks = X.to_delayed(optimize_graph=False).ravel()
        return [dask.delayed(_lazy_block)(make_block, chunk, lo, hi)
                for chunk, (lo, hi) in zip(chunks, pairs)]
    if sp.issparse(X):
        X = X.tocsc() if axis == 1 else X.tocsr()
        if X.has_canonical_format:
            return [make_block(_compressed_slice(X, lo, hi), lo, hi) for lo, hi in pairs]
    take = (lambda lo, hi: X[:, lo:hi]) if axis == 1 else (lambda lo, hi: X[lo:hi])
    return [make_block(take(lo, hi), lo, hi) for lo, hi in pairs]


def _compressed_slice(X, lo, hi):
    """Columns (CSC) or rows (CSR) ``lo:hi`` of X as a view of its values and indices (scipy's
    slice copies them): for a matrix in canonical format only, which nothing sorts or sums in
    place."""
    start, stop = X.indptr[lo], X.indptr[hi]
    shape = (X.shape[0], hi - lo) if X.format == "csc" else (hi - lo, X.shape[1])
    part = type(X)(shape, dtype=X.dtype)
    # set, not passed to the constructor: its format check copies a view of a larger array
    part.data, part.indices = X.data[start:stop], X.indices[start:stop]
    part.indptr = X.indptr[lo:hi + 1] - start
    part.has_canonical_format = True
    return part


def _lazy_block(make_block, chunk, lo, hi):
    return make_block(to_scipy_if_pydata(chunk), lo, hi)
