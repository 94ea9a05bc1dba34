"""Numba kernels of the Lasso program: the STRADS sub-rounds of one feature block, and the
full pass that yields the duality-gap terms and refreshes the priorities.

Notation: ``r`` is the residual vector and ``offset`` a scalar added to every entry of it (the
true residual is ``r + offset``); columns are centred implicitly by ``col_means`` so that sparse
columns stay sparse. ``col_sums`` are the raw column sums. The penalty is ``alpha_n = alpha * n``.
"""
import numpy as np
from numba import njit

from .columns import (add_columns, column_accumulate, column_axpy, column_clear, column_dot,
                      column_scatter, column_stats)
from .compilation import declare_block_kernel_sets
from .sampling import (next_below, next_uniform, random_stream, tree_add, tree_build, tree_find,
                       tree_total)

PRIORITY, CYCLIC, RANDOM = 0, 1, 2


@njit(cache=True, nogil=True, fastmath=True)
def centred_dot(X, j, r, offset, col_sums, col_means, r_total):
    """(x_j - mean_j) . (r + offset), with r_total = sum(r + offset)."""
    return column_dot(X, j, r) + offset * col_sums[j] - col_means[j] * r_total


@njit(cache=True, nogil=True)
def coordinate_minimiser(z, norm2, alpha_n, positive):
    """argmin_b  norm2/2 * b^2 - z * b + alpha_n * |b|   (b >= 0 when positive)."""
    if z > alpha_n:
        return (z - alpha_n) / norm2
    if z < -alpha_n and not positive:
        return (z + alpha_n) / norm2
    return 0.0


@njit(cache=True, nogil=True, fastmath=True)
def _full_pass(X, coef, r, offset, col_sums, col_means, col_norm2, alpha_n, positive, gradient):
    """gradient[j] = x~_j . r for all j; returns the prospective change of every coordinate."""
    r_total = r.sum() + offset * r.shape[0]
    change = np.zeros(coef.shape[0])
    for j in range(coef.shape[0]):
        gradient[j] = centred_dot(X, j, r, offset, col_sums, col_means, r_total)
        if col_norm2[j] > 0.0:
            z = gradient[j] + col_norm2[j] * coef[j]
            change[j] = coordinate_minimiser(z, col_norm2[j], alpha_n, positive) - coef[j]
    return change


CACHED_COLUMNS = 1024


@njit(cache=True, nogil=True)
def _gram_slots(j, k, slot):
    """Cache slots of columns j and k (-1: not cached), handing out free slots first come,
    first served: the dependency check meets the same few moving coordinates again and again."""
    for c in (j, k):
        if slot[c] < 0 and slot[-1] < CACHED_COLUMNS:
            slot[c] = slot[-1]
            slot[-1] += 1
    return slot[j], slot[k]


@njit(cache=True, nogil=True)
def _weight(change, power):
    return abs(change) if power == 1 else change * change


@njit(cache=True, nogil=True)
def _largest_abs(v):
    """``np.max(np.abs(v))`` (NaN if v holds one; 0 if v is empty)."""
    largest = 0.0
    for i in range(v.shape[0]):
        a = abs(v[i])
        if not a <= largest:  # NaN wins, as in np.max
            largest = a
    return largest


