"""Recommendations with their scores, candidate and filtered items, and for every user at once:
implicit MF against the ``implicit`` library's ``recommend`` on the same factors, MF against its
predicted ratings ranked by numpy; in memory, and with the factors kept on 2 worker processes,
where every block of users is scored on the workers and written as Parquet."""
import gc
import time
import tracemalloc

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
from dask.core import get_dependencies
from implicit.cpu.als import AlternatingLeastSquares

import dask_strads
from dask_strads import ImplicitMatrixFactorization, MatrixFactorization
from dask_strads.estimators import ranking, recommender
from bounded import within
from test_ranking_metrics import interactions

N = 6


def implicit_model(**kwargs):
    return ImplicitMatrixFactorization(4, max_iter=4, random_state=0, **kwargs)


def mf_model(**kwargs):
    return MatrixFactorization(3, alpha_W=1.0, alpha_bias=1.0, max_iter=4, random_state=0,
                               **kwargs)


def implicit_library_recommend(est, train, users, **kwargs):
    """implicit's ``recommend`` of a model of ``est``'s factors (item ids as lists, as implicit
    0.7 takes them)."""
    model = AlternatingLeastSquares(factors=est.n_components, dtype=np.float64)
    model.user_factors = np.ascontiguousarray(np.asarray(est.user_factors_), dtype=np.float64)
    model.item_factors = np.ascontiguousarray(np.asarray(est.components_).T, dtype=np.float64)
    return model.recommend(users, train[users], N=N,
                           **{name: list(ids) for name, ids in kwargs.items()})


def ranked_predictions(est, train, users, allowed=None):
    """Item ids and predicted ratings of each user's N best unrated items, by numpy."""
    W, H = np.asarray(est.user_factors_), np.asarray(est.components_)
    predicted = (est.intercept_ + np.asarray(est.user_bias_)[:, None]
                 + np.asarray(est.item_bias_) + W @ H)[users]
    predicted[train[users].toarray() != 0] = -np.inf
    if allowed is not None:
        predicted[:, ~allowed] = -np.inf
    top = np.argsort(-predicted, axis=1, kind="stable")[:, :N]
    return top, np.take_along_axis(predicted, top, axis=1)


def test_implicit_recommend_equals_implicits_with_scores_candidates_and_filters():
    train, _ = interactions(4)
    est = implicit_model().fit(train)
    users = np.arange(0, 150, 7)
    candidates, banned = np.arange(10, 80), np.array([12, 30, 31])
    # implicit takes items or filter_items, not both: candidates less the banned ones
    for kwargs, implicits in (({}, {}), ({"items": candidates}, {"items": candidates}),
                              ({"filter_items": banned}, {"filter_items": banned}),
                              ({"items": candidates, "filter_items": banned},
                               {"items": np.setdiff1d(candidates, banned)})):
        ids, scores = est.recommend(users, n=N, return_scores=True, **kwargs)
        expected_ids, expected_scores = implicit_library_recommend(est, train, users,
                                                                   **implicits)
        np.testing.assert_array_equal(ids, expected_ids)
        np.testing.assert_allclose(scores, expected_scores, rtol=1e-5)
    np.testing.assert_array_equal(est.recommend(users, n=N), ids_without_filters(est, users))


def ids_without_filters(est, users):
    return est.recommend(users, n=N, return_scores=True)[0]


def test_mf_recommend_scores_are_the_predicted_ratings():
    train, _ = interactions(5)
    est = mf_model().fit(train)
    users = np.arange(0, 150, 11)
    ids, scores = est.recommend(users, n=N, return_scores=True)
    top, predicted = ranked_predictions(est, train, users)
    np.testing.assert_array_equal(ids, top)
    np.testing.assert_allclose(scores, predicted)
    np.testing.assert_allclose(scores, est.predict_entries(np.repeat(users, N), ids.ravel())
                               .reshape(ids.shape))
    allowed = np.ones(train.shape[1], dtype=bool)
    allowed[[0, 3, 5]] = False
    np.testing.assert_array_equal(est.recommend(users, n=N, filter_items=[0, 3, 5]),
                                  ranked_predictions(est, train, users, allowed)[0])


