"""The Lasso program without Dask (``run_sequential``), and its kernels.

References: sklearn's Lasso at a tight tol, closed forms (soft threshold, multinomial counts) and
a re-implementation, in numpy, of one STRADS sub-round's dependency check.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso as SkLasso

from dask_strads.kernels.lasso import coordinate_minimiser
from dask_strads.kernels.sampling import tree_add, tree_build, tree_find, tree_total
from dask_strads.programs import Inbox, run_sequential
from dask_strads.programs.lasso import LassoProgram, make_raw_block
from lasso_problems import ar1_design, objective


def build(X, y, alpha, n_blocks, fit_intercept=True, positive=False, tol=1e-8, **params):
    """Raw blocks and program, as the estimator makes them."""
    X = sp.csc_matrix(X) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    n, p = X.shape
    means = np.asarray(X.mean(axis=0)).ravel() if fit_intercept else np.zeros(p)
    y_mean = y.mean() if fit_intercept else 0.0
    y_centred = y - y_mean
    edges = np.linspace(0, p, n_blocks + 1).astype(int)
    blocks = [make_raw_block(X[:, lo:hi], y_centred, np.zeros(hi - lo), means[lo:hi],
                             fit_intercept) for lo, hi in zip(edges[:-1], edges[1:])]
    program = LassoProgram(np.diff(edges), y_centred=y_centred, alpha=alpha, positive=positive,
                           gap_tolerance=tol * float(y_centred @ y_centred) / n, **params)
    return program, blocks, means, y_mean


def solve(X, y, alpha, n_blocks=1, max_rounds=2000, fit_intercept=True, positive=False,
          staleness=0, **params):
    program, blocks, means, y_mean = build(X, y, alpha, n_blocks, fit_intercept, positive,
                                           staleness=staleness, **params)
    params_, reports = run_sequential(program, blocks, max_rounds, staleness=staleness)
    coef = np.concatenate(params_)
    return coef, y_mean - means @ coef, reports


def sklearn_reference(X, y, alpha, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SkLasso(alpha=alpha, tol=1e-12, max_iter=200_000, **params).fit(X, y)


# -- the program against sklearn ------------------------------------------------------------------
CASES = {
    "dense-1block": dict(n_blocks=1),
    "dense-3blocks": dict(n_blocks=3),
    "csc-3blocks": dict(n_blocks=3, sparse=True),
    "csc-no-intercept": dict(n_blocks=2, sparse=True, fit_intercept=False),
    "positive-2blocks": dict(n_blocks=2, positive=True),
    "cyclic-2blocks": dict(n_blocks=2, schedule="cyclic"),
    "random-2blocks": dict(n_blocks=2, schedule="random"),
    "no-dependency-check-4blocks": dict(n_blocks=4, rho=1.0),
    "stale1-1block": dict(n_blocks=1, staleness=1),
    "stale2-1block": dict(n_blocks=1, staleness=2),
    "stale1-2blocks": dict(n_blocks=2, staleness=1),
    "stale1-4blocks": dict(n_blocks=4, staleness=1),
}
@pytest.mark.parametrize("case", list(CASES))
def test_sequential_program_matches_sklearn(case):
    params = dict(CASES[case])
    X, y = ar1_design(150, 120, 0.7, seed=11)
    if params.pop("sparse", False):
        X[np.abs(X) < 0.8] = 0.0
        X = sp.csc_matrix(X)
    alpha = 0.05
    fit_intercept = params.get("fit_intercept", True)
    ref = sklearn_reference(X, y, alpha, fit_intercept=fit_intercept,
                            positive=params.get("positive", False))
    coef, intercept, reports = solve(X, y, alpha, **params)
    assert reports[-1]["gap"] <= 1e-8 * np.sum((y - y.mean() * fit_intercept) ** 2) / len(y)
    assert len(reports) < 2000
    ours = objective(X, y, coef, intercept, alpha)
    theirs = objective(X, y, ref.coef_, ref.intercept_, alpha)
    assert abs(ours - theirs) <= 1e-6 * theirs
    np.testing.assert_allclose(coef, ref.coef_, rtol=0, atol=1e-4)
    # the last report describes the returned parameters (report_lag), not some other state
    assert reports[-1]["objective"] == pytest.approx(ours, rel=1e-9)
    if params.get("positive"):
        assert coef.min() >= 0 and np.any(ref.coef_ == 0)
    if params.get("staleness", 0) == 0:
        objectives = [r["objective"] for r in reports]
        assert all(b <= a * (1 + 1e-12) for a, b in zip(objectives, objectives[1:]))
    if case == "no-dependency-check-4blocks":
        # the blocks interfere and the pull has to scale their updates down
        assert min(r["gamma"] for r in reports) < 1.0


@pytest.mark.parametrize("n_blocks,staleness", [(1, 0), (3, 0), (2, 1)])
def test_push_leaves_its_inputs_alone_and_reports_match_parameters(n_blocks, staleness):
    """Stopped early, the parameters returned are those the last report describes (its
    objective, computed in numpy from them), and a push does not modify the state it was given:
    on a worker the previous round's state is still referenced (the final result is read from it)."""
    X, y = ar1_design(150, 120, 0.7, seed=12)
    alpha = 0.05
    program, blocks, means, y_mean = build(X, y, alpha, n_blocks, staleness=staleness)
    for max_rounds in (1, 3, 6):
        params, reports = run_sequential(program, blocks, max_rounds, staleness=staleness)
        assert len(reports) == max_rounds  # not converged: the report lag matters
        coef = np.concatenate(params)
        assert reports[-1]["objective"] == pytest.approx(
            objective(X, y, coef, y_mean - means @ coef, alpha), rel=1e-12)

    data = [program.prepare_block(raw, b) for b, raw in enumerate(blocks)]
    started = [program.init_block(d, b) for b, d in enumerate(data)]
    shared, _ = program.pull({b: p for b, (_, p) in enumerate(started)}, program.initial_shared())
    states = [s for s, _ in started]
    for t in range(3):
        snapshot = [(s.coef.copy(), s.priority.copy()) for s in states]
        shared_r = shared.r.copy()
        instructions = program.schedule(t, [])
        pushed = {b: program.push(b, data[b], states[b], instructions[b], shared,
                                  Inbox()) for b in instructions}
        for state, (coef, priority) in zip(states, snapshot):
            np.testing.assert_array_equal(state.coef, coef)
            np.testing.assert_array_equal(state.priority, priority)
        np.testing.assert_array_equal(shared.r, shared_r)
        states = [pushed[b][0] for b in range(n_blocks)]
        shared, _ = program.pull({b: p for b, (_, p) in pushed.items()}, shared)


