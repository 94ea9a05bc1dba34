"""A round's graph as the engine builds it: tasks grouped by the worker they are pinned to."""
from .compat import Task, TaskRef, parse_input


class RoundGraph:
    """The tasks of one graph, ``{worker: {key: Task}}`` (:attr:`layers`, what an executor
    submits). The engine, its checkpoints and its disk writes add their tasks here."""

    def __init__(self):
        self.layers = {}
        self._held = []

    def hold(self, handle):
        """``handle`` (of a value placed for this graph's tasks), kept until the graph is
        submitted: a local executor forgets a value nobody holds."""
        self._held.append(handle)
        return handle

    def add(self, worker, key, function, *args):
        """Add the task ``function(*args)`` under ``key``, pinned to ``worker``; returns a
        reference to it. References inside tuples, lists and dicts of ``args`` count as
        dependencies too."""
        self.layers.setdefault(worker, {})[key] = Task(key, function, *map(parse_input, args))
        return TaskRef(key)

    @property
    def n_tasks(self):
        return sum(map(len, self.layers.values()))
