"""What each estimator's state may hold in a model file: its attributes, their kinds, dtypes and
shapes, and the classes of the objects among them. :func:`read_state` reads a file's state
against it, building no class it does not name.

A shape is a tuple of sizes: a number, ``None`` (any), or a name. A name is a dimension: an
integer parameter of the estimator (``n_components``), an integer attribute that declares it
(``n_features_in_``), or one the first array to use it fixes (``users``); every later use must
agree. A list of shapes allows any of them.
"""
import numbers

import numpy as np
import scipy.sparse as sp

from .engine import storage


class Invalid(ValueError):
    """An attribute that does not match its spec: ``where`` (a path inside it) and why."""

    def __init__(self, problem, where=""):
        super().__init__(problem)
        self.problem, self.where = problem, where

    @property
    def message(self):
        return f"{self.where} {self.problem}" if self.where else self.problem

    def inside(self, step):
        return Invalid(self.problem, step + self.where)


class Spec:
    """A kind of value: ``check(value, dims)`` raises :class:`Invalid`; ``classes`` are the
    names of the classes a value of it is built of."""

    classes = frozenset()

    def check(self, value, dims):
        raise NotImplementedError


class Int(Spec):
    """An integer >= ``low``; with ``dim``, the size of that dimension."""

    def __init__(self, low=0, dim=None):
        self.low, self.dim = low, dim

    def check(self, value, dims):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise Invalid(f"is {_kind(value)}, expected an integer")
        if value < self.low:
            raise Invalid(f"is {value}, expected at least {self.low}")
        if self.dim is not None:
            _bind(dims, self.dim, int(value))


class Real(Spec):
    def check(self, value, dims):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise Invalid(f"is {_kind(value)}, expected a number")


class Bool(Spec):
    def check(self, value, dims):
        if not isinstance(value, (bool, np.bool_)):
            raise Invalid(f"is {_kind(value)}, expected True or False")


class Equal(Spec):
    def __init__(self, value):
        self.value = value

    def check(self, value, dims):
        if type(value) is not type(self.value) or value != self.value:
            raise Invalid(f"is {value!r}, expected {self.value!r}")


class Optional(Spec):
    """None, or a value of ``spec``."""

    def __init__(self, spec):
        self.spec, self.classes = spec, spec.classes

    def check(self, value, dims):
        if value is not None:
            self.spec.check(value, dims)


class Plain(Spec):
    """None, a bool, number or str, or lists, tuples and dicts of them (records, reports)."""

    def check(self, value, dims):
        if isinstance(value, (list, tuple)):
            for item in value:
                self.check(item, dims)
        elif isinstance(value, dict):
            for key, item in value.items():
                self.check(key, dims)
                self.check(item, dims)
        elif not (value is None or isinstance(value, (bool, numbers.Real, str))):
            raise Invalid(f"holds {_kind(value)}, expected plain values")


class Rows(Spec):
    """A list of dicts of plain values (a history's records)."""

    def check(self, value, dims):
        if not (isinstance(value, list) and all(isinstance(row, dict) for row in value)):
            raise Invalid(f"is {_kind(value)}, expected a list of dicts")
        Plain().check(value, dims)


class Array(Spec):
    """A numpy array whose dtype is of one of the ``kinds`` (``O``: str objects), of
    ``shape`` (or one of a list of shapes); integers: with ``below``, each is in
    ``[0, below)``, ``below`` a dimension."""

    def __init__(self, kinds, shape, below=None):
        self.kinds, self.shapes, self.below = kinds, _shapes(shape), below

    def check(self, value, dims):
        if not isinstance(value, np.ndarray):
            raise Invalid(f"is {_kind(value)}, expected an array")
        if value.dtype.kind not in self.kinds or (
                value.dtype.kind == "O" and not all(isinstance(v, str) for v in value.flat)):
            raise Invalid(f"has dtype {value.dtype}, expected {_kinds(self.kinds)}")
        _check_shape(value.shape, self.shapes, dims)
        if self.below is not None and value.size and (
                value.min() < 0 or value.max() >= dims[self.below]):
            raise Invalid(f"holds values in [{value.min()}, {value.max()}], expected them in "
                          f"[0, {self.below} = {dims[self.below]})")


class Sparse(Spec):
    """A CSR or CSC matrix of dtype of ``kinds`` and of ``shape``."""

    def __init__(self, kinds, shape):
        self.kinds, self.shapes = kinds, _shapes(shape)

    def check(self, value, dims):
        if not (sp.issparse(value) and value.format in ("csr", "csc")):
            raise Invalid(f"is {_kind(value)}, expected a CSR or CSC matrix")
        if value.dtype.kind not in self.kinds:
            raise Invalid(f"has dtype {value.dtype}, expected {_kinds(self.kinds)}")
        _check_shape(value.shape, self.shapes, dims)


class Mapping(Spec):
    """A dict with exactly the keys of ``entries``, each value of its spec."""

    def __init__(self, **entries):
        self.entries = entries
        self.classes = frozenset().union(*(spec.classes for spec in entries.values()))

    def check(self, value, dims):
        if not isinstance(value, dict) or set(value) != set(self.entries):
            raise Invalid(f"is {_kind(value)}, expected a dict of {sorted(self.entries)}")
        for key, spec in self.entries.items():
            _check_in(spec, value[key], dims, f"[{key!r}]")


