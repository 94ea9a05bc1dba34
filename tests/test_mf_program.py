"""The matrix-factorization program in a loop and on the engine."""
import numpy as np
import pytest

from dask_strads import Engine, run_sequential
from dask_strads.datasets import make_ratings, train_test_split_ratings
from dask_strads.estimators.inputs import blocks_along
from dask_strads.partition import block_edges
from dask_strads.programs.mf import ITEMS, USERS, MFProgram, make_raw_block

RANK = 4


@pytest.fixture(scope="module")
def ratings():
    X, _, _ = make_ratings(n_users=300, n_items=200, n_ratings=30_000, rank=RANK, noise=0.3,
                           random_state=0)
    return train_test_split_ratings(X, test_size=0.2, random_state=0)


def setup(X, n_user_blocks=2, n_item_blocks=2, biases=True, alpha=1.0, tol=0.0):
    user_edges = block_edges(X.shape[0], n_user_blocks)
    item_edges = block_edges(X.shape[1], n_item_blocks)
    raw = (blocks_along(X, user_edges, lambda part, lo, hi: make_raw_block(part, USERS, lo), 0)
           + blocks_along(X, item_edges, lambda part, lo, hi: make_raw_block(part, ITEMS, lo), 1))
    mean = X.data.mean() if biases else 0.0
    program = MFProgram(RANK, user_edges, item_edges, X.nnz, alpha, alpha, 1.0, biases, mean,
                        tol=tol, seed=0)
    return program, raw


def factors(program, params):
    """(W, b, H, c) from the blocks' collected rows: factors, then the bias."""
    k = program.n_components
    users = np.vstack(params[:program.n_user_blocks])
    items = np.vstack(params[program.n_user_blocks:])
    return users[:, :k], users[:, k], items[:, :k], items[:, k]


def objective(X, mean, W, b, H, c, alpha, alpha_bias):
    """The objective from its definition, in numpy."""
    coo = X.tocoo()
    predicted = mean + b[coo.row] + c[coo.col] + np.einsum("ij,ij->i", W[coo.row], H[coo.col])
    return (np.sum((coo.data - predicted) ** 2) + alpha * (np.sum(W**2) + np.sum(H**2))
            + alpha_bias * (np.sum(b**2) + np.sum(c**2)))


def held_out_rmse(X, mean, W, b, H, c):
    coo = X.tocoo()
    predicted = mean + b[coo.row] + c[coo.col] + np.einsum("ij,ij->i", W[coo.row], H[coo.col])
    return float(np.sqrt(np.mean((coo.data - predicted) ** 2)))


@pytest.mark.parametrize("biases", [True, False])
def test_objective_never_increases_and_is_the_model_objective(ratings, biases):
    train, _ = ratings
    program, raw = setup(train, biases=biases)
    params, reports = run_sequential(program, raw, 20)
    values = [r["objective"] for r in reports]
    assert np.all(np.diff(values) <= 0)
    assert values[-1] < 0.5 * values[0]
    W, b, H, c = factors(program, params)
    if not biases:
        assert not b.any() and not c.any()
    assert values[-1] == pytest.approx(objective(train, program.mean, W, b, H, c, 1.0, 1.0),
                                       rel=1e-10)
    assert reports[-1]["rmse"] == pytest.approx(
        held_out_rmse(train, program.mean, W, b, H, c), rel=1e-10)


def test_factors_do_not_depend_on_the_blocks(ratings):
    train, _ = ratings
    one = factors(*_run(*setup(train, 1, 1), 10))
    many = factors(*_run(*setup(train, 3, 2), 10))
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


def _run(program, raw, rounds):
    return program, run_sequential(program, raw, rounds)[0]


def test_planted_low_rank_matrix_is_recovered_to_the_noise_level(ratings):
    train, test = ratings
    program, raw = setup(train)
    params, _ = run_sequential(program, raw, 60)
    rmse = held_out_rmse(test, program.mean, *factors(program, params))
    # noise 0.3 (the signal's deviation is 1); 2000 parameters for 24000 ratings add ~4%
    assert rmse < 0.3 * 1.1


def test_tolerance_stops_after_an_iteration_that_gains_too_little(ratings):
    train, _ = ratings
    program, raw = setup(train, tol=1e-3)
    _, reports = run_sequential(program, raw, 200)
    decreases = [r["relative_decrease"] for r in reports if r["side"] == USERS]
    assert len(reports) < 200 and reports[-1]["side"] == USERS
    assert decreases[-1] <= 1e-3 < min(decreases[:-1])


def test_staleness_is_refused(ratings):
    program, raw = setup(ratings[0])
    with pytest.raises(RuntimeError, match="staleness 0"):
        run_sequential(program, raw, 4, staleness=1)


@pytest.mark.parametrize("n_workers", [1, 2, 4])
def test_engine_matches_the_sequential_loop(client_factory, ratings, n_workers):
    client = client_factory(n_workers)
    program, raw = setup(ratings[0], 2, 3)
    rounds = 12
    result = Engine(program, client, max_rounds=rounds).run(raw)
    params, reports = run_sequential(program, raw, rounds)
    for ours, reference in zip(client.gather(result.params), params):
        np.testing.assert_array_equal(ours, reference)
    assert [r["objective"] for r in result.history] == [r["objective"] for r in reports]
