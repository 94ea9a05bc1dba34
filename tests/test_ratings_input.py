"""The recommenders' input adapter (``estimators/ratings_input.py``): every form of the same
ratings gives the same checked matrix, ids and counts as a pandas pivot of the triplets, and bad
input of any form is refused with a clear error before the fit reaches for a cluster."""
import warnings

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sparse

from conftest import fit_is_refused
from dask_strads import (BayesianPersonalizedRanking, ImplicitMatrixFactorization,
                         MatrixFactorization, RatingsMatrix)
from dask_strads.estimators.inputs import to_scipy_if_pydata
from dask_strads.estimators.ratings_input import checked_ratings

ESTIMATORS = {"explicit": MatrixFactorization, "implicit": ImplicitMatrixFactorization,
              "positive": BayesianPersonalizedRanking}


def _triplets():
    """String user ids, int item ids, positive ratings and one zero (a stored rating, and no
    interaction), in no particular order."""
    rng = np.random.default_rng(3)
    users = np.array([f"u{k:02d}" for k in range(12)])
    items = np.array([3, 17, 101, 5, 42, 8, 1000])
    cells = rng.choice(users.size * items.size, size=40, replace=False)
    table = pd.DataFrame({"user": users[cells // items.size], "item": items[cells % items.size],
                          "rating": rng.integers(1, 6, size=cells.size).astype(float)})
    table.loc[5, "rating"] = 0.0
    return table


@pytest.fixture
def triplets():
    return _triplets()


def pivot_of(table):
    """The reference: pandas' pivot of the triplets (NaN where no rating), and the same
    ratings as a CSR matrix placed by pandas' indexes, the zero rating stored."""
    pivot = table.pivot(index="user", columns="item", values="rating")
    rows = pivot.index.get_indexer(table["user"])
    cols = pivot.columns.get_indexer(table["item"])
    matrix = sp.csr_matrix((table["rating"].to_numpy(), (rows, cols)), shape=pivot.shape)
    return pivot, matrix


def in_memory(data):
    """The checked matrix of ``data`` in this process, as a dense array."""
    matrix = data.matrix
    if hasattr(matrix, "dask"):
        matrix = data.executor.compute(matrix)[0]
    matrix = to_scipy_if_pydata(matrix)
    return matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix)


def forms(table, matrix):
    """``{form: (X, y, ids kept)}``: the same ratings in every form the recommenders take."""
    ids = np.column_stack([table["user"].to_numpy(object), table["item"].to_numpy(object)])
    return {
        "pairs": (table[["user", "item"]], table["rating"], True),
        "pairs array": (ids, table["rating"].to_numpy(), True),
        "pandas triplets": (table, None, True),
        "dask triplets": (dd.from_pandas(table, npartitions=3), None, True),
        "RatingsMatrix": (RatingsMatrix.from_triplets(table["user"], table["item"],
                                                      table["rating"]), None, True),
        "scipy": (matrix, None, False),
        "pydata sparse": (sparse.COO.from_scipy_sparse(matrix), None, False),
        "dask of scipy chunks": (da.from_array(matrix, chunks=(5, 4), asarray=False), None,
                                 False),
    }


def assert_same_ratings(data, table, feedback, ids_kept, on_pairs):
    pivot, _ = pivot_of(table)
    observed = pivot.notna().to_numpy()
    counted = observed & (pivot.fillna(0).to_numpy() != 0) if feedback != "explicit" else observed
    np.testing.assert_array_equal(in_memory(data), pivot.fillna(0).to_numpy())
    np.testing.assert_array_equal(data.per_user, counted.sum(axis=1))
    np.testing.assert_array_equal(data.per_item, counted.sum(axis=0))
    assert data.total == pytest.approx(table["rating"].sum(), rel=1e-12)
    assert data.on_pairs is on_pairs
    n_users, n_items = pivot.shape
    np.testing.assert_array_equal(data.user_ids,
                                  pivot.index.to_numpy() if ids_kept else np.arange(n_users))
    np.testing.assert_array_equal(data.item_ids,
                                  pivot.columns.to_numpy() if ids_kept else np.arange(n_items))


