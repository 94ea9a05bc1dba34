"""dask_strads.ElasticNet (and the working-set program behind Lasso) against sklearn's
ElasticNet fitted at a tight tol: the objective, computed here in numpy, within 1e-6."""
import copy
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from dask.sizeof import sizeof
from numba.core import types
from sklearn.exceptions import ConvergenceWarning
from sklearn.datasets import load_diabetes
from sklearn.linear_model import ElasticNet as SkElasticNet
from sklearn.linear_model import LinearRegression
from sklearn.utils.estimator_checks import check_param_validation

import dask_strads
from dask_strads.estimators import base
from dask_strads.estimators.elastic_net import gap_target
from dask_strads.estimators.inputs import blocks_along
from dask_strads.kernels import columns as columns_kernels
from dask_strads.kernels import elastic_net as en_kernels
from dask_strads.partition import block_edges
from dask_strads.programs.base import Inbox, Instruction, run_sequential
from dask_strads.programs.elastic_net import ElasticNetProgram, block_columns, solver_columns
from dask_strads.programs.lasso import make_raw_block
from conftest import fit_is_refused, run_past_the_stop
from lasso_problems import ar1_design

OBJECTIVE_RTOL = 1e-6
TOL = 1e-10


def enet_objective(X, y, coef, intercept, alpha, l1_ratio):
    """sklearn's ElasticNet objective, in numpy."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    residual = y - X @ coef - intercept
    return (0.5 * residual @ residual / len(y) + alpha * l1_ratio * np.abs(coef).sum()
            + 0.5 * alpha * (1 - l1_ratio) * coef @ coef)


def sparse_problem(seed=0, n=120, p=400):
    """A sparse design (about 20% stored) with more features than samples."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.2, random_state=seed, format="csc",
                  data_rvs=rng.standard_normal)
    w = np.zeros(p)
    w[rng.choice(p, 10, replace=False)] = 2 * rng.standard_normal(10)
    return X, X @ w + 0.3 * rng.standard_normal(n) + 2.0


