"""Numba kernels of the working-set elastic-net program: a block's full pass (screening, the
gap's terms, its features' KKT scores), the working set's gradient and coordinate-descent
epochs.

Notation as in :mod:`dask_strads.kernels.lasso`: the residual is ``r + offset``, columns are
centred implicitly by ``col_means``; columns that are not centred (no intercept) come with empty
``col_sums`` and ``col_means``, and their residual's offset stays 0; ``l1 = alpha * l1_ratio * n``
and ``l2 = alpha * (1 - l1_ratio) * n`` are the penalties of the n-times-larger objective
``1/2 ||r||^2 + l1 ||w||_1 + l2/2 ||w||^2``.

Sample weights ``s`` (scaled to sum to n) enter the working set's solve as its rows scaled by
``root_weights = sqrt(s)``: the columns are ``sqrt(s) x_j``, centred implicitly along
``root_weights`` (not ones) by their weighted means, and the residual is ``r + offset *
root_weights``. An empty ``root_weights`` stands for ones (no weights).
"""
import numpy as np
from numba import njit

from .columns import (add_columns, bit_is_set, centred_norms, clear_bit, column_axpy, column_dot,
                      column_norms)
from .compilation import declare_block_kernel_sets
from .lasso import centred_dot, coordinate_minimiser


@njit(cache=True, nogil=True, fastmath=True)
def residual_total(r, offset, root_weights):
    """``root_weights . (r + offset root_weights)`` (ones for an empty ``root_weights``), what
    the centred columns' products need: with weights scaled to sum to n, ``root_weights .
    root_weights`` is n."""
    n = r.shape[0]
    if root_weights.shape[0] == 0:
        return r.sum() + offset * n
    total = 0.0
    for i in range(n):
        total += root_weights[i] * r[i]
    return total + offset * n


@njit(cache=True, nogil=True, fastmath=True)
def _gradient(X, coef, active, r, offset, col_sums, col_means, col_norm2, l1, l2, positive,
              root_weights, gradient):
    """For every active column ``gradient[j] = x~_j . (r + offset) - l2 coef_j`` (minus the
    gradient of the smooth part); inactive (screened) columns get 0. Returns ``(dual norm,
    squared gradient norm, violating features at zero, l1 norm, squared l2 norm of coef)``: a
    feature at zero violates the optimality conditions when ``|gradient_j| > l1``."""
    r_total = residual_total(r, offset, root_weights)
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


@njit(cache=True, nogil=True, fastmath=True)
def _screen_and_score(X, start, stop, coef, active, r, offset, col_sums, col_means, norm_codes,
                      norm_table, l1, l2, positive, screening, scale, radius, every_one, positions,
                      scores):
    """The push's pass over the columns ``start:stop``: ``g_j = x~_j . (r + offset) - l2 coef_j``
    (minus the gradient of the smooth part) of each active column (``active``: a bit a
    feature), whose squared norm ``||x~_j||^2`` is at most ``norm_table[norm_codes[j]]`` (an
    upper bound: the tests below stay safe). With ``screening``, a feature at zero leaves
    ``active`` when the gap-safe test proves it zero at the optimum: ``scale |g_j| + radius
    sqrt(||x~_j||^2 + l2) < l1``. The features the push may send go to ``positions`` and
    ``scores`` (from their start, in order), with their working-set priority: the non-zero
    coefficients (infinite) and the violating features, or with ``every_one`` every feature
    left, at the violation of its optimality condition ``(|g_j| - l1) / sqrt(||x~_j||^2 +
    l2)`` (-inf for a null column without l2 penalty). Returns ``(dual norm, squared gradient
    norm, violating features at zero, active features, l1 norm, squared l2 norm of coef,
    features written)`` of these columns."""
    n = r.shape[0]
    r_total = r.sum() + offset * n
    centred = col_means.shape[0] > 0
    dual_norm = 0.0
    gradient_norm2 = 0.0
    violating = 0
    n_active = 0
    l1_norm = 0.0
    coef_norm2 = 0.0
    found = 0
    for j in range(start, stop):
        c = coef[j]
        l1_norm += abs(c)
        coef_norm2 += c * c
        if not bit_is_set(active, j):
            continue
        # the branch written out in each loop: through a shared helper the pass took 2-3x longer
        if centred:
            g = centred_dot(X, j, r, offset, col_sums, col_means, r_total) - l2 * c
        else:
            g = column_dot(X, j, r) - l2 * c
        pushing = g if positive else abs(g)
        penalised_norm2 = norm_table[norm_codes[j]] + l2
        if screening and c == 0.0:
            slack = l1 - scale * pushing  # the test without a square root
            if slack > 0.0 and slack * slack > radius * radius * penalised_norm2:
                clear_bit(active, j)
                continue
        n_active += 1
        gradient_norm2 += g * g
        dual_norm = max(dual_norm, pushing)
        if c != 0.0:
            score = np.inf
        elif pushing > l1 and penalised_norm2 > 0.0:
            score = (pushing - l1) / np.sqrt(penalised_norm2)
            violating += 1
        elif every_one:
            score = (pushing - l1) / np.sqrt(penalised_norm2) if penalised_norm2 > 0.0 else -np.inf
        else:
            continue
        positions[found] = j
        scores[found] = score
        found += 1
    return dual_norm, gradient_norm2, violating, n_active, l1_norm, coef_norm2, found


