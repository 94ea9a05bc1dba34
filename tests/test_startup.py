"""``import dask_strads`` is cheap: it loads none of the heavy libraries a fit may need
(structural, checked on ``sys.modules`` in a fresh process, not timed), every public name
still resolves on first use, and a fit in this process (what each of a ``GridSearchCV``'s
worker processes runs) loads neither distributed nor dask.array."""
import json
import subprocess
import sys

HEAVY = ("distributed", "dask", "dask.array", "numba", "scipy", "scipy.stats", "sklearn",
         "pandas", "bokeh")


def fresh(code):
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                     text=True, timeout=300, check=True).stdout)


def test_import_loads_no_heavy_library():
    loaded = fresh("import json, sys, dask_strads\n"
                   f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert loaded == []


def test_a_lasso_loads_no_topic_model_or_recommender():
    """``from dask_strads import Lasso`` (what each worker process of a grid search imports)
    loads the linear models' modules only."""
    others = ("dask_strads.estimators.lda", "dask_strads.estimators.mf",
              "dask_strads.programs.lda", "dask_strads.programs.mf",
              "dask_strads.estimators.ratings_input")
    loaded = fresh("import json, sys\nfrom dask_strads import Lasso\nLasso\n"
                   f"print(json.dumps([m for m in {others!r} if m in sys.modules]))")
    assert loaded == []


def test_every_public_name_resolves_on_first_use():
    kinds = fresh("import inspect, json, dask_strads\n"
                  "print(json.dumps({n: 'class' if inspect.isclass(getattr(dask_strads, n)) "
                  "else type(getattr(dask_strads, n)).__name__ for n in dask_strads.__all__}))")
    assert kinds["Lasso"] == kinds["Engine"] == kinds["Program"] == "class"
    assert kinds["embedded_client"] == kinds["save"] == kinds["lasso_path"] == "function"
    assert set(kinds) == set(__import__("dask_strads").__all__)


#: Fits on small in-memory data, in this process: every estimator, predicting or transforming.
IN_PROCESS_FITS = """
import numpy as np
import scipy.sparse as sp
from dask_strads import (ElasticNet, ImplicitMatrixFactorization, LassoCV,
                         LatentDirichletAllocation, LogisticRegression, MatrixFactorization)
rng = np.random.default_rng(0)
X = rng.normal(size=(60, 8))
y = X @ rng.normal(size=8)
ElasticNet(alpha=0.1).fit(X, y).predict(X)
LassoCV(cv=2, alphas=3).fit(X, y)
LogisticRegression().fit(X, y > 0).predict_proba(X)
counts = sp.random(30, 40, density=0.3, random_state=0, format="csr")
counts.data = np.ceil(5 * counts.data)
LatentDirichletAllocation(n_components=3, max_iter=2).fit(counts).transform(counts)
ratings = sp.random(30, 20, density=0.3, random_state=0, format="csr")
MatrixFactorization(n_components=2, max_iter=2).fit(ratings).transform(ratings)
ImplicitMatrixFactorization(n_components=2, max_iter=2).fit(ratings)
"""


def test_a_fit_in_this_process_loads_neither_distributed_nor_dask_array():
    loaded = fresh("import json, sys\n" + IN_PROCESS_FITS +
                   "print(json.dumps([m for m in ('distributed', 'dask.array', 'dask.dataframe') "
                   "if m in sys.modules]))")
    assert loaded == []


def test_a_linear_models_fit_in_this_process_loads_no_file_system_library():
    """fsspec and zict (checkpoints on disk, blocks parked on a worker) are not loaded by what
    each worker process of a grid search runs."""
    loaded = fresh("import json, sys\nimport numpy as np\n"
                   "from dask_strads import ElasticNet, LassoCV, LogisticRegression\n"
                   "X = np.random.default_rng(0).normal(size=(60, 8))\ny = X[:, 0] - X[:, 1]\n"
                   "ElasticNet(alpha=0.1).fit(X, y).predict(X)\nLassoCV(cv=2, alphas=3).fit(X, y)\n"
                   "LogisticRegression().fit(X, y > 0).predict_proba(X)\n"
                   "print(json.dumps([m for m in ('fsspec', 'zict') if m in sys.modules]))")
    assert loaded == []
