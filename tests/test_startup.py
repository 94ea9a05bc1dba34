"""``import dask_strads`` is cheap: it loads none of the heavy libraries a fit may need
(structural, checked on ``sys.modules`` in a fresh process, not timed), and every public name
still resolves on first use."""
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


def test_every_public_name_resolves_on_first_use():
    kinds = fresh("import inspect, json, dask_strads\n"
                  "print(json.dumps({n: 'class' if inspect.isclass(getattr(dask_strads, n)) "
                  "else type(getattr(dask_strads, n)).__name__ for n in dask_strads.__all__}))")
    assert kinds["Lasso"] == kinds["Engine"] == kinds["Program"] == "class"
    assert kinds["embedded_client"] == kinds["save"] == kinds["lasso_path"] == "function"
    assert set(kinds) == set(__import__("dask_strads").__all__)
