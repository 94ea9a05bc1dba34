"""scikit-learn's estimator checks (the legacy set included) on dask_strads.MatrixFactorization.

The checks feed dense arrays, which are fully observed ratings matrices. They run on the session's
cached two-worker cluster, made the current client for each check.
"""
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import dask_strads


@pytest.fixture(autouse=True)
def current_client(client_factory):
    client = client_factory(2)
    with client.as_current():
        yield client


@parametrize_with_checks([dask_strads.MatrixFactorization()], legacy=True)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
