"""Where fits run, as users meet it: scripts without a main guard, local schedulers, joblib and
Dask tasks, parameters kept on the cluster."""
import os
import pickle
import subprocess
import sys
import textwrap

import dask
import dask.array as da
import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from distributed import Client
from sklearn.linear_model import Lasso as SklearnLasso
from sklearn.model_selection import GridSearchCV, KFold

from dask_strads import Lasso, LatentDirichletAllocation, MatrixFactorization
from dask_strads.datasets import make_correlated_regression, make_lda_corpus, make_ratings
from dask_strads.engine import runtime

ALPHAS = [0.02, 0.05, 0.1, 0.2]


def test_a_script_without_main_guard_fits_all_three(tmp_path):
    """No client: each fit runs where the defaults put it (this process for these sizes), then on
    the embedded cluster; its workers are threads, so nothing re-imports the script."""
    script = tmp_path / "first_script.py"
    script.write_text(textwrap.dedent("""
        import dask.array as da
        import sparse
        from dask_strads import (Lasso, LatentDirichletAllocation, MatrixFactorization,
                                 embedded_client)
        from dask_strads.datasets import make_correlated_regression, make_lda_corpus, make_ratings

        X, y, _ = make_correlated_regression(1000, 1100, 10, random_state=0)
        counts = make_lda_corpus(n_docs=1000, n_words=1100, n_topics=5, random_state=0)[0]
        ratings = make_ratings(n_users=2000, n_items=600, n_ratings=20000, random_state=0)[0]
        models = [Lasso(alpha=0.1), LatentDirichletAllocation(5, max_iter=3),
                  MatrixFactorization(5, max_iter=3)]
        data = [(X, y), (da.from_array(sparse.COO(counts), chunks=(500, 1100)),),
                (da.from_array(sparse.COO(ratings), chunks=(1000, 600)),)]
        for model, args in zip(models, data):
            model.fit(*args)
            assert model.client is None, model  # in this process
            model.client = embedded_client()
            model.fit(*args)
            print(type(model).__name__, "on", model.client.dashboard_link)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("on http://127.0.0.1:") == 3, done.stdout
    assert "Nanny failed to start" not in done.stderr


@pytest.mark.cluster  # the embedded cluster
def test_local_schedulers_give_the_embedded_clusters_model():
    """No client: by default (threads in this process) and under dask.config's synchronous
    scheduler no cluster starts, and the model equals the embedded cluster's (same blocks, same
    seeds)."""
    X, y, _ = make_correlated_regression(1000, 1100, 20, random_state=1)
    runtime.close_embedded_client()
    default = Lasso(alpha=0.05, tol=1e-8, random_state=0).fit(X, y)
    with dask.config.set(scheduler="synchronous"):
        synchronous = Lasso(alpha=0.05, tol=1e-8, random_state=0).fit(X, y)
    assert runtime._embedded is None and default.client is synchronous.client is None
    on_cluster = Lasso(alpha=0.05, tol=1e-8, random_state=0)
    on_cluster.client = runtime.embedded_client()
    on_cluster.fit(X, y)
    for local in (default, synchronous):
        assert local.n_iter_ == on_cluster.n_iter_
        np.testing.assert_allclose(local.coef_, on_cluster.coef_, rtol=1e-12, atol=1e-15)
    runtime.close_embedded_client()


def test_small_fits_run_in_process_and_match_sklearn():
    X, y, _ = make_correlated_regression(50, 10, 3, random_state=2)
    runtime.close_embedded_client()
    ours = Lasso(alpha=0.1, tol=1e-10).fit(X, y)
    assert runtime._embedded is None and ours.client is None
    reference = SklearnLasso(alpha=0.1, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_picks_sklearns_alpha(n_jobs):
    X, y, _ = make_correlated_regression(200, 30, 5, random_state=3)
    folds = KFold(4, shuffle=True, random_state=0)
    ours = GridSearchCV(Lasso(tol=1e-8), {"alpha": ALPHAS}, cv=folds, n_jobs=n_jobs).fit(X, y)
    theirs = GridSearchCV(SklearnLasso(tol=1e-8), {"alpha": ALPHAS}, cv=folds).fit(X, y)
    assert ours.best_params_ == theirs.best_params_
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               theirs.cv_results_["mean_test_score"], rtol=1e-5)
    assert runtime._embedded is None


def test_grid_search_under_joblibs_dask_backend(client_factory):
    """Each fit runs in a Dask task: in that task's process, never on a nested cluster."""
    X, y, _ = make_correlated_regression(200, 30, 5, random_state=4)
    client = client_factory(2)
    with Client(client.scheduler.address, set_as_default=True):
        with joblib.parallel_backend("dask"):
            ours = GridSearchCV(Lasso(tol=1e-8), {"alpha": ALPHAS}, cv=3).fit(X, y)
    theirs = GridSearchCV(SklearnLasso(tol=1e-8), {"alpha": ALPHAS}, cv=3).fit(X, y)
    assert ours.best_params_ == theirs.best_params_


def _fit_in_a_child(X, y):
    from dask_strads.engine import runtime as child_runtime

    model = Lasso(alpha=0.05, tol=1e-8, random_state=0).fit(X, y)
    return model.coef_, model.client, child_runtime._embedded, os.getpid()


def test_a_fit_in_a_joblib_worker_process_starts_no_cluster():
    """Large enough for more than one block, in a loky worker process: it runs there on the
    synchronous scheduler, with the blocks it would have had, and starts no cluster."""
    X, y, _ = make_correlated_regression(1000, 1100, 20, random_state=1)
    (coef, client_seen, embedded, pid), = joblib.Parallel(n_jobs=2)(
        [joblib.delayed(_fit_in_a_child)(X, y)])
    assert pid != os.getpid() and client_seen is None and embedded is None
    with dask.config.set(scheduler="synchronous"):
        reference = Lasso(alpha=0.05, tol=1e-8, random_state=0).fit(X, y)
    np.testing.assert_allclose(coef, reference.coef_, rtol=1e-12, atol=1e-15)


def _fit_in_a_task(X, y):
    from distributed import get_worker

    model = Lasso(alpha=0.05, tol=1e-8, random_state=0).fit(X, y)
    return model.coef_, model.client, get_worker().address


def test_a_fit_inside_a_dask_task_runs_in_that_task(client_factory):
    """Large enough for a cluster, but a fit in a task must not pin work to the worker whose
    only thread it holds: it runs in the task, with the blocks it would have had."""
    X, y, _ = make_correlated_regression(1000, 1100, 20, random_state=1)
    client = client_factory(2)
    coef, client_seen, _ = client.submit(_fit_in_a_task, X, y, pure=False).result(timeout=300)
    assert client_seen is None
    with dask.config.set(scheduler="synchronous"):
        reference = Lasso(alpha=0.05, tol=1e-8, random_state=0).fit(X, y)
    np.testing.assert_allclose(coef, reference.coef_, rtol=1e-12, atol=1e-15)


# -- parameters kept on the cluster ------------------------------------------------------------
def _kept_and_gathered(client, make, data):
    kept, gathered = make(keep_on_cluster=True), make(keep_on_cluster=False)
    kept.client = gathered.client = client
    return kept.fit(*data), gathered.fit(*data)


def _chunk_workers(client, array, prefix):
    """The workers holding the collected blocks (keys starting with ``prefix``) that the chunks
    of ``array`` come from."""
    graph = dict(array.__dask_graph__())
    keys = {k for task in graph.values() for k in getattr(task, "dependencies", ())} | set(graph)
    keys = {k for k in keys if str(k).startswith(prefix)}
    assert keys, prefix
    return {tuple(w) for k, w in client.who_has().items() if k in keys}


def _same(client, kept, gathered):
    assert isinstance(kept, da.Array) and not isinstance(gathered, da.Array)
    np.testing.assert_allclose(client.compute(kept).result(), gathered, rtol=1e-12, atol=1e-12)


def test_lasso_keeps_coef_on_the_workers(client_factory):
    client = client_factory(2)
    X, y, _ = make_correlated_regression(300, 400, 10, random_state=5)
    kept, gathered = _kept_and_gathered(
        client, lambda **kw: Lasso(alpha=0.05, random_state=0, n_blocks=2, **kw), (X, y))
    assert kept.coef_.chunks == ((200, 200),)
    assert len(_chunk_workers(client, kept.coef_, "strads-lasso-collect-")) == 2
    _same(client, kept.coef_, gathered.coef_)
    np.testing.assert_allclose(kept.predict(X), gathered.predict(X), rtol=1e-10)
    restored = pickle.loads(pickle.dumps(kept))  # gathers: no futures in a pickle
    assert isinstance(restored.coef_, np.ndarray)
    np.testing.assert_array_equal(restored.coef_, gathered.coef_)


def test_lda_keeps_topics_and_documents_on_the_workers(client_factory):
    client = client_factory(2)
    X = make_lda_corpus(n_docs=300, n_words=500, n_topics=5, random_state=6)[0]
    kept, gathered = _kept_and_gathered(
        client, lambda **kw: LatentDirichletAllocation(5, max_iter=5, random_state=0, **kw), (X,))
    assert len(kept.components_.chunks[1]) == 2  # a chunk per vocabulary block
    assert len(_chunk_workers(client, kept.components_, "strads-lda-collect-carried-")) == 2
    _same(client, kept.components_, gathered.components_)
    _same(client, kept.doc_topic_, gathered.doc_topic_)
    np.testing.assert_allclose(kept.transform(X[:20]), gathered.transform(X[:20]))
    restored = pickle.loads(pickle.dumps(kept))
    np.testing.assert_array_equal(restored.components_, gathered.components_)


def test_mf_keeps_factors_on_the_workers(client_factory):
    client = client_factory(2)
    X = make_ratings(n_users=400, n_items=150, n_ratings=6000, random_state=7)[0]
    kept, gathered = _kept_and_gathered(
        client, lambda **kw: MatrixFactorization(4, max_iter=5, random_state=0, **kw), (X,))
    assert len(kept.user_factors_.chunks[0]) == 2 and len(kept.components_.chunks[1]) == 2
    assert len(_chunk_workers(client, kept.user_factors_, "strads-mf-collect-")) == 2
    for name in ("user_factors_", "components_", "user_bias_", "item_bias_"):
        _same(client, getattr(kept, name), getattr(gathered, name))
    np.testing.assert_allclose(kept.predict_entries([0, 1], [2, 3]),
                               gathered.predict_entries([0, 1], [2, 3]))
    np.testing.assert_array_equal(kept.recommend([0, 5]), gathered.recommend([0, 5]))
    restored = pickle.loads(pickle.dumps(kept))
    np.testing.assert_array_equal(restored.user_factors_, gathered.user_factors_)
    assert sp.issparse(restored._seen)
