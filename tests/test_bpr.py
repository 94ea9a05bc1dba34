"""Bayesian personalised ranking: one gradient step against its formula, the rotation of item
blocks equal to the sequential loop (in process and on 2 worker processes), ranking quality
against the ``implicit`` library's BPR and popularity on a planted taste model, bad input."""
import dask
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from implicit.cpu.bpr import BayesianPersonalizedRanking as ImplicitBPR
from sklearn.utils import check_random_state

from dask_strads import BayesianPersonalizedRanking, Engine
from dask_strads.engine import LocalExecutor
from dask_strads.kernels.bpr import sgd_steps
from dask_strads.partition import block_edges
from dask_strads.programs.base import run_sequential
from dask_strads.programs.bpr import BPRProgram
from test_ranking_metrics import interactions


def test_a_step_on_the_only_possible_triple_follows_the_gradient():
    """One user who interacted with item 0 of a 2-item block: the triple is (0, 0, 1)."""
    rng = np.random.default_rng(0)
    users, items = rng.normal(size=(1, 4)), rng.normal(size=(2, 4))
    users[:, -1] = 1.0  # the constant column, which makes the last item column a bias
    w, hi, hj = users[0].copy(), items[0].copy(), items[1].copy()
    lr, reg = 0.1, 0.02
    loss, correct, taken = sgd_steps([0, 1], [0], users, items, 1, seed=3, learning_rate=lr,
                                     regularization=reg, fixed_user_columns=1)
    x = w @ (hi - hj)
    z = 1 / (1 + np.exp(x))
    expected_w = w + lr * (z * (hi - hj) - reg * w)
    expected_w[-1] = 1.0
    np.testing.assert_allclose(users[0], expected_w)
    np.testing.assert_allclose(items[0], hi + lr * (z * w - reg * hi))
    np.testing.assert_allclose(items[1], hj + lr * (-z * w - reg * hj))
    assert taken == 1 and correct == (x > 0)
    assert loss == pytest.approx(np.log1p(np.exp(-x)))


def program_and_blocks(train, n_blocks=2):
    users = np.linspace(0, train.shape[0], n_blocks + 1).astype(int)
    return (BPRProgram(6, item_counts=train.getnnz(axis=0), n_blocks=n_blocks, learning_rate=0.05,
                       regularization=0.01, seed=4),
            [train[lo:hi] for lo, hi in zip(users[:-1], users[1:])])


def test_rotating_item_blocks_equals_the_sequential_loop():
    train, _ = interactions(12, n_users=120, n_items=60)
    program, blocks = program_and_blocks(train)
    params, records, carried = run_sequential(program, blocks, 8)
    engine = Engine(program, executor=LocalExecutor(dask.threaded.get, 2), max_rounds=8)
    result = engine.run(blocks)
    for got, expected in zip(result.gather() + result.gather_carried(), params + carried):
        np.testing.assert_array_equal(got, expected)
    assert [r["objective"] for r in result.history.records] == [r["objective"] for r in records]
    # each round, the two user blocks took different item blocks; every pair met in 2 rounds
    assert {(b, i.carried) for t in range(2) for b, i in program.schedule(t, []).items()} == {
        (0, 0), (1, 1), (0, 1), (1, 0)}


@pytest.mark.cluster
def test_a_fit_on_two_worker_processes_equals_the_sequential_loop(client_factory):
    train, _ = interactions(13, n_users=120, n_items=60)
    est = BayesianPersonalizedRanking(6, learning_rate=0.05, max_iter=5, random_state=0)
    est.client = client_factory(2)
    est.fit(train)  # fused epochs of a task per worker, item blocks moving between them
    # the same program, cut as the estimator cuts it: a block of users and of items a worker,
    # of about equal interactions
    users = block_edges(train.shape[0], 2, train.getnnz(axis=1))
    program = BPRProgram(6, item_counts=train.getnnz(axis=0), n_blocks=2, learning_rate=0.05,
                         regularization=0.01,
                         seed=check_random_state(0).randint(2**31 - 1))
    params, _, carried = run_sequential(
        program, [train[lo:hi] for lo, hi in zip(users[:-1], users[1:])], 2 * 5)
    items = np.vstack(carried)[np.argsort(program.item_order)]  # the items' own order
    np.testing.assert_array_equal(est.user_factors_, np.vstack(params)[:, :6])
    np.testing.assert_array_equal(est.components_, items[:, :6].T)
    np.testing.assert_array_equal(est.item_bias_, items[:, 6])
    assert est.n_iter_ == 5


