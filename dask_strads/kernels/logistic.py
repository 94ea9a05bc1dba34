"""Numba kernels of the logistic program: a feature block's gradient, and the coordinate descent
that finds a prox-Newton direction on a working set of the block's coordinates.

A block is a dense (Fortran float64) array or the ``(indptr, indices, data)`` of a CSC matrix
(see :mod:`.columns`). The datafit's derivatives with respect to the margins ``z = X w + b``
(``g`` and the curvature ``h``, one entry per sample) are computed by the caller.
"""
import numpy as np
from numba import njit

from .columns import column_axpy, column_dot
from .compilation import KERNEL_SETS, _dense, _sparse
from .weighted_columns import column_weighted_dot, column_weighted_sq_norm


@njit(cache=True, nogil=True)
def _column_dots(X, columns, g, out):
    """out[k] = X[:, columns[k]] . g"""
    for k in range(columns.shape[0]):
        out[k] = column_dot(X, columns[k], g)
    return out


@njit(cache=True, nogil=True)
def _soft_threshold(x, threshold):
    if x > threshold:
        return x - threshold
    if x < -threshold:
        return x + threshold
    return 0.0


@njit(cache=True, nogil=True)
def _newton_direction(X, ws, coef, grad, h, l1, l2, weight, max_sweeps, tol, d, q):
    """Minimise the quadratic model of the datafit plus the penalty over the coordinates ``ws``,

        grad . d + 1/2 (X d)' diag(h) (X d) + sum_j weight_j (l1 |c_j| + l2/2 c_j^2),

    with ``c = coef + d`` (``weight`` 0 leaves a coordinate unpenalised: the intercept),
    by cyclic coordinate descent, in place on ``d`` (the direction, zero on entry) and
    ``q = X d``. ``grad`` is the datafit's gradient ``X' g`` of the block. Stops after a sweep
    in which no coordinate's step times its curvature exceeded ``tol``, or after
    ``max_sweeps``; returns the sweeps run.
    """
    curvature = np.empty(ws.shape[0])
    for k in range(ws.shape[0]):
        curvature[k] = column_weighted_sq_norm(X, ws[k], h) + l2 * weight[ws[k]]
    for sweep in range(max_sweeps):
        largest = 0.0
        for k in range(ws.shape[0]):
            a = curvature[k]
            if a <= 0.0:  # an empty column with no l2 term: nothing to move
                continue
            j = ws[k]
            old = coef[j] + d[j]
            slope = grad[j] + column_weighted_dot(X, j, h, q) + l2 * weight[j] * old
            new = _soft_threshold(old - slope / a, l1 * weight[j] / a)
            if new != old:
                d[j] += new - old
                column_axpy(X, j, new - old, q)
                largest = max(largest, a * abs(new - old))
        if largest <= tol:
            return sweep + 1
    return max_sweeps


# -- entry points: fixed scalar types, so that one compiled specialisation serves every fit ----
def column_dots(X, columns, g):
    """``X[:, columns].T @ g`` of a block."""
    return _column_dots(X, columns, g, np.empty(columns.shape[0]))


def newton_direction(X, ws, coef, grad, h, l1, l2, weight, max_sweeps, tol):
    """``(d, q, sweeps)``: the prox-Newton direction ``d`` on ``ws`` (see
    :func:`_newton_direction`), its margins ``q = X d`` and the sweeps it took."""
    d = np.zeros(coef.shape[0])
    q = np.zeros(h.shape[0])
    sweeps = _newton_direction(X, ws, coef, grad, h, float(l1), float(l2), weight,
                               int(max_sweeps), float(tol), d, q)
    return d, q, sweeps


_LOGISTIC = (("logistic", "_column_dots"), ("logistic", "_newton_direction"))
KERNEL_SETS["logistic"] = tuple((module, name, _dense) for module, name in _LOGISTIC)
KERNEL_SETS["logistic_sparse"] = tuple((module, name, _sparse) for module, name in _LOGISTIC)
