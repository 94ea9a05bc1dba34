"""Random numbers for the samplers' inner loops, and weighted sampling: with weights that change
a few at a time (a Fenwick tree of sums) and from fixed weights (Walker's alias tables)."""
import numpy as np
from numba import njit, uint64

_GOLDEN = uint64(0x9E3779B97F4A7C15)
_MIX_1 = uint64(0xBF58476D1CE4E5B9)
_MIX_2 = uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / (1 << 53)


@njit(cache=True, nogil=True, inline="always")
def random_stream(seed):
    """The state of a stream of :func:`next_uniform` numbers, from an integer seed."""
    return uint64(seed) * _MIX_1 + _GOLDEN


@njit(cache=True, nogil=True, inline="always")
def next_uniform(state):
    """``(state, u)``: the stream's next state and a uniform ``u`` in [0, 1). SplitMix64
    (Steele, Lea and Flood, OOPSLA 2014): a counter stepped by the golden ratio and hashed; it
    passes BigCrush, and the state is one integer a kernel keeps in a register, where numba's
    ``np.random.random()`` fetches a thread's Mersenne Twister through a call each time (a
    fifth of the SparseLDA sampler's time a token at K = 100)."""
    state = state + _GOLDEN
    z = (state ^ (state >> uint64(30))) * _MIX_1
    z = (z ^ (z >> uint64(27))) * _MIX_2
    z = z ^ (z >> uint64(31))
    return state, (z >> uint64(11)) * _TO_UNIT


@njit(cache=True, nogil=True, inline="always")
def next_below(state, n):
    """``(state, j)``: the stream's next state and an integer ``j`` uniform in [0, n)."""
    state, u = next_uniform(state)
    return state, min(int(u * n), n - 1)


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
def alias_draw(stream, prob, alias, lo, hi):
    """``(stream, index)``: an index in [lo, hi) drawn from the table :func:`alias_build` made
    there, O(1), with the stream's next state."""
    stream, u = next_uniform(stream)
    u *= hi - lo
    j = min(int(u), hi - lo - 1)
    if u - j < prob[lo + j]:
        return stream, lo + j
    return stream, alias[lo + j]
