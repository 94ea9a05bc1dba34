"""scikit-learn's spellings of the linear models: keywords accepted where scikit-learn has them,
``l1_ratio`` choosing the logistic penalty as in scikit-learn >= 1.8, ``sparse_coef_``,
``sparsify``/``densify``, several targets and float32 data, against scikit-learn's fits."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import config_context as sklearn_config
from sklearn import linear_model
from sklearn.base import clone
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import scale

import dask_strads


@pytest.fixture(scope="module")
def classes():
    return make_classification(150, 12, n_informative=4, n_redundant=0, flip_y=0.1,
                               random_state=0)


def test_l1_ratio_chooses_the_logistic_penalty_as_sklearn(classes):
    X, y = classes
    for params in ({"C": 0.1, "l1_ratio": 0.0}, {"C": 0.1}, {"C": np.inf}):
        ours = dask_strads.LogisticRegression(**params, tol=1e-9, max_iter=500).fit(X, y)
        theirs = linear_model.LogisticRegression(**params, tol=1e-12, max_iter=10_000)
        theirs.fit(X, y)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-5, atol=1e-6)
    l1 = dask_strads.LogisticRegression(C=0.1, l1_ratio=1.0, tol=1e-9, max_iter=500).fit(X, y)
    with pytest.warns(UserWarning, match="Inconsistent values: penalty=l1 with l1_ratio=0.0"):
        named = dask_strads.LogisticRegression("l1", C=0.1, tol=1e-9, max_iter=500).fit(X, y)
    np.testing.assert_array_equal(l1.coef_, named.coef_)
    assert 0 < np.count_nonzero(l1.coef_) < X.shape[1]
    unpenalised = dask_strads.LogisticRegression(None, tol=1e-9, max_iter=500).fit(X, y)
    np.testing.assert_allclose(unpenalised.coef_, ours.coef_, rtol=1e-6)  # C=inf, the last


def test_sklearn_solver_names_and_keywords(classes):
    X, y = classes
    default = dask_strads.LogisticRegression(C=0.5, tol=1e-8).fit(X, y)
    named = dask_strads.LogisticRegression(C=0.5, tol=1e-8, solver="saga", random_state=0,
                                           n_jobs=2, verbose=1, intercept_scaling=2,
                                           dual=False)
    with pytest.warns(FutureWarning, match="'n_jobs' has no effect"):
        np.testing.assert_array_equal(clone(named).fit(X, y).coef_, default.coef_)
    assert named.get_params()["solver"] == "saga"
    for bad, match in (({"dual": True}, "dual"), ({"solver": "sgd"}, "prox_newton")):
        with pytest.raises(ValueError, match=match):
            dask_strads.LogisticRegression(**bad).fit(X, y)


def test_sparsify_densify(classes):
    X, y = classes
    est = dask_strads.LogisticRegression(C=0.1, l1_ratio=1.0).fit(X, y)
    dense = est.predict_proba(X)
    assert sp.issparse(est.sparsify().coef_)
    np.testing.assert_allclose(est.predict_proba(X), dense)
    assert isinstance(est.densify().coef_, np.ndarray)
    est.set_params(warm_start=True).sparsify().fit(X, y)  # a warm start from sparse coef_
    np.testing.assert_allclose(est.predict_proba(X), dense, atol=1e-4)


@pytest.fixture(scope="module")
def regression():
    X, Y = make_regression(60, 15, n_informative=5, n_targets=2, noise=1.0, random_state=0)
    return X, Y


def test_enet_keywords_sparse_coef_and_several_targets(regression):
    X, Y = regression
    params = {"alpha": 0.5, "l1_ratio": 0.7, "tol": 1e-10}
    plain = dask_strads.ElasticNet(**params).fit(X, Y[:, 0])
    spelled = dask_strads.ElasticNet(**params, precompute=True, copy_X=False,
                                     selection="random", random_state=0).fit(X, Y[:, 0])
    np.testing.assert_array_equal(spelled.coef_, plain.coef_)
    assert (plain.sparse_coef_ != sp.csr_matrix(plain.coef_)).nnz == 0
    for targets in (Y, Y[:, :1]):
        ours = dask_strads.ElasticNet(**params).fit(X, targets)
        theirs = linear_model.ElasticNet(**params, max_iter=100_000).fit(X, targets)
        assert ours.coef_.shape == theirs.coef_.shape
        assert np.shape(ours.intercept_) == np.shape(theirs.intercept_)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-7)
        np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-6)
        assert ours.sparse_coef_.shape == theirs.sparse_coef_.shape


def test_float32_data_give_float32_parameters(regression, classes):
    X, Y = regression
    for make in (lambda: dask_strads.Lasso(alpha=0.5, tol=1e-10),
                 lambda: dask_strads.LassoCV(alphas=5, cv=3, tol=1e-10)):
        wide = make().fit(X, Y[:, 0])
        narrow = make().fit(X.astype(np.float32), Y[:, 0].astype(np.float32))
        assert narrow.coef_.dtype == np.float32 and narrow.intercept_.dtype == np.float32
        np.testing.assert_allclose(narrow.coef_, wide.coef_, rtol=1e-4, atol=1e-4)
    X, y = classes
    est = dask_strads.LogisticRegression().fit(X.astype(np.float32), y)
    assert est.coef_.dtype == est.intercept_.dtype == np.float32


def test_max_iter_zero_gives_the_starting_point(classes):
    """As scikit-learn: ``max_iter=0`` fits nothing, warns, and leaves the starting point (zeros,
    or the previous fit's coefficients with ``warm_start``)."""
    X, y = classes
    with pytest.warns(ConvergenceWarning, match="did not converge in 0 rounds"):
        start = dask_strads.LogisticRegression(max_iter=0).fit(X, y)
    assert start.n_iter_ == 0 and not np.any(start.coef_) and not np.any(start.intercept_)
    np.testing.assert_array_equal(start.predict_proba(X), np.full((len(y), 2), 0.5))
    warm = dask_strads.LogisticRegression(warm_start=True).fit(X, y)
    fitted = warm.coef_.copy()
    with pytest.warns(ConvergenceWarning):
        warm.set_params(max_iter=0).fit(X, y)
    np.testing.assert_array_equal(warm.coef_, fitted)


def test_multinomial_coefficients_sum_to_zero_over_the_classes():
    """The l2 multinomial optimum is symmetric (its coefficients sum to zero over the classes);
    the unpenalised intercepts are made so, as scikit-learn's: lbfgs' model."""
    X, y = load_iris(return_X_y=True)
    X = scale(X)
    ours = dask_strads.LogisticRegression(C=len(X), tol=1e-10, max_iter=500).fit(X, y)
    theirs = linear_model.LogisticRegression(C=len(X), tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(ours.coef_.sum(axis=0), 0, atol=1e-10)
    assert abs(ours.intercept_.sum()) < 1e-11
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-4, atol=1e-4)


def test_penalty_none_with_c_warns_as_sklearn(classes):
    X, y = classes
    with pytest.warns(UserWarning, match="Setting penalty=None will ignore the C"):
        dask_strads.LogisticRegression(None, C=4.0, max_iter=3).fit(X, y)


def test_enet_n_iter_has_sklearns_meaning(regression):
    """n_iter_ counts the iterations that updated coef_ (at most max_iter): 0 for a warm start
    at the solution, as scikit-learn's, whose coordinate descent checks the gap first."""
    X, Y = regression
    cold = dask_strads.ElasticNet(alpha=0.5, tol=1e-8).fit(X, Y[:, 0])
    assert cold.n_iter_ >= 1 and len(cold.history_) == cold.n_iter_ + 1
    assert cold.fit(X, Y[:, 0]).n_iter_ == len(cold.history_) - 1
    warm = cold.set_params(warm_start=True).fit(X, Y[:, 0])
    theirs = linear_model.ElasticNet(alpha=0.5, tol=1e-8, warm_start=True)
    theirs.coef_ = warm.coef_.copy()
    assert warm.n_iter_ == theirs.fit(X, Y[:, 0]).n_iter_ == 0
    with pytest.warns(ConvergenceWarning) as caught:
        once = dask_strads.ElasticNet(alpha=0.5, tol=1e-30, max_iter=1).fit(X, Y[:, 0])
    assert once.n_iter_ == 1 and np.any(once.coef_)  # one update, not the starting point
    with pytest.warns(ConvergenceWarning) as sklearns:
        linear_model.ElasticNet(alpha=0.5, tol=1e-30, max_iter=1).fit(X, Y[:, 0])
    words = "Objective did not converge. You might want to increase the number of iterations"
    assert str(sklearns[0].message).startswith(words)
    assert str(caught[0].message).startswith(words)


def _raised(make, *args, **kwargs):
    """The exception ``make(*args, **kwargs)`` raises, as (type, message)."""
    with pytest.raises(Exception) as info:
        make(*args, **kwargs)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("alphas", [(1, -1, -100), (-0.1, -1.0, -10.0), (1, 1.0, "1")],
                         ids=str)
def test_cv_alphas_checked_as_sklearn(regression, alphas):
    X, Y = regression
    ours = _raised(dask_strads.LassoCV(alphas=alphas).fit, X, Y[:, 0])
    assert ours == _raised(linear_model.LassoCV(alphas=alphas).fit, X, Y[:, 0])


def test_no_automatic_grid_at_l1_ratio_zero_as_sklearn(regression):
    X, Y = regression
    ours = _raised(dask_strads.ElasticNetCV(l1_ratio=0).fit, X, Y[:, 0])
    assert ours == _raised(linear_model.ElasticNetCV(l1_ratio=0).fit, X, Y[:, 0])
    assert ours[0] is ValueError
    assert _raised(dask_strads.enet_path, X, Y[:, 0], l1_ratio=0)[1] == ours[1]


@pytest.mark.parametrize("path", ["enet_path", "lasso_path"])
def test_paths_refuse_unknown_params_as_sklearn(regression, path):
    X, Y = regression
    ours = _raised(getattr(dask_strads, path), X, Y[:, 0], normalize=True)
    theirs = _raised(getattr(linear_model, path), X, Y[:, 0], normalize=True)
    assert ours[0] is theirs[0] is ValueError
    assert "Unexpected parameters in params" in ours[1] and "normalize" in ours[1]


@pytest.mark.parametrize("name", ["LassoCV", "ElasticNetCV"])
def test_cv_routes_groups_to_the_splitter_as_sklearn(regression, name):
    """``groups`` reach the splitter only with metadata routing enabled, as scikit-learn's
    LinearModelCV; routed, the folds are scikit-learn's (the same test errors)."""
    from sklearn.model_selection import GroupKFold

    X, Y = regression
    groups = np.arange(len(X)) % 4
    ours, theirs = getattr(dask_strads, name), getattr(linear_model, name)
    refused = _raised(ours().fit, X, Y[:, 0], groups=groups)
    assert refused == _raised(theirs().fit, X, Y[:, 0], groups=groups)
    assert "enable_metadata_routing=True" in refused[1]
    params = {"alphas": 5, "cv": GroupKFold(4), "tol": 1e-10}
    weights = 1.0 + np.arange(len(X)) % 3
    with sklearn_config(enable_metadata_routing=True):
        fits = [make(**params).set_fit_request(sample_weight=True).fit(
            X, Y[:, 0], sample_weight=weights, groups=groups) for make in (ours, theirs)]
        with pytest.raises(ValueError, match="groups"):  # GroupKFold needs them
            ours(**params).fit(X, Y[:, 0])
    np.testing.assert_allclose(fits[0].mse_path_, fits[1].mse_path_, rtol=1e-6)
    assert fits[0].alpha_ == pytest.approx(fits[1].alpha_)
