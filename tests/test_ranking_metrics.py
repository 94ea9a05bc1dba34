"""Ranking metrics at k of the factorization estimators against the ``implicit`` library's
``evaluation.ranking_metrics_at_k`` on the same factors (recall, which it lacks, against a plain
loop), in memory and with the factors kept on 2 worker processes, scored block against block."""
import numpy as np
import pytest
import scipy.sparse as sp
from implicit.cpu.als import AlternatingLeastSquares
from implicit.evaluation import ranking_metrics_at_k

from dask_strads import ImplicitMatrixFactorization, MatrixFactorization
from dask_strads.estimators import ranking

K = 5


def interactions(seed=0, n_users=150, n_items=90):
    """Train and held-out interactions of users with one of 3 tastes (a third of the items
    each, 5 times likelier), counts 1-3, 20% held out."""
    rng = np.random.default_rng(seed)
    taste = rng.integers(3, size=n_users)
    likely = np.where(np.arange(n_items) % 3 == taste[:, None], 0.25, 0.05)
    X = np.where(rng.random((n_users, n_items)) < likely, rng.integers(1, 4, likely.shape), 0)
    held = (rng.random(X.shape) < 0.2) & (X > 0)
    return sp.csr_matrix(np.where(held, 0, X).astype(float)), sp.csr_matrix(
        np.where(held, X, 0).astype(float))


def implicit_metrics(user_rows, item_rows, train, test):
    """implicit's metrics of a model of these factors."""
    model = AlternatingLeastSquares(factors=user_rows.shape[1], dtype=np.float64)
    model.user_factors = np.ascontiguousarray(user_rows, dtype=np.float64)
    model.item_factors = np.ascontiguousarray(item_rows, dtype=np.float64)
    return ranking_metrics_at_k(model, train, test, K=K, show_progress=False)


def loop_recall(scores, train, test):
    recalls = []
    for u in range(train.shape[0]):
        liked = set(test[u].indices)
        if liked:
            seen = set(train[u].indices)
            ranked = [i for i in np.argsort(-scores[u], kind="stable") if i not in seen]
            recalls.append(len(liked & set(ranked[:K])) / len(liked))
    return np.mean(recalls)


def check_metrics(metrics, user_rows, item_rows, train, test):
    expected = implicit_metrics(user_rows, item_rows, train, test)
    for name in ("precision", "map", "ndcg", "auc"):
        assert metrics[name] == pytest.approx(expected[name], rel=1e-9), name
    assert metrics["recall"] == pytest.approx(
        loop_recall(user_rows @ item_rows.T, train, test), rel=1e-12)


def implicit_model(**params):
    return ImplicitMatrixFactorization(4, alpha=2.0, regularization=0.5, max_iter=4,
                                       random_state=0, **params)


def test_implicit_metrics_equal_implicits_in_memory():
    train, test = interactions()
    est = implicit_model().fit(train)
    metrics = est.ranking_metrics(test, k=K)
    check_metrics(metrics, est.user_factors_, est.components_.T, train, test)
    assert est.precision_at_k(test, k=K) == metrics["precision"]
    assert 0 < metrics["precision"] < 1 and 0.5 < metrics["auc"] < 1


def test_explicit_metrics_rank_by_predicted_rating():
    """MatrixFactorization ranks by predicted rating: implicit's metrics of the factors [w, 1]
    and [h, item bias], whose products differ from the predictions by the user's constant."""
    train, test = interactions(1)
    est = MatrixFactorization(3, alpha_W=1.0, alpha_bias=1.0, max_iter=5,
                              random_state=0).fit(train)
    predicted = est.intercept_ + est.user_bias_[:, None] + est.item_bias_ + (
        est.user_factors_ @ est.components_)
    user_rows = np.hstack([est.user_factors_, np.ones((train.shape[0], 1))])
    item_rows = np.hstack([est.components_.T, est.item_bias_[:, None]])
    np.testing.assert_allclose(user_rows @ item_rows.T + est.intercept_
                               + est.user_bias_[:, None], predicted)
    check_metrics(est.ranking_metrics(test, k=K), user_rows, item_rows, train, test)


@pytest.mark.parametrize("users_per_partition", [None, 20])
def test_factors_kept_on_the_cluster_are_ranked_block_against_block(
        client_factory, monkeypatch, users_per_partition):
    """Also with partitions smaller than a block of users, computed a wave at a time."""
    if users_per_partition:
        monkeypatch.setattr(ranking, "USERS_PER_PARTITION", users_per_partition)
    train, test = interactions(2)
    client = client_factory(2)
    implicit_est = implicit_model(keep_on_cluster=True)
    explicit_est = MatrixFactorization(3, alpha_W=1.0, alpha_bias=1.0, max_iter=3,
                                       random_state=0, keep_on_cluster=True)
    for est in (implicit_est, explicit_est):
        est.client = client
        est.fit(train)
        assert len(est.user_factors_.chunks[0]) == 2 and len(est.components_.chunks[1]) == 2
    users, items = client.compute([implicit_est.user_factors_, implicit_est.components_.T],
                                  sync=True)
    check_metrics(implicit_est.ranking_metrics(test, k=K), users, items, train, test)
    users, items, item_bias = client.compute(
        [explicit_est.user_factors_, explicit_est.components_.T, explicit_est.item_bias_],
        sync=True)
    check_metrics(explicit_est.ranking_metrics(test, k=K),
                  np.hstack([users, np.ones((len(users), 1))]),
                  np.hstack([items, item_bias[:, None]]), train, test)


def test_held_out_data_of_another_shape_or_empty_is_refused():
    train, test = interactions(3)
    est = implicit_model().fit(train)
    with pytest.raises(ValueError, match="rows"):
        est.ranking_metrics(test[:10])
    with pytest.raises(ValueError, match="no positive entry"):
        est.ranking_metrics(sp.csr_matrix(test.shape))
    with pytest.raises(ValueError, match="k"):
        est.ranking_metrics(test, k=0)
