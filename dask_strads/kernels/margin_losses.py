"""Numba kernels of the losses of margins (linear predictions) ``z_i``: a loss's value and its first
and second derivatives in each sample's ``z_i``, for targets ``y_i`` (labels in {-1, +1} for the
classifiers' losses) and a cost ``C_i`` per sample (the inverse penalty times the sample's
weight). The second derivative of the squared hinge is its generalised one (Mangasarian),
``2 C_i`` where the sample is inside the margin, else 0. Huber's is ``C_i`` everywhere, its
largest (exact within ``delta``): beyond, the loss is linear, and a column whose samples all
lie there would have a quadratic model without curvature, whose step is unbounded; with the
largest curvature the model is an upper bound, and its step decreases the loss.

A loss's kernels: its value ``_name(z, y, C, ...)``, the change of its value ``_name_change(z,
q, t, y, C, ...)`` from ``z`` to ``z + t q`` summed sample by sample (precise when tiny), and its
derivatives ``_name_derivatives(z, y, C, ..., g, h)``, with ``...`` the loss's own parameters.
"""
import numpy as np
from numba import njit

from .compilation import declare_kernel_set


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


@njit(cache=True, nogil=True, fastmath=True)
def _squared_error(z, y, C):
    """sum_i C_i (z_i - y_i)^2 / 2"""
    total = 0.0
    for i in range(z.shape[0]):
        total += 0.5 * C[i] * (z[i] - y[i]) ** 2
    return total


@njit(cache=True, nogil=True)
def _squared_error_change(z, q, t, y, C):
    total = 0.0
    for i in range(z.shape[0]):
        total += C[i] * t * q[i] * (z[i] - y[i] + 0.5 * t * q[i])
    return total


@njit(cache=True, nogil=True)
def _squared_error_derivatives(z, y, C, g, h):
    for i in range(z.shape[0]):
        g[i] = C[i] * (z[i] - y[i])
        h[i] = C[i]


@njit(cache=True, nogil=True)
def _huber_term(r, delta):
    """Huber's function of a residual: r^2 / 2 within delta, linear beyond."""
    if abs(r) <= delta:
        return 0.5 * r * r
    return delta * (abs(r) - 0.5 * delta)


@njit(cache=True, nogil=True, fastmath=True)
def _huber(z, y, C, delta):
    """sum_i C_i huber_delta(z_i - y_i)"""
    total = 0.0
    for i in range(z.shape[0]):
        total += C[i] * _huber_term(z[i] - y[i], delta)
    return total


@njit(cache=True, nogil=True)
def _huber_change(z, q, t, y, C, delta):
    """Each sample's change as itself where both residuals are in one piece of the loss (both
    within delta: ``s (r + s / 2)`` for a step ``s``; both beyond on one side: ``delta |s|``
    signed), not as the difference of two values (see :func:`_logistic_change`)."""
    total = 0.0
    for i in range(z.shape[0]):
        r = z[i] - y[i]
        step = t * q[i]
        moved = r + step
        if abs(r) <= delta and abs(moved) <= delta:
            change = step * (r + 0.5 * step)
        elif min(r, moved) > delta or max(r, moved) < -delta:
            change = delta * step if r > 0.0 else -delta * step
        else:
            change = _huber_term(moved, delta) - _huber_term(r, delta)
        total += C[i] * change
    return total


@njit(cache=True, nogil=True)
def _huber_derivatives(z, y, C, delta, g, h):
    for i in range(z.shape[0]):
        r = z[i] - y[i]
        g[i] = C[i] * min(max(r, -delta), delta)
        h[i] = C[i]


@njit(cache=True, nogil=True, fastmath=True)
def _poisson(z, y, C):
    """sum_i C_i (exp(z_i) - y_i z_i): the Poisson deviance with a log link, up to a constant"""
    total = 0.0
    for i in range(z.shape[0]):
        total += C[i] * (np.exp(z[i]) - y[i] * z[i])
    return total


@njit(cache=True, nogil=True)
def _poisson_change(z, q, t, y, C):
    total = 0.0
    for i in range(z.shape[0]):
        total += C[i] * (np.exp(z[i]) * np.expm1(t * q[i]) - y[i] * t * q[i])
    return total


@njit(cache=True, nogil=True)
def _poisson_derivatives(z, y, C, g, h):
    for i in range(z.shape[0]):
        mean = np.exp(z[i])
        g[i] = C[i] * (mean - y[i])
        h[i] = C[i] * mean


class LossKernels:
    """A loss's three kernels, called with float64 arrays and the loss's own parameters as
    floats (so that one compiled specialisation serves every fit), and declared as the kernel set
    ``<name>_loss``. A loss's datafit (:mod:`dask_strads.programs.datafits`) holds its
    ``LossKernels``."""

    def __init__(self, name, label, value, change, derivatives):
        self.name, self.set_name = name, f"{name}_loss"
        self._value, self._change, self._derivatives = value, change, derivatives
        declare_kernel_set(self.set_name, label, (value, derivatives, change))
        _DECLARED[name] = self

    def __reduce__(self):  # by name: the kernels stay in their module
        return _declared, (self.name,)

    def value(self, z, y, C, *parameters):
        """``sum_i C_i loss(z_i, y_i)``."""
        return self._value(z, y, C, *map(float, parameters))

    def change(self, z, q, t, y, C, *parameters):
        """:meth:`value` at ``z + t q`` minus at ``z``, computed sample by sample."""
        return self._change(z, q, float(t), y, C, *map(float, parameters))

    def derivatives(self, z, y, C, *parameters):
        """``(g, h)``: the first and second derivatives of the loss's terms in ``z``."""
        g, h = np.empty(z.shape[0]), np.empty(z.shape[0])
        self._derivatives(z, y, C, *map(float, parameters), g, h)
        return g, h


_DECLARED: dict = {}


def _declared(name):
    return _DECLARED[name]


#: ``sum_i C_i log(1 + exp(-y_i z_i))``.
LOGISTIC = LossKernels("logistic", "logistic loss", _logistic, _logistic_change,
                       _logistic_derivatives)
#: ``sum_i C_i max(0, 1 - y_i z_i)^2``.
SQUARED_HINGE = LossKernels("squared_hinge", "squared hinge", _squared_hinge,
                            _squared_hinge_change, _squared_hinge_derivatives)
#: ``sum_i C_i (z_i - y_i)^2 / 2``.
SQUARED_ERROR = LossKernels("squared_error", "squared error", _squared_error,
                            _squared_error_change, _squared_error_derivatives)
#: ``sum_i C_i huber_delta(z_i - y_i)``: squared within ``delta`` (halved), linear beyond.
HUBER = LossKernels("huber", "Huber loss", _huber, _huber_change, _huber_derivatives)
#: ``sum_i C_i (exp(z_i) - y_i z_i)``.
POISSON = LossKernels("poisson", "Poisson loss", _poisson, _poisson_change,
                      _poisson_derivatives)
