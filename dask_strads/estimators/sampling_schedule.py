"""The STRADS sampling schedules of the Lasso as one value of its ``schedule`` parameter."""
from dataclasses import asdict, dataclass
from numbers import Integral, Real
from typing import Literal

from sklearn.utils._param_validation import Options, StrOptions, validate_parameter_constraints

from ..programs.lasso import SCHEDULES
from .base import NumberInterval

#: What each field takes.
CONSTRAINTS = {
    "kind": [StrOptions(set(SCHEDULES))],
    "n_candidates": [NumberInterval(Integral, 1, None, closed="left")],
    "dependency_threshold": [NumberInterval(Real, 0, None, closed="neither")],
    "priority_floor": [NumberInterval(Real, 0, None, closed="left")],
    "priority_power": [Options(Integral, {1, 2})],
    "sub_rounds": [NumberInterval(Integral, 1, None, closed="left"), None],
    "staleness": [NumberInterval(Integral, 0, None, closed="left")],
}


@dataclass(frozen=True)
class SamplingSchedule:
    """The STRADS sub-rounds of the paper, for ``Lasso(schedule=...)`` and
    ``ElasticNet(l1_ratio=1, schedule=...)``: each sub-round samples ``n_candidates``
    coordinates a block, drops those correlated with another kept one by
    ``dependency_threshold`` or more, and updates the rest in parallel. The strings
    ``"priority"``, ``"cyclic"`` and ``"random"`` given as ``schedule`` are these schedules with
    the defaults below.

    Attributes
    ----------
    kind : {"priority", "cyclic", "random"}
        How coordinates are sampled: by dynamic priority (the paper's), or its ablations.
    n_candidates : int
        Coordinates sampled per sub-round and block.
    dependency_threshold : float
        ``rho``: coordinates updated together have |correlation| below it; 1 disables the
        check.
    priority_floor : float
        ``eta``: the base weight of a coordinate, relative to the mean priority.
    priority_power : {1, 2}
        Priority ``|delta beta|`` (1) or ``delta beta ** 2`` (2).
    sub_rounds : int or None
        Sub-rounds per block and round; None adapts them.
    staleness : int
        Rounds a block may run ahead of the shared residual.
    """

    kind: Literal["priority", "cyclic", "random"] = "priority"
    n_candidates: int = 32
    dependency_threshold: float = 0.1
    priority_floor: float = 0.1
    priority_power: Literal[1, 2] = 1
    sub_rounds: int | None = None
    staleness: int = 0

    def __post_init__(self):
        validate_parameter_constraints(CONSTRAINTS, asdict(self), type(self).__name__)