@njit(cache=True, nogil=True, fastmath=True)
def _epochs(X, coef, r, offset, col_sums, col_means, col_norm2, l1, l2, positive, root_weights,
            n_epochs):
    """``n_epochs`` cyclic coordinate-descent sweeps over every column of ``X``, in place on
    ``coef`` and ``r``. Returns ``(offset, largest |change| of the last sweep)``."""
    n = r.shape[0]
    r_total = residual_total(r, offset, root_weights)
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
    new_data = np.empty(new_indptr[-1], dtype=data.dtype)
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
def _half_norm2(r, offset, root_weights):
    total = 0.0
    if root_weights.shape[0] == 0:
        for i in range(r.shape[0]):
            total += (r[i] + offset) * (r[i] + offset)
    else:
        for i in range(r.shape[0]):
            value = r[i] + offset * root_weights[i]
            total += value * value
    return 0.5 * total


#: No sample weights: ``root_weights`` of ones.
UNWEIGHTED = np.zeros(0)


def half_norm2(r, offset, root_weights=UNWEIGHTED):
    """``||r + offset root_weights||^2 / 2`` (``root_weights`` empty: ones)."""
    return _half_norm2(r, float(offset), root_weights)


# float / bool scalars fixed here, as in kernels/lasso.py: one compiled specialisation
def gradient(X, coef, active, r, offset, col_sums, col_means, col_norm2, l1, l2, positive, out,
             root_weights=UNWEIGHTED):
    """:func:`_gradient` into ``out``, with float / bool scalars."""
    return _gradient(X, coef, active, r, float(offset), col_sums, col_means, col_norm2,
                     float(l1), float(l2), bool(positive), root_weights, out)


def screen_and_score(X, start, stop, coef, active, r, offset, col_sums, col_means, norm_bounds,
                     l1, l2, positive, screening, scale, radius, every_one, positions, scores):
    """:func:`_screen_and_score`, with int / float / bool scalars; ``norm_bounds``: ``(codes,
    table)`` (see :func:`~.columns.upper_bound_codes`)."""
    return _screen_and_score(X, int(start), int(stop), coef, active, r, float(offset), col_sums,
                             col_means, *norm_bounds, float(l1), float(l2), bool(positive),
                             bool(screening), float(scale), float(radius), bool(every_one),
                             positions, scores)


def epochs(X, coef, r, offset, col_sums, col_means, col_norm2, l1, l2, positive, n_epochs,
           root_weights=UNWEIGHTED):
    """:func:`_epochs`, with float / bool / int scalars."""
    return _epochs(X, coef, r, float(offset), col_sums, col_means, col_norm2, float(l1),
                   float(l2), bool(positive), root_weights, int(n_epochs))


def move(X, change, r, offset, col_means):
    """:func:`_move`, with a float offset."""
    return _move(X, change, r, float(offset), col_means)


declare_block_kernel_sets("enet", "elastic net", (column_norms, add_columns, centred_norms,
                                                 _screen_and_score, _gradient, _epochs),
                          values=("float64", "float32"))
