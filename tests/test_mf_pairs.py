"""MatrixFactorization as a regressor on (user, item) pairs of raw ids: the same model as the
matrix fit of the same ratings, predictions of unseen ids from the biases, R² as sklearn computes
it, and model selection by scikit-learn's own tools against a biases-only ridge baseline."""
import copy

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from dask_strads import MatrixFactorization, RatingsMatrix

RANK = 3


@pytest.fixture(scope="module")
def planted():
    """Ratings of a planted rank-3 model with biases (noise 0.3) on 15% of 240 x 150 pairs;
    users are strings, items ints spaced by 10, the pairs in random order."""
    rng = np.random.default_rng(0)
    n_users, n_items = 240, 150
    W, H = rng.normal(size=(n_users, RANK)), rng.normal(size=(RANK, n_items))
    user_bias, item_bias = rng.normal(size=n_users) / 2, rng.normal(size=n_items) / 2
    u, i = np.nonzero(rng.random((n_users, n_items)) < 0.15)
    order = rng.permutation(u.size)
    u, i = u[order], i[order]
    y = 3 + user_bias[u] + item_bias[i] + (W[u] * H[:, i].T).sum(axis=1)
    y += rng.normal(scale=0.3, size=y.size)
    pairs = pd.DataFrame({"user": [f"user-{x:03d}" for x in u], "item": 10 * i})
    return pairs, y


def model(**params):
    return MatrixFactorization(**{"n_components": RANK, "alpha_W": 1.0, "alpha_bias": 1.0,
                                  "max_iter": 30, "random_state": 0, **params})


def test_a_pairs_fit_is_the_matrix_fit_of_the_same_ratings(planted):
    pairs, y = planted
    on_pairs = model().fit(pairs, y)
    ratings = RatingsMatrix.from_triplets(pairs["user"], pairs["item"], y)
    on_matrix = model().fit(ratings.matrix)
    np.testing.assert_array_equal(on_pairs.user_ids_, ratings.user_ids)
    np.testing.assert_array_equal(on_pairs.item_ids_, ratings.item_ids)
    np.testing.assert_array_equal(on_pairs.user_factors_, on_matrix.user_factors_)
    np.testing.assert_array_equal(on_pairs.components_, on_matrix.components_)
    rows, cols = ratings.user_index(pairs["user"]), ratings.item_index(pairs["item"])
    np.testing.assert_allclose(on_pairs.predict(pairs), on_matrix.predict_entries(rows, cols),
                               rtol=1e-12)
    # an array of the same ids, and a frame with other column names, are the same pairs
    np.testing.assert_array_equal(on_pairs.predict(pairs.to_numpy()), on_pairs.predict(pairs))
    np.testing.assert_array_equal(
        on_pairs.predict(pairs.rename(columns={"user": "who", "item": "what"})),
        on_pairs.predict(pairs))
    assert on_pairs.score(pairs, y) == pytest.approx(r2_score(y, on_pairs.predict(pairs)),
                                                     rel=1e-12)
    assert on_pairs.n_features_in_ == len(ratings.item_ids)  # transform folds in item rows
    assert not hasattr(on_matrix, "predict")  # a matrix fit has predict_entries
    # fit_transform reads the pairs as fit does: the matrix fit's user factors
    np.testing.assert_array_equal(model().fit_transform(pairs, y), on_matrix.user_factors_)


