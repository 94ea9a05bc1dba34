"""ImplicitMatrixFactorization: the ALS step and objective against a dense numpy reference, the
engine against a sequential run on 1 and 2 worker processes, sub-rounds against one block a
side, a planted problem recovered, answers by ids, and refused input."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import cosine_similarity
from sklearn.utils import check_random_state

from conftest import fit_is_refused
from dask_strads import Engine, ImplicitMatrixFactorization, run_sequential
from dask_strads.estimators.factor_blocks import user_item_blocks
from dask_strads.kernels.implicit_mf import solve_rows
from dask_strads.programs.implicit_mf import ImplicitMFProgram
from dask_strads.partition import block_edges
from dask_strads.programs import mf
from dask_strads.programs.mf import ITEMS, USERS, fill_initial_user_factors, make_raw_block

ALPHA, REG = 3.0, 0.5


def dense_solve(R, other, alpha, reg):
    """Each row of the dense problem: ``(Y^T C_u Y + reg I)^-1 Y^T C_u p_u``."""
    C, P = 1 + alpha * np.abs(R), (R > 0).astype(float)
    k = other.shape[1]
    return np.array([np.linalg.solve(other.T @ (C[u, :, None] * other) + reg * np.eye(k),
                                     other.T @ (C[u] * P[u])) for u in range(len(R))])


def dense_objective(R, X, Y, alpha, reg):
    C, P = 1 + alpha * np.abs(R), (R > 0).astype(float)
    return float((C * (P - X @ Y.T) ** 2).sum() + reg * ((X ** 2).sum() + (Y ** 2).sum()))


def tiny(seed=0, shape=(7, 6), density=0.35):
    rng = np.random.default_rng(seed)
    return np.where(rng.random(shape) < density, rng.integers(1, 4, shape), 0).astype(float)


def sequential(R, k, seed, rounds, cg_steps, tol=0.0):
    """The program on one user block and one item block, in a plain loop."""
    nu, ni = R.shape
    program = ImplicitMFProgram(k, user_edges=[0, nu], item_edges=[0, ni], alpha=ALPHA,
                                regularization=REG, cg_steps=cg_steps, tol=tol,
                                seed=seed)
    blocks = [make_raw_block(sp.csr_matrix(R), USERS, 0),
              make_raw_block(sp.csc_matrix(R), ITEMS, 0)]
    (users, items), reports = run_sequential(program, blocks, rounds)
    return users, items, reports


@pytest.mark.parametrize("negative_feedback", [False, True])
def test_exact_als_steps_and_objective_equal_a_dense_reference(negative_feedback):
    """Negative feedback (a negative entry: preference 0 with confidence 1 + alpha |r|, as in
    the implicit library) included."""
    R, k = tiny(), 3
    if negative_feedback:
        R = np.where(tiny(9) > 0, -tiny(9), R)
    users, items, reports = sequential(R, k, seed=5, rounds=4, cg_steps=0)
    X = np.zeros((R.shape[0], k))
    fill_initial_user_factors(X, 5, 0, 1 / np.sqrt(k))  # the default scale
    X = np.abs(X)
    for t in range(2):
        Y = dense_solve(R.T, X, ALPHA, REG)
        assert reports[2 * t]["objective"] == pytest.approx(dense_objective(R, X, Y, ALPHA, REG))
        X = dense_solve(R, Y, ALPHA, REG)
        assert reports[2 * t + 1]["objective"] == pytest.approx(
            dense_objective(R, X, Y, ALPHA, REG))
    np.testing.assert_allclose(items, Y, atol=1e-10)
    np.testing.assert_allclose(users, X, atol=1e-10)


@pytest.mark.parametrize("negative_feedback", [False, True])
def test_conjugate_gradient_lowers_the_objective_to_the_exact_solution(negative_feedback):
    """With negative feedback both take longer (0.24% apart after 40 rounds): 300 rounds."""
    R, rounds = tiny(1, (30, 25)), 40
    if negative_feedback:
        R = np.where(tiny(8, (30, 25), 0.2) > 0, -tiny(8, (30, 25), 0.2), R)
        rounds = 300
    *_, cg = sequential(R, 4, seed=2, rounds=rounds, cg_steps=3)
    *_, exact = sequential(R, 4, seed=2, rounds=rounds, cg_steps=0)
    objectives = [r["objective"] for r in cg]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(objectives, objectives[1:]))
    assert objectives[-1] == pytest.approx(exact[-1]["objective"], rel=1e-3)


def test_items_given_negative_feedback_are_seen_and_not_recommended():
    R = tiny(2, (40, 30))
    disliked = np.where(tiny(7, (40, 30), 0.2) > 0, -1.0, 0.0) * (R == 0)
    est = ImplicitMatrixFactorization(3, alpha=ALPHA, regularization=REG, max_iter=3,
                                      random_state=0).fit(sp.csr_matrix(R + disliked))
    top = est.recommend(np.arange(40), n=30 - int((R != 0).sum(axis=1).min()))
    for user in range(40):
        assert not set(top[user]) & set(np.flatnonzero(R[user] + disliked[user]))


@pytest.mark.parametrize("seed", range(10))
def test_conjugate_gradient_reconstructs_a_full_rank_problem(seed):
    """The ``implicit`` library's exact-reconstruction test (its confidence 2 for each of these
    interactions is ours at alpha 0.5): 6 factors for 6 items, 15 iterations of 3
    conjugate-gradient steps, a negligible penalty, and every preference reconstructed within
    1e-4, as implicit's test asks of implicit."""
    counts = np.array([[1, 1, 0, 1, 0, 0], [0, 1, 1, 1, 0, 0], [1, 0, 1, 0, 0, 0],
                       [1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 0, 1], [0, 1, 0, 0, 0, 1],
                       [0, 0, 0, 0, 1, 1]], dtype=float)
    est = ImplicitMatrixFactorization(6, alpha=0.5, regularization=1e-8, max_iter=15, tol=0.0,
                                      random_state=seed).fit(sp.csr_matrix(2 * counts))
    np.testing.assert_allclose(est.user_factors_ @ est.components_, counts, atol=1e-4)


