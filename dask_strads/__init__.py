"""Model-parallel machine learning on Dask, after STRADS (Lee et al., NIPS 2014)."""
from .engine import Engine, close_embedded_client, embedded_client
from .estimators import Lasso
from .programs import Program, run_sequential

__version__ = "0.1.0"

__all__ = ["Engine", "Lasso", "Program", "close_embedded_client", "embedded_client", "run_sequential"]
