"""Column products weighted by a vector of row weights, for dense (Fortran) and CSC blocks.

The second-order models of a datafit weight each row by its curvature ``h``: these are the
primitives of :mod:`.columns` with that weight, written once for both block layouts in the same
way (numba picks the implementation from the argument's type). A cross-validation fold is the
weight 1 on its training rows, 0 elsewhere: :func:`weighted_column_stats` gives a fold's column
statistics from a block that holds every row, and :func:`take_csc_rows` the fold's rows of a
few columns.
"""
import numpy as np
from numba import njit
from numba.extending import overload

from .columns import _is_dense, n_columns
from .compilation import declare_block_kernel_sets


def column_weighted_dot(X, j, h, v):
    raise NotImplementedError  # numba-only: the overloads below are the implementations


def column_weighted_sq_norm(X, j, h):
    raise NotImplementedError


@overload(column_weighted_dot)
def _column_weighted_dot(X, j, h, v):
    """sum_i X[i, j] * h[i] * v[i]"""
    if _is_dense(X):
        def dense(X, j, h, v):
            total = 0.0
            for i in range(X.shape[0]):
                total += X[i, j] * h[i] * v[i]
            return total
        return dense

    def csc(X, j, h, v):
        indptr, indices, data = X
        total = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            total += data[p] * h[i] * v[i]
        return total
    return csc


@overload(column_weighted_sq_norm)
def _column_weighted_sq_norm(X, j, h):
    """sum_i h[i] * X[i, j] ** 2"""
    if _is_dense(X):
        def dense(X, j, h):
            total = 0.0
            for i in range(X.shape[0]):
                total += h[i] * X[i, j] * X[i, j]
            return total
        return dense

    def csc(X, j, h):
        indptr, indices, data = X
        total = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            total += h[indices[p]] * data[p] * data[p]
        return total
    return csc


def column_weighted_axpy(X, j, a, h, v):
    raise NotImplementedError


@overload(column_weighted_axpy)
def _column_weighted_axpy(X, j, a, h, v):
    """v[i] += a * h[i] * X[i, j]"""
    if _is_dense(X):
        def dense(X, j, a, h, v):
            for i in range(X.shape[0]):
                v[i] += a * h[i] * X[i, j]
        return dense

    def csc(X, j, a, h, v):
        indptr, indices, data = X
        for p in range(indptr[j], indptr[j + 1]):
            v[indices[p]] += a * h[indices[p]] * data[p]
    return csc


def column_weighted_moments(X, j, h, v):
    raise NotImplementedError


@overload(column_weighted_moments)
def _column_weighted_moments(X, j, h, v):
    """(sum_i h[i] X[i, j], sum_i h[i] X[i, j] ** 2, sum_i h[i] X[i, j] v[i]) in one pass"""
    if _is_dense(X):
        def dense(X, j, h, v):
            total = norm2 = product = 0.0
            for i in range(X.shape[0]):
                weighted = h[i] * X[i, j]
                total += weighted
                norm2 += weighted * X[i, j]
                product += weighted * v[i]
            return total, norm2, product
        return dense

    def csc(X, j, h, v):
        indptr, indices, data = X
        total = norm2 = product = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            weighted = h[indices[p]] * data[p]
            total += weighted
            norm2 += weighted * data[p]
            product += weighted * v[indices[p]]
        return total, norm2, product
    return csc


@njit(cache=True, nogil=True, fastmath=True)
def weighted_column_stats(X, h, v):
    """Every column's h-weighted sum, squared norm and dot product with ``v``, in one pass."""
    p = n_columns(X)
    sums, norms2, products = np.empty(p), np.empty(p), np.empty(p)
    for j in range(p):
        sums[j], norms2[j], products[j] = column_weighted_moments(X, j, h, v)
    return sums, norms2, products


@njit(cache=True, nogil=True)
def take_csc_rows(indptr, indices, data, positions, row_map):
    """The columns ``positions`` of a CSC triple, of the rows ``i`` with ``row_map[i] >= 0``
    only, renumbered ``row_map[i]`` (increasing with ``i``): a CSC triple of the same types."""
    new_indptr = np.zeros(positions.shape[0] + 1, dtype=indptr.dtype)
    for k in range(positions.shape[0]):
        kept = 0
        for p in range(indptr[positions[k]], indptr[positions[k] + 1]):
            kept += row_map[indices[p]] >= 0
        new_indptr[k + 1] = new_indptr[k] + kept
    new_indices = np.empty(new_indptr[-1], dtype=indices.dtype)
    new_data = np.empty(new_indptr[-1], dtype=data.dtype)
    for k in range(positions.shape[0]):
        q = new_indptr[k]
        for p in range(indptr[positions[k]], indptr[positions[k] + 1]):
            row = row_map[indices[p]]
            if row >= 0:
                new_indices[q] = row
                new_data[q] = data[p]
                q += 1
    return new_indptr, new_indices, new_data


# a fold of a cross-validation on blocks that hold every row: its column statistics
declare_block_kernel_sets("enet_folds", "elastic-net folds", (weighted_column_stats,),
                          csc_kernels=(take_csc_rows,), values=("float64", "float32"))