@pytest.mark.parametrize("n_workers", [1, 2])
def test_the_engine_on_worker_processes_equals_the_sequential_run(client_factory, n_workers):
    R = tiny(2, (40, 30))
    est = ImplicitMatrixFactorization(3, alpha=ALPHA, regularization=REG, max_iter=3, tol=0.0,
                                      random_state=0)
    est.client = client_factory(n_workers)
    est.fit(sp.csr_matrix(R))
    seed = check_random_state(0).randint(2**31 - 1)
    users, items, reports = sequential(R, 3, seed, rounds=6, cg_steps=3)
    np.testing.assert_allclose(est.user_factors_, users, atol=1e-10)
    np.testing.assert_allclose(est.components_.T, items, atol=1e-10)
    assert est.history_.records[-1]["objective"] == pytest.approx(reports[-1]["objective"])


def test_a_stop_on_tol_gives_the_sequential_runs_factors(client_factory):
    """The rows are solved in place: the rounds submitted behind the stop change nothing."""
    R = tiny(3, (40, 30))
    est = ImplicitMatrixFactorization(3, alpha=ALPHA, regularization=REG, max_iter=100,
                                      tol=1e-3, random_state=0)
    est.client = client_factory(2)
    est.fit(sp.csr_matrix(R))
    seed = check_random_state(0).randint(2**31 - 1)
    users, items, reports = sequential(R, 3, seed, rounds=200, cg_steps=3, tol=1e-3)
    iterations = sum(r["side"] == USERS for r in reports)
    assert 1 < est.n_iter_ == iterations < 100
    np.testing.assert_allclose(est.user_factors_, users, atol=1e-10)
    np.testing.assert_allclose(est.components_.T, items, atol=1e-10)


def in_sub_rounds(R, k, seed, n_blocks, sub_rounds, tol=0.0):
    """The program on ``n_blocks`` blocks a side updated ``n_blocks / sub_rounds`` at a time."""
    user_edges, item_edges = block_edges(R.shape[0], n_blocks), block_edges(R.shape[1], n_blocks)
    program = ImplicitMFProgram(k, user_edges=user_edges, item_edges=item_edges, alpha=ALPHA,
                                regularization=REG, tol=tol, seed=seed,
                                sub_rounds=sub_rounds)
    return (program, *user_item_blocks(sp.csr_matrix(R), user_edges, item_edges))


