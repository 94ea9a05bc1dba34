"""STRADS programs: schedule / push / pull, one per model. No Dask in here."""
from .base import Program, run_sequential
from .jacobi import BlockJacobi, jacobi_blocks

__all__ = ["BlockJacobi", "Program", "jacobi_blocks", "run_sequential"]
