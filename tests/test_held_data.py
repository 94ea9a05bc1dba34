"""A fit from ``da.from_array(numpy)`` on a cluster sends no "large graph": the chunks the graph
holds are scattered once (dask_strads.engine.blocks.fresh_copies), and the model is the one
fitted from the same array in memory."""
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.base import clone

from dask_strads import Lasso, LatentDirichletAllocation, MatrixFactorization
from dask_strads.engine.blocks import SCATTER_ABOVE_BYTES, fresh_copies


def _problem(name):
    """An estimator, its data (about 1.9 MB: Dask is told to warn from 1.5 MB), the fitted
    attribute to compare and a call that reads the data again after the fit."""
    rng = np.random.default_rng(0)
    if name == "lasso":
        X = rng.standard_normal((600, 400))
        y = X[:, :5] @ np.arange(1.0, 6.0) + 0.1 * rng.standard_normal(600)
        return Lasso(alpha=0.05), (X, y), "coef_", lambda est, X, y: est.score(X, y)
    if name == "lda":
        X = rng.poisson(0.5, (600, 400)).astype(float)
        return (LatentDirichletAllocation(4, max_iter=4, random_state=0), (X,), "components_",
                lambda est, X: est.transform(X))
    X = rng.integers(1, 6, (600, 400)).astype(float)  # dense: every entry is a rating
    return (MatrixFactorization(3, max_iter=4, random_state=0), (X,), "components_",
            lambda est, X: est.score(X))


def _large_graph_warnings(compute):
    with warnings.catch_warnings(record=True) as caught, dask.config.set(
            {"distributed.admin.large-graph-warning-threshold": "1.5MB"}):
        warnings.simplefilter("always")
        compute()
    return [w for w in caught if "large graph" in str(w.message)]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", ["lasso", "lda", "mf"])
def test_a_fit_from_a_numpy_backed_dask_array_sends_no_large_graph(client_factory, name):
    client = client_factory(2)
    in_memory, data, fitted, read_again = _problem(name)
    in_memory.client = client
    in_memory.fit(*data)
    lazy = clone(in_memory)
    lazy.client = client
    # row chunks: the fit cuts the array into other blocks than its chunks
    lazy_data = [da.from_array(a, chunks=(200,) + a.shape[1:]) for a in data]
    assert not _large_graph_warnings(lambda: read_again(lazy.fit(*lazy_data), *lazy_data))
    # the control: the same data sent inside a graph is warned of
    assert _large_graph_warnings(lambda: client.compute(lazy_data[0].sum()).result())
    np.testing.assert_allclose(getattr(lazy, fitted), getattr(in_memory, fitted),
                               rtol=1e-9, atol=1e-12)


def test_fresh_copies_scatter_held_chunks_and_compute_the_same_values(client_factory):
    client = client_factory(2)
    values = np.arange(2 * SCATTER_ABOVE_BYTES // 8, dtype=float).reshape(-1, 16)
    held = da.from_array(values, chunks=(len(values) // 2, 16))
    doubled, total = fresh_copies(client, held * 2, held.sum())
    graph = dict(doubled.__dask_graph__())
    assert sum(type(v).__name__ == "Future" for v in graph.values()) == 2
    assert not set(graph) & set(dict((held * 2).__dask_graph__()))
    np.testing.assert_array_equal(client.compute(doubled).result(), values * 2)
    assert client.compute(total).result() == values.sum()
    small = da.from_array(values[:10])
    (copy,) = fresh_copies(client, small)
    assert not any(type(v).__name__ == "Future" for v in dict(copy.__dask_graph__()).values())
    np.testing.assert_array_equal(client.compute(copy).result(), values[:10])


def test_fresh_copies_read_persisted_chunks_where_they_are(client_factory):
    client = client_factory(2)
    values = np.arange(400.0).reshape(40, 10)
    persisted = client.persist(da.from_array(values, chunks=(10, 10)))
    (mean,) = fresh_copies(client, persisted.mean(axis=0))
    np.testing.assert_allclose(client.compute(mean).result(), values.mean(axis=0))
