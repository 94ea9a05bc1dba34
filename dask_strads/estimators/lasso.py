"""``dask_strads.Lasso``: scikit-learn's Lasso, the ``l1_ratio=1`` case of the elastic net."""
from .elastic_net import WORKING_SET, ElasticNet


class Lasso(ElasticNet):
    """Lasso by model-parallel coordinate descent with STRADS scheduling.

    Minimises ``(1 / (2 n)) ||y - Xw - b||^2 + alpha ||w||_1``, the objective of
    :class:`sklearn.linear_model.Lasso`: :class:`ElasticNet` with ``l1_ratio=1``, whose
    documentation describes the parameters, attributes and schedules.
    """

    _parameter_constraints = {name: constraint for name, constraint
                              in ElasticNet._parameter_constraints.items() if name != "l1_ratio"}

    def __init__(self, alpha=1.0, *, fit_intercept=True, max_iter=1000, tol=1e-4,
                 warm_start=False, positive=False, random_state=None, precompute=False,
                 copy_X=True, selection="cyclic", schedule=WORKING_SET, n_candidates=32,
                 dependency_threshold=0.1, priority_floor=0.1, priority_power=1,
                 sub_rounds=None, staleness=0, n_blocks=None, keep_on_cluster=False,
                 checkpoint_interval=10, checkpoint_dir=None, progress=False, callback=None):
        super().__init__(
            alpha, l1_ratio=1.0, fit_intercept=fit_intercept, precompute=precompute,
            max_iter=max_iter, copy_X=copy_X, tol=tol, warm_start=warm_start,
            positive=positive, random_state=random_state, selection=selection,
            schedule=schedule, n_candidates=n_candidates,
            dependency_threshold=dependency_threshold, priority_floor=priority_floor,
            priority_power=priority_power, sub_rounds=sub_rounds, staleness=staleness,
            n_blocks=n_blocks, keep_on_cluster=keep_on_cluster,
            checkpoint_interval=checkpoint_interval, checkpoint_dir=checkpoint_dir,
            progress=progress, callback=callback)