def test_repeated_pairs_are_refused_or_fitted_as_their_mean(planted):
    """duplicates='mean' fits a pair given twice as the matrix of its mean rating (pandas'
    groupby mean is the reference), from pairs and from a table of triplets; 'error' refuses."""
    pairs, y = planted
    repeated = pd.concat([pairs, pairs.iloc[:50]], ignore_index=True)
    y_repeated = np.concatenate([y, y[:50] + 1.0])
    with pytest.raises(ValueError, match="duplicates='mean'"):
        model().fit(repeated, y_repeated)
    means = repeated.assign(rating=y_repeated).groupby(["user", "item"], as_index=False).mean()
    reference = model().fit(means[["user", "item"]], means["rating"].to_numpy())
    on_pairs = model(duplicates="mean").fit(repeated, y_repeated)
    on_triplets = model(duplicates="mean").fit(repeated.assign(rating=y_repeated))
    for fitted in (on_pairs, on_triplets):
        np.testing.assert_allclose(fitted.user_factors_, reference.user_factors_, rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(fitted.components_, reference.components_, rtol=1e-10,
                                   atol=1e-12)


def test_unseen_ids_are_predicted_from_the_biases_and_the_mean(planted):
    pairs, y = planted
    est = model().fit(pairs, y)
    user, item = est.user_ids_[4], est.item_ids_[7]
    unseen = pd.DataFrame({"user": [user, "nobody", "nobody"], "item": [-5, item, -5]})
    expected = [est.intercept_ + est.user_bias_[4], est.intercept_ + est.item_bias_[7],
                est.intercept_]
    np.testing.assert_allclose(est.predict(unseen), expected, rtol=1e-12)
    no_biases = model(biases=False).fit(pairs, y)
    assert no_biases.predict(unseen[2:]).tolist() == [0.0]


def test_cross_val_score_and_grid_search_beat_a_biases_only_ridge(planted):
    """The biases-only baseline is a ridge regression on one-hot users and items, fitted by
    sklearn on the same folds."""
    pairs, y = planted
    folds = KFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(model(), pairs, y, cv=folds)
    rmse = -cross_val_score(model(), pairs, y, cv=folds, scoring="neg_root_mean_squared_error")
    baseline = make_pipeline(OneHotEncoder(handle_unknown="ignore"), Ridge(alpha=1.0))
    baseline_scores = cross_val_score(baseline, pairs, y, cv=folds)
    baseline_rmse = -cross_val_score(baseline, pairs, y, cv=folds,
                                     scoring="neg_root_mean_squared_error")
    assert np.isfinite(scores).all() and np.isfinite(rmse).all()
    assert scores.mean() > baseline_scores.mean() + 0.2, (scores, baseline_scores)
    assert rmse.mean() < 0.8 * baseline_rmse.mean(), (rmse, baseline_rmse)

    search = GridSearchCV(model(), {"n_components": [1, RANK]}, cv=folds).fit(pairs, y)
    assert search.best_params_ == {"n_components": RANK}
    assert search.best_score_ == pytest.approx(scores.mean(), rel=1e-9)
    assert search.best_score_ > baseline_scores.mean() + 0.2
    assert search.score(pairs, y) == pytest.approx(
        r2_score(y, search.best_estimator_.predict(pairs)), rel=1e-12)


@pytest.mark.parametrize("X, y, message", [
    (np.array([[1.0, 2.0], [2.0, 1.0]]), [3.0, 4.0], "whole floats"),
    (pd.DataFrame({"user": [1, 2], "item": [1, 2], "rating": [3.0, 4.0]}), [3.0, 4.0],
     "without y"),
    (pd.DataFrame({"a": [1, 2], "b": [1, 2], "c": [1, 2]}), [3.0, 4.0], "exactly two"),
    (np.array([["a", "b"], ["a", "c"]]), [3.0, np.nan], "finite"),
    (np.array([["a", "b"], ["a", "c"]]), [3.0], "same length"),
    (np.array([["a", "b"], ["a", "b"]]), [3.0, 4.0], "repeated"),
    (dd.from_pandas(pd.DataFrame({"user": [1, 2], "item": [1, 2]}), npartitions=1),
     [3.0, 4.0], "in memory"),
])
def test_bad_pairs_are_refused_and_leave_the_fit_intact(planted, X, y, message):
    pairs, ratings = planted
    est = model(max_iter=2).fit(pairs, ratings)
    before = copy.deepcopy(est.__dict__)
    with pytest.raises(ValueError, match=message):
        est.fit(X, y)
    np.testing.assert_array_equal(est.user_factors_, before["user_factors_"])
    np.testing.assert_array_equal(est.user_ids_, before["user_ids_"])


def test_a_pairs_model_scores_pairs_only(planted):
    pairs, y = planted
    est = model(max_iter=2).fit(pairs, y)
    with pytest.raises(ValueError, match="needs their ratings y"):
        est.score(pairs)
    with pytest.raises(ValueError, match="two columns"):
        est.predict(np.zeros((3, 4), dtype=np.int64))


def test_a_float_matrix_with_y_is_still_a_matrix_fit():
    """The unsupervised convention: y is ignored beside a ratings matrix."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 2)) + 3
    with_y = model(max_iter=3).fit(X, np.arange(30.0))
    without = model(max_iter=3).fit(X)
    assert not with_y.fitted_on_pairs_
    np.testing.assert_array_equal(with_y.user_factors_, without.user_factors_)
    assert with_y.score(X) == without.score(X)


# -- ids in and out ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted(planted):
    pairs, y = planted
    return model().fit(pairs, y)


def test_recommend_takes_and_returns_ids_ranked_by_predict(planted, fitted):
    pairs, y = planted
    users = fitted.user_ids_[[3, 0, 17]]
    top = fitted.recommend(users, n=6)
    unseen_top = fitted.recommend(users, n=6, exclude_seen=False)
    for user, best, best_of_all in zip(users, top, unseen_top):
        every_item = pd.DataFrame({"user": user, "item": fitted.item_ids_})
        predicted = fitted.predict(every_item)
        assert best_of_all.tolist() == fitted.item_ids_[np.argsort(-predicted)[:6]].tolist()
        rated = np.isin(fitted.item_ids_, pairs["item"][pairs["user"] == user])
        predicted[rated] = -np.inf
        assert best.tolist() == fitted.item_ids_[np.argsort(-predicted)[:6]].tolist()


def test_recommend_folds_in_users_given_as_triplets(planted, fitted):
    """A user's own training ratings, folded in, give the user's recommendations; a new user
    is answered among them, in sorted id order."""
    pairs, y = planted
    user = fitted.user_ids_[5]
    own = pairs[pairs["user"] == user].assign(rating=y[pairs["user"] == user])
    newcomer = own.assign(user="zz-newcomer").iloc[:4]
    top = fitted.recommend(pd.concat([newcomer, own]), n=5)
    np.testing.assert_array_equal(top[0], fitted.recommend([user], n=5)[0])
    assert not np.isin(top[1], newcomer["item"]).any()
    with pytest.raises(ValueError, match="unknown item ids"):
        fitted.recommend(own.assign(item=-1))


def test_similar_items_and_users_rank_by_cosine_similarity(fitted):
    from sklearn.metrics.pairwise import cosine_similarity

    for similar, ids, vectors in ((fitted.similar_items, fitted.item_ids_, fitted.components_.T),
                                  (fitted.similar_users, fitted.user_ids_, fitted.user_factors_)):
        at = np.array([2, 9])
        similarity = cosine_similarity(vectors[at], vectors)
        similarity[np.arange(2), at] = -np.inf  # itself left out
        expected = ids[np.argsort(-similarity, axis=1, kind="stable")[:, :4]]
        np.testing.assert_array_equal(similar(ids[at], n=4), expected)


def test_lists_longer_than_the_ids_end_with_a_fill(fitted):
    items = fitted.similar_users(fitted.user_ids_[:1], n=len(fitted.user_ids_) + 2)[0]
    assert items[-3:].tolist() == [None, None, None]  # string ids: None
    assert fitted.similar_items(fitted.item_ids_[:1], n=len(fitted.item_ids_))[0][-1] == -1
    with pytest.raises(ValueError, match="unknown user ids"):
        fitted.recommend(["nobody"])
