"""scikit-learn estimators running STRADS programs, a module each, imported on first use: a
script that fits a Lasso loads none of the topic models' or recommenders' code."""
import importlib

_MODULES = {"ElasticNet": "elastic_net", "Lasso": "lasso", "LatentDirichletAllocation": "lda",
            "MatrixFactorization": "mf"}

__all__ = list(_MODULES)


def __getattr__(name):
    if name in _MODULES:
        return getattr(importlib.import_module(f".{_MODULES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
