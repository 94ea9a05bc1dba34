"""Every public class and function of ``dask_strads`` documents its parameters in numpydoc form,
in its signature's order (as scikit-learn's ``test_docstring_parameters`` checks its own): a
parameter added, renamed or moved without its documentation fails here."""
import dataclasses
import importlib.util
import inspect
import re
from pathlib import Path

import pytest
from numpydoc.docscrape import ClassDoc, FunctionDoc

import dask_strads

#: Public names documented by another's docstring, as their own docstrings say.
DOCUMENTED_BY = {"lasso_path": "enet_path", "Lasso": "ElasticNet", "LassoCV": "ElasticNetCV"}

PUBLIC = sorted(name for name in dask_strads.__all__
                if inspect.isclass(getattr(dask_strads, name))
                or inspect.isfunction(getattr(dask_strads, name)))


def documented(obj):
    """The names a docstring documents as parameters (a dataclass's: its attributes)."""
    if inspect.isclass(obj):
        doc = ClassDoc(obj)
        entries = doc["Attributes"] if dataclasses.is_dataclass(obj) else doc["Parameters"]
    else:
        entries = FunctionDoc(obj)["Parameters"]
    return [name.strip() for entry in entries for name in entry.name.split(",")]


def parameters(obj):
    callable_ = obj.__init__ if inspect.isclass(obj) else obj
    return [p.name for p in inspect.signature(callable_).parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


@pytest.mark.parametrize("name", PUBLIC)
def test_documented_parameters_are_the_signatures_in_order(name):
    obj = getattr(dask_strads, name)
    names = parameters(obj)
    if name in DOCUMENTED_BY:
        assert documented(obj) == [], f"{name} documents its parameters: drop DOCUMENTED_BY"
        names_documented = [n for n in documented(getattr(dask_strads, DOCUMENTED_BY[name]))
                            if n in names]
    else:
        names_documented = documented(obj)
    assert names_documented == names


def test_every_public_name_has_a_docstring():
    undocumented = [name for name in dask_strads.__all__
                    if not inspect.getdoc(getattr(dask_strads, name))]
    assert undocumented == []


def test_the_api_reference_builds_offline_with_every_public_name(tmp_path):
    path = Path(__file__).resolve().parent.parent / "docs" / "build_api.py"
    spec = importlib.util.spec_from_file_location("build_api", path)
    build_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_api)
    html = build_api.build(tmp_path).read_text()
    documented = set(re.findall(r'<section id="([A-Za-z_]+)">', html))
    assert set(dask_strads.__all__) <= documented
    assert "<h6 id=\"parameters\">Parameters</h6>" in html  # numpydoc sections rendered
