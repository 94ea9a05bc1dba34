"""dask_strads.lasso_path / enet_path against scikit-learn's at a tight tol: the same grid and
coefficients, in this process and on a process cluster."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import enet_path as sk_enet_path
from sklearn.linear_model import lasso_path as sk_lasso_path

import dask_strads
from lasso_problems import ar1_design
from test_elastic_net import sparse_problem

TOL = 1e-12
COEF_ATOL = 1e-6


def sk_path(path, X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return path(X, y, tol=1e-14, max_iter=1_000_000, **params)


def test_lasso_path_matches_sklearn_sparse():
    X, y = sparse_problem()
    alphas, coefs, gaps, n_iters = dask_strads.lasso_path(X, y, alphas=12, eps=1e-2, tol=TOL,
                                                          n_blocks=2, return_n_iter=True)
    sk_alphas, sk_coefs, _ = sk_path(sk_lasso_path, X, y, alphas=12, eps=1e-2)
    np.testing.assert_allclose(alphas, sk_alphas, rtol=1e-12)
    np.testing.assert_allclose(coefs, sk_coefs, atol=COEF_ATOL)
    assert (gaps <= TOL * (y @ y) / len(y)).all()
    # alpha_max: zero, whose gap the first round measures as met (0 iterations, as sklearn's)
    assert n_iters.shape == (12,) and n_iters[0] == 0 and (n_iters[1:] >= 1).all()


def test_enet_path_with_a_grid_and_positive_matches_sklearn_dense():
    X, y = ar1_design(80, 60, 0.7, seed=1)
    grid = [0.01, 0.3, 0.05, 0.1]  # sorted largest first, as sklearn does
    alphas, coefs, _ = dask_strads.enet_path(X, y, l1_ratio=0.6, alphas=grid, positive=True,
                                             tol=TOL, n_blocks=3)
    sk_alphas, sk_coefs, _ = sk_path(sk_enet_path, X, y, l1_ratio=0.6, alphas=grid,
                                     positive=True)
    np.testing.assert_array_equal(alphas, sk_alphas)
    np.testing.assert_allclose(coefs, sk_coefs, atol=COEF_ATOL)


def test_coef_init_starts_the_path():
    """Started at the solution of its first alpha, the path ends where a cold one does."""
    X, y = ar1_design(60, 40, 0.5, seed=3)
    alphas, cold, _ = dask_strads.lasso_path(X, y, alphas=4, tol=TOL)
    _, warm, _ = dask_strads.lasso_path(X, y, alphas=alphas, coef_init=cold[:, 0], tol=TOL)
    np.testing.assert_allclose(warm, cold, atol=COEF_ATOL)


def test_path_on_a_process_cluster(client_factory):
    X, y = sparse_problem(seed=2, n=100, p=200)
    alphas, coefs, _ = dask_strads.enet_path(X, y, l1_ratio=0.8, alphas=6, tol=TOL,
                                             client=client_factory(2))
    _, sk_coefs, _ = sk_path(sk_enet_path, X, y, l1_ratio=0.8, alphas=6)
    np.testing.assert_allclose(coefs, sk_coefs, atol=COEF_ATOL)


def test_an_unconverged_alpha_warns_and_the_path_goes_on():
    X, y = sparse_problem(seed=3)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        alphas, coefs, gaps, n_iters = dask_strads.lasso_path(X, y, alphas=5, tol=1e-30,
                                                              max_iter=2, return_n_iter=True)
    assert (n_iters <= 2).all() and (n_iters[1:] == 2).all()  # alpha_max: zero, gap 0
    assert np.count_nonzero(coefs[:, -1]) > np.count_nonzero(coefs[:, 0])


@pytest.mark.parametrize("params,error,match", [
    ({"alphas": 0}, ValueError, "alphas"),
    ({"alphas": [0.1, -1.0]}, ValueError, "alphas"),
    ({"alphas": [[0.1]]}, ValueError, "alphas"),
    ({"eps": 0.0}, ValueError, "eps"),
    ({"l1_ratio": 0.0}, ValueError, "not supported for l1_ratio=0"),
    ({"l1_ratio": 2.0}, ValueError, "l1_ratio"),
    ({"coef_init": np.zeros(3)}, ValueError, "coef_init"),
    ({"max_iter": 0}, ValueError, "max_iter"),
    ({"tol": "small"}, TypeError, "tol"),
], ids=str)
def test_bad_input_is_named(params, error, match):
    X, y = ar1_design(30, 10, 0.5)
    with pytest.raises(error, match=match):
        dask_strads.enet_path(X, y, **params)


def test_a_2d_y_is_refused_not_fitted_as_independent_targets():
    """scikit-learn's paths fit a 2-D y as one multi-task problem: its solution is not the
    paths of the columns (checked on scikit-learn's own), so a 2-D y is refused here."""
    X, y = ar1_design(40, 20, 0.5)
    Y = np.column_stack([y, y[::-1]])
    _, joint, _ = sk_enet_path(X, Y, alphas=[0.1])
    columns = [sk_enet_path(X, Y[:, k], alphas=[0.1])[1] for k in range(2)]
    assert not np.allclose(joint, np.array(columns), atol=1e-3)
    for path in (dask_strads.enet_path, dask_strads.lasso_path):
        with pytest.raises(ValueError, match="multi-task"):
            path(X, Y, alphas=[0.1])


@pytest.mark.parametrize("path", [dask_strads.enet_path, dask_strads.lasso_path])
def test_scikit_learns_deprecated_grid_spellings_warn_and_mean_its_grid(path):
    """``n_alphas=k`` and ``alphas=None`` (deprecated in scikit-learn 1.9) give scikit-learn's
    grid for ``alphas=k`` and ``alphas=100``, with a FutureWarning; ``alphas=k`` warns nothing."""
    X, y = ar1_design(30, 10, 0.5)
    sklearns = sk_enet_path if path is dask_strads.enet_path else sk_lasso_path
    with pytest.warns(FutureWarning, match="'n_alphas' was deprecated"):
        alphas, _, _ = path(X, y, n_alphas=5, tol=1e-6)
    np.testing.assert_allclose(alphas, sklearns(X, y, alphas=5)[0], rtol=1e-12)
    with pytest.warns(FutureWarning, match="'alphas=None' is deprecated"):
        alphas, _, _ = path(X, y, alphas=None, tol=1e-6)
    np.testing.assert_allclose(alphas, sklearns(X, y, alphas=100)[0], rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(path(X, y, alphas=5, tol=1e-6)[0]) == 5