def test_sub_rounds_give_one_block_a_sides_factors_and_objectives():
    """Rows of a side are independent given the other side and its Gramian: solving a side's
    blocks a few at a time, the Gramian summed over the side's rounds, changes nothing but the
    number of rounds."""
    R = tiny(4, (40, 30))
    users, items, whole = sequential(R, 3, seed=1, rounds=6, cg_steps=3)
    program, raw, _ = in_sub_rounds(R, 3, seed=1, n_blocks=6, sub_rounds=3)
    params, reports = run_sequential(program, raw, 18)
    np.testing.assert_allclose(np.vstack(params[:6]), users, atol=1e-12)
    np.testing.assert_allclose(np.vstack(params[6:]), items, atol=1e-12)
    assert [r["side"] for r in reports[:6]] == [ITEMS] * 3 + [USERS] * 3
    complete = [r["objective"] for r in reports if "objective" in r]
    assert complete == pytest.approx([r["objective"] for r in whole], rel=1e-12)


def test_sub_rounds_on_worker_processes_stop_where_the_sequential_loop_does(client_factory):
    client = client_factory(2)
    program, raw, slots = in_sub_rounds(tiny(5, (40, 30)), 3, seed=2, n_blocks=4, sub_rounds=2,
                                        tol=1e-3)
    result = Engine(program, client=client, max_rounds=400, checkpoint_interval=0).run(raw, slots)
    params, reports = run_sequential(program, raw, 400)
    assert len(reports) < 400 and result.history.stats.converged
    for ours, reference in zip(client.gather(result.params), params):
        np.testing.assert_allclose(ours, reference, atol=1e-12)
    ran = [r["objective"] for r in result.history if "objective" in r]
    assert ran == pytest.approx([r["objective"] for r in reports if "objective" in r],
                                rel=1e-12)


def test_the_estimator_cuts_a_side_into_sub_rounds_where_messages_are_large(client_factory,
                                                                             monkeypatch):
    """With the message allowance shrunk to nothing, the estimator takes the most sub-rounds
    it may (2 here) where they cut the messages; the factors are still the one-block-a-side
    loop's."""
    monkeypatch.setattr(mf, "SMALL_MESSAGES", 0)
    monkeypatch.setattr(mf, "MESSAGE_SHARE", 0.0)
    monkeypatch.setattr(mf, "MAX_SUB_ROUNDS", 2)
    R = tiny(6, (200, 150), density=0.02)
    est = ImplicitMatrixFactorization(3, alpha=ALPHA, regularization=REG, max_iter=3, tol=0.0,
                                      random_state=0)
    est.client = client_factory(2)
    est.fit(sp.csr_matrix(R))
    assert est.history_.stats.rounds == 3 * 2 * 2  # 3 iterations of 2 sides in 2 sub-rounds
    seed = check_random_state(0).randint(2**31 - 1)
    users, items, reports = sequential(R, 3, seed, rounds=6, cg_steps=3)
    np.testing.assert_allclose(est.user_factors_, users, atol=1e-10)
    np.testing.assert_allclose(est.components_.T, items, atol=1e-10)
    assert [r["iteration"] for r in est.history_.records] == [0, 1, 2]
    assert est.history_.records[-1]["objective"] == pytest.approx(reports[-1]["objective"])


def planted(seed=0, n_users=240, n_items=120, groups=4):
    """Users in groups, each group interacting mostly with its own share of the items. Returns
    train and held-out matrices."""
    rng = np.random.default_rng(seed)
    group_of_user = np.arange(n_users) % groups
    group_of_item = np.arange(n_items) % groups
    likes = np.where(group_of_user[:, None] == group_of_item[None, :], 0.3, 0.02)
    R = (rng.random((n_users, n_items)) < likes).astype(float)
    held = rng.random(R.shape) < 0.25
    return sp.csr_matrix(R * ~held), sp.csr_matrix(R * held)


def naive_precision(scores, train, test, k):
    hits = total = 0
    for u in range(train.shape[0]):
        liked = set(test[u].indices)
        if not liked:
            continue
        seen = set(train[u].indices)
        ranked = [i for i in np.argsort(-scores[u], kind="stable") if i not in seen]
        hits += len(liked & set(ranked[:k]))
        total += min(k, len(liked))
    return hits / total


@pytest.fixture(scope="module")
def fitted_planted():
    train, test = planted()
    return ImplicitMatrixFactorization(4, alpha=5.0, regularization=0.1, max_iter=10,
                                       random_state=0).fit(train), train, test


def test_a_planted_problem_is_recovered_far_above_popularity(fitted_planted):
    est, train, test = fitted_planted
    popularity = np.tile(np.asarray(train.sum(axis=0)).ravel(), (train.shape[0], 1))
    baseline = naive_precision(popularity, train, test, 10)
    precision = est.score(test)
    assert precision == pytest.approx(naive_precision(est.user_factors_ @ est.components_,
                                                      train, test, 10))
    assert precision > 3 * baseline


