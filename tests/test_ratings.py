import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import dask_strads
from dask_strads.ratings import RatingsMatrix


@pytest.fixture
def triplets():
    """A small log with string user ids, int item ids, a zero rating, in no particular order."""
    rng = np.random.default_rng(0)
    users = np.array([f"u{k:02d}" for k in range(30)])
    items = np.array([3, 17, 101, 5, 42, 8, 1000, 77])
    cells = rng.choice(users.size * items.size, size=120, replace=False)
    df = pd.DataFrame({"user": users[cells // items.size], "item": items[cells % items.size],
                       "rating": rng.integers(0, 6, size=cells.size).astype(float)})
    df.loc[0, "rating"] = 0.0
    return df


def test_matrix_matches_pandas_pivot(triplets):
    ratings = RatingsMatrix.from_triplets(triplets["user"], triplets["item"], triplets["rating"])
    pivot = triplets.pivot(index="user", columns="item", values="rating")  # NaN: unseen
    np.testing.assert_array_equal(ratings.user_ids, pivot.index.to_numpy())
    np.testing.assert_array_equal(ratings.item_ids, pivot.columns.to_numpy())
    X = ratings.matrix
    assert sp.isspmatrix_csr(X) and X.dtype == np.float64 and X.has_canonical_format
    assert X.shape == pivot.shape and X.nnz == len(triplets)  # the zero rating is stored
    observed = X.copy()
    observed.data[:] = 1
    np.testing.assert_array_equal(observed.toarray(), pivot.notna().to_numpy())
    np.testing.assert_array_equal(X.toarray(), pivot.fillna(0).to_numpy())


def test_order_of_triplets_does_not_matter(triplets):
    a = RatingsMatrix.from_triplets(triplets["user"], triplets["item"], triplets["rating"])
    shuffled = triplets.sample(frac=1.0, random_state=1)
    b = RatingsMatrix.from_triplets(shuffled["user"], shuffled["item"], shuffled["rating"])
    assert (a.matrix != b.matrix).nnz == 0
    np.testing.assert_array_equal(a.user_ids, b.user_ids)
    np.testing.assert_array_equal(a.item_ids, b.item_ids)


def test_ids_to_indices_and_back(triplets):
    ratings = RatingsMatrix.from_triplets(triplets["user"], triplets["item"], triplets["rating"])
    rows = ratings.user_index(triplets["user"])
    cols = ratings.item_index(triplets["item"])
    np.testing.assert_array_equal(ratings.user_ids[rows], triplets["user"])
    np.testing.assert_array_equal(ratings.item_ids[cols], triplets["item"])
    np.testing.assert_array_equal(np.asarray(ratings.matrix[rows, cols]).ravel(),
                                  triplets["rating"])
    assert ratings.item_index(1000) == ratings.item_ids.size - 1  # a scalar id
    with pytest.raises(KeyError, match="u99"):
        ratings.user_index(["u00", "u99"])
    with pytest.raises(KeyError, match=r"\[4\]"):
        ratings.item_index([4])
    with pytest.raises(KeyError):
        ratings.item_index([2000])  # past the largest id


def test_duplicates_are_refused_by_default():
    with pytest.raises(ValueError, match=r"'b'.*'y'.*3 times.*duplicates='mean'"):
        RatingsMatrix.from_triplets(["a", "b", "b", "b"], ["x", "y", "y", "y"], [1, 2, 3, 4])


def test_duplicates_mean_matches_groupby():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"user": rng.integers(0, 10, 300), "item": rng.integers(0, 7, 300),
                       "rating": rng.normal(size=300)})
    df.loc[len(df)] = [11, 3, 1.5]  # a pair that sums to zero: its mean 0 is still stored
    df.loc[len(df)] = [11, 3, -1.5]
    ratings = RatingsMatrix.from_triplets(df["user"], df["item"], df["rating"], duplicates="mean")
    means = df.groupby(["user", "item"])["rating"].mean()
    X = ratings.matrix.tocoo()
    assert X.nnz == len(means)
    got = pd.Series(X.data, index=pd.MultiIndex.from_arrays(
        [ratings.user_ids[X.row], ratings.item_ids[X.col]])).sort_index()
    np.testing.assert_allclose(got.to_numpy(), means.sort_index().to_numpy(), atol=1e-15)
    assert got.loc[(11, 3)] == 0.0


@pytest.mark.parametrize("users, items, ratings, match", [
    ([1, 2], [1, 2, 3], [1.0, 2.0, 3.0], "same length"),
    ([1, 2, 3], [1, 2, 3], [1.0, 2.0], "same length"),
    ([], [], [], "empty"),
    ([1, 2], [1, 2], [1.0, np.nan], "NaN or infinite"),
    ([1, 2], [1, 2], [np.inf, 1.0], "NaN or infinite"),
    ([1, 2], [1, 2], ["good", "bad"], "numbers"),
    ([1.0, np.nan], [1, 2], [1.0, 2.0], "users has 1 missing"),
    ([1, 2], ["a", None], [1.0, 2.0], "items has 1 missing"),
    (np.array([1, "a"], dtype=object), [1, 2], [1.0, 2.0], "sortable"),
    ([[1, 2]], [[1, 2]], [[1.0, 2.0]], "1-d"),
])
def test_bad_triplets_are_refused(users, items, ratings, match):
    with pytest.raises(ValueError, match=match):
        RatingsMatrix.from_triplets(users, items, ratings)


def test_bad_duplicates_option():
    with pytest.raises(ValueError, match="duplicates"):
        RatingsMatrix.from_triplets([1], [1], [1.0], duplicates="sum")


def test_exported_from_the_package():
    assert dask_strads.RatingsMatrix is RatingsMatrix
    assert "RatingsMatrix" in dask_strads.__all__
