"""Model-agnostic execution of STRADS programs on Dask."""
from .errors import ClusterError, PeerUnreachable, WorkerLost, WorkerPaused
from .executors import DistributedExecutor, LocalExecutor
from .history import FitStats, History
from .runner import Engine, EngineResult
from .runtime import close_embedded_client, embedded_client, executor_for

__all__ = [
    "ClusterError", "DistributedExecutor", "Engine", "EngineResult", "FitStats", "History",
    "LocalExecutor", "PeerUnreachable", "WorkerLost", "WorkerPaused", "close_embedded_client",
    "embedded_client", "executor_for",
]
