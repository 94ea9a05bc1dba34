"""Sizes of the package's task values for Dask's memory accounting (``dask.sizeof.sizeof``).

Blocks, states and what the tasks pass on are dataclasses that Dask does not know: it would count
``sys.getsizeof`` of the instance, some 50 bytes whatever arrays it holds, and worker memory
limits, spilling and the dashboard's memory view would act on wrong numbers. One function, for
all of them, adds up their fields with Dask's own ``sizeof`` (numpy arrays, scipy sparse, ...)
through tuples, lists, dicts and nested dataclasses, plus the instance itself. An object reached
twice (a Lasso ``Pending`` kept by two states of a block) counts once.

Each module whose dataclasses live on workers as task values registers them where it defines
them, by calling :func:`register_dataclasses` at its end: an object can reach a process only
with its class's module imported, so the hook is there whenever such an object is.
"""
import dataclasses
import sys

from dask.sizeof import sizeof

_CONTAINERS = (tuple, list, set, frozenset)


def sizeof_dataclass(obj):
    """Bytes held by a dataclass instance: its fields, recursively, plus the instance (not the
    fields marked ``shared`` in their metadata: values Dask holds and sizes on their own)."""
    return _size(obj, set())


def _size(obj, seen):
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        own = sys.getsizeof(obj) + (sys.getsizeof(obj.__dict__) if hasattr(obj, "__dict__")
                                    else 0)
        return own + sum(_size(getattr(obj, f.name), seen) for f in dataclasses.fields(obj)
                         if not f.metadata.get("shared"))
    if type(obj) in _CONTAINERS:
        return sys.getsizeof(obj) + sum(_size(item, seen) for item in obj)
    if type(obj) is dict:
        return sys.getsizeof(obj) + sum(_size(k, seen) + _size(v, seen) for k, v in obj.items())
    return int(sizeof(obj))  # Dask's: numpy arrays, scipy sparse matrices, scalars, ...


def dataclasses_of(module):
    """The dataclasses a module defines (not those it imports)."""
    return [value for value in vars(module).values()
            if isinstance(value, type) and dataclasses.is_dataclass(value)
            and value.__module__ == module.__name__]


def register_dataclasses(module_name):
    """Register :func:`sizeof_dataclass` for the dataclasses the module ``module_name`` defines
    (called at the end of that module)."""
    for cls in dataclasses_of(sys.modules[module_name]):
        sizeof.register(cls, sizeof_dataclass)