def test_too_few_candidates_end_rows_with_minus_one_and_nan():
    train, _ = interactions(6)
    est = implicit_model().fit(train)
    ids, scores = est.recommend([0, 1], n=N, items=[2, 4], exclude_seen=False,
                                return_scores=True)
    assert set(ids[0, :2]) == {2, 4} and (ids[:, 2:] == -1).all()
    assert np.isnan(scores[:, 2:]).all() and np.isfinite(scores[:, :2]).all()


def test_unknown_candidate_or_filtered_items_are_refused_by_name():
    train, _ = interactions(6)
    est = implicit_model().fit(train)
    with pytest.raises(ValueError, match=r"unknown item ids.*\[1000\]"):
        est.recommend([0], filter_items=[1, 1000])
    with pytest.raises(ValueError, match=r"unknown item ids.*\[-3\]"):
        est.recommend_all(items=[-3])


def as_lists(frame):
    """{user: (items best first, scores)} of a recommend_all table."""
    frame = frame.sort_values(["user", "rank"])
    return {user: (group["item"].to_numpy(), group["score"].to_numpy())
            for user, group in frame.groupby("user")}


@pytest.mark.parametrize("model", [implicit_model, mf_model])
def test_recommend_all_in_memory_equals_recommend_for_every_user(model):
    train, _ = interactions(7)
    est = model().fit(train)
    users = np.arange(train.shape[0])
    ids, scores = est.recommend(users, n=N, filter_items=[1, 2], return_scores=True)
    frame = est.recommend_all(n=N, filter_items=[1, 2])
    assert list(frame.columns) == ["user", "rank", "item", "score"]
    assert (frame.groupby("user")["rank"].max() == N).all()
    found = as_lists(frame)
    assert sorted(found) == users.tolist()
    for u in users:
        np.testing.assert_array_equal(found[u][0], ids[u])
        np.testing.assert_allclose(found[u][1], scores[u])


@pytest.mark.cluster
def test_recommend_all_on_the_workers_writes_parquet_equal_to_the_references(
        client_factory, tmp_path, monkeypatch):
    train, _ = interactions(8)
    client = client_factory(2)
    users = np.arange(train.shape[0])
    for model in (implicit_model, mf_model):
        est = model(keep_on_cluster=True)
        est.client = client
        est.fit(train)
        assert len(est.user_factors_.chunks[0]) == 2  # a block of users per worker
        in_memory = model().fit(train)  # the same fit, its factors here: the references
        if model is implicit_model:
            expected = implicit_library_recommend(in_memory, train, users)
        else:
            expected = ranked_predictions(in_memory, train, users)
        monkeypatch.chdir(tmp_path)  # a relative path is written where the call runs
        assert est.recommend_all(n=N, path="all.parquet") is None
        written = pd.read_parquet(tmp_path / "all.parquet")
        assert len(list((tmp_path / "all.parquet").glob("*.parquet"))) == 2
        found = as_lists(written)
        for u in users:
            np.testing.assert_array_equal(found[u][0], expected[0][u])
            np.testing.assert_allclose(found[u][1], expected[1][u], rtol=1e-5)
        (tmp_path / "all.parquet").rename(tmp_path / f"{model.__name__}.parquet")


def with_blocked_factors(est, user_chunk, item_chunk, client=None):
    """``est`` with its factors as Dask arrays of these chunks (on ``client``'s workers, as
    ``keep_on_cluster=True`` leaves them, when given)."""
    users = da.from_array(np.asarray(est.user_factors_), chunks=(user_chunk, -1))
    components = da.from_array(np.asarray(est.components_), chunks=(-1, item_chunk))
    if client is not None:
        users, components = client.persist([users, components])
        est.client = client
    est.user_factors_, est.components_ = users, components
    return est


