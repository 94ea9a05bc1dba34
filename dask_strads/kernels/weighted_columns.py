"""Column products weighted by a vector of row weights, for dense (Fortran) and CSC blocks.

The second-order models of a datafit weight each row by its curvature ``h``: these are the
primitives of :mod:`.columns` with that weight, written once for both block layouts in the same
way (numba picks the implementation from the argument's type).
"""
from numba.extending import overload

from .columns import _is_dense


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
