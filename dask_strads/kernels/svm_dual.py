"""Numba kernels of the SVM dual program: dual coordinate descent over a block of samples
(liblinear's dual solvers of the l2-penalised linear SVM, Hsieh et al., ICML 2008).

A block's samples are the columns of its matrix, X transposed (see :mod:`.columns`): dense, a
Fortran array (the transpose of C-ordered rows), or the ``(indptr, indices, data)`` of a CSC
matrix (the arrays of a CSR X).
"""
import numpy as np
from numba import njit

from .columns import column_axpy, column_dot, n_columns
from .compilation import declare_block_kernel_sets
from .sampling import next_below, random_stream


@njit(cache=True, nogil=True, inline="always")
def _projected(G, a, bound):
    """The projected gradient of alpha_i in [0, bound], its gradient being G."""
    if a <= 0.0:
        return min(G, 0.0)
    if a >= bound:
        return max(G, 0.0)
    return G


@njit(cache=True, nogil=True)
def _measure(Xt, w, y, alpha, cost, upper, diag, squared, working):
    """At ``w``: the samples' loss ``sum_i C_i loss(y_i x_i . w)``, their part of the dual
    objective ``sum_i alpha_i - D_i / 2 alpha_i^2``, the largest |projected gradient|, and the
    samples whose projected gradient is not 0 (the first ``n`` of ``working``); returns
    ``(loss, dual, violation, n)``."""
    loss, dual, violation, n = 0.0, 0.0, 0.0, 0
    for i in range(n_columns(Xt)):
        if upper[i] <= 0.0:  # a sample of weight 0: no loss, alpha_i = 0
            continue
        margin = y[i] * column_dot(Xt, i, w)
        slack = max(1.0 - margin, 0.0)
        loss += cost[i] * (slack * slack if squared else slack)
        a = alpha[i]
        dual += a - 0.5 * diag[i] * a * a
        projected = _projected(margin - 1.0 + diag[i] * a, a, upper[i])
        if projected != 0.0:
            violation = max(violation, abs(projected))
            working[n] = i
            n += 1
    return loss, dual, violation, n


@njit(cache=True, nogil=True)
def _change_terms(alpha, new, diag, working):
    """``sum_i (D_i alpha_i - 1) delta_i`` and ``sum_i D_i delta_i^2`` of the change
    ``delta = new - alpha`` (zero outside ``working``)."""
    linear, quadratic = 0.0, 0.0
    for i in working:
        delta = new[i] - alpha[i]
        linear += (diag[i] * alpha[i] - 1.0) * delta
        quadratic += diag[i] * delta * delta
    return linear, quadratic


@njit(cache=True, nogil=True)
def _dual_sweep(Xt, y, alpha, upper, diag, curvature, order, w, above, below):
    """One pass of dual coordinate descent over the samples ``order``: each ``alpha_i`` (in
    place) to the minimum over [0, upper_i] of ``1/2 ||w||^2 + sum_i (diag_i / 2 alpha_i^2 -
    alpha_i)``, the others fixed, where ``w = w_0 + sum_i alpha_i y_i x_i`` (kept in place);
    ``curvature_i = ||x_i||^2 + diag_i``. A sample at a bound whose gradient points out beyond
    the last pass's projected gradients (above ``above`` at 0, below ``below`` at its upper
    bound) is shrunk, as liblinear shrinks; the others are moved to the front of ``order`` (the
    next pass's). Returns how many are kept and the largest and smallest projected gradient
    among them."""
    kept, largest, smallest = 0, -np.inf, np.inf
    for k in range(order.shape[0]):
        i = order[k]
        a, bound = alpha[i], upper[i]
        if bound <= 0.0:  # a sample of weight 0
            continue
        G = y[i] * column_dot(Xt, i, w) - 1.0 + diag[i] * a
        if (a <= 0.0 and G > above) or (a >= bound and G < below):
            continue
        order[kept] = i
        kept += 1
        projected = _projected(G, a, bound)
        largest, smallest = max(largest, projected), min(smallest, projected)
        if projected == 0.0:
            continue
        if curvature[i] > 0.0:
            new = min(max(a - G / curvature[i], 0.0), bound)
        else:  # a sample without features (hinge: bound finite): the linear term decides
            new = bound if G < 0.0 else 0.0
        if new != a:
            column_axpy(Xt, i, (new - a) * y[i], w)
            alpha[i] = new
    return kept, largest, smallest


@njit(cache=True, nogil=True)
def _dual_sweeps(Xt, y, alpha, upper, diag, curvature, order, w, budget, max_sweeps, seed):
    """Sweeps of :func:`_dual_sweep` over ``order`` (the working set), each in a fresh random
    order (Fisher-Yates, a SplitMix64 stream from ``seed``) over the samples the one before kept,
    until ``budget`` samples have been visited, ``max_sweeps`` sweeps have run or none is kept.
    The first sweep shrinks nothing; each later one by the projected gradients of the one before
    (liblinear's thresholds: none on a side where they did not cross 0)."""
    stream = random_stream(seed)
    size = order.shape[0]
    above, below = np.inf, -np.inf
    for _ in range(max_sweeps):
        if size == 0 or budget <= 0:
            break
        budget -= size
        for k in range(size - 1, 0, -1):
            stream, j = next_below(stream, k + 1)
            order[k], order[j] = order[j], order[k]
        size, largest, smallest = _dual_sweep(Xt, y, alpha, upper, diag, curvature,
                                              order[:size], w, above, below)
        above = largest if largest > 0.0 else np.inf
        below = smallest if smallest < 0.0 else -np.inf


# -- entry points: fixed types, so that one compiled specialisation serves every fit ----------
def measure(Xt, w, y, alpha, cost, upper, diag, squared):
    """``(loss, dual, violation, working)``: :func:`_measure`'s, ``working`` an array."""
    working = np.empty(len(alpha), dtype=np.int64)
    loss, dual, violation, n = _measure(Xt, w, y, alpha, cost, upper, diag, bool(squared),
                                        working)
    return loss, dual, violation, working[:n]


def dual_sweeps(Xt, y, alpha, upper, diag, curvature, order, w, budget, max_sweeps, seed):
    """:func:`_dual_sweeps` (``order``: int64), ``alpha``, ``w`` and ``order`` updated in
    place."""
    _dual_sweeps(Xt, y, alpha, upper, diag, curvature, order, w, int(budget), int(max_sweeps),
                 int(seed))


def change_terms(alpha, new, diag, working):
    """:func:`_change_terms`."""
    return _change_terms(alpha, new, diag, working.astype(np.int64, copy=False))


# on dense rows or CSR ones
declare_block_kernel_sets("svm_dual", "SVM dual", (_measure, _dual_sweeps),
                          other_kernels=(_change_terms,))