@njit(cache=True, nogil=True, fastmath=True)
def _sub_rounds(X, col_sums, col_means, col_norm2, coef, priority, r, offset, min_sub_rounds,
                max_sub_rounds, local_tol, n_candidates, schedule, order, cursor, rho, alpha_n,
                positive, eta, power, seed):
    """Run STRADS rounds on one block, in place on coef, priority and r: at most
    ``max_sub_rounds``, and stop after a multiple of ``min_sub_rounds`` in which no coefficient
    moved more than ``local_tol`` times the largest one (the block has nearly converged on the
    residual it was given).

    Each sub-round: pick candidates (by priority with base weight ``eta``, cyclically along
    ``order``, or uniformly), keep those whose update is non-zero, drop any whose |correlation|
    with an already kept one reaches ``rho`` (in order of decreasing change), and update the
    kept ones in parallel from the same residual (Jacobi), as the STRADS workers do. If that
    parallel step would raise the objective, the kept set is updated sequentially instead.

    Returns ``(offset, cursor, evaluated, updates, rejected, fallbacks)``: candidates evaluated,
    coordinates changed, movers dropped by the dependency check, sequential fall-backs.
    """
    stream = random_stream(seed)
    n = r.shape[0]
    width = coef.shape[0]
    # (loops rather than np.zeros / np.full / comprehensions: each numpy constructor of a new
    # dtype or rank is one more function to compile on first use)
    weights = np.empty(width)
    stamp = np.empty(width, dtype=np.int64)
    slot = np.empty(width + 1, dtype=np.int64)  # -1: no slot; last entry: slots in use
    for j in range(width):
        weights[j] = _weight(priority[j], power)
        stamp[j] = 0
        slot[j] = -1
    slot[width] = 0
    tree = tree_build(weights)
    candidates = np.empty(n_candidates, dtype=np.int64)
    proposal = np.empty(n_candidates)
    accepted = np.empty(n_candidates, dtype=np.int64)
    work = np.zeros(n)
    step = np.zeros(n)
    row_seen = np.empty(n, dtype=np.bool_)
    for i in range(n):
        row_seen[i] = False
    rows = np.empty(n, dtype=np.int64)
    r_total = r.sum() + offset * n
    cached = min(width, CACHED_COLUMNS)
    gram = np.empty((cached, cached))
    known = np.empty((cached, cached), dtype=np.bool_)
    for a in range(cached):
        for b in range(cached):
            known[a, b] = False
    updates = rejected = fallbacks = evaluated = 0
    largest_move = 0.0
    for sub_round in range(max_sub_rounds):
        if sub_round > 0 and sub_round % min_sub_rounds == 0:
            if largest_move <= local_tol * _largest_abs(coef):
                break
            largest_move = 0.0
        # schedule: candidates
        n_picked = 0
        for _ in range(n_candidates):
            if schedule == CYCLIC:
                j = order[cursor]
                cursor = (cursor + 1) % width
            elif schedule == RANDOM:
                stream, j = next_below(stream, width)
            else:
                total = tree_total(tree)
                stream, u = next_uniform(stream)
                if total <= 0.0 or u * (1.0 + eta) < eta:
                    stream, j = next_below(stream, width)
                else:
                    stream, u = next_uniform(stream)
                    j = tree_find(tree, u * total)
            if stamp[j] != sub_round + 1:
                stamp[j] = sub_round + 1
                candidates[n_picked] = j
                n_picked += 1
        evaluated += n_picked
        # push: proposed updates from the current residual; only movers go on
        n_movers = 0
        for c in range(n_picked):
            j = candidates[c]
            change = 0.0
            if col_norm2[j] > 0.0:
                z = centred_dot(X, j, r, offset, col_sums, col_means, r_total)
                z += col_norm2[j] * coef[j]
                change = coordinate_minimiser(z, col_norm2[j], alpha_n, positive) - coef[j]
            if change != 0.0:
                candidates[n_movers] = j
                proposal[n_movers] = change
                n_movers += 1
            else:
                tree_add(tree, j, -_weight(priority[j], power))
                priority[j] = 0.0
        if n_movers == 0:
            continue
        # dependency check, largest changes first
        ranking = np.argsort(-np.abs(proposal[:n_movers]))
        n_accepted = 0
        for m in ranking:
            j = candidates[m]
            independent = True
            loaded = False  # x_j scattered into work
            for a in range(n_accepted if rho < 1.0 else 0):
                k = candidates[accepted[a]]
                sj, sk = _gram_slots(j, k, slot)
                if sj >= 0 and sk >= 0 and known[sj, sk]:
                    covariance = gram[sj, sk]
                else:
                    if not loaded:
                        column_scatter(X, j, work)
                        loaded = True
                    covariance = column_dot(X, k, work) - n * col_means[j] * col_means[k]
                    if sj >= 0 and sk >= 0:
                        gram[sj, sk] = gram[sk, sj] = covariance
                        known[sj, sk] = known[sk, sj] = True
                if covariance * covariance >= rho * rho * col_norm2[j] * col_norm2[k]:
                    independent = False
                    break
            if loaded:
                column_clear(X, j, work)
            if independent:
                accepted[n_accepted] = m
                n_accepted += 1
            else:
                rejected += 1
                tree_add(tree, j, _weight(proposal[m], power) - _weight(priority[j], power))
                priority[j] = proposal[m]
        # pull: parallel (Jacobi) commit of the accepted set, if it descends
        # The step is  step[rows] + step_shift : its raw part touches only the rows in ``rows``
        # (all of them for a dense block), so sparse blocks do no O(n) work here.
        step_shift = 0.0
        l1_change = 0.0
        n_rows = 0
        for a in range(n_accepted):
            m = accepted[a]
            j = candidates[m]
            n_rows = column_accumulate(X, j, proposal[m], step, row_seen, rows, n_rows)
            step_shift -= proposal[m] * col_means[j]
            l1_change += abs(coef[j] + proposal[m]) - abs(coef[j])
        r_dot_raw = 0.0
        raw_norm2 = 0.0
        raw_total = 0.0
        for q in range(n_rows):
            i = rows[q]
            r_dot_raw += (r[i] + offset) * step[i]
            raw_norm2 += step[i] * step[i]
            raw_total += step[i]
        r_dot_step = r_dot_raw + step_shift * r_total
        step_norm2 = raw_norm2 + 2.0 * step_shift * raw_total + n * step_shift * step_shift
        step_total = raw_total + n * step_shift
        objective_change = -r_dot_step + 0.5 * step_norm2 + alpha_n * l1_change
        descends = objective_change <= 1e-12 * (abs(r_dot_step) + step_norm2)
        for q in range(n_rows):
            i = rows[q]
            if descends:
                r[i] -= step[i]
            step[i] = 0.0
            row_seen[i] = False
        if descends:
            offset -= step_shift
            r_total -= step_total
            for a in range(n_accepted):
                m = accepted[a]
                j = candidates[m]
                coef[j] += proposal[m]
                largest_move = max(largest_move, abs(proposal[m]))
                tree_add(tree, j, _weight(proposal[m], power) - _weight(priority[j], power))
                priority[j] = proposal[m]
        else:
            fallbacks += 1
            for a in range(n_accepted):
                j = candidates[accepted[a]]
                z = centred_dot(X, j, r, offset, col_sums, col_means, r_total)
                z += col_norm2[j] * coef[j]
                change = coordinate_minimiser(z, col_norm2[j], alpha_n, positive) - coef[j]
                if change != 0.0:
                    column_axpy(X, j, -change, r)
                    offset += change * col_means[j]
                    coef[j] += change
                    largest_move = max(largest_move, abs(change))
                tree_add(tree, j, _weight(change, power) - _weight(priority[j], power))
                priority[j] = change
        updates += n_accepted
    return offset, cursor, evaluated, updates, rejected, fallbacks


