"""The linear-model programs' shared steps against independent references: the box-constrained
quadratic against scipy's bounded minimiser, the chunked top scores against a full sort."""
import numpy as np
from scipy.optimize import minimize

from dask_strads.programs.selection import TopScores, box_quadratic


def test_box_quadratic_matches_scipy():
    rng = np.random.default_rng(0)
    for free in (False, True):
        A = rng.standard_normal((6, 4))
        curvature, linear = A.T @ A, rng.standard_normal(4) * 3
        x = box_quadratic(curvature, linear, free=free, sweeps=500)
        bounds = [(0, 1)] * 3 + [(None, None) if free else (0, 1)]
        reference = minimize(lambda v: linear @ v + v @ curvature @ v / 2, np.zeros(4),
                             jac=lambda v: linear + curvature @ v, bounds=bounds,
                             method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-12}).x
        np.testing.assert_allclose(x, reference, atol=1e-6)
        assert ((x[:3] >= 0) & (x[:3] <= 1)).all()


def test_top_scores_keep_the_best_of_all_chunks():
    rng = np.random.default_rng(1)
    scores = rng.permutation(1000).astype(float)
    top = TopScores(17)
    for start in range(0, 1000, 64):
        top.add(np.arange(start, min(start + 64, 1000)), scores[start:start + 64])
    np.testing.assert_array_equal(np.sort(top.positions), np.sort(np.argsort(-scores)[:17]))