class Instance(Spec):
    """An instance of exactly ``cls`` (a dataclass or an object of storage.STORABLE) whose
    attributes are exactly ``fields``, each of its spec, and any of ``added`` (attributes
    newer than some model files, which then take the class's default)."""

    def __init__(self, cls, added=None, **fields):
        self.cls, self.fields, self.added = cls, fields, added or {}
        self.classes = frozenset({f"{cls.__module__}:{cls.__qualname__}"}).union(
            *(spec.classes for spec in [*fields.values(), *self.added.values()]))

    def check(self, value, dims):
        if type(value) is not self.cls:
            raise Invalid(f"is {_kind(value)}, expected a {self.cls.__name__}")
        names = set(vars(value))
        if not set(self.fields) <= names <= set(self.fields) | set(self.added):
            raise Invalid(f"has the attributes {sorted(vars(value))}, expected "
                          f"{sorted(self.fields)}")
        for name, spec in {**self.fields, **self.added}.items():
            if name in names:
                _check_in(spec, getattr(value, name), dims, f".{name}")


class State:
    """An estimator's state in a model file. ``always``: attributes even an unfitted one has;
    ``fitted``: all of them or none (not fitted); ``optional``: present or not in a fitted
    one; ``retired``: what older model files of a fitted one hold and this version no longer
    keeps, checked as the rest and then left out. ``checks``: ``check(attributes, estimator,
    dims)`` functions of a fitted state, each returning what is wrong or None."""

    def __init__(self, fitted, always=None, optional=None, retired=None, checks=()):
        self.fitted, self.always, self.optional = fitted, always or {}, optional or {}
        self.retired = retired or {}
        self.checks = checks
        self.specs = {**self.always, **self.fitted, **self.optional, **self.retired}


def read_state(state, nodes, arrays, estimator):
    """The attributes ``nodes`` (of :func:`storage.entries`) describe, built and checked
    against ``state`` for ``estimator`` (built from the file's parameters). Raises
    :class:`Invalid` naming the attribute."""
    name = type(estimator).__name__
    unknown = sorted(set(nodes) - set(state.specs), key=str)
    if unknown:
        raise Invalid(f"{name} has no attribute {unknown[0]!r} a model file may hold")
    fitted = bool(set(state.fitted) & set(nodes))
    expected = set(state.always) | (set(state.fitted) if fitted else set())
    missing = sorted(expected - set(nodes))
    if missing:
        raise Invalid(f"{name}.{missing[0]} is missing")
    stray = sorted((set(state.optional) | set(state.retired)) & set(nodes)) if not fitted else []
    if stray:
        raise Invalid(f"{name}.{stray[0]} is there, but {name} is not fitted")
    dims = {k: v for k, v in estimator.get_params().items()
            if isinstance(v, numbers.Integral) and not isinstance(v, bool)}
    values = {}
    for attribute, spec in state.specs.items():  # in order: dimensions first
        if attribute in nodes:
            try:
                value = storage.decode(nodes[attribute], arrays, spec.classes)
            except storage.StorageError as error:
                raise Invalid(f"cannot be read: {error}", f"{name}.{attribute}") from None
            _check_in(spec, value, dims, f"{name}.{attribute}")
            values[attribute] = value
    if fitted:
        for check in state.checks:
            problem = check(values, estimator, dims)
            if problem:
                raise Invalid(f"{name}: {problem}")
    return {attribute: value for attribute, value in values.items()
            if attribute not in state.retired}


def _check_in(spec, value, dims, step):
    try:
        spec.check(value, dims)
    except Invalid as invalid:
        raise invalid.inside(step) from None


def _bind(dims, name, size):
    if dims.setdefault(name, size) != size:
        raise Invalid(f"gives {name} = {size}, where it is {dims[name]}")


def _shapes(shape):
    return shape if isinstance(shape, list) else [shape]


def _check_shape(shape, allowed, dims):
    for expected in allowed:
        trial = dict(dims)
        if len(shape) == len(expected) and all(
                _fits(size, want, trial) for size, want in zip(shape, expected)):
            dims.update(trial)
            return
    shown = " or ".join(_shown(expected, dims) for expected in allowed)
    raise Invalid(f"has shape {shape}, expected {shown}")


def _fits(size, want, dims):
    if want is None:
        return True
    if isinstance(want, int):
        return size == want
    return dims.setdefault(want, size) == size


def _shown(expected, dims):
    sizes = ["any" if want is None else str(want) if isinstance(want, int)
             else f"{want}={dims[want]}" if want in dims else want for want in expected]
    return f"({', '.join(sizes)}{',' if len(sizes) == 1 else ''})"


def _kind(value):
    return "None" if value is None else f"a {type(value).__name__}"


def _kinds(kinds):
    names = {"b": "bool", "i": "int", "u": "uint", "f": "float", "U": "str", "O": "str"}
    return " or ".join(dict.fromkeys(names[k] for k in kinds))
