"""Model-parallel machine learning on Dask, after STRADS (Lee et al., NIPS 2014)."""
from .engine import Engine, close_embedded_client, embedded_client
from .programs import Program, run_sequential

__version__ = "0.1.0"

__all__ = ["ElasticNet", "ElasticNetCV", "Engine", "ImplicitMatrixFactorization", "Lasso",
           "LassoCV", "LatentDirichletAllocation", "LogisticRegression", "MatrixFactorization",
           "Program", "RatingsMatrix", "close_embedded_client", "embedded_client", "enet_path",
           "lasso_path", "load", "run_sequential", "save"]


def __getattr__(name):
    # Estimators pull in scikit-learn; workers, which import this package to run programs, don't
    # need it, so it is loaded on first use.
    if name in ("ElasticNet", "Lasso", "LatentDirichletAllocation", "MatrixFactorization"):
        from . import estimators

        return getattr(estimators, name)
    if name == "ImplicitMatrixFactorization":
        from .estimators.implicit_mf import ImplicitMatrixFactorization

        return ImplicitMatrixFactorization
    if name == "LogisticRegression":
        from .estimators.logistic import LogisticRegression

        return LogisticRegression
    if name in ("LassoCV", "ElasticNetCV"):
        from .estimators import cv

        return getattr(cv, name)
    if name in ("lasso_path", "enet_path"):
        from .estimators import paths

        return getattr(paths, name)
    if name == "RatingsMatrix":
        from .ratings import RatingsMatrix

        return RatingsMatrix
    if name in ("save", "load"):
        from . import persistence

        return getattr(persistence, name)
    raise AttributeError(f"module 'dask_strads' has no attribute {name!r}")
