"""The samplers' random numbers (kernels/sampling.py): SplitMix64 as its authors define it, uniform,
streams of neighbouring seeds independent, and the alias tables' draws in their weights."""
import numpy as np
import pytest
from numba import njit
from scipy import stats

from dask_strads.kernels.sampling import (alias_build, alias_draw, next_below, next_uniform,
                                          random_stream)

MASK = (1 << 64) - 1


def splitmix64(state):
    """Steele, Lea and Flood's SplitMix64 step in Python integers: (next state, output)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


@njit
def uniforms(seed, n):
    stream, out = random_stream(seed), np.empty(n)
    for i in range(n):
        stream, out[i] = next_uniform(stream)
    return out


@njit
def integers_below(seed, n, high):
    stream, out = random_stream(seed), np.empty(n, dtype=np.int64)
    for i in range(n):
        stream, out[i] = next_below(stream, high)
    return out


@njit
def alias_draws(seed, weights, n):
    prob, alias = weights.copy(), np.empty(len(weights), dtype=np.int64)
    small, large = np.empty_like(alias), np.empty_like(alias)
    alias_build(prob, alias, 0, len(weights), small, large)
    stream, out = random_stream(seed), np.empty(n, dtype=np.int64)
    for i in range(n):
        stream, out[i] = alias_draw(stream, prob, alias, 0, len(weights))
    return out


def test_the_stream_is_splitmix64():
    seed = 12345
    state = (seed * 0xBF58476D1CE4E5B9 + 0x9E3779B97F4A7C15) & MASK  # random_stream's state
    expected = []
    for _ in range(5):
        state, output = splitmix64(state)
        expected.append((output >> 11) / 2.0 ** 53)
    np.testing.assert_array_equal(uniforms(seed, 5), expected)


@pytest.mark.parametrize("seed", [0, 1, 2**31 - 2])
def test_uniforms_are_uniform(seed):
    draws = uniforms(seed, 20_000)
    assert draws.min() >= 0.0 and draws.max() < 1.0
    assert stats.kstest(draws, "uniform").pvalue > 1e-3


def test_streams_of_neighbouring_seeds_are_uncorrelated():
    """Round seeds differ by 1 between blocks and by 1009 between rounds (programs.base)."""
    first = uniforms(7, 50_000)
    for other in (8, 7 + 1009):
        assert abs(np.corrcoef(first, uniforms(other, 50_000))[0, 1]) < 0.02
    assert abs(np.corrcoef(first[:-1], first[1:])[0, 1]) < 0.02


def test_integers_below_and_alias_draws_follow_their_weights():
    counts = np.bincount(integers_below(3, 60_000, 6), minlength=6)
    assert stats.chisquare(counts).pvalue > 1e-3
    weights = np.array([0.5, 0.0, 2.0, 1.0, 0.25])
    counts = np.bincount(alias_draws(4, weights, 60_000), minlength=5)
    assert counts[1] == 0
    expected = 60_000 * weights / weights.sum()
    kept = weights > 0
    assert stats.chisquare(counts[kept], expected[kept]).pvalue > 1e-3
