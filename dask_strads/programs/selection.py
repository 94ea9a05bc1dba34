"""Steps the linear-model programs share: keeping the best-scored features of a pass made chunk
by chunk, and the box-constrained quadratic that weighs the blocks' changes in a pull."""
import numpy as np

#: Coordinate-descent sweeps of :func:`box_quadratic`.
BOX_SWEEPS = 50


class TopScores:
    """The ``size`` highest-scored positions among those added so far, the others dropped as
    they come (a pass over a block adds a chunk of columns at a time: no array of its width)."""

    def __init__(self, size):
        self.size = size
        self.positions = np.zeros(0, dtype=np.int64)
        self.scores = np.zeros(0)

    def add(self, positions, scores):
        self.positions = np.concatenate([self.positions, positions])
        self.scores = np.concatenate([self.scores, scores])
        if len(self.scores) > self.size:
            best = np.argpartition(-self.scores, self.size - 1)[:self.size]
            self.positions, self.scores = self.positions[best], self.scores[best]


def box_quadratic(curvature, linear, free=False, sweeps=BOX_SWEEPS):
    """argmin of ``linear . x + x' curvature x / 2`` over x in [0, 1]^m, the last coordinate
    unbounded when ``free``: cyclic coordinate descent from ones (the last at 0 when free),
    until a sweep changes nothing (then every later one would not either)."""
    x = np.ones(len(linear))
    if free:
        x[-1] = 0.0
    for _ in range(sweeps):
        before = x.copy()
        for b in range(len(x)):
            if curvature[b, b] > 0:
                rest = linear[b] + curvature[b] @ x - curvature[b, b] * x[b]
                x[b] = -rest / curvature[b, b]
                if not (free and b == len(x) - 1):
                    x[b] = min(1.0, max(0.0, x[b]))
        if np.array_equal(x, before):
            break
    return x
