"""scikit-learn's spellings of the linear models: keywords accepted where scikit-learn has them,
``l1_ratio`` choosing the logistic penalty as in scikit-learn >= 1.8, ``sparse_coef_``,
``sparsify``/``densify``, several targets and float32 data, against scikit-learn's fits."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import linear_model
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression

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
