"""The matrix-factorization program in a loop and on the engine."""
import dask
import numpy as np
import pytest
import scipy.sparse as sp

from dask_strads import Engine, run_sequential
from dask_strads.datasets import make_ratings, train_test_split_ratings
from dask_strads.estimators.inputs import blocks_along
from dask_strads.partition import block_edges
from dask_strads.programs.mf import (ITEMS, MESSAGE_SHARE, SMALL_MESSAGES, USERS, MFProgram,
                                     expected_message_bytes, make_raw_block, sub_rounds_for)

RANK = 4


@pytest.fixture(scope="module")
def ratings():
    X, _, _ = make_ratings(n_users=300, n_items=200, n_ratings=30_000, rank=RANK, noise=0.3,
                           random_state=0)
    return train_test_split_ratings(X, test_size=0.2, random_state=0)


def setup(X, n_user_blocks=2, n_item_blocks=2, biases=True, alpha=1.0, tol=0.0,
          program_class=MFProgram, **extra):
    user_edges = block_edges(X.shape[0], n_user_blocks)
    item_edges = block_edges(X.shape[1], n_item_blocks)
    raw = (blocks_along(X, user_edges, lambda part, lo, hi: make_raw_block(part, USERS, lo), 0)
           + blocks_along(X, item_edges, lambda part, lo, hi: make_raw_block(part, ITEMS, lo), 1))
    mean = X.data.mean() if biases else 0.0
    program = program_class(RANK, user_edges=user_edges, item_edges=item_edges, n_ratings=X.nnz,
                            alpha_W=alpha, alpha_H=alpha, alpha_bias=1.0, biases=biases,
                            mean=mean, tol=tol, seed=0, **extra)
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
    result = Engine(program, client=client, max_rounds=rounds).run(raw)
    params, reports = run_sequential(program, raw, rounds)
    for ours, reference in zip(client.gather(result.params), params):
        np.testing.assert_array_equal(ours, reference)
    # a fused epoch adds the partials up the workers' tree: in another order than the loop
    assert [r["objective"] for r in result.history] == pytest.approx(
        [r["objective"] for r in reports], rel=1e-12)


@pytest.mark.parametrize("n_workers", [1, 2, 4, "synchronous"])
def test_messages_on_the_plane_with_sub_rounds_match_the_sequential_loop(client_factory, ratings,
                                                                         n_workers):
    """8 blocks a side, 2 sub-rounds, user block b and item block b on one worker (as the
    estimator places them): several blocks of a side a worker, each push reading all 8 blocks
    of the other side over the message plane. A round's graph is its pushes, the pull and the
    report; every message is counted, and bytes cross a connection only between processes."""
    program, raw = setup(ratings[0], 8, 8)
    program.sub_rounds = 2
    rounds = 8
    slots = list(range(8)) * 2
    client = None if n_workers == "synchronous" else client_factory(n_workers)
    with dask.config.set(scheduler="synchronous"):  # where no client is given
        engine = Engine(program, client=client, max_rounds=rounds, checkpoint_interval=0,
                        max_epoch_rounds=1)  # a graph a round, counted below
        graphs = []
        submit = engine.executor.submit
        engine.executor.submit = lambda graph: graphs.append(graph) or submit(graph)
        result = engine.run(raw, slots)
    if client is None:
        assert engine.executor.local
    params, reports = run_sequential(program, raw, rounds)
    for ours, reference in zip(result.gather(), params):
        np.testing.assert_array_equal(ours, reference)
    assert [r.get("objective") for r in result.history] == [r.get("objective") for r in reports]
    _, *round_graphs, _ = graphs
    for t, (graph, record) in enumerate(zip(round_graphs, result.history)):
        instructions = program.schedule(t, [])
        assert sorted(k.split("-")[2] for tasks in graph.values() for k in tasks) == sorted(
            ["push"] * len(instructions) + ["pull", "report"])
        assert record["plane_messages"] == sum(len(i.reads) for i in instructions.values())
        assert (record["plane_bytes"] > 0) == (n_workers in (2, 4))


