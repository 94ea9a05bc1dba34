"""Weighted sampling with weights that change a few at a time (a Fenwick tree of sums)."""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def tree_build(weights):
    """Fenwick tree over ``weights`` (1-based internally; length n + 1)."""
    n = weights.shape[0]
    tree = np.zeros(n + 1)
    for i in range(n):
        tree[i + 1] += weights[i]
        parent = (i + 1) + ((i + 1) & -(i + 1))
        if parent <= n:
            tree[parent] += tree[i + 1]
    return tree


@njit(cache=True, nogil=True)
def tree_add(tree, i, delta):
    k = i + 1
    while k < tree.shape[0]:
        tree[k] += delta
        k += k & -k


@njit(cache=True, nogil=True)
def tree_total(tree):
    n = tree.shape[0] - 1
    total = 0.0
    k = n
    while k > 0:
        total += tree[k]
        k -= k & -k
    return total


@njit(cache=True, nogil=True)
def tree_find(tree, target):
    """Smallest index i with weights[0] + ... + weights[i] > target."""
    n = tree.shape[0] - 1
    position = 0
    step = 1
    while step * 2 <= n:
        step *= 2
    while step > 0:
        nxt = position + step
        if nxt <= n and tree[nxt] <= target:
            position = nxt
            target -= tree[nxt]
        step //= 2
    return min(position, n - 1)


@njit(cache=True, nogil=True)
def alias_build(prob, alias, lo, hi, small, large):
    """Walker's alias table (Vose's construction) of the weights ``prob[lo:hi]``, in place:
    afterwards entry j in [lo, hi) keeps itself with probability ``prob[j]`` and otherwise
    stands for ``alias[j]`` (an index in [lo, hi)). ``small`` and ``large`` are scratch of at
    least ``hi - lo`` entries. Returns the weights' total (0: the table is unusable)."""
    m = hi - lo
    total = 0.0
    for j in range(lo, hi):
        total += prob[j]
    if m == 0 or total <= 0.0:
        return total
    n_small = n_large = 0
    for j in range(lo, hi):
        alias[j] = j
        prob[j] *= m / total
        if prob[j] < 1.0:
            small[n_small] = j
            n_small += 1
        else:
            large[n_large] = j
            n_large += 1
    while n_small > 0 and n_large > 0:
        n_small -= 1
        s = small[n_small]
        g = large[n_large - 1]
        alias[s] = g
        prob[g] -= 1.0 - prob[s]
        if prob[g] < 1.0:
            n_large -= 1
            small[n_small] = g
            n_small += 1
    for j in range(n_large):  # what rounding leaves over is whole
        prob[large[j]] = 1.0
    for j in range(n_small):
        prob[small[j]] = 1.0
    return total


@njit(cache=True, nogil=True)
def alias_draw(prob, alias, lo, hi):
    """An index in [lo, hi) drawn from the table :func:`alias_build` made there: O(1)."""
    u = np.random.random() * (hi - lo)
    j = min(int(u), hi - lo - 1)
    if u - j < prob[lo + j]:
        return lo + j
    return alias[lo + j]
