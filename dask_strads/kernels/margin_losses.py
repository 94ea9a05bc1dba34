"""Numba kernels of the losses of margins: a loss's value and its first and second derivatives in
each sample's margin ``z_i``, for labels ``y_i`` in {-1, +1} and a cost ``C_i`` per sample (the
inverse penalty times the sample's weight). The second derivative of the squared hinge is its
generalised one (Mangasarian), ``2 C_i`` where the sample is inside the margin, else 0.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True, fastmath=True)
def _softplus(x):
    """log(1 + exp(x)), without overflow."""
    return max(x, 0.0) + np.log1p(np.exp(-abs(x)))


@njit(cache=True, nogil=True)
def _sigmoid_of_minus(m):
    """1 / (1 + exp(m)), without overflow."""
    if m >= 0.0:
        e = np.exp(-m)
        return e / (1.0 + e)
    return 1.0 / (1.0 + np.exp(m))


@njit(cache=True, nogil=True, fastmath=True)
def _logistic(z, y, C):
    """sum_i C_i log(1 + exp(-y_i z_i)), without overflow."""
    total = 0.0
    for i in range(z.shape[0]):
        total += C[i] * _softplus(-y[i] * z[i])
    return total


@njit(cache=True, nogil=True)
def _logistic_derivatives(z, y, C, g, h):
    for i in range(z.shape[0]):
        s = _sigmoid_of_minus(y[i] * z[i])
        g[i] = -C[i] * y[i] * s
        h[i] = C[i] * s * (1.0 - s)


@njit(cache=True, nogil=True)
def _logistic_change(z, q, t, y, C):
    """sum_i C_i (log(1 + exp(-y_i (z_i + t q_i))) - log(1 + exp(-y_i z_i))), each sample's
    change computed as itself, log1p(sigmoid(-m) expm1(-delta)), not as the difference of two
    values: a change far below the loss's rounding (a step along a column of large values near
    the optimum) keeps its digits."""
    total = 0.0
    for i in range(z.shape[0]):
        m = y[i] * z[i]
        delta = y[i] * t * q[i]
        if abs(delta) < 1.0:
            change = np.log1p(_sigmoid_of_minus(m) * np.expm1(-delta))
        else:
            change = _softplus(-(m + delta)) - _softplus(-m)
        total += C[i] * change
    return total


@njit(cache=True, nogil=True, fastmath=True)
def _squared_hinge(z, y, C):
    """sum_i C_i max(0, 1 - y_i z_i)^2"""
    total = 0.0
    for i in range(z.shape[0]):
        slack = 1.0 - y[i] * z[i]
        if slack > 0.0:
            total += C[i] * slack * slack
    return total


@njit(cache=True, nogil=True)
def _squared_hinge_change(z, q, t, y, C):
    """sum_i C_i (max(0, 1 - y_i (z_i + t q_i))^2 - max(0, 1 - y_i z_i)^2), sample by sample
    (see :func:`_logistic_change`)."""
    total = 0.0
    for i in range(z.shape[0]):
        before = max(1.0 - y[i] * z[i], 0.0)
        after = max(1.0 - y[i] * (z[i] + t * q[i]), 0.0)
        total += C[i] * (after - before) * (after + before)
    return total


@njit(cache=True, nogil=True)
def _squared_hinge_derivatives(z, y, C, g, h):
    for i in range(z.shape[0]):
        slack = 1.0 - y[i] * z[i]
        if slack > 0.0:
            g[i] = -2.0 * C[i] * y[i] * slack
            h[i] = 2.0 * C[i]
        else:
            g[i] = 0.0
            h[i] = 0.0


# -- entry points: float64 arrays, so that one compiled specialisation serves every fit --------
def logistic(z, y, C):
    """``sum_i C_i log(1 + exp(-y_i z_i))``."""
    return _logistic(z, y, C)


def logistic_change(z, q, t, y, C):
    """:func:`logistic` at ``z + t q`` minus at ``z``, computed sample by sample."""
    return _logistic_change(z, q, float(t), y, C)


def logistic_derivatives(z, y, C):
    """``(g, h)``: the first and second derivatives of :func:`logistic`'s terms in ``z``."""
    g, h = np.empty(z.shape[0]), np.empty(z.shape[0])
    _logistic_derivatives(z, y, C, g, h)
    return g, h


def squared_hinge(z, y, C):
    """``sum_i C_i max(0, 1 - y_i z_i)^2``."""
    return _squared_hinge(z, y, C)


def squared_hinge_change(z, q, t, y, C):
    """:func:`squared_hinge` at ``z + t q`` minus at ``z``, computed sample by sample."""
    return _squared_hinge_change(z, q, float(t), y, C)


def squared_hinge_derivatives(z, y, C):
    """``(g, h)``: the first and (generalised) second derivatives of :func:`squared_hinge`'s
    terms in ``z``."""
    g, h = np.empty(z.shape[0]), np.empty(z.shape[0])
    _squared_hinge_derivatives(z, y, C, g, h)
    return g, h