# -- entry points ----------------------------------------------------------------------------------
# numba compiles one specialisation per combination of argument types, so an int where a float is
# expected (``Lasso(alpha=1)``, ``doc_topic_prior=1``) would compile the kernel a second time and
# miss the on-disk cache: the wrappers below fix the scalars' types before calling the kernels.
def full_pass(X, coef, r, offset, col_sums, col_means, col_norm2, alpha_n, positive, gradient):
    """:func:`_full_pass`, with float / bool scalars."""
    return _full_pass(X, coef, r, float(offset), col_sums, col_means, col_norm2, float(alpha_n),
                      bool(positive), gradient)


def sub_rounds(X, col_sums, col_means, col_norm2, coef, priority, r, offset, min_sub_rounds,
               max_sub_rounds, local_tol, n_candidates, schedule, order, cursor, rho, alpha_n,
               positive, eta, power, seed):
    """:func:`_sub_rounds`, with int / float / bool scalars."""
    return _sub_rounds(X, col_sums, col_means, col_norm2, coef, priority, r, float(offset),
                       int(min_sub_rounds), int(max_sub_rounds), float(local_tol),
                       int(n_candidates), int(schedule), order, int(cursor), float(rho),
                       float(alpha_n), bool(positive), float(eta), int(power), int(seed))


# the STRADS sampling schedules' fits
declare_block_kernel_sets("lasso", "lasso", (column_stats, add_columns, _full_pass, _sub_rounds),
                          values=("float64", "float32"))
