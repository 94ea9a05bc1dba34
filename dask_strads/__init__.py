"""Model-parallel machine learning on Dask, after STRADS (Lee et al., NIPS 2014).

Every name below is imported on first use (``__getattr__``): ``import dask_strads`` loads
neither Dask's distributed scheduler nor scikit-learn, so a script, a worker or a command that
needs one estimator does not pay for the rest."""
import importlib
import importlib.util

__version__ = "0.1.0"

__all__ = ["BayesianPersonalizedRanking", "ElasticNet", "ElasticNetCV", "Engine",
           "GeneralizedLinearRegressor", "ImplicitMatrixFactorization", "Lasso",
           "LassoCV", "LatentDirichletAllocation", "LinearSVC", "LogisticRegression",
           "MatrixFactorization",
           "MedLDA",
           "Program", "RatingsMatrix", "close_embedded_client", "embedded_client", "enet_path",
           "lasso_path", "load", "run_sequential", "save"]


def __getattr__(name):
    if name in ("Engine", "close_embedded_client", "embedded_client"):
        from . import engine

        return getattr(engine, name)
    if name in ("Program", "run_sequential"):
        from . import programs

        return getattr(programs, name)
    if name in ("ElasticNet", "Lasso", "LatentDirichletAllocation", "MatrixFactorization"):
        from . import estimators

        return getattr(estimators, name)
    if name == "BayesianPersonalizedRanking":
        from .estimators.bpr import BayesianPersonalizedRanking

        return BayesianPersonalizedRanking
    if name == "ImplicitMatrixFactorization":
        from .estimators.implicit_mf import ImplicitMatrixFactorization

        return ImplicitMatrixFactorization
    if name == "MedLDA":
        from .estimators.medlda import MedLDA

        return MedLDA
    if name == "LogisticRegression":
        from .estimators.logistic import LogisticRegression

        return LogisticRegression
    if name == "GeneralizedLinearRegressor":
        from .estimators.generalized_linear import GeneralizedLinearRegressor

        return GeneralizedLinearRegressor
    if name == "LinearSVC":
        from .estimators.linear_svc import LinearSVC

        return LinearSVC
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
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a subpackage, e.g. dashboard
    raise AttributeError(f"module 'dask_strads' has no attribute {name!r}")
