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
from .compilation import declare_block_kernel_sets
from .weighted_columns import column_weighted_axpy, column_weighted_dot, column_weighted_sq_norm


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
    ``-grad_k - l2 coef_k`` to ``l1[k]`` times the subdifferential of |.| at ``coef_k``;
    coordinate ``free`` (-1: none) is unpenalised. ``out`` may be ``grad``."""
    for k in range(grad.shape[0]):
        weight = 0.0 if k == free else 1.0
        full = grad[k] + l2 * weight * coef[k]
        if coef[k] > 0.0:
            out[k] = abs(full + l1[k] * weight)
        elif coef[k] < 0.0:
            out[k] = abs(full - l1[k] * weight)
        else:
            out[k] = max(abs(full) - l1[k] * weight, 0.0)
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
            new = _soft_threshold(old - slope / a, l1[k] / a)
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

        grad . d + 1/2 (X_ws d)' diag(h) (X_ws d) + sum_k (l1_k |c_k| + l2/2 c_k^2),

    with ``c = coef + d`` (the coordinate ``free``, -1 for none, unpenalised: the intercept),
    by cyclic coordinate descent, in place on ``d`` (the direction, zero on entry) and
    ``q = X_ws d``. ``coef``, ``grad`` (the datafit's gradient ``X_ws' g``), ``l1`` and ``d``
    are of the working set's coordinates, in the order of ``ws``. As glmnet: sweeps over the nonzero
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
        done, active_only = _next_sweeps(largest, tol, active_only)
        if done:
            return sweep + 1
    return max_sweeps


@njit(cache=True, nogil=True)
def _next_sweeps(largest, tol, active_only):
    """``(done, active_only)`` after a sweep whose largest step times its curvature was
    ``largest``: sweeps over the nonzero coordinates until that is at most ``tol``, then one
    over all of them, which ends it if it is at most ``tol`` too."""
    if largest <= tol:
        return not active_only, False
    return False, True


@njit(cache=True, nogil=True)
def _softmax_cd_sweep(X, ws, active_only, coef, grad, P, CP, l1, l2, free, curvature, d, q, r):
    """:func:`_cd_sweep` for the softmax model of all classes at once: coordinate ``(k, m)`` is
    class k's coefficient of column ``ws[m]``; the model's curvature couples the classes through
    ``r = sum_k P[k] * q[k]`` (``P`` the probabilities, ``CP`` them times the samples' costs)."""
    largest = 0.0
    for k in range(coef.shape[0]):
        for m in range(ws.shape[0]):
            a = curvature[k, m]
            old = coef[k, m] + d[k, m]
            if a <= 0.0 or (active_only and old == 0.0):
                continue
            if m == free:
                slope = grad[k, m] + _weighted_sum(CP[k], q[k]) - _weighted_sum(CP[k], r)
                new = old - slope / a
            else:
                slope = (grad[k, m] + column_weighted_dot(X, ws[m], CP[k], q[k])
                         - column_weighted_dot(X, ws[m], CP[k], r) + l2 * old)
                new = _soft_threshold(old - slope / a, l1[m] / a)
            if new != old:
                step = new - old
                d[k, m] += step
                if m == free:
                    _shift(step, q[k])
                    for i in range(r.shape[0]):
                        r[i] += step * P[k, i]
                else:
                    column_axpy(X, ws[m], step, q[k])
                    column_weighted_axpy(X, ws[m], step, P[k], r)
                largest = max(largest, a * abs(step))
    return largest


@njit(cache=True, nogil=True)
def _softmax_newton_direction(X, ws, coef, grad, P, CP, l1, l2, free, max_sweeps, tol, d, q,
                              r):
    """:func:`_newton_direction` of the softmax cross-entropy of every class (``coef``,
    ``grad``, ``d``: classes x the working set; ``q``: classes x samples), whose Hessian at a
    sample is its cost times ``diag(p) - p p'``."""
    curvature = np.empty(coef.shape)
    for k in range(coef.shape[0]):
        h = CP[k] * (1.0 - P[k])
        for m in range(ws.shape[0]):
            curvature[k, m] = _sum(h) if m == free else column_weighted_sq_norm(X, ws[m], h) + l2
    active_only = False
    for sweep in range(max_sweeps):
        largest = _softmax_cd_sweep(X, ws, active_only, coef, grad, P, CP, l1, l2, free,
                                    curvature, d, q, r)
        done, active_only = _next_sweeps(largest, tol, active_only)
        if done:
            return sweep + 1
    return max_sweeps


# -- entry points: fixed scalar types, so that one compiled specialisation serves every fit ----
def column_dots(X, columns, g):
    """``X[:, columns].T @ g`` of a block."""
    return _column_dots(X, columns, g, np.empty(columns.shape[0]))


def column_range_dots(X, start, stop, g):
    """``X[:, start:stop].T @ g`` of a block."""
    return _column_range_dots(X, int(start), g, np.empty(stop - start))


def violations(grad, coef, l1, l2, free=-1, out=None):
    """How far each coordinate is from its optimality condition (see :func:`_violations`; ``l1``
    one number, or one per coordinate), into ``out`` (a new array by default; ``grad`` itself
    to save one)."""
    out = np.empty(grad.shape[0]) if out is None else out
    return _violations(grad, coef, _per_coordinate(l1, grad.shape[0]), float(l2), int(free),
                       out)


def _per_coordinate(l1, n):
    """``l1`` as float64 strengths of ``n`` coordinates (the kernels' one signature)."""
    if np.ndim(l1) == 0:
        return np.full(n, float(l1))
    return np.ascontiguousarray(l1, dtype=np.float64)


def newton_direction(X, ws, coef, grad, h, l1, l2, free, max_sweeps, tol):
    """``(d, q, sweeps)``: the prox-Newton direction ``d`` on the columns ``ws`` (``coef``,
    ``grad``, ``d`` and ``l1``, if not one number, of those coordinates; see
    :func:`_newton_direction`), its margins ``q = X_ws d`` and the sweeps it took."""
    d = np.zeros(ws.shape[0])
    q = np.zeros(h.shape[0])
    sweeps = _newton_direction(X, ws, coef, grad, h, _per_coordinate(l1, ws.shape[0]),
                               float(l2), int(free), int(max_sweeps), float(tol), d, q)
    return d, q, sweeps


def softmax_newton_direction(X, ws, coef, grad, P, C, l1, l2, free, max_sweeps, tol):
    """``(d, q, sweeps)``: :func:`newton_direction` for the softmax cross-entropy of all
    classes at once (``P``: the probabilities, classes x samples; ``C``: the samples' costs;
    ``coef``, ``grad`` and ``d``: classes x the columns ``ws``; ``q``: classes x samples)."""
    d = np.zeros(coef.shape)
    q = np.zeros(P.shape)
    sweeps = _softmax_newton_direction(X, ws, coef, grad, P, P * C,
                                       _per_coordinate(l1, ws.shape[0]), float(l2),
                                       int(free), int(max_sweeps), float(tol), d, q,
                                       np.zeros(P.shape[1]))
    return d, q, sweeps


# a variant per block layout; the datafit's loss kernels (a set of their own) serve both
declare_block_kernel_sets("prox_newton", "prox-Newton",
                          (_column_dots, _column_range_dots, _newton_direction),
                          other_kernels=(_violations,))
