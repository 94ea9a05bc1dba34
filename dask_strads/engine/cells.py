"""Block cells kept in their worker's memory, out of Dask's data store.

A cell (:class:`~.tasks.BlockCell`: a block's prepared data and state) changes in place at every
push. As a value in Dask's store it could be spilled to disk by Dask's memory manager: the next
task would read a copy unpickled from disk, a push would change that copy, and the stored one,
which later tasks read, would miss the change (a lost carried block, a wrong model). So on a
Dask worker the store holds a :class:`CellRef`, a few bytes that name the cell, and the cell
lives in this module's registry of the worker process, found by the task's key: spilling and
reloading the reference leaves the cell where it is.

Dask never spills a cell then. It sizes a reference as its cell (``sizeof``, when the task that
made it ends), so that its managed memory and the dashboard count the cells; spilling a reference
writes a few bytes and frees nothing, after which Dask counts the cell as unmanaged memory, which
its spill and pause thresholds (on the process's memory) still see. A cell leaves the registry
when Dask releases its key (:class:`.worker_plugins.ReleaseCells`, installed on a worker with its
first cell, beside the handler through which other workers read the cells:
:class:`.worker_plugins.ServePlane`).
Local executors run in one process and never spill: their cells are the task values themselves.
"""
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dask.sizeof import sizeof

from . import boards, parking
from .compat import add_plugin_here, current_worker

if TYPE_CHECKING:
    from .tasks import BlockCell

#: The cells of this process's Dask worker(s), by the key of the task that made each.
_CELLS: dict[str, "BlockCell"] = {}
_INSTALLING = threading.Lock()
PLUGIN_NAME = "dask-strads-cells"
PLANE_PLUGIN_NAME = "dask-strads-plane"


@dataclass(frozen=True)
class CellRef:
    """What Dask stores for a cell: the key it is registered under."""

    key: str


@sizeof.register(CellRef)
def _sizeof_cell(ref):
    cell = _CELLS.get(ref.key)
    return sys.getsizeof(ref) + (0 if cell is None else sizeof(cell))


def keep(cell, key):
    """The value the task ``key`` returns for ``cell``: a :class:`CellRef` when a Dask worker
    runs that task (the cell registered under its key), else the cell itself (a local executor,
    in this process or inside a Dask task of another key)."""
    worker = current_worker()
    if worker is None or worker.get_current_task() != key:
        return cell
    _install(worker)
    cell.outbox = parking.outbox_on(worker, cell.outbox)
    _CELLS[key] = cell
    return CellRef(key)


def local_cell(value):
    """The cell ``value`` stands for if it is in this process (a local executor's cell, or one
    of this process's workers'), else None."""
    if not isinstance(value, CellRef):
        return value
    return _CELLS.get(value.key)


def opened(value):
    """The cell a task's argument stands for."""
    if not isinstance(value, CellRef):
        return value
    try:
        return _CELLS[value.key]
    except KeyError:
        raise RuntimeError(f"the block cell {value.key} is not on this worker (released, or "
                           "its reference was moved to another worker)") from None


def drop(key):
    """Drop the cell of ``key`` from the registry, with the blocks it parked and its boards."""
    cell = _CELLS.pop(key, None)
    if cell is not None:
        cell.outbox.clear()  # blocks it parked
        boards.drop_with_cell(key)


def _install(worker):
    from .worker_plugins import ReleaseCells, ServePlane

    with _INSTALLING:
        add_plugin_here(worker, ReleaseCells(), PLUGIN_NAME)
        add_plugin_here(worker, ServePlane(), PLANE_PLUGIN_NAME)
