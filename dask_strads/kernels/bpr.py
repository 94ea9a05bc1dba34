"""Bayesian personalised ranking by stochastic gradient steps on sampled triples.

A step samples one interaction (user u, item i) uniformly among the stored entries of a piece
(users x the items of one item block, CSR with sorted indices local to the block), an item j
of the block uniformly among those u did not interact with, and moves the rows up the gradient
of ``ln sigmoid(x)``, ``x = w_u . (h_i - h_j)``, less an L2 penalty::

    z = sigmoid(-x)
    w_u += lr (z (h_i - h_j) - reg w_u)
    h_i += lr (z w_u - reg h_i)
    h_j += lr (-z w_u - reg h_j)

A fold-in takes the same steps on the user rows alone, the items fixed. The last
``fixed_user_columns`` columns of the user rows are constants (a column of ones, which
makes the items' matching column their bias) and are not moved.
"""
import numpy as np
from numba import njit

from .compilation import declare_kernel_set
from .sampling import next_below, random_stream


@njit(cache=True, nogil=True)
def _interacted(indices, start, stop, item):
    at = start + np.searchsorted(indices[start:stop], item)
    return at < stop and indices[at] == item


@njit(cache=True, nogil=True, fastmath=True)
def _sgd_steps(indptr, indices, users, items, n_steps, seed, learning_rate, regularization,
               fixed_user_columns, move_items):
    stream = random_stream(seed)
    # constants of the rows' type: float32 rows are updated in float32 arithmetic throughout
    zero, one = learning_rate - learning_rate, learning_rate / learning_rate
    n_items, width = items.shape
    moved = width - fixed_user_columns
    nnz = indptr[-1]
    loss, correct, taken = 0.0, 0, 0
    if nnz == 0 or n_items < 2:
        return loss, correct, taken
    for _ in range(n_steps):
        stream, entry = next_below(stream, nnz)
        u = np.searchsorted(indptr, entry, side="right") - 1
        start, stop = indptr[u], indptr[u + 1]
        if stop - start >= n_items:
            continue  # the user interacted with every item of the block: no j
        i = indices[entry]
        stream, j = next_below(stream, n_items)
        while _interacted(indices, start, stop, j):
            stream, j = next_below(stream, n_items)
        x = zero
        for f in range(width):
            x += users[u, f] * (items[i, f] - items[j, f])
        e = np.exp(-abs(x))  # z = sigmoid(-x), loss -ln sigmoid(x), from one exponential
        z = e / (one + e) if x > 0 else one / (one + e)
        loss += np.log1p(e) + max(-x, zero)
        correct += x > 0
        taken += 1
        step, shrink = learning_rate * z, one - learning_rate * regularization
        if not move_items:  # a fold-in: the users' rows alone
            for f in range(moved):
                users[u, f] = shrink * users[u, f] + step * (items[i, f] - items[j, f])
            continue
        for f in range(moved):  # the constant columns in a loop of their own: no branch
            w, hi, hj = users[u, f], items[i, f], items[j, f]
            users[u, f] = shrink * w + step * (hi - hj)
            items[i, f] = shrink * hi + step * w
            items[j, f] = shrink * hj - step * w
        for f in range(moved, width):
            w = users[u, f]
            items[i, f] = shrink * items[i, f] + step * w
            items[j, f] = shrink * items[j, f] - step * w
    return loss, correct, taken


def sgd_steps(indptr, indices, users, items, n_steps, seed, learning_rate, regularization,
              fixed_user_columns=0, move_items=True):
    """``n_steps`` steps on triples of one piece, ``users`` and ``items`` (rows of one float
    type, computed in it) updated in place (``move_items`` False: the users alone, a fold-in);
    returns ``(sum of -ln sigmoid(x), steps with x > 0,
    steps taken)`` over the triples, before their steps."""
    real = users.dtype.type
    return _sgd_steps(np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
                      users, items, int(n_steps), int(seed), real(learning_rate),
                      real(regularization), int(fixed_user_columns), bool(move_items))


declare_kernel_set("bpr", "bpr", (_sgd_steps,))