@pytest.mark.parametrize("feedback", list(ESTIMATORS))
def test_every_form_gives_the_ratings_of_the_pivot(triplets, feedback):
    """The same matrix, counts, sum and ids whatever the form; the stored zero rating is
    counted as a rating (explicit feedback), not as an interaction (implicit)."""
    _, matrix = pivot_of(triplets)
    for form, (X, y, ids_kept) in forms(triplets, matrix).items():
        data = checked_ratings(X, y, ESTIMATORS[feedback](), feedback)
        assert_same_ratings(data, triplets, feedback, ids_kept, on_pairs=form.startswith("pairs"))
        assert data.per_user.sum() == len(triplets) - (feedback != "explicit")


def test_dask_triplets_on_a_cluster_give_the_ratings_of_the_pivot(triplets, client_factory):
    client = client_factory(2)
    _, matrix = pivot_of(triplets)
    estimator = MatrixFactorization()
    estimator.client = client
    frame = client.persist(dd.from_pandas(triplets, npartitions=3))
    data = checked_ratings(frame, None, estimator, "explicit")
    assert data.executor.client is client and hasattr(data.matrix, "dask")
    assert_same_ratings(data, triplets, "explicit", ids_kept=True, on_pairs=False)


def test_duplicates_mean_averages_a_repeated_pair_in_pairs_and_triplets(triplets):
    repeated = pd.concat([triplets, triplets.iloc[:2].assign(rating=[7.0, 9.0])],
                         ignore_index=True)
    expected = triplets.copy()
    expected.loc[:1, "rating"] = (triplets.rating[:2].to_numpy() + [7.0, 9.0]) / 2
    for X, y in ((repeated[["user", "item"]], repeated["rating"]), (repeated, None),
                 (dd.from_pandas(repeated, npartitions=2), None)):
        data = checked_ratings(X, y, MatrixFactorization(), "explicit", duplicates="mean")
        assert_same_ratings(data, expected, "explicit", True, on_pairs=y is not None)
        with pytest.raises(ValueError, match="2 repeated .* pass duplicates='mean'"):
            checked_ratings(X, y, MatrixFactorization(), "explicit")


def _bad(table):
    """``{case: (X, y, feedback, error, match)}``: input refused before any cluster work."""
    nan = table.assign(rating=table.rating.where(table.index != 3))
    repeated = pd.concat([table, table.iloc[:2]])
    dense = pivot_of(table)[1].toarray()
    negative, huge = dense.copy(), dense.copy()
    negative[0, 0], huge[0, 0] = -1.0, 1e200
    return {
        "NaN rating of pairs": (nan[["user", "item"]], nan.rating, "explicit", ValueError,
                                r"ratings must be finite: 1 are NaN .*position 3"),
        "NaN rating of triplets": (nan, None, "implicit", ValueError,
                                   "ratings must be finite"),
        "NaN in a matrix": (np.where(dense > 0, np.nan, 0.0), None, "explicit", ValueError,
                            "Input contains NaN"),
        "infinity in a sparse matrix": (sp.csr_matrix(np.where(dense > 0, np.inf, 0.0)), None,
                                        "implicit", ValueError, "Input contains infinity"),
        "a missing id": (table.assign(user=table.user.where(table.index != 2)), None,
                         "explicit", ValueError, "users has 1 missing ids"),
        "repeated pairs": (repeated[["user", "item"]], repeated.rating, "positive", ValueError,
                           "2 repeated"),
        "repeated triplets": (repeated, None, "explicit", ValueError, "2 repeated"),
        "negative strengths to rank": (negative, None, "positive", ValueError,
                                       "Negative values in data passed to "
                                       "BayesianPersonalizedRanking"),
        "a value beyond 1e150": (huge, None, "implicit", ValueError,
                                 "magnitude 1e\\+200: beyond 1e\\+150"),
        "no stored rating": (sp.csr_matrix((4, 5)), None, "explicit", ValueError,
                             "X stores no entries"),
        "no positive interaction": (-np.abs(dense), None, "implicit", ValueError,
                                    "no positive entry"),
        "pairs and y of other lengths": (table[["user", "item"]], table.rating[:-1],
                                         "explicit", ValueError, "same length"),
        "a 1-D matrix": (dense[0], None, "explicit", ValueError, "Expected 2D array"),
        "an empty matrix": (np.zeros((0, 3)), None, "implicit", ValueError,
                            "0 sample"),
        "a complex matrix": (dense + 1j, None, "explicit", ValueError, "Complex data"),
        "a matrix of strings": (dense.astype(str).astype(object) + "x", None, "explicit",
                                ValueError, "could not convert"),
        "a frame of other columns": (table.rename(columns={"user": "userId"}), None,
                                     "explicit", ValueError, "needs columns named"),
        "user and item without ratings": (table[["user", "item"]], None, "implicit",
                                          ValueError, "needs a rating column"),
        "triplets with a y": (table, table.rating, "explicit", ValueError,
                              "fit the triplets without y"),
        "whole floats with a y": (table[["item", "item"]].to_numpy(float), table.rating,
                                  "explicit", ValueError, "whole floats"),
    }