def tied_model():
    """An implicit model of 150 users and 90 items of small whole factors, whose scores are
    exact and tie often: every seventh item's factors zero, every eleventh user's zero (all of
    its scores tie)."""
    rng = np.random.default_rng(3)
    train, _ = interactions(12)
    est = implicit_model().fit(train)
    users = rng.integers(-2, 3, (150, 4)).astype(float)
    users[::11] = 0.0
    items = rng.integers(-1, 2, (4, 90)).astype(float)
    items[:, ::7] = 0.0
    est.user_factors_, est.components_ = users, items
    return est


def brute_force_best(est, exclude_seen=True, allowed=None):
    """Item positions and scores of every user's N best items by numpy, from the gathered
    factors: the whole score matrix ranked by a stable sort (ties to the lower position)."""
    scores = np.asarray(est.user_factors_) @ np.asarray(est.components_)
    if exclude_seen:
        scores[est._seen.toarray()] = -np.inf
    if allowed is not None:
        scores[:, ~allowed] = -np.inf
    top = np.argsort(-scores, axis=1, kind="stable")[:, :N]
    return top, np.take_along_axis(scores, top, axis=1)


def assert_recommends(frame, expected):
    """A recommend_all table holds, for every user, the items and scores ``expected`` gives."""
    found = as_lists(frame)
    top, scores = expected
    assert sorted(found) == list(range(len(top)))
    for u, (items, item_scores) in found.items():
        np.testing.assert_array_equal(items, top[u])
        np.testing.assert_allclose(item_scores, scores[u], rtol=1e-12)


@pytest.mark.parametrize("floor_bytes", [ranking.SCORE_FLOOR_BYTES, 64])
def test_recommend_all_over_item_blocks_ranks_ties_as_a_stable_sort_of_all_scores(
        monkeypatch, floor_bytes):
    """Blocks of 25 items, scored whole or (a floor of 64 bytes) a few items and users at a
    time, give the ranking of all scores at once, ties to the lower item."""
    monkeypatch.setattr(ranking, "SCORE_FLOOR_BYTES", floor_bytes)
    est = with_blocked_factors(tied_model(), 60, 25)
    assert_recommends(est.recommend_all(n=N), brute_force_best(est))
    allowed = np.ones(90, dtype=bool)
    allowed[[0, 3, 30, 31, 77]] = False
    assert_recommends(est.recommend_all(n=N, exclude_seen=False, filter_items=[0, 3, 30, 31, 77]),
                      brute_force_best(est, exclude_seen=False, allowed=allowed))


def test_misaligned_item_rows_are_scored_a_piece_at_a_time_each_aligned(monkeypatch):
    monkeypatch.setattr(ranking, "SCORE_FLOOR_BYTES", 64)
    est = tied_model()
    items = np.asarray(est.components_).T
    buffer = np.zeros(items.nbytes + 4, dtype=np.uint8)
    misaligned = np.ndarray(items.shape, items.dtype, buffer=buffer, offset=4)
    misaligned[:] = items
    assert not misaligned.flags.aligned
    pieces = list(ranking._aligned_pieces(misaligned))
    assert len(pieces) == ranking.ITEM_PIECES
    assert all(piece.flags.aligned for _, piece in pieces)
    np.testing.assert_array_equal(np.vstack([piece for _, piece in pieces]), items)
    users = np.asarray(est.user_factors_)
    top, scores = ranking.block_best(users, misaligned, est._seen, 0, N)
    expected_top, expected_scores = brute_force_best(est)
    np.testing.assert_array_equal(top, expected_top)
    np.testing.assert_array_equal(scores, expected_scores)


class GraphKeeper:
    """An executor computing here, synchronously, that keeps the graph it computes."""

    def compute(self, *collections):
        self.graph = dict(dask.base.collections_to_expr(collections).__dask_graph__())
        return list(dask.compute(*collections, scheduler="sync"))