def test_sequential_program_diabetes():
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    ref = sklearn_reference(X, y, 0.1)
    coef, intercept, reports = solve(X, y, 0.1, n_blocks=2)
    ours, theirs = objective(X, y, coef, intercept, 0.1), objective(X, y, ref.coef_,
                                                                    ref.intercept_, 0.1)
    assert abs(ours - theirs) <= 1e-6 * theirs
    np.testing.assert_allclose(coef, ref.coef_, rtol=0, atol=1e-2)


# -- the STRADS claim: priority scheduling needs fewer coordinate updates -------------------------
def test_priority_schedule_beats_cyclic_on_correlated_design():
    """AR(1) rho = 0.9: to reach a duality gap of 1e-6 (relative), the dynamic-priority schedule
    evaluates fewer coordinates than the cyclic sweep. Also counted: the per-round full pass
    (p gradient entries, which the priorities and the gap both use), so that the comparison does
    not hide the cost of refreshing the priorities."""
    X, y = ar1_design(200, 300, 0.9, seed=0)
    counts = {}
    for schedule in ("priority", "cyclic"):
        coef, intercept, reports = solve(X, y, 0.2, n_blocks=1, tol=1e-6, schedule=schedule,
                                         sub_rounds=3, n_candidates=100, seed=1)
        assert reports[-1]["gap"] <= 1e-6 * np.sum((y - y.mean()) ** 2) / len(y)
        evaluated = sum(r["evaluated"] for r in reports)
        counts[schedule] = (evaluated, evaluated + len(reports) * X.shape[1], len(reports))
    print(f"\ncoordinates evaluated to a gap of 1e-6 (AR(1) 0.9, n=200, p=300): "
          f"priority {counts['priority'][0]}, cyclic {counts['cyclic'][0]}; with full passes: "
          f"priority {counts['priority'][1]}, cyclic {counts['cyclic'][1]}; rounds: "
          f"priority {counts['priority'][2]}, cyclic {counts['cyclic'][2]}")
    assert counts["priority"][0] < counts["cyclic"][0]
    assert counts["priority"][1] < counts["cyclic"][1]