def precision_at(k, user_rows, item_rows, train, test):
    scores = user_rows @ item_rows.T
    scores[train.nonzero()] = -np.inf
    top = np.argsort(-scores, axis=1)[:, :k]
    held = test.toarray() > 0
    return np.take_along_axis(held, top, axis=1).sum() / np.minimum(k, held.sum(axis=1)).sum()


def test_ranks_a_planted_taste_model_as_implicits_bpr_and_above_popularity():
    train, test = interactions(14, n_users=300, n_items=120)
    ours = BayesianPersonalizedRanking(8, learning_rate=0.05, max_iter=60,
                                       random_state=0).fit(train)
    theirs = ImplicitBPR(factors=8, learning_rate=0.05, regularization=0.01, iterations=60,
                         random_state=0)
    theirs.fit(train, show_progress=False)
    popularity = np.asarray(train.sum(axis=0), dtype=float)
    ours_precision = ours.precision_at_k(test, k=5)
    assert ours_precision == pytest.approx(precision_at(
        5, *ours._scoring_rows(), train, test))  # the estimator's metric is the plain one
    implicits = precision_at(5, theirs.user_factors, theirs.item_factors, train, test)
    popular = precision_at(5, np.ones((train.shape[0], 1)), popularity.T, train, test)
    assert ours_precision >= 0.9 * implicits
    assert ours_precision >= 1.5 * popular  # implicit's BPR: 1.6 to 2.2x over seeds 14-18
    assert ours.history_.records[-1]["accuracy"] > 0.8 > ours.history_.records[0]["accuracy"]
    assert [r["iteration"] for r in ours.history_.records] == list(range(60))


def test_bad_input_is_refused_and_leaves_the_fit_as_it_was():
    train, _ = interactions(15, n_users=60, n_items=30)
    est = BayesianPersonalizedRanking(4, max_iter=2, random_state=0).fit(train)
    before = est.user_factors_.copy()
    with pytest.raises(ValueError, match="Negative values"):
        est.fit(-train)
    with pytest.raises(ValueError, match="no positive entry"):
        est.fit(sp.csr_matrix(train.shape))
    with pytest.raises(ValueError, match="learning_rate"):
        BayesianPersonalizedRanking(learning_rate=0).fit(train)
    with pytest.raises(ValueError, match="folds in no new items"):
        est.partial_fit_items(pd.DataFrame({"user": [1], "item": [2], "rating": [1.0]}))
    np.testing.assert_array_equal(est.user_factors_, before)


def test_users_folded_in_rank_nearly_as_the_fitted_ones():
    train, test = interactions(14, n_users=300, n_items=120)
    est = BayesianPersonalizedRanking(8, learning_rate=0.05, max_iter=60,
                                      random_state=0).fit(train)
    fitted = precision_at(5, *est._scoring_rows(), train, test)
    coo = train.tocoo()
    triplets = pd.DataFrame({"user": coo.row, "item": coo.col, "rating": coo.data})
    items_before = est.components_.copy()
    # the same interactions folded in alone give the same rows (same steps, same seed): new
    # user 1000 with user 7's interactions ranks as user 7 refitted from them
    new_user = triplets[triplets.user == 7].assign(user=1000)
    ids, scores = est.recommend(new_user, n=5, return_scores=True)  # folded in, not kept
    est.partial_fit_users(triplets[triplets.user == 7])
    np.testing.assert_array_equal(est.recommend([7], n=5), ids)
    np.testing.assert_allclose(est.recommend([7], n=5, return_scores=True)[1], scores,
                               rtol=1e-6)
    est.partial_fit_users(triplets)  # every user refitted from its interactions alone
    np.testing.assert_array_equal(est.components_, items_before)
    folded = precision_at(5, *est._scoring_rows(), train, test)
    popularity = np.asarray(train.sum(axis=0), dtype=float)
    popular = precision_at(5, np.ones((train.shape[0], 1)), popularity.T, train, test)
    assert folded >= 0.8 * fitted and folded >= 1.3 * popular  # measured: 0.88x, 1.4x


def test_a_dataframe_matrix_gives_its_column_names_as_the_factorizations_do():
    """A users x items DataFrame: its column names become ``feature_names_in_``, as
    ImplicitMatrixFactorization records them from the same frame."""
    from dask_strads import ImplicitMatrixFactorization

    train, _ = interactions(seed=3)
    frame = pd.DataFrame(train.toarray(),
                         columns=[f"item{j}" for j in range(train.shape[1])])
    bpr = BayesianPersonalizedRanking(4, max_iter=2, random_state=0).fit(frame)
    als = ImplicitMatrixFactorization(4, max_iter=2, random_state=0).fit(frame)
    np.testing.assert_array_equal(bpr.feature_names_in_, als.feature_names_in_)
    assert list(bpr.feature_names_in_) == list(frame.columns)
