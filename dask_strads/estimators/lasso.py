"""``dask_strads.Lasso``: scikit-learn's Lasso, the ``l1_ratio=1`` case of the elastic net."""
import os
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from .elastic_net import WORKING_SET, ElasticNet
from .sampling_schedule import SamplingSchedule


class Lasso(ElasticNet):
    """Lasso by model-parallel coordinate descent with STRADS scheduling.

    Minimises ``(1 / (2 n)) ||y - Xw - b||^2 + alpha ||w||_1``, the objective of
    :class:`sklearn.linear_model.Lasso`: :class:`ElasticNet` with ``l1_ratio=1``, whose
    documentation describes the parameters, attributes and schedules.
    """

    _parameter_constraints = {name: constraint for name, constraint
                              in ElasticNet._parameter_constraints.items() if name != "l1_ratio"}

    def __init__(self, alpha: float = 1.0, *, fit_intercept: bool = True, max_iter: int = 1000,
                 tol: float = 1e-4, warm_start: bool = False, positive: bool = False,
                 random_state: int | np.random.RandomState | None = None,
                 precompute: bool | Literal["auto"] | ArrayLike = False, copy_X: bool = True,
                 selection: Literal["cyclic", "random"] = "cyclic",
                 schedule: Literal["working_set", "priority", "cyclic", "random"]
                 | SamplingSchedule = WORKING_SET, n_blocks: int | None = None,
                 keep_on_cluster: bool = False, checkpoint_interval: int = 10,
                 checkpoint_dir: str | os.PathLike | None = None,
                 progress: bool | Literal["plot"] = False,
                 callback: Callable[..., Any] | None = None) -> None:
        super().__init__(
            alpha, l1_ratio=1.0, fit_intercept=fit_intercept, precompute=precompute,
            max_iter=max_iter, copy_X=copy_X, tol=tol, warm_start=warm_start,
            positive=positive, random_state=random_state, selection=selection,
            schedule=schedule, n_blocks=n_blocks, keep_on_cluster=keep_on_cluster,
            checkpoint_interval=checkpoint_interval, checkpoint_dir=checkpoint_dir,
            progress=progress, callback=callback)