def test_fold_in_is_the_exact_solve_against_the_item_factors(fitted_planted):
    est, train, _ = fitted_planted
    rows = train[:5].toarray()
    expected = dense_solve(rows, est.components_.T, est.alpha, est.regularization)
    np.testing.assert_allclose(est.transform(rows), expected, atol=1e-10)


def test_recommend_and_similar_take_and_return_raw_ids(fitted_planted):
    est, train, _ = fitted_planted
    coo = train.tocoo()
    triplets = pd.DataFrame({"user": [f"u{u:03d}" for u in coo.row],
                             "item": [f"i{i:03d}" for i in coo.col], "rating": coo.data})
    by_ids = ImplicitMatrixFactorization(4, alpha=5.0, regularization=0.1, max_iter=10,
                                         random_state=0).fit(triplets)
    user_ids, item_ids = by_ids.user_ids_, by_ids.item_ids_
    scores = by_ids.user_factors_[:3] @ by_ids.components_
    seen = sp.csr_matrix((triplets.assign(seen=1.0).pivot_table(
        "seen", "user", "item", fill_value=0.0).reindex(columns=item_ids, fill_value=0.0)
        .to_numpy()[:3]))
    scores[seen.nonzero()] = -np.inf
    expected = item_ids[np.argsort(-scores, axis=1, kind="stable")[:, :5]]
    np.testing.assert_array_equal(by_ids.recommend(user_ids[:3], n=5), expected)
    own = triplets[triplets.user == user_ids[0]]
    np.testing.assert_array_equal(by_ids.recommend(own, n=5)[0], expected[0])

    vectors = by_ids.components_.T
    similarity = cosine_similarity(vectors[:2], vectors)
    similarity[[0, 1], [0, 1]] = -np.inf
    np.testing.assert_array_equal(by_ids.similar_items(item_ids[:2], n=4),
                                  item_ids[np.argsort(-similarity, axis=1, kind="stable")[:, :4]])
    with pytest.raises(ValueError, match="unknown user ids"):
        by_ids.recommend(["nobody"])


@pytest.mark.parametrize("params, match", [
    ({"alpha": -1.0}, "alpha"), ({"regularization": 0.0}, "regularization"),
    ({"cg_steps": -1}, "cg_steps"), ({"n_components": 0}, "n_components")])
def test_bad_parameters_are_refused(params, match):
    with pytest.raises(ValueError, match=match):
        ImplicitMatrixFactorization(**params).fit(tiny())


def test_bad_input_leaves_a_fitted_model_intact(fitted_planted, client_factory):
    est, train, test = fitted_planted
    before = est.user_factors_.copy()
    for bad, match in ((-tiny(), "no positive entry"), (np.zeros((4, 3)), "no positive entry"),
                       (np.array([[1.0, np.nan]]), "NaN")):
        with pytest.raises(ValueError, match=match):
            est.fit(bad)
    np.testing.assert_array_equal(est.user_factors_, before)
    with pytest.raises(ValueError, match="rows"):
        est.score(test[:10])
    with pytest.raises(ValueError, match="no positive entry"):
        est.score(sp.csr_matrix(test.shape))
    import dask.array as da
    client = client_factory(2)
    refused = ImplicitMatrixFactorization()
    refused.client = client
    fit_is_refused(refused, client, (da.from_array(-tiny(), chunks=4),), ValueError,
                   "no positive entry")


@pytest.mark.parametrize("cg_steps", [0, 3])
def test_the_kernel_gives_the_one_array_result_from_pieces(cg_steps):
    """The other side's rows cut into pieces, as messages arrive: the same rows and loss."""
    R = sp.csr_matrix(tiny(3, (30, 25)))
    rng = np.random.default_rng(0)
    Y, X = rng.random((25, 4)), rng.random((30, 4))
    results = []
    for other in (Y, np.split(Y, [3, 4, 17])):
        F = X.copy()
        loss = solve_rows(R.indptr.astype(np.int64), R.indices.astype(np.int64),
                          ALPHA * R.data, R.data > 0, F, other, Y.T @ Y, REG, cg_steps)
        results.append((F, loss))
    (whole, whole_loss), (pieced, pieced_loss) = results
    np.testing.assert_array_equal(pieced, whole)
    assert pieced_loss == whole_loss
