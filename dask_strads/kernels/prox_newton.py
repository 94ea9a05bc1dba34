"""Numba kernels of the prox-Newton program: a feature block's gradient, and the coordinate descent
that finds a prox-Newton direction on a working set of the block's coordinates.

A block is a dense (Fortran float64) array or the ``(indptr, indices, data)`` of a CSC matrix
(see :mod:`.columns`). A column past the block's last is a column of ones, the intercept's:
it is not stored, so that a block with an intercept is its data as given, not a copy with one
more column. The datafit's derivatives with respect to the margins ``z = X w + b`` (``g`` and
the curvature ``h``, one entry per sample) are computed by the caller
(:mod:`.margin_losses`).
"""
import numpy as np
from numba import njit

from .columns import column_axpy, column_dot, n_columns
from .weighted_columns import column_weighted_dot, column_weighted_sq_norm


@njit(cache=True, nogil=True)
def _sum(v):
    total = 0.0
    for i in range(v.shape[0]):
        total += v[i]
    return total


@njit(cache=True, nogil=True)
def _weighted_sum(h, v):
    """sum_i h[i] v[i]: the ones column's weighted dot product"""
    total = 0.0
    for i in range(v.shape[0]):
        total += h[i] * v[i]
    return total


@njit(cache=True, nogil=True)
def _shift(a, v):
    """v += a: the ones column's axpy"""
    for i in range(v.shape[0]):
        v[i] += a


@njit(cache=True, nogil=True)
def _column_dots(X, columns, g, out):
    """out[k] = X[:, columns[k]] . g"""
    stored = n_columns(X)
    for k in range(columns.shape[0]):
        j = columns[k]
        out[k] = column_dot(X, j, g) if j < stored else _sum(g)
    return out


@njit(cache=True, nogil=True)
def _column_range_dots(X, start, g, out):
    """out[k] = X[:, start + k] . g (no array of the columns' indices)"""
    stored = n_columns(X)
    for k in range(out.shape[0]):
        j = start + k
        out[k] = column_dot(X, j, g) if j < stored else _sum(g)
    return out


@njit(cache=True, nogil=True)
def _soft_threshold(x, threshold):
    if x > threshold:
        return x - threshold
    if x < -threshold:
        return x + threshold
    return 0.0


@njit(cache=True, nogil=True)
def _violations(grad, coef, l1, l2, free, out):
    """out[k] = how far coordinate k is from its optimality condition: the distance of
    ``-grad_k - l2 coef_k`` to ``l1`` times the subdifferential of |.| at ``coef_k``; coordinate
    ``free`` (-1: none) is unpenalised. ``out`` may be ``grad``."""
    for k in range(grad.shape[0]):
        weight = 0.0 if k == free else 1.0
        full = grad[k] + l2 * weight * coef[k]
        if coef[k] > 0.0:
            out[k] = abs(full + l1 * weight)
        elif coef[k] < 0.0:
            out[k] = abs(full - l1 * weight)
        else:
            out[k] = max(abs(full) - l1 * weight, 0.0)
    return out


@njit(cache=True, nogil=True)
def _cd_sweep(X, ws, active_only, coef, grad, h, l1, l2, free, curvature, d, q):
    """One sweep of coordinate descent over ``ws`` (only its nonzero coordinates when
    ``active_only``); returns the largest step times its curvature."""
    largest = 0.0
    for k in range(ws.shape[0]):
        a = curvature[k]
        old = coef[k] + d[k]
        if a <= 0.0 or (active_only and old == 0.0):  # an empty unpenalised column: no move
            continue
        if k == free:  # the intercept's column of ones, unpenalised
            new = old - (grad[k] + _weighted_sum(h, q)) / a
        else:
            slope = grad[k] + column_weighted_dot(X, ws[k], h, q) + l2 * old
            new = _soft_threshold(old - slope / a, l1 / a)
        if new != old:
            d[k] += new - old
            if k == free:
                _shift(new - old, q)
            else:
                column_axpy(X, ws[k], new - old, q)
            largest = max(largest, a * abs(new - old))
    return largest


#: The curvature of a penalised coordinate at least (liblinear's floor): the squared hinge has
#: none, and no gradient, at a coordinate whose samples are all outside the margin, and its
#: quadratic model is then the l1 term alone, whose minimum, 0, a coordinate without curvature
#: would never reach.
MIN_CURVATURE = 1e-12


@njit(cache=True, nogil=True)
def _newton_direction(X, ws, coef, grad, h, l1, l2, free, max_sweeps, tol, d, q):
    """Minimise the quadratic model of the datafit plus the penalty over the columns ``ws``,

        grad . d + 1/2 (X_ws d)' diag(h) (X_ws d) + sum_k (l1 |c_k| + l2/2 c_k^2),

    with ``c = coef + d`` (the coordinate ``free``, -1 for none, unpenalised: the intercept),
    by cyclic coordinate descent, in place on ``d`` (the direction, zero on entry) and
    ``q = X_ws d``. ``coef``, ``grad`` (the datafit's gradient ``X_ws' g``) and ``d`` are of the
    working set's coordinates, in the order of ``ws``. As glmnet: sweeps over the nonzero
    coordinates until no step times its curvature exceeds ``tol``, then a sweep over all of
    ``ws``; done when that one moves nothing more, or after ``max_sweeps``. Returns the sweeps
    run.
    """
    curvature = np.empty(ws.shape[0])
    for k in range(ws.shape[0]):
        if k == free:
            curvature[k] = _sum(h)
        else:
            curvature[k] = max(column_weighted_sq_norm(X, ws[k], h) + l2, MIN_CURVATURE)
    active_only = False
    for sweep in range(max_sweeps):
        largest = _cd_sweep(X, ws, active_only, coef, grad, h, l1, l2, free, curvature, d, q)
        if largest <= tol:
            if not active_only:
                return sweep + 1
            active_only = False
        else:
            active_only = True
    return max_sweeps


# -- entry points: fixed scalar types, so that one compiled specialisation serves every fit ----
def column_dots(X, columns, g):
    """``X[:, columns].T @ g`` of a block."""
    return _column_dots(X, columns, g, np.empty(columns.shape[0]))


def column_range_dots(X, start, stop, g):
    """``X[:, start:stop].T @ g`` of a block."""
    return _column_range_dots(X, int(start), g, np.empty(stop - start))


def violations(grad, coef, l1, l2, free=-1, out=None):
    """How far each coordinate is from its optimality condition (see :func:`_violations`), into
    ``out`` (a new array by default; ``grad`` itself to save one)."""
    out = np.empty(grad.shape[0]) if out is None else out
    return _violations(grad, coef, float(l1), float(l2), int(free), out)


def newton_direction(X, ws, coef, grad, h, l1, l2, free, max_sweeps, tol):
    """``(d, q, sweeps)``: the prox-Newton direction ``d`` on the columns ``ws`` (``coef``,
    ``grad`` and ``d`` of those coordinates; see :func:`_newton_direction`), its margins
    ``q = X_ws d`` and the sweeps it took."""
    d = np.zeros(ws.shape[0])
    q = np.zeros(h.shape[0])
    sweeps = _newton_direction(X, ws, coef, grad, h, float(l1), float(l2), int(free),
                               int(max_sweeps), float(tol), d, q)
    return d, q, sweeps