def reference(X, y, alpha, l1_ratio, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SkElasticNet(alpha=alpha, l1_ratio=l1_ratio, tol=1e-13, max_iter=500_000,
                            **params).fit(X, y)


def assert_objective_matches(est, ref, X, y, alpha, l1_ratio):
    ours = enet_objective(X, y, est.coef_, est.intercept_, alpha, l1_ratio)
    theirs = enet_objective(X, y, ref.coef_, ref.intercept_, alpha, l1_ratio)
    assert abs(ours - theirs) <= OBJECTIVE_RTOL * theirs, (ours, theirs)


def fit(X, y, alpha, l1_ratio, client=None, **params):
    est = dask_strads.ElasticNet(alpha=alpha, l1_ratio=l1_ratio, tol=params.pop("tol", TOL),
                                 max_iter=200, **params)
    est.client = client
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return est.fit(X, y)


@pytest.mark.parametrize("positive", [False, True], ids=["signed", "positive"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("fmt", ["dense", "csc"])
def test_matches_sklearn(fmt, fit_intercept, positive):
    X, y = sparse_problem()
    X = X.toarray() if fmt == "dense" else X
    alpha, l1_ratio = 0.02, 0.6
    params = dict(fit_intercept=fit_intercept, positive=positive)
    ref = reference(X, y, alpha, l1_ratio, **params)
    est = fit(X, y, alpha, l1_ratio, n_blocks=3, **params)
    assert_objective_matches(est, ref, X, y, alpha, l1_ratio)
    assert est.dual_gap_ <= TOL * np.sum((y - y.mean() * fit_intercept) ** 2) / len(y)
    if positive:
        assert np.all(est.coef_ >= 0) and np.any(ref.coef_ > 0)
    if not fit_intercept:
        assert est.intercept_ == 0.0
    objectives = [r["objective"] for r in est.history_]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(objectives, objectives[1:]))


@pytest.mark.parametrize("l1_ratio", [0.0, 0.1, 0.9])
def test_l1_ratios_match_sklearn(l1_ratio):
    X, y = ar1_design(100, 150, 0.8, seed=3)
    alpha = 0.5
    ref = reference(X, y, alpha, l1_ratio)
    est = fit(X, y, alpha, l1_ratio)
    assert_objective_matches(est, ref, X, y, alpha, l1_ratio)


def test_lasso_is_the_l1_ratio_1_case():
    X, y = ar1_design(150, 250, 0.9, seed=1)
    lasso = dask_strads.Lasso(alpha=0.2, tol=TOL, n_blocks=2).fit(X, y)
    enet = dask_strads.ElasticNet(alpha=0.2, l1_ratio=1.0, tol=TOL, n_blocks=2).fit(X, y)
    np.testing.assert_array_equal(lasso.coef_, enet.coef_)
    assert "l1_ratio" not in lasso.get_params() and lasso.l1_ratio == 1.0


def test_on_a_process_cluster(client_factory):
    X, y = ar1_design(200, 300, 0.9, seed=2)
    alpha, l1_ratio = 0.1, 0.5
    ref = reference(X, y, alpha, l1_ratio)
    est = fit(X, y, alpha, l1_ratio, client=client_factory(2), n_blocks=2)
    assert_objective_matches(est, ref, X, y, alpha, l1_ratio)


def no_intercept_program(X, y, alpha, l1_ratio, n_blocks, tol=TOL):
    """The program and raw blocks ElasticNet(fit_intercept=False, tol=tol) fits on X, y."""
    edges = block_edges(X.shape[1], n_blocks)
    blocks = [make_raw_block(X[:, lo:hi], y, np.zeros(hi - lo), np.zeros(hi - lo), False)
              for lo, hi in zip(edges[:-1], edges[1:])]
    program = ElasticNetProgram(np.diff(edges), y_centred=y, alpha=alpha, l1_ratio=l1_ratio,
                                positive=False, gap_tolerance=gap_target(tol, y),
                                sparse=sp.issparse(X))
    return program, blocks


def test_in_place_stop_gives_the_sequential_runs_coefficients(client_factory):
    """Pushes update the blocks in place and rounds run behind the stop (pipelined): on two
    worker processes the fit still returns the coefficients, rounds and reports of the plain
    sequential loop, which stops at the first report that meets the tolerance."""
    X, y = sparse_problem(seed=8, n=150, p=500)
    alpha, l1_ratio = 0.03, 0.8
    program, blocks = no_intercept_program(X, y, alpha, l1_ratio, 2)
    params, reports = run_sequential(program, blocks, 200)
    est = fit(X, y, alpha, l1_ratio, client=client_factory(2), n_blocks=2, fit_intercept=False)
    np.testing.assert_array_equal(est.coef_, np.concatenate(params))
    assert est.n_iter_ + 1 == len(reports) == len(est.history_)
    assert [r["objective"] for r in est.history_] == [r["objective"] for r in reports]
    assert est.dual_gap_ == reports[-1]["gap"]


def test_rounds_behind_the_stop_change_nothing():
    """After the report that meets the tolerance, further rounds leave every block as it was:
    the collected coefficients are those whose objective that report gave (numpy's)."""
    X, y = sparse_problem(seed=9, n=150, p=500)
    alpha, l1_ratio = 0.03, 0.8
    program, blocks = no_intercept_program(X, y, alpha, l1_ratio, 2)
    at_stop, at_end, stop = run_past_the_stop(program, blocks)
    np.testing.assert_array_equal(at_end, at_stop)
    objective = enet_objective(X, y, at_end, 0.0, alpha, l1_ratio)
    assert objective == pytest.approx(stop["objective"], rel=1e-12)


def test_a_checkpoints_copy_of_a_block_is_packed_and_exact():
    """``copy.deepcopy`` of a block's state (what a checkpoint keeps) holds its non-zero
    coefficients and its mask (a bit a feature); pushed from, it gives the round the state itself
    gives."""
    X, y = sparse_problem(seed=10, n=150, p=2000)
    program, blocks = no_intercept_program(X, y, 0.1, 0.9, 1, tol=0.0)  # never stops
    data = program.prepare_block(blocks[0], 0)
    state, start = program.init_block(data, 0)
    shared, _ = program.pull({0: start}, program.initial_shared())
    for _ in range(5):
        state, partial = program.push(0, data, state, Instruction(), shared, Inbox())
        shared, _ = program.pull({0: partial}, shared)
    assert np.count_nonzero(state.coef) and not state.active_features().all()
    packed = copy.deepcopy(state)
    # 16 bytes a non-zero coefficient and the mask, not 8 bytes a feature
    assert sizeof(packed) < 16 * np.count_nonzero(state.coef) + state.active.nbytes + 1000
    assert sizeof(packed) < sizeof(state) - 0.8 * state.coef.nbytes
    np.testing.assert_array_equal(program.collect(data, packed, shared),
                                  program.collect(data, state, shared))
    # the fit's result takes the state's coefficients, a collect that leaves the state copies
    handed = program.hand_over(data, state, shared)
    np.testing.assert_array_equal(handed, program.collect(data, state, shared))
    assert handed is state.coef
    assert not np.shares_memory(program.collect(data, state, shared), state.coef)
    from_copy, sent_from_copy = program.push(0, data, packed, Instruction(), shared, Inbox())
    from_state, sent = program.push(0, data, state, Instruction(), shared, Inbox())
    for name in ("coef", "active"):
        np.testing.assert_array_equal(getattr(from_copy, name), getattr(from_state, name))
    np.testing.assert_array_equal(sent_from_copy.positions, sent.positions)
    np.testing.assert_array_equal(sent_from_copy.score, sent.score)
    assert (sent_from_copy.dual_norm, sent_from_copy.n_active) == (sent.dual_norm, sent.n_active)


def split_entries(X):
    """X (CSC) with each stored entry split in two halves: every row repeated in its column, the
    column's rows in decreasing order."""
    X = X.tocsc()
    X.sort_indices()
    columns = [slice(a, b) for a, b in zip(X.indptr[:-1], X.indptr[1:])]
    return sp.csc_matrix(
        (np.concatenate([np.tile(X.data[c][::-1] / 2, 2) for c in columns]),
         np.concatenate([np.tile(X.indices[c][::-1], 2) for c in columns]), 2 * X.indptr),
        shape=X.shape)


@pytest.mark.parametrize("per_block,expected", [(20_000, 1), (1_000, 2)])
def test_default_blocks_follow_the_stored_values(client_factory, monkeypatch, per_block,
                                                 expected):
    """One block per ``STORED_VALUES_PER_BLOCK`` stored values (lowered here, so that the
    problem stays small), at least one, at most one per worker; the same optimum."""
    monkeypatch.setattr(base, "STORED_VALUES_PER_BLOCK", per_block)
    X, y = sparse_problem()
    assert 8_000 < X.nnz < 20_000
    est = fit(X, y, 0.05, 0.7, client=client_factory(2))
    assert est.n_blocks_ == expected
    assert_objective_matches(est, reference(X, y, 0.05, 0.7), X, y, 0.05, 0.7)


def test_block_columns_match_numpy():
    """A block's column sums, means, centred squared norms and x~_j . y, from one pass, against
    numpy on the dense matrix, whatever form the block comes in; columns not centred (means
    all zero) keep no sums and means. The working set's blocks keep float32 upper bounds of the
    norms; the columns taken from them have exact ones."""
    X, y = sparse_problem(seed=7, n=60, p=30)
    y_centred = y - y.mean()
    dense = X.toarray()
    centred = dense - dense.mean(axis=0)
    for given in (dense, np.asfortranarray(dense), X, X.tocsr(), split_entries(X)):
        for means, expected in ((None, centred), (np.zeros(30), dense)):
            columns, X_dot_y = block_columns(given, y_centred, means)
            kept = solver_columns(given, len(y_centred), means)  # what the working set keeps
            for name in ("col_sums", "col_means"):
                np.testing.assert_allclose(getattr(kept, name), getattr(columns, name),
                                           rtol=1e-12, atol=1e-12)
            exact = (expected**2).sum(axis=0)  # the block's norms: a byte each, never below
            codes, table = kept.col_norm2
            assert codes.dtype == np.uint8 and np.all(table[codes] >= exact)
            # within a step of the table: 254 from the least norm to the largest
            ratio = 1 + (np.log2(exact[exact > 0].max() / exact[exact > 0].min()) + 1) / 254
            assert np.all(table[codes] <= exact * ratio * (1 + 1e-8))
            assert np.all((codes == 0) == (exact == 0))
            taken = kept.take(np.arange(3, 30, 2))
            np.testing.assert_allclose(taken.col_norm2, (expected[:, 3::2]**2).sum(axis=0),
                                       rtol=1e-12, atol=1e-12)
            if means is None:
                np.testing.assert_allclose(columns.col_sums, dense.sum(axis=0), atol=1e-12)
                np.testing.assert_allclose(columns.col_means, dense.mean(axis=0), atol=1e-12)
            else:
                assert len(columns.col_sums) == len(columns.col_means) == 0
            np.testing.assert_allclose(columns.col_norm2, (expected**2).sum(axis=0),
                                       rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(X_dot_y, expected.T @ y_centred, atol=1e-10)


def test_repeated_sparse_entries_and_csr():
    """The model of the matrix they stand for; the caller's matrix is left as it was."""
    X, y = sparse_problem(seed=6)
    alpha, l1_ratio = 0.02, 0.7
    ref = reference(X, y, alpha, l1_ratio)
    for given in (split_entries(X), X.tocsr()):
        arrays = [a.copy() for a in (given.data, given.indices, given.indptr)]
        est = fit(given, y, alpha, l1_ratio, n_blocks=2)
        assert_objective_matches(est, ref, X, y, alpha, l1_ratio)
        for before, after in zip(arrays, (given.data, given.indices, given.indptr)):
            np.testing.assert_array_equal(before, after)


def sparse_pointer_types():
    """``(kernel, signature, column pointers' type)`` of the CSC variants of the sparse fit's
    kernels compiled (or loaded) in this process."""
    found = {(en_kernels.take_csc, s, s[0].dtype) for s in en_kernels.take_csc.overloads}
    for kernel in (en_kernels._screen_and_score, en_kernels._gradient, en_kernels._epochs,
                   columns_kernels.column_norms, columns_kernels.centred_norms,
                   columns_kernels.add_columns):
        found |= {(kernel, s, s[0][0].dtype) for s in kernel.overloads
                  if isinstance(s[0], types.BaseTuple)}
    return found


def test_sparse_blocks_get_32_bit_pointers_from_any_input():
    """scipy's int32 pointers are kept and int64 ones (of values that fit) made int32: both
    give sklearn's solution, and the fits compile no 64-bit variant of the kernels."""
    X, y = sparse_problem(seed=11, n=100, p=300)
    wide = X.copy()
    wide.indptr, wide.indices = wide.indptr.astype(np.int64), wide.indices.astype(np.int64)
    alpha, l1_ratio = 0.03, 0.9
    ref = reference(X, y, alpha, l1_ratio)
    before = sparse_pointer_types()
    for given in (X, wide):
        est = fit(given, y, alpha, l1_ratio, n_blocks=2)
        assert_objective_matches(est, ref, X, y, alpha, l1_ratio)
        columns = solver_columns(given, len(y), None)
        assert columns.X[0].dtype == columns.X[1].dtype == np.int32
        assert np.shares_memory(columns.X[0], given.indptr) == (given is X)
    added = sparse_pointer_types() - before
    assert all(pointers == types.int32 for _, _, pointers in added), added


def test_sparse_blocks_are_views_of_a_canonical_matrix():
    """Column blocks of a CSC matrix (row blocks of a CSR one) share its arrays when it is in
    canonical format, and are copies when it is not; all equal scipy's slices."""
    X, _ = sparse_problem(seed=8, n=40, p=60)
    for matrix, axis, edges, shared in ((X, 1, [0, 25, 60], True),
                                        (X.tocsr(), 0, [0, 15, 40], True),
                                        (split_entries(X), 1, [0, 25, 60], False)):
        parts = blocks_along(matrix, edges, lambda part, lo, hi: part, axis)
        for part, lo, hi in zip(parts, edges[:-1], edges[1:]):
            expected = matrix[:, lo:hi] if axis == 1 else matrix[lo:hi]
            assert part.format == matrix.format and (part != expected).nnz == 0
            assert np.shares_memory(part.data, matrix.data) == shared


def test_a_small_problem_takes_two_rounds():
    """Its working set holds every feature: one round solves, the next one checks the gap (one
    iteration, scikit-learn's n_iter_: the last round only measures)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 50))
    y = X[:, :5] @ np.arange(1.0, 6.0) + rng.standard_normal(500)
    est = dask_strads.Lasso(alpha=0.05, tol=1e-8).fit(X, y)
    assert est.n_iter_ == 1 and len(est.history_) == 2
    ref = reference(X, y, 0.05, 1.0)
    assert_objective_matches(est, ref, X, y, 0.05, 1.0)


# -- no penalty, or no l1 penalty: least squares and ridge --------------------------------------
def assert_gaps_bound_the_distance(est, minimum):
    """Every round's gap is at least its objective's distance to the minimum (rounding aside)."""
    for record in est.history_:
        assert record["gap"] >= record["objective"] - minimum - 1e-9 * minimum, (record, minimum)


def wide_least_squares_problem(seed=0, n=400, p=250):
    """More features than a first working set holds, fewer than samples."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    return X, X @ rng.standard_normal(p) + 5.0 * rng.standard_normal(n) + 1.0


@pytest.mark.parametrize("n_blocks", [1, 3])
@pytest.mark.parametrize("fmt", ["dense", "csc"])
@pytest.mark.parametrize("estimator", [dask_strads.Lasso, dask_strads.ElasticNet],
                         ids=lambda e: e.__name__)
def test_alpha_0_is_least_squares(estimator, fmt, n_blocks):
    """sklearn's diabetes data (10 correlated features): the fit is LinearRegression's, with
    sklearn's advice to use it; each round's gap bounds the distance to the least-squares
    objective and the last one meets the tolerance."""
    X, y = load_diabetes(return_X_y=True)
    ols = LinearRegression().fit(X, y)  # dense: on sparse X it is iterative (lsqr)
    X = sp.csc_matrix(X) if fmt == "csc" else X
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = estimator(alpha=0.0, n_blocks=n_blocks).fit(X, y)
    assert [str(w.message) for w in caught if issubclass(w.category, UserWarning)
            and "LinearRegression" in str(w.message)]
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    np.testing.assert_allclose(est.coef_, ols.coef_, rtol=1e-7)
    np.testing.assert_allclose(est.intercept_, ols.intercept_, rtol=1e-9)
    minimum = enet_objective(X, y, ols.coef_, ols.intercept_, 0.0, 1.0)
    assert_gaps_bound_the_distance(est, minimum)
    assert est.dual_gap_ <= gap_target(1e-4, y - y.mean())


@pytest.mark.parametrize("positive", [False, True], ids=["signed", "positive"])
def test_alpha_0_beyond_the_first_working_set(positive):
    """250 features: the first rounds' working sets hold some of them (their gap is the
    objective, a bound); the fit is LinearRegression's, signed or non-negative."""
    X, y = wide_least_squares_problem()
    ols = LinearRegression(positive=positive).fit(X, y)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "With alpha=0", UserWarning)
        warnings.simplefilter("error", ConvergenceWarning)
        est = dask_strads.Lasso(alpha=0.0, positive=positive, n_blocks=2, tol=1e-10).fit(X, y)
    assert min(r["working_set"] for r in est.history_ if "working_set" in r) < X.shape[1]
    np.testing.assert_allclose(est.coef_, ols.coef_, rtol=1e-6, atol=1e-9)
    minimum = enet_objective(X, y, ols.coef_, ols.intercept_, 0.0, 1.0)
    assert_gaps_bound_the_distance(est, minimum)


@pytest.mark.parametrize("alpha", [1e-4, 1e-6])
def test_ridge_gap_bounds_the_distance_to_the_ridge_solution(alpha):
    """l1_ratio=0 is ridge: at small alpha its gap (ridge's dual at the residual) still
    bounds the distance to the closed-form solution, at sklearn's default tol and at a tight
    one, where the coefficients are the closed form's."""
    X, y = load_diabetes(return_X_y=True)
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    coef = np.linalg.solve(Xc.T @ Xc + alpha * len(y) * np.eye(X.shape[1]), Xc.T @ yc)
    minimum = enet_objective(X, y, coef, y.mean() - X.mean(axis=0) @ coef, alpha, 0.0)
    for tol in (1e-4, 1e-15):
        est = dask_strads.ElasticNet(alpha=alpha, l1_ratio=0.0, tol=tol).fit(X, y)
        assert_gaps_bound_the_distance(est, minimum)
    np.testing.assert_allclose(est.coef_, coef, rtol=1e-5)


# -- the program's parts: each one can be switched off, the optimum stays ----------------------
def run_program(X, y, alpha, l1_ratio, n_blocks, tol=TOL, rounds=300, means=None, **parts):
    y_centred = y - y.mean()
    means = np.asarray(X.mean(axis=0)).ravel() if means is None else means
    edges = block_edges(X.shape[1], n_blocks)
    blocks = [make_raw_block(X[:, lo:hi], y_centred, np.zeros(hi - lo), means[lo:hi], False)
              for lo, hi in zip(edges[:-1], edges[1:])]
    program = ElasticNetProgram(np.diff(edges), y_centred=y_centred, alpha=alpha,
                                l1_ratio=l1_ratio, positive=False,
                                gap_tolerance=tol * (y_centred @ y_centred) / len(y),
                                sparse=sp.issparse(X),
                                **parts)
    params, reports = run_sequential(program, blocks, rounds)
    coef = np.concatenate(params)
    return coef, y.mean() - means @ coef, reports


@pytest.mark.parametrize("parts", [{}, {"working_set": False}, {"anderson": False},
                                   {"screening": False}], ids=str)
def test_each_part_reaches_the_optimum(parts):
    X, y = sparse_problem(seed=4, n=150, p=600)
    alpha, l1_ratio = 0.05, 0.8
    ref = reference(X, y, alpha, l1_ratio)
    coef, intercept, reports = run_program(X, y, alpha, l1_ratio, 2, **parts)
    assert reports[-1]["gap"] <= TOL * np.var(y)
    ours = enet_objective(X, y, coef, intercept, alpha, l1_ratio)
    theirs = enet_objective(X, y, ref.coef_, ref.intercept_, alpha, l1_ratio)
    assert abs(ours - theirs) <= OBJECTIVE_RTOL * theirs
    if not parts.get("screening", True):
        assert all(r["screened"] == 0 for r in reports)


def test_a_block_not_centred_beside_a_centred_one():
    """A block whose columns are given zero means keeps no sums and means; the working set
    joins its columns with those of a block centred implicitly, and the fit with an intercept
    is scikit-learn's."""
    X, y = sparse_problem(seed=5, n=100, p=200)
    dense = X.toarray()
    design = np.hstack([dense[:, :100] - dense[:, :100].mean(axis=0), dense[:, 100:]])
    means = np.concatenate([np.zeros(100), dense[:, 100:].mean(axis=0)])
    alpha, l1_ratio = 0.02, 0.9
    ref = reference(design, y, alpha, l1_ratio)
    coef, intercept, reports = run_program(np.asfortranarray(design), y, alpha, l1_ratio, 2,
                                           means=means)
    assert reports[-1]["gap"] <= TOL * np.var(y)
    assert max(r["working_set"] for r in reports if "working_set" in r) > 0
    ours = enet_objective(design, y, coef, intercept, alpha, l1_ratio)
    theirs = enet_objective(design, y, ref.coef_, ref.intercept_, alpha, l1_ratio)
    assert abs(ours - theirs) <= OBJECTIVE_RTOL * theirs
    assert np.count_nonzero(coef[:100]) and np.count_nonzero(coef[100:])


def test_screening_drops_only_features_zero_at_the_optimum():
    """Rounds on past the optimum (a tolerance no gap meets): screening drops most features,
    and the solution is still sklearn's, support included."""
    X, y = sparse_problem(seed=5, n=150, p=600)
    alpha, l1_ratio = 0.05, 1.0
    ref = reference(X, y, alpha, l1_ratio)
    coef, intercept, reports = run_program(X, y, alpha, l1_ratio, 3, tol=-1.0, rounds=6)
    assert reports[-1]["screened"] >= X.shape[1] // 2
    assert set(np.flatnonzero(coef)) == set(np.flatnonzero(ref.coef_))
    ours = enet_objective(X, y, coef, intercept, alpha, l1_ratio)
    theirs = enet_objective(X, y, ref.coef_, ref.intercept_, alpha, l1_ratio)
    assert abs(ours - theirs) <= OBJECTIVE_RTOL * theirs


@pytest.mark.parametrize("l1_ratio,positive", [(1.0, False), (0.5, False), (0.7, True)])
def test_no_round_screens_a_feature_of_the_solution(l1_ratio, positive):
    """Every round's screening (the pushes test features against the last gap's sphere widened
    by the pull's change) keeps every feature non-zero in sklearn's solution, and drops most
    of the others by the end, with an l2 penalty and with positive coefficients too."""
    X, y = sparse_problem(seed=12, n=120, p=800)
    alpha = 0.04
    ref = reference(X, y, alpha, l1_ratio, positive=positive, fit_intercept=False)
    support = np.flatnonzero(ref.coef_)
    edges = block_edges(X.shape[1], 2)
    blocks = [make_raw_block(X[:, lo:hi], y, np.zeros(hi - lo), np.zeros(hi - lo), False)
              for lo, hi in zip(edges[:-1], edges[1:])]
    program = ElasticNetProgram(np.diff(edges), y_centred=y, alpha=alpha, l1_ratio=l1_ratio,
                                positive=positive, gap_tolerance=-1.0, sparse=True)
    data = [program.prepare_block(b, k) for k, b in enumerate(blocks)]
    states, starts = zip(*(program.init_block(d, k) for k, d in enumerate(data)))
    shared, _ = program.pull(dict(enumerate(starts)), program.initial_shared())
    for _ in range(8):
        pushed = [program.push(k, d, s, Instruction(), shared, Inbox())
                  for k, (d, s) in enumerate(zip(data, states))]
        states = [state for state, _ in pushed]
        active = np.concatenate([state.active_features() for state in states])
        assert active[support].all()
        shared, report = program.pull({k: sent for k, (_, sent) in enumerate(pushed)}, shared)
    assert report.screened >= 0.8 * (X.shape[1] - len(support)), report
    coef = np.concatenate([state.coef for state in states])
    np.testing.assert_allclose(coef, ref.coef_, atol=1e-6)


# -- parameters -----------------------------------------------------------------------------------
def test_sklearn_check_param_validation():
    check_param_validation("ElasticNet", dask_strads.ElasticNet())


@pytest.mark.parametrize("params,match", [
    ({"l1_ratio": 1.5}, "l1_ratio"), ({"l1_ratio": -0.1}, "l1_ratio"),
    ({"schedule": "priority"}, "l1_ratio=1"),
    ({"schedule": dask_strads.SamplingSchedule(staleness=2)}, "l1_ratio=1"),
    ({"schedule": {"kind": "priority"}}, "'schedule' parameter"),
    ({"schedule": "cyclic", "l1_ratio": 1.0, "alpha": 0.0}, "alpha=0"),
], ids=str)
def test_bad_params_raise_before_cluster_work(client_factory, params, match):
    X, y = ar1_design(40, 10, 0.5)
    client = client_factory(2)
    fitted = fit(X, y, 0.1, 0.5, client=client)
    est = copy.deepcopy(fitted)
    est.client = client
    est.set_params(**params)
    assert fit_is_refused(est, client, (X, y), ValueError, match) == []
    np.testing.assert_array_equal(est.coef_, fitted.coef_)