def test_recommend_all_tasks_hold_one_item_block_each_released_after_its_step(monkeypatch):
    train, _ = interactions(13)
    est = with_blocked_factors(implicit_model().fit(train), 50, 18)  # 3 x 5 blocks
    keeper = GraphKeeper()
    monkeypatch.setattr(est, "_data_executor", lambda *args: keeper)
    est.recommend_all(n=N)
    graph = keeper.graph
    values = dict(zip(graph, dask.get(graph, list(graph))))
    dependents = {key: [] for key in graph}
    for key in graph:
        for dependency in get_dependencies(graph, key):
            dependents[dependency].append(key)
    user_block, item_block = 50 * 4 * 8, 18 * 4 * 8

    def factor_inputs(key):
        return [d for d in get_dependencies(graph, key)
                if isinstance(values[d], np.ndarray) and values[d].ndim == 2]

    def running_best_inputs(key):
        return [d for d in get_dependencies(graph, key) if isinstance(values[d], tuple)]

    for key in graph:
        assert sum(values[d].nbytes for d in factor_inputs(key)) <= user_block + item_block
    steps = [key for key in graph if running_best_inputs(key) and factor_inputs(key)]
    assert len(steps) == 3 * 5
    for step in steps:
        # the worker of a step lets go of its item block, and of the running best it updates
        # in place, when the step is done: no other task reads them
        (item_rows,) = [d for d in factor_inputs(step) if len(values[d]) == 18]
        assert dependents[item_rows] == [step]
        assert [dependents[d] for d in running_best_inputs(step)] == [[step]]