# -- kernels --------------------------------------------------------------------------------------
def _draw(tree, n_draws, seed):
    rng = np.random.default_rng(seed)
    total = tree_total(tree)
    return np.array([tree_find(tree, u * total) for u in rng.random(n_draws)])


def _assert_proportional(draws, weights):
    counts = np.bincount(draws, minlength=len(weights))
    assert np.all(counts[weights == 0] == 0), counts
    positive = weights > 0
    expected = len(draws) * weights[positive] / weights.sum()
    result = stats.chisquare(counts[positive], expected)
    assert result.pvalue > 1e-3, (counts, expected)


def test_fenwick_tree_samples_proportionally():
    weights = np.array([0.0, 1.0, 2.0, 3.0, 0.0, 10.0, 0.5, 4.0, 0.0, 7.0, 1.5])
    tree = tree_build(weights)
    assert tree_total(tree) == pytest.approx(weights.sum())
    _assert_proportional(_draw(tree, 60_000, seed=0), weights)

    # weights changed a few at a time, as the scheduler does
    changes = {5: -10.0, 0: 6.0, 10: 3.0, 3: -2.5}
    for i, delta in changes.items():
        tree_add(tree, i, delta)
        weights[i] += delta
    assert tree_total(tree) == pytest.approx(weights.sum())
    _assert_proportional(_draw(tree, 60_000, seed=1), weights)

    # a uniform sample would fail the same check (the test can fail)
    with pytest.raises(AssertionError):
        _assert_proportional(np.random.default_rng(2).integers(len(weights), size=60_000),
                             weights)


@pytest.mark.parametrize("size", [1, 2, 7, 8, 9, 64, 100])
def test_fenwick_tree_find_is_inverse_cdf(size):
    weights = np.random.default_rng(size).random(size) + 0.01
    tree = tree_build(weights)
    cumulative = np.cumsum(weights)
    for target in np.linspace(0, cumulative[-1], 97, endpoint=False):
        assert tree_find(tree, target) == np.searchsorted(cumulative, target, side="right")


def test_coordinate_minimiser_is_soft_threshold():
    rng = np.random.default_rng(0)
    for _ in range(300):
        z = rng.normal(scale=5)
        norm2 = rng.uniform(0.1, 10)
        alpha_n = rng.choice([0.0, rng.uniform(0, 5)])
        positive = bool(rng.integers(2))
        expected = np.sign(z) * max(abs(z) - alpha_n, 0.0) / norm2
        if positive:
            expected = max(z - alpha_n, 0.0) / norm2
        assert coordinate_minimiser(z, norm2, alpha_n, positive) == pytest.approx(
            expected, rel=1e-12, abs=1e-15)
        # and it is the minimiser: no point of a fine grid does better
        grid = np.linspace(expected - 1, expected + 1, 2001)
        if positive:
            grid = grid[grid >= 0]
        values = 0.5 * norm2 * grid**2 - z * grid + alpha_n * np.abs(grid)
        best = coordinate_minimiser(z, norm2, alpha_n, positive)
        assert 0.5 * norm2 * best**2 - z * best + alpha_n * abs(best) <= values.min() + 1e-12


