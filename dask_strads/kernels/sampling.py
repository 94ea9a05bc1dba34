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
