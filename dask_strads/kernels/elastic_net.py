"""Numba kernels of the working-set elastic-net program: a block's gradient, its features' KKT
scores, and coordinate-descent epochs over a working set.

Notation as in :mod:`dask_strads.kernels.lasso`: the residual is ``r + offset``, columns are
centred implicitly by ``col_means``; columns that are not centred (no intercept) come with empty
``col_sums`` and ``col_means``, and their residual's offset stays 0; ``l1 = alpha * l1_ratio * n``
and ``l2 = alpha * (1 - l1_ratio) * n`` are the penalties of the n-times-larger objective
``1/2 ||r||^2 + l1 ||w||_1 + l2/2 ||w||^2``.
"""
import numpy as np
from numba import njit

from .columns import column_axpy, column_dot
from .lasso import centred_dot, coordinate_minimiser


@njit(cache=True, nogil=True, fastmath=True)
def _gradient(X, coef, active, r, offset, col_sums, col_means, col_norm2, l1, l2, positive,
              gradient):
    """For every active column ``gradient[j] = x~_j . (r + offset) - l2 coef_j`` (minus the
    gradient of the smooth part); inactive (screened) columns get 0. Returns ``(dual norm,
    squared gradient norm, violating features at zero, l1 norm, squared l2 norm of coef)``: a
    feature at zero violates the optimality conditions when its :func:`score` is positive."""
    n = r.shape[0]
    r_total = r.sum() + offset * n
    centred = col_means.shape[0] > 0
    dual_norm = 0.0
    gradient_norm2 = 0.0
    violating = 0
    l1_norm = 0.0
    coef_norm2 = 0.0
    for j in range(coef.shape[0]):
        l1_norm += abs(coef[j])
        coef_norm2 += coef[j] * coef[j]
        if not active[j]:
            gradient[j] = 0.0
            continue
        # the branch written out in each loop: through a shared helper the pass took 2-3x longer
        if centred:
            g = centred_dot(X, j, r, offset, col_sums, col_means, r_total) - l2 * coef[j]
        else:
            g = column_dot(X, j, r) - l2 * coef[j]
        gradient[j] = g
        gradient_norm2 += g * g
        pushing = g if positive else abs(g)
        dual_norm = max(dual_norm, pushing)
        if coef[j] == 0.0 and pushing > l1 and col_norm2[j] + l2 > 0.0:
            violating += 1
    return dual_norm, gradient_norm2, violating, l1_norm, coef_norm2


@njit(cache=True, nogil=True, inline="always")
def _score(j, coef, active, gradient, col_norm2, l1, l2, positive):
    """Feature j's priority for the working set: infinite for a non-zero coefficient, else its
    violation of the optimality condition ``(|gradient_j| - l1) / ||x~_j||`` (in the norm of
    the penalised column); -inf for a screened feature."""
    if not active[j]:
        return -np.inf
    if coef[j] != 0.0:
        return np.inf
    norm2 = col_norm2[j] + l2
    if norm2 <= 0.0:
        return -np.inf
    pushing = gradient[j] if positive else abs(gradient[j])
    return (pushing - l1) / np.sqrt(norm2)


@njit(cache=True, nogil=True)
def _scores(positions, coef, active, gradient, col_norm2, l1, l2, positive):
    """The scores of the features ``positions``."""
    out = np.empty(positions.shape[0])
    for k in range(positions.shape[0]):
        out[k] = _score(positions[k], coef, active, gradient, col_norm2, l1, l2, positive)
    return out


@njit(cache=True, nogil=True, inline="always")
def _is_candidate(j, coef, active, gradient, col_norm2, l1, l2, positive):
    """Whether feature j's :func:`_score` is positive (without computing it)."""
    if not active[j]:
        return False
    if coef[j] != 0.0:
        return True
    pushing = gradient[j] if positive else abs(gradient[j])
    return pushing > l1 and col_norm2[j] + l2 > 0.0


@njit(cache=True, nogil=True)
def _candidates(coef, active, gradient, col_norm2, l1, l2, positive):
    """The features of positive score (non-zero or violating), in order: two passes over the
    gradient instead of a score kept per feature."""
    count = 0
    for j in range(coef.shape[0]):
        if _is_candidate(j, coef, active, gradient, col_norm2, l1, l2, positive):
            count += 1
    positions = np.empty(count, dtype=np.int64)
    count = 0
    for j in range(coef.shape[0]):
        if _is_candidate(j, coef, active, gradient, col_norm2, l1, l2, positive):
            positions[count] = j
            count += 1
    return positions


@njit(cache=True, nogil=True)
def _screen(active, coef, gradient, col_norm2, scale, gap, l1, l2, positive):
    """The gap-safe rule, in place on ``active``: a feature at zero is dropped when
    ``scale |gradient_j| + sqrt(2 gap (col_norm2_j + l2)) < l1``. Returns how many were."""
    dropped = 0
    for j in range(active.shape[0]):
        if active[j] and coef[j] == 0.0:
            pushing = gradient[j] if positive else abs(gradient[j])
            if scale * pushing + np.sqrt(2.0 * gap * (col_norm2[j] + l2)) < l1:
                active[j] = False
                dropped += 1
    return dropped


