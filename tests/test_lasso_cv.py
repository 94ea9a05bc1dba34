"""dask_strads.LassoCV / ElasticNetCV against scikit-learn's on the same folds and grid: the chosen
alpha (and l1_ratio), the test errors along the path, the refit."""
import copy
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNetCV as SkElasticNetCV
from sklearn.linear_model import LassoCV as SkLassoCV
from sklearn.model_selection import KFold

import dask_strads
from dask_strads.engine import DistributedExecutor
from conftest import fit_is_refused
from test_elastic_net import sparse_problem

TOL = 1e-12


def sk_fit(cls, X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return cls(tol=1e-14, max_iter=1_000_000, **params).fit(X, y)


def assert_same_selection(ours, ref):
    assert ours.alpha_ == ref.alpha_
    np.testing.assert_allclose(ours.alphas_, ref.alphas_, rtol=1e-12)
    np.testing.assert_allclose(ours.mse_path_, ref.mse_path_, rtol=1e-6)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-6)
    assert abs(ours.intercept_ - ref.intercept_) <= 1e-6


def test_lasso_cv_matches_sklearn_on_a_splitter_sparse():
    X, y = sparse_problem(seed=7, n=150, p=200)
    y = y + 3.0
    cv = KFold(4, shuffle=True, random_state=0)
    ours = dask_strads.LassoCV(alphas=15, cv=cv, tol=TOL, n_blocks=2).fit(X, y)
    ref = sk_fit(SkLassoCV, X, y, alphas=15, cv=cv)
    assert_same_selection(ours, ref)
    assert ours.mse_path_.shape == (15, 4)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), atol=1e-5)


def test_elastic_net_cv_picks_sklearns_l1_ratio_on_given_splits_dense():
    X, y = sparse_problem(seed=8, n=120, p=80)
    X = X.toarray()
    splits = list(KFold(3).split(X))
    ours = dask_strads.ElasticNetCV(l1_ratio=[0.2, 0.7, 1.0], alphas=8, cv=splits,
                                    tol=TOL).fit(X, y)
    ref = sk_fit(SkElasticNetCV, X, y, l1_ratio=[0.2, 0.7, 1.0], alphas=8, cv=splits)
    assert ours.l1_ratio_ == ref.l1_ratio_
    assert ours.alphas_.shape == ref.alphas_.shape == (3, 8)
    assert ours.mse_path_.shape == ref.mse_path_.shape == (3, 8, 3)
    assert_same_selection(ours, ref)


def test_a_grid_of_alphas_on_a_process_cluster_places_the_data_once(client_factory,
                                                                   monkeypatch):
    X, y = sparse_problem(seed=9, n=100, p=120)
    grid = np.geomspace(0.5, 0.005, 6)
    placements = []
    place = DistributedExecutor.place
    monkeypatch.setattr(DistributedExecutor, "place",
                        lambda self, blocks, *args: placements.append(len(blocks))
                        or place(self, blocks, *args))
    ours = dask_strads.LassoCV(alphas=grid[::-1], cv=3, tol=TOL, n_blocks=3)
    ours.client = client_factory(2)
    ours.fit(X, y)
    ref = sk_fit(SkLassoCV, X, y, alphas=grid, cv=3)
    assert_same_selection(ours, ref)
    assert placements == [3]  # three folds and the refit on the blocks placed once
    assert not hasattr(ours, "l1_ratio_")  # as scikit-learn's LassoCV


def test_concurrent_paths_on_one_block_solve_on_every_worker(client_factory):
    """A one-block problem on two worker processes: a copy of the block on the second worker,
    so that the two paths in flight solve (pull) on different workers; the same selection as
    scikit-learn's."""
    from distributed import get_task_stream

    X, y = sparse_problem(seed=10, n=90, p=60)
    client = client_factory(2)
    ours = dask_strads.LassoCV(alphas=6, cv=4, tol=TOL, n_jobs=2)
    ours.client = client
    with get_task_stream(client) as stream:
        ours.fit(X, y)
    assert_same_selection(ours, sk_fit(SkLassoCV, X, y, alphas=6, cv=4))
    pulls = {task["worker"] for task in stream.data if "-pull-" in str(task["key"])}
    assert pulls == set(client.scheduler_info()["workers"])


def test_paths_on_threads_leave_the_dask_config_as_it_was(client_factory):
    """Paths in flight on threads wait for their results on the client given: the global dask
    config (its scheduler) is what it was before the fit, and a later compute with no client
    active runs in this process as before."""
    X, y = sparse_problem(seed=11, n=60, p=40)
    before = dask.config.get("scheduler", None)
    for _ in range(3):
        ours = dask_strads.ElasticNetCV(alphas=3, cv=3, n_jobs=3)
        ours.client = client_factory(2)
        ours.fit(X, y)
        assert dask.config.get("scheduler", None) == before
    assert da.ones(4, chunks=2).sum().compute() == 4


def test_no_intercept_positive_on_rows_of_a_sparse_matrix_in_any_order():
    """Folds given as shuffled indices of uneven size, on a CSR matrix with int32 indices: the
    row masks select what scikit-learn's copies of the rows hold."""
    X, y = sparse_problem(seed=11, n=80, p=50)
    X = sp.csr_matrix(X)
    assert X.indices.dtype == np.int32
    rng = np.random.default_rng(0)
    splits = [(rng.permutation(np.flatnonzero(fold != k)), np.flatnonzero(fold == k))
              for fold in [rng.integers(0, 3, X.shape[0])] for k in range(3)]
    ours = dask_strads.LassoCV(alphas=5, cv=splits, tol=TOL, fit_intercept=False,
                               positive=True).fit(X, y)
    ref = sk_fit(SkLassoCV, X.toarray(), y, alphas=5, cv=splits, fit_intercept=False,
                 positive=True)
    assert_same_selection(ours, ref)


@pytest.fixture(scope="module")
def fitted_on_cluster(client_factory):
    X, y = sparse_problem(seed=10, n=40, p=30)
    fitted = dask_strads.ElasticNetCV(alphas=3, cv=2)
    fitted.client = client_factory(2)
    return fitted.fit(X, y), X, y


@pytest.mark.parametrize("params,error,match", [
    ({"alphas": 0}, ValueError, "alphas"),
    ({"alphas": [0.1, np.nan]}, ValueError, "alphas"),
    ({"l1_ratio": [0.5, 1.5]}, ValueError, "l1_ratio"),
    ({"l1_ratio": 0.0}, ValueError, "not supported for l1_ratio=0"),
    ({"eps": -1.0}, ValueError, "eps"),
    ({"cv": "five"}, ValueError, "cv"),
    ({"max_iter": 1.5}, ValueError, "max_iter"),
    ({"tol": None}, TypeError, "tol"),
], ids=str)
def test_bad_params_raise_before_cluster_work_and_keep_the_fit(fitted_on_cluster, params, error,
                                                                match):
    fitted, X, y = fitted_on_cluster
    client = fitted.client
    est = copy.deepcopy(fitted)
    est.client = client
    est.set_params(**params)
    assert fit_is_refused(est, client, (X, y), error, match) == []
    np.testing.assert_array_equal(est.coef_, fitted.coef_)
    np.testing.assert_array_equal(est.mse_path_, fitted.mse_path_)
    assert est.alpha_ == fitted.alpha_