# -- the dependency check, seen from outside one sub-round --------------------------------------
def _correlated_columns(kind, seed=0):
    """40 base columns, independent (|corr| mostly below 0.1), and 20 noisy copies of the first
    20 (|corr| about 0.95 with their originals)."""
    rng = np.random.default_rng(seed)
    n = 400
    if kind == "dense":
        base = rng.standard_normal((n, 40)) + 2.0  # non-zero means: centring matters
    else:
        base = rng.standard_normal((n, 40)) * (rng.random((n, 40)) < 0.3) + \
            (rng.random((n, 40)) < 0.3)
    copies = base[:, :20] + 0.25 * base.std(axis=0)[:20] * rng.standard_normal((n, 20))
    X = np.hstack([base, copies])
    y = X @ rng.uniform(1, 2, X.shape[1]) + rng.standard_normal(n)
    return X, y


def _one_sub_round(X, y, alpha, rho):
    """The block's coefficients before and after one sub-round in which every column is a
    candidate, and the push's counts."""
    Xb = sp.csc_matrix(X) if sp.issparse(X) else X
    program, blocks, _, _ = build(Xb, y, alpha, 1, rho=rho, schedule="cyclic", sub_rounds=1,
                                  n_candidates=X.shape[1])
    data = program.prepare_block(blocks[0], 0)
    state, partial = program.init_block(data, 0)
    shared, _ = program.pull({0: partial}, program.initial_shared())
    instruction = program.schedule(0, [])[0]
    before = state.coef.copy()
    new_state, update = program.push(0, data, state, instruction, shared, Inbox())
    return before, new_state.coef, update


def _greedy_independent_set(X, y, alpha_n, rho):
    """Numpy re-implementation: movers from zero, largest change first, keep those whose
    centred |correlation| with every kept one is below rho."""
    Xc = X - X.mean(axis=0)
    norms2 = (Xc**2).sum(axis=0)
    z = Xc.T @ (y - y.mean())
    change = np.sign(z) * np.maximum(np.abs(z) - alpha_n, 0) / norms2
    correlation = np.corrcoef(X, rowvar=False)
    kept = []
    for j in np.argsort(-np.abs(change)):
        if change[j] == 0:
            break
        if all(abs(correlation[j, k]) < rho for k in kept):
            kept.append(j)
    return set(kept), int(np.count_nonzero(change)), correlation


@pytest.mark.parametrize("kind", ["dense", "csc"])
def test_dependency_check_commits_only_uncorrelated_coordinates(kind):
    X, y = _correlated_columns(kind)
    alpha = 0.5
    rho = 0.1
    before, after, update = _one_sub_round(sp.csc_matrix(X) if kind == "csc" else X, y, alpha,
                                           rho)
    assert np.all(before == 0)
    changed = set(np.flatnonzero(after != before))
    expected, n_movers, correlation = _greedy_independent_set(X, y, alpha * len(y), rho)
    assert n_movers > 20  # most coordinates want to move: the check has work to do
    assert len(changed) >= 5
    for j in changed:
        for k in changed:
            if j != k:
                assert abs(correlation[j, k]) < rho, (j, k, correlation[j, k])
    for j in range(20):  # a column and its noisy copy never move together
        assert not {j, j + 40} <= changed
    assert changed == expected
    assert update.updates == len(expected)
    assert update.rejected == n_movers - len(expected)


def test_dependency_check_disabled_lets_copies_move_together():
    """rho = 1 disables the check: then copies do move in the same sub-round, so the test above
    is able to see a violation."""
    X, y = _correlated_columns("dense")
    _, after, update = _one_sub_round(X, y, 0.5, 1.0)
    changed = set(np.flatnonzero(after))
    assert any({j, j + 40} <= changed for j in range(20))
    assert update.rejected == 0