@pytest.mark.cluster
@pytest.mark.parametrize("users_per_partition, rows_per_row_group", [(None, None), (20, 15)])
def test_recommend_all_streamed_on_the_workers_equals_recommend_for_every_user(
        client_factory, tmp_path, monkeypatch, users_per_partition, rows_per_row_group):
    """More item blocks than workers: each block of users meets them one at a time, and the
    result is the brute force's and implicit's; with partitions smaller than a block of users,
    a file per partition, and with row groups smaller than a partition's rows, row groups of
    whole users within that size. (Where the steps run is the scheduler's choice, by where
    their inputs are; nothing pins them, so it is not asserted here.)"""
    if users_per_partition:
        monkeypatch.setattr(ranking, "USERS_PER_PARTITION", users_per_partition)
        monkeypatch.setattr(recommender, "ROWS_PER_ROW_GROUP", rows_per_row_group)
    train, _ = interactions(14)
    client = client_factory(2)
    est = implicit_model().fit(train)
    expected = brute_force_best(est)
    users = np.flatnonzero(train.getnnz(axis=1))  # others score every item 0: ties
    library_ids, library_scores = implicit_library_recommend(est, train, users)
    est = with_blocked_factors(est, 75, 30, client)  # 2 x 3 blocks
    est.recommend_all(n=N, path=tmp_path / "all")
    per_file = users_per_partition or 75
    assert len(list((tmp_path / "all").iterdir())) == sum(
        -(-size // per_file) for size in est.user_factors_.chunks[0])
    written = pd.read_parquet(tmp_path / "all")
    assert_recommends(written, expected)
    if rows_per_row_group:
        for file in (tmp_path / "all").iterdir():
            groups = pq.ParquetFile(file)
            users_of = [groups.read_row_group(g, columns=["user"])["user"].to_numpy()
                        for g in range(groups.num_row_groups)]
            users_per_group = rows_per_row_group // N
            assert [len(np.unique(users)) for users in users_of[:-1]] == [users_per_group] * (
                len(users_of) - 1)
            assert 0 < len(np.unique(users_of[-1])) <= users_per_group
            assert all(len(users) <= rows_per_row_group for users in users_of)
    found = as_lists(written)
    for u, ids, scores in zip(users, library_ids, library_scores):
        np.testing.assert_array_equal(found[u][0], ids)
        np.testing.assert_allclose(found[u][1], scores, rtol=1e-5)


def test_recommend_all_of_a_loaded_model_refuses_a_folder_in_use(tmp_path):
    train, _ = interactions(9)
    est = implicit_model().fit(train)
    dask_strads.save(est, tmp_path / "model.strads")
    loaded = dask_strads.load(tmp_path / "model.strads")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("kept")
    with pytest.raises(ValueError, match="not an empty folder"):
        loaded.recommend_all(path=tmp_path / "out")
    assert (tmp_path / "out" / "notes.txt").read_text() == "kept"
    loaded.recommend_all(n=N, path=tmp_path / "all")
    written = as_lists(pd.read_parquet(tmp_path / "all"))
    ids = est.recommend(np.arange(train.shape[0]), n=N)
    for u, (items, _) in written.items():
        np.testing.assert_array_equal(items, ids[u])


def triplets_of(matrix, user_ids):
    """The stored entries of rows of ``matrix`` as triplets, under ``user_ids``."""
    coo = matrix.tocoo()
    return pd.DataFrame({"user": np.asarray(user_ids)[coo.row], "item": coo.col,
                         "rating": coo.data})


def implicit_closed_form(est, interactions):
    """Each user's factors minimising sum_i (1 + alpha x_i) (p_i - w . h_i)^2 + lambda |w|^2."""
    H = np.asarray(est.components_).T
    rows = []
    for x in interactions.toarray():
        confidence = 1 + est.alpha * np.abs(x)
        gram = H.T @ (confidence[:, None] * H) + est.regularization * np.eye(H.shape[1])
        rows.append(np.linalg.solve(gram, H.T @ (confidence * (x > 0))))
    return np.array(rows)


def mf_closed_form(est, ratings):
    """Each user's (w, b) minimising sum over rated i of (r_i - mu - c_i - b - w . h_i)^2 +
    alpha_W |w|^2 + alpha_bias b^2."""
    H, c = np.asarray(est.components_).T, np.asarray(est.item_bias_)
    penalty = np.diag([est.alpha_W] * H.shape[1] + [est.alpha_bias])
    factors, biases = [], []
    for row in ratings:
        design = np.hstack([H[row.indices], np.ones((row.nnz, 1))])
        target = row.data - est.intercept_ - c[row.indices]
        solved = np.linalg.solve(design.T @ design + penalty, design.T @ target)
        factors.append(solved[:-1])
        biases.append(solved[-1])
    return np.array(factors), np.array(biases)


@pytest.mark.parametrize("model", [implicit_model, mf_model])
def test_partial_fit_users_adds_new_users_and_replaces_changed_ones(model):
    train, _ = interactions(10)
    train = train[train.getnnz(axis=1) > 0]  # a user is known by its interactions
    n_users = train.shape[0]
    fitted, extra = train[:120], train[120:]  # users from 120 on are new to the model
    est = model().fit(triplets_of(fitted, np.arange(120)))
    items, before = est.components_.copy(), est.user_factors_.copy()
    changed = sp.csr_matrix(train[[3, 7]].toarray()[:, ::-1])  # users 3 and 7, other tastes
    updates = pd.concat([triplets_of(extra, np.arange(120, n_users)),
                         triplets_of(changed, [3, 7])])
    assert est.partial_fit_users(updates) is est
    np.testing.assert_array_equal(est.user_ids_, np.arange(n_users))
    np.testing.assert_array_equal(est.components_, items)  # the items stay
    unchanged = np.setdiff1d(np.arange(120), [3, 7])
    np.testing.assert_array_equal(est.user_factors_[unchanged], before[unchanged])
    new_rows = sp.vstack([changed, extra], format="csr")
    at = np.r_[3, 7, np.arange(120, n_users)]
    if model is implicit_model:
        np.testing.assert_allclose(est.user_factors_[at], implicit_closed_form(est, new_rows),
                                   atol=1e-8)
    else:
        factors, biases = mf_closed_form(est, new_rows)
        np.testing.assert_allclose(est.user_factors_[at], factors, atol=1e-6)
        np.testing.assert_allclose(est.user_bias_[at], biases, atol=1e-6)
    # the new interactions are what recommendations now leave out
    assert not set(est.recommend([3], n=N)[0]) & set(changed[0].indices)
    assert not set(est.recommend([140], n=N)[0]) & set(extra[20].indices)


def test_partial_fit_users_refuses_unknown_items_and_other_input_keeping_the_model():
    train, _ = interactions(11)
    est = implicit_model().fit(triplets_of(train, np.arange(150)))
    before = est.user_factors_.copy()
    with pytest.raises(ValueError, match=r"unknown item ids.*\[500\]"):
        est.partial_fit_users(pd.DataFrame({"user": [1], "item": [500], "rating": [1.0]}))
    with pytest.raises(TypeError, match="DataFrame of user, item, rating triplets"):
        est.partial_fit_users(train)
    np.testing.assert_array_equal(est.user_factors_, before)
    assert len(est.user_ids_) == 150


def item_triplets(matrix, item_ids):
    """The stored entries of ``matrix`` (items x users) as (user, item, rating) triplets."""
    coo = matrix.tocoo()
    return pd.DataFrame({"user": coo.col, "item": np.asarray(item_ids)[coo.row],
                         "rating": coo.data})


@pytest.mark.parametrize("model", [implicit_model, mf_model])
def test_partial_fit_items_adds_new_items_from_fitted_users(model):
    train, _ = interactions(16)
    train = train[train.getnnz(axis=1) > 0]
    by_item = train.T.tocsr()
    kept = np.flatnonzero(by_item.getnnz(axis=1) > 0)
    old, new = kept[:80], kept[80:]  # items from 80 on are new to the model
    est = model().fit(triplets_of(train[:, old], np.arange(train.shape[0])).assign(
        item=lambda t: old[t["item"]]))
    users_before = est.user_factors_.copy()
    assert est.partial_fit_items(item_triplets(by_item[new], new)) is est
    np.testing.assert_array_equal(est.item_ids_, kept)
    assert est.n_features_in_ == len(kept) == est.components_.shape[1]
    np.testing.assert_array_equal(est.user_factors_, users_before)  # the users stay
    at = np.searchsorted(kept, new)
    if model is implicit_model:
        # the model is symmetric: an item's rows solve as a user's, against the user factors
        swapped = ImplicitMatrixFactorization(est.n_components, alpha=est.alpha,
                                              regularization=est.regularization)
        swapped.components_ = est.user_factors_.T
        np.testing.assert_allclose(est.components_[:, at].T,
                                   implicit_closed_form(swapped, by_item[new]), atol=1e-8)
    else:
        W, b = est.user_factors_, est.user_bias_
        penalty = np.diag([est.alpha_W] * W.shape[1] + [est.alpha_bias])
        for item, row in zip(at, by_item[new]):
            design = np.hstack([W[row.indices], np.ones((row.nnz, 1))])
            solved = np.linalg.solve(design.T @ design + penalty,
                                     design.T @ (row.data - est.intercept_ - b[row.indices]))
            np.testing.assert_allclose(est.components_[:, item], solved[:-1], atol=1e-6)
            assert est.item_bias_[item] == pytest.approx(solved[-1], abs=1e-6)
    # who interacted with a new item is what recommendations leave out for them
    user = by_item[new[0]].indices[0]
    assert new[0] not in est.recommend([user], n=len(kept))[0]


@pytest.mark.cluster
def test_repeated_calls_leave_no_seen_items_with_the_scheduler(client_factory, tmp_path):
    """recommend_all and ranking_metrics send the workers their seen items, held-out items and
    ids scattered, not inside the graphs: the scheduler (in this process, under tracemalloc)
    keeps the buffers of the graph messages it received after their tasks are forgotten, which
    grew by more than the seen items' bytes a call when they travelled in the tasks."""
    train, held_out = interactions(3, n_users=50_000, n_items=200)
    client = client_factory(2)
    scheduler = client.cluster.scheduler
    est = with_blocked_factors(implicit_model().fit(train), 25_000, 100, client)
    est.recommend_all(n=N, path=tmp_path / "first")  # what a first call loads and keeps
    est.ranking_metrics(held_out, k=N)
    seen_bytes = sum(a.nbytes for a in (est._seen.data, est._seen.indices, est._seen.indptr))
    settled = len(scheduler.tasks)
    tracemalloc.start()
    try:
        for call in range(3):
            est.recommend_all(n=N, path=tmp_path / f"call-{call}")
            est.ranking_metrics(held_out, k=N)
        within(60, _until, lambda: len(scheduler.tasks) <= settled)  # releases are messages
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert kept < seen_bytes / 2, (kept, seen_bytes)


def _until(condition):
    while not condition():
        time.sleep(0.05)