@njit(cache=True, nogil=True, fastmath=True)
def _epochs(X, coef, r, offset, col_sums, col_means, col_norm2, l1, l2, positive, n_epochs):
    """``n_epochs`` cyclic coordinate-descent sweeps over every column of ``X``, in place on
    ``coef`` and ``r``. Returns ``(offset, largest |change| of the last sweep)``."""
    n = r.shape[0]
    r_total = r.sum() + offset * n
    centred = col_means.shape[0] > 0
    largest = 0.0
    for _ in range(n_epochs):
        largest = 0.0
        for j in range(coef.shape[0]):
            norm2 = col_norm2[j] + l2
            if norm2 <= 0.0:
                continue
            old = coef[j]
            if centred:
                z = centred_dot(X, j, r, offset, col_sums, col_means, r_total) + col_norm2[j] * old
            else:
                z = column_dot(X, j, r) + col_norm2[j] * old
            new = coordinate_minimiser(z, norm2, l1, positive)
            if new != old:
                change = new - old
                column_axpy(X, j, -change, r)
                if centred:
                    offset += change * col_means[j]
                    r_total -= change * (col_sums[j] - n * col_means[j])
                coef[j] = new
                largest = max(largest, abs(change))
    return offset, largest


@njit(cache=True, nogil=True)
def _move(X, change, r, offset, col_means):
    """The residual after the coefficients move by ``change``: in place on ``r``; returns the
    new offset."""
    centred = col_means.shape[0] > 0
    for j in range(change.shape[0]):
        if change[j] != 0.0:
            column_axpy(X, j, -change[j], r)
            if centred:
                offset += change[j] * col_means[j]
    return offset


@njit(cache=True, nogil=True)
def take_csc(indptr, indices, data, positions):
    """The columns ``positions`` of a CSC triple, as a CSC triple of the same types."""
    new_indptr = np.empty(positions.shape[0] + 1, dtype=indptr.dtype)
    new_indptr[0] = 0
    for k in range(positions.shape[0]):
        j = positions[k]
        new_indptr[k + 1] = new_indptr[k] + indptr[j + 1] - indptr[j]
    new_indices = np.empty(new_indptr[-1], dtype=indices.dtype)
    new_data = np.empty(new_indptr[-1])
    for k in range(positions.shape[0]):
        start = indptr[positions[k]]
        for q in range(new_indptr[k + 1] - new_indptr[k]):
            new_indices[new_indptr[k] + q] = indices[start + q]
            new_data[new_indptr[k] + q] = data[start + q]
    return new_indptr, new_indices, new_data


@njit(cache=True, nogil=True, fastmath=True)
def dot(a, b):
    """``a . b`` of two float64 vectors. np.dot calls BLAS, whose threads on a loaded machine
    make it a thousand times slower than this loop (18 ms for 20k entries, measured here)."""
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


@njit(cache=True, nogil=True, fastmath=True)
def _half_norm2(r, offset):
    total = 0.0
    for i in range(r.shape[0]):
        total += (r[i] + offset) * (r[i] + offset)
    return 0.5 * total


def half_norm2(r, offset):
    """``||r + offset||^2 / 2``."""
    return _half_norm2(r, float(offset))


# float / bool scalars fixed here, as in kernels/lasso.py: one compiled specialisation
def gradient(X, coef, active, r, offset, col_sums, col_means, col_norm2, l1, l2, positive, out):
    """:func:`_gradient` into ``out``, with float / bool scalars."""
    return _gradient(X, coef, active, r, float(offset), col_sums, col_means, col_norm2,
                     float(l1), float(l2), bool(positive), out)


def scores(positions, coef, active, gradient, col_norm2, l1, l2, positive):
    """:func:`_scores`, with float / bool scalars."""
    return _scores(positions, coef, active, gradient, col_norm2, float(l1), float(l2),
                   bool(positive))


def candidates(coef, active, gradient, col_norm2, l1, l2, positive):
    """:func:`_candidates`, with float / bool scalars."""
    return _candidates(coef, active, gradient, col_norm2, float(l1), float(l2), bool(positive))


def screen(active, coef, gradient, col_norm2, scale, gap, l1, l2, positive):
    """:func:`_screen`, with float / bool scalars."""
    return _screen(active, coef, gradient, col_norm2, float(scale), float(gap), float(l1),
                   float(l2), bool(positive))


def epochs(X, coef, r, offset, col_sums, col_means, col_norm2, l1, l2, positive, n_epochs):
    """:func:`_epochs`, with float / bool / int scalars."""
    return _epochs(X, coef, r, float(offset), col_sums, col_means, col_norm2, float(l1),
                   float(l2), bool(positive), int(n_epochs))


def move(X, change, r, offset, col_means):
    """:func:`_move`, with a float offset."""
    return _move(X, change, r, float(offset), col_means)
