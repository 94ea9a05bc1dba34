"""Carried blocks parked on a worker between two pushes, within a memory budget.

A push leaves the carried block it made in its cell's outbox until the next push that takes it
fetches it (see :mod:`.plane`). In LDA's word rotation a block waits there for about ``U / P``
sub-rounds, so a worker parks its share of the word-topic table: more than its memory when the
table is larger than the cluster's. Parked blocks are no values of Dask's store, which would
spill them; so the plane spills them itself. On a worker with a memory limit the blocks parked
there may take :data:`PARKED_SHARE` of it; a block parked beyond that goes to the worker's local
directory (pickled: a vocabulary block as its nonzero counts) and is read back when it is taken.
The newest block is the one that goes: blocks are taken in the order they were parked, so the
newest is the last to be needed. Messages need no such budget: they are made when a push asks
for one, and a worker holds one for as long as it takes to send it.
"""
import itertools
import os
import pickle
import shutil
from collections.abc import MutableMapping

from dask.sizeof import sizeof

#: The share of a worker's memory limit that blocks parked on it may take.
PARKED_SHARE = 0.2

_PARKINGS: dict[str, "Parking"] = {}  # worker address -> its Parking, in this process
_COUNTS = itertools.count()


class Parking:
    """The blocks parked on one worker: in memory up to ``budget`` bytes, the rest in
    ``directory``. ``spilled`` counts the blocks that went to disk."""

    def __init__(self, budget, directory):
        self.budget = budget
        self.directory = directory
        self.in_memory = {}  # key -> (value, bytes)
        import zict  # here: only a worker of a cluster parks blocks

        self.on_disk = zict.Func(_dumped, pickle.loads, zict.File(directory))
        self.bytes = 0
        self.spilled = 0

    def put(self, key, value):
        self.discard(key)
        size = sizeof(value)
        if self.bytes + size > self.budget:
            self.on_disk[key] = value
            self.spilled += 1
        else:
            self.in_memory[key] = (value, size)
            self.bytes += size

    def get(self, key):
        if key in self.in_memory:
            return self.in_memory[key][0]
        return self.on_disk[key]

    def discard(self, key):
        if key in self.in_memory:
            self.bytes -= self.in_memory.pop(key)[1]
        elif key in self.on_disk:
            del self.on_disk[key]

    def keys(self):
        return [*self.in_memory, *self.on_disk]

    def close(self):
        self.in_memory.clear()
        shutil.rmtree(self.directory, ignore_errors=True)


def _dumped(value):
    return pickle.dumps(value, protocol=5)


class Outbox(MutableMapping):
    """A cell's outbox whose entries are parked in its worker's :class:`Parking`."""

    def __init__(self, parking, entries=()):
        self._parking = parking
        self._prefix = f"cell{next(_COUNTS)}-"
        self._names = {}  # entry -> its key in the parking
        self.update(entries)

    def __setitem__(self, name, value):
        self._names[name] = f"{self._prefix}{name}"
        self._parking.put(self._names[name], value)

    def __getitem__(self, name):
        return self._parking.get(self._names[name])

    def __delitem__(self, name):
        self._parking.discard(self._names.pop(name))

    def __iter__(self):
        return iter(list(self._names))

    def __len__(self):
        return len(self._names)


@sizeof.register(Outbox)
def _sizeof_outbox(outbox):
    return sum(sizeof(outbox[name]) for name in outbox
               if outbox._names[name] in outbox._parking.in_memory)


def outbox_on(worker, entries):
    """An outbox for a cell on ``worker`` holding ``entries``: parked within the worker's
    budget when it has a memory limit, else a plain dict."""
    limit = worker.memory_manager.memory_limit
    if not limit:
        return dict(entries)
    parking = _PARKINGS.get(worker.address)
    if parking is None:
        directory = os.path.join(worker.local_directory, "strads-parked")
        os.makedirs(directory, exist_ok=True)
        parking = _PARKINGS[worker.address] = Parking(PARKED_SHARE * limit, directory)
    return Outbox(parking, entries)


def spilled_on(worker):
    """How many parked blocks went to disk on ``worker``."""
    parking = _PARKINGS.get(worker.address)
    return parking.spilled if parking else 0


def close(worker):
    parking = _PARKINGS.pop(worker.address, None)
    if parking is not None:
        parking.close()
