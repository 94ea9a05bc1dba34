"""Model-agnostic execution of STRADS programs on Dask."""
from .blocks import PinnedBlock, futures_to_array, place_blocks, worker_addresses
from .cluster import close_embedded_client, embedded_client, resolve_client
from .history import FitStats, History
from .runner import Engine, EngineResult

__all__ = [
    "Engine", "EngineResult", "FitStats", "History", "PinnedBlock", "close_embedded_client",
    "embedded_client", "futures_to_array", "place_blocks", "resolve_client", "worker_addresses",
]
