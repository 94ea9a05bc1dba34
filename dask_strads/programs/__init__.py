"""STRADS programs: schedule / push / pull, one per model. No Dask in here."""
from .base import Inbox, Instruction, Program, Report, Route, StopRule, run_sequential
from .jacobi import BlockJacobi, jacobi_blocks

# Dask's memory accounting for the blocks, states and task values (registered lazily): every
# import of the package, on a client or a worker, comes through here.
from .. import sizes  # noqa: F401

__all__ = ["BlockJacobi", "Inbox", "Instruction", "Program", "Report", "Route", "StopRule",
           "jacobi_blocks", "run_sequential"]
