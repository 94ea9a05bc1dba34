"""STRADS programs: schedule / push / pull, one per model. No Dask in here."""
from .base import Inbox, Instruction, Program, Report, Route, StopRule, run_sequential
from .jacobi import BlockJacobi, jacobi_blocks

__all__ = ["BlockJacobi", "Inbox", "Instruction", "Program", "Report", "Route", "StopRule",
           "jacobi_blocks", "run_sequential"]
