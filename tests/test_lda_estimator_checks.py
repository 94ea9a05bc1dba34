"""scikit-learn's estimator checks (the legacy set included) on LatentDirichletAllocation, on the
session's two-worker cluster (see test_lasso_estimator_checks.py)."""
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import dask_strads


@pytest.fixture(autouse=True)
def current_client(client_factory):
    client = client_factory(2)
    with client.as_current():
        yield client


@parametrize_with_checks([dask_strads.LatentDirichletAllocation(max_iter=5)], legacy=True)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