@pytest.mark.parametrize("case", list(_bad(_triplets())))
def test_bad_input_is_refused_before_an_executor_is_chosen(triplets, monkeypatch, case):
    """Each refusal names the problem, and comes before the estimator chooses where the fit
    runs (which may start the embedded cluster)."""
    X, y, feedback, error, match = _bad(triplets)[case]
    estimator = ESTIMATORS[feedback]()

    def no_executor(size):
        raise AssertionError("an executor was chosen before the input was refused")

    monkeypatch.setattr(estimator, "_fit_executor", no_executor)
    with pytest.raises(error, match=match):
        checked_ratings(X, y, estimator, feedback)


@pytest.mark.parametrize("feedback", ["implicit", "explicit"])
def test_values_whose_sum_overflows_are_refused_with_no_other_warning(triplets, feedback):
    X = sp.csr_matrix(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]) * 1e308)  # sum 4e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings too
        with pytest.raises(ValueError, match="magnitude 1e\\+308: beyond 1e\\+150"):
            checked_ratings(X, None, ESTIMATORS[feedback](), feedback)


@pytest.mark.parametrize("make, error, match", [
    (lambda dense: da.from_array(np.where(dense > 0, np.nan, 0.0), chunks=3), ValueError,
     "Input X contains NaN or infinity"),
    (lambda dense: da.from_array(dense[None]), ValueError, "non-empty 2D"),
    (lambda dense: da.from_array(dense + 1j), TypeError, "real numbers"),
    (lambda dense: da.from_array(-dense, chunks=3), ValueError, "Negative values"),
])
def test_bad_dask_input_is_refused_before_a_fit_task_runs(triplets, client_factory, make,
                                                          error, match):
    client = client_factory(2)
    estimator = BayesianPersonalizedRanking(2, max_iter=1)
    estimator.client = client
    fit_is_refused(estimator, client, (make(pivot_of(triplets)[1].toarray()),), error, match)


def test_a_ratings_matrix_fits_as_its_triplets_do(triplets):
    ratings = RatingsMatrix.from_triplets(triplets["user"], triplets["item"], triplets["rating"])
    for make in (lambda: MatrixFactorization(2, max_iter=3, random_state=0),
                 lambda: BayesianPersonalizedRanking(2, max_iter=3, random_state=0)):
        fitted, reference = make().fit(ratings), make().fit(triplets)
        np.testing.assert_array_equal(fitted.user_factors_, reference.user_factors_)
        np.testing.assert_array_equal(fitted.user_ids_, reference.user_ids_)
        np.testing.assert_array_equal(fitted.item_ids_, reference.item_ids_)