def test_sub_rounds_give_the_same_factors_and_objectives(ratings):
    """Rows of one side are independent given the other: updating a side's blocks a few at a
    time changes nothing but the number of rounds."""
    train, _ = ratings
    whole = run_sequential(*setup(train, 2, 2), 12)
    program, raw = setup(train, 6, 6)
    program.sub_rounds = 3
    params, reports = run_sequential(program, raw, 36)
    for a, b in zip(factors(*_run(*setup(train, 2, 2), 12)), factors(program, params)):
        np.testing.assert_array_equal(a, b)
    complete = [r["objective"] for r in reports if "objective" in r]
    assert [r["side"] for r in reports[:6]] == [ITEMS] * 3 + [USERS] * 3
    assert complete == pytest.approx([r["objective"] for r in whole[1]], rel=1e-12)


def test_engine_stops_where_the_sequential_loop_does_with_sub_rounds(client_factory, ratings):
    """In place, the rounds submitted behind a tol stop change nothing."""
    client = client_factory(2)
    program, raw = setup(ratings[0], 4, 4, tol=1e-2)
    program.sub_rounds = 2
    result = Engine(program, client=client, max_rounds=400).run(raw)
    params, reports = run_sequential(program, raw, 400)
    assert len(reports) < 400 and result.history.stats.converged
    for ours, reference in zip(client.gather(result.params), params):
        np.testing.assert_array_equal(ours, reference)
    ran = [r for r in result.history if "objective" in r]
    assert [r["objective"] for r in ran] == pytest.approx(
        [r["objective"] for r in reports if "objective" in r], rel=1e-12)  # summation order
    assert all(r.get("after_stop") for r in result.history.records[len(reports):])


def test_expected_messages_bound_the_rows_random_ratings_touch():
    """Every user with 4 random ratings: the closed form is exact; with Poisson counts of the
    same mean it is an upper bound (1 - e^(-4/8) against 1 - (7/8)^4: 5% above)."""
    n_users, n_items, n_blocks, width = 20_000, 4_000, 8, 10
    rng = np.random.default_rng(0)
    item_edges = block_edges(n_items, n_blocks)
    for rows in (np.repeat(np.arange(n_users), 4), rng.integers(0, n_users, 4 * n_users)):
        X = sp.csc_matrix((np.ones(len(rows)), (rows, rng.integers(0, n_items, len(rows)))),
                          shape=(n_users, n_items))
        touched = [len(np.unique(X[:, lo:hi].indices))
                   for lo, hi in zip(item_edges[:-1], item_edges[1:])]
        expected = expected_message_bytes(n_users, n_items, len(rows), width, n_blocks)
        fixed_counts = rows[1] == rows[0]
        reference = n_users * (1 - ((7 / 8) ** 4 if fixed_counts else np.exp(-4 / 8)))
        assert np.mean(touched) == pytest.approx(reference, rel=0.02)
        assert np.mean(touched) <= 1.01 * expected / (8 * width)
        assert expected / (8 * width) == pytest.approx(n_users * (1 - (7 / 8) ** 4), rel=1e-12)


def test_sub_rounds_only_where_they_shrink_large_messages():
    # MovieLens 100k at rank 10: messages under a megabyte
    assert sub_rounds_for(671, 9066, 100_004, 12, 4) == 1
    # 20 ratings a user: a block of any size meets most users, more rounds would move more
    assert sub_rounds_for(10**6, 10**5, 2 * 10**7, 12, 2) == 1
    # 16 ratings a user, rank 10: messages of about 9 MB stay in one round
    assert sub_rounds_for(10**5, 10**4, 16 * 10**5, 12, 2) == 1
    # 4 ratings a user, rank 64: the fewest rounds whose messages fit the share, also on one
    # worker, where the first doubling cuts them only to 15/16
    for n_workers in (1, 2, 4):
        c = sub_rounds_for(200_000, 40_000, 800_000, 66, n_workers)
        allowed = max(MESSAGE_SHARE * 8 * 66 * 240_000 / n_workers, SMALL_MESSAGES)
        assert c > 1
        assert expected_message_bytes(200_000, 40_000, 800_000, 66, n_workers * c) <= allowed
        assert expected_message_bytes(200_000, 40_000, 800_000, 66, n_workers * c // 2) > allowed
