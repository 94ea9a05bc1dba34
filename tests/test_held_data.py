"""A fit from ``da.from_array(numpy)`` on a cluster sends no "large graph": the chunks the graph
holds are scattered once (dask_strads.engine.blocks.scatter_held_data), and the model is the one
fitted from the same array in memory."""
import warnings

import dask
import dask.array as da
import numpy as np

from dask_strads import Lasso
from dask_strads.engine.blocks import SCATTER_ABOVE_BYTES, scatter_held_data


def test_lasso_from_a_numpy_backed_dask_array_sends_no_large_graph(client_factory):
    client = client_factory(2)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 400))  # 1.9 MB: Dask is told to warn from 1.5 MB
    y = X[:, :5] @ np.arange(1.0, 6.0) + 0.1 * rng.standard_normal(600)
    in_memory = Lasso(alpha=0.05)
    in_memory.client = client
    in_memory.fit(X, y)
    lazy = Lasso(alpha=0.05)
    lazy.client = client
    def large_graph_warnings(compute):
        with warnings.catch_warnings(record=True) as caught, dask.config.set(
                {"distributed.admin.large-graph-warning-threshold": "1.5MB"}):
            warnings.simplefilter("always")
            compute()
        return [w for w in caught if "large graph" in str(w.message)]

    assert not large_graph_warnings(lambda: lazy.fit(da.from_array(X, chunks=(600, 200)),
                                                     da.from_array(y, chunks=300)))
    # the control: the same data sent inside a graph is warned of
    assert large_graph_warnings(lambda: client.compute(da.from_array(X, chunks=(600, 200)).sum())
                                .result())
    np.testing.assert_allclose(lazy.coef_, in_memory.coef_, rtol=1e-9, atol=1e-12)


def test_held_chunks_become_futures_with_the_same_values(client_factory):
    client = client_factory(2)
    values = np.arange(2 * SCATTER_ABOVE_BYTES // 8, dtype=float).reshape(-1, 16)
    held = da.from_array(values, chunks=(len(values) // 2, 16))
    (scattered,) = scatter_held_data(client, held)
    assert all(type(v).__name__ == "Future" for v in dict(scattered.__dask_graph__()).values())
    np.testing.assert_array_equal(client.compute(scattered * 2).result(), values * 2)
    small = da.from_array(values[:10])
    assert scatter_held_data(client, small)[0] is small
