"""Model-parallel machine learning on Dask, after STRADS (Lee et al., NIPS 2014).

Every name below is imported on first use (``__getattr__``): ``import dask_strads`` loads
neither Dask's distributed scheduler nor scikit-learn, so a script, a worker or a command that
needs one estimator does not pay for the rest."""
import importlib
import importlib.util

__version__ = "0.1.0"

#: Each public name and the module that defines it, imported on first use.
_HOMES = {
    "BayesianPersonalizedRanking": "estimators.bpr", "ElasticNet": "estimators.elastic_net",
    "ElasticNetCV": "estimators.cv", "Engine": "engine", "GeneralizedLinearRegressor":
    "estimators.generalized_linear", "ImplicitMatrixFactorization": "estimators.implicit_mf",
    "Lasso": "estimators.lasso", "LassoCV": "estimators.cv",
    "LatentDirichletAllocation": "estimators.lda", "LinearSVC": "estimators.linear_svc",
    "LogisticRegression": "estimators.logistic", "MatrixFactorization": "estimators.mf",
    "MedLDA": "estimators.medlda", "Program": "programs", "RatingsMatrix": "ratings",
    "SamplingSchedule": "estimators.sampling_schedule", "close_embedded_client": "engine",
    "embedded_client": "engine", "enet_path": "estimators.paths",
    "lasso_path": "estimators.paths", "load": "persistence", "run_sequential": "programs",
    "save": "persistence",
}
__all__ = sorted(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a subpackage, e.g. dashboard
    raise AttributeError(f"module 'dask_strads' has no attribute {name!r}")
