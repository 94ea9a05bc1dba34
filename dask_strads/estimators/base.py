"""What every dask_strads estimator shares: where it runs, checking its hyperparameters, running
the engine, keeping or gathering the fitted parameters, and staying picklable and clonable."""
import os
import warnings
from contextlib import nullcontext
from functools import partial
from numbers import Integral
from typing import Any

import numpy as np
from dask.base import tokenize
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_random_state, validate_data

from ..engine import Engine
from ..engine.disk import check_writable
from ..engine.progress import watchers
from ..engine.callbacks import call_back
from ..engine.runtime import executor_for
from .inputs import is_dask_array


class NumberInterval(Interval):
    """scikit-learn's ``Interval`` that refuses bools: ``numbers.Integral`` and ``numbers.Real``
    include ``True`` and ``False``, which are no iteration count or penalty."""

    def is_satisfied_by(self, val):
        return not isinstance(val, bool) and super().is_satisfied_by(val)


#: The hyperparameters every estimator has, checked alike (merged into each
#: ``_parameter_constraints``).
SHARED_CONSTRAINTS = {
    "max_iter": [NumberInterval(Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
    "keep_on_cluster": ["boolean"],
    "checkpoint_interval": [NumberInterval(Integral, 0, None, closed="left")],
    "checkpoint_dir": [str, os.PathLike, None],
    "progress": ["boolean", StrOptions({"plot"})],
    "callback": [callable, None],
}


#: Stored values (non-zeros, or entries of a dense X) per feature block by default. Below this a
#: second block did not pay on a 2-core machine (docs/lasso.md): a round's full pass is too short
#: to hide what a block adds (a Dask task, its residual; on worker processes, its data sent), and
#: the blocks of a logistic fit interfere (3M stored values of text: one block 4.3 s, two 10.8 s).
STORED_VALUES_PER_BLOCK = 10_000_000


def default_block_count(stored_values, n_workers):
    """Feature blocks of a fit that was not given ``n_blocks``: one per
    ``STORED_VALUES_PER_BLOCK`` stored values, at least one, at most one per worker; one per
    worker when the size is unknown (``None``: a dask array, already spread over them)."""
    if stored_values is None:
        return n_workers
    return max(1, min(n_workers, stored_values // STORED_VALUES_PER_BLOCK))


#: Parameters that change how a fit runs or reports, not its model.
_RUN_ONLY = {"max_iter", "keep_on_cluster", "checkpoint_interval", "checkpoint_dir", "progress",
             "callback"}


class DaskEstimatorMixin:
    """Where a fit runs, and the engine run every estimator makes.

    ``client`` is a property, not a constructor parameter, as in xgboost.dask: a live
    ``distributed.Client`` cannot be pickled or deep-copied, so it stays out of ``get_params``
    (``sklearn.clone`` gives an estimator that runs on the default choice) and out of pickles.
    Without one a fit runs on the active client, else in this process when it is small or a
    local Dask scheduler is configured, else on the embedded cluster.

    With ``keep_on_cluster=True`` the fitted parameters stay on the workers as Dask arrays
    whose chunks are the blocks; the estimator's own methods compute them through the fit's
    client, and pickling gathers them.
    """

    @property
    def client(self) -> Any:
        """The client set with ``est.client = client``; else, after a fit on a cluster, the
        client it ran on (its dashboard: ``est.client.dashboard_link``)."""
        explicit = self._client
        return explicit if explicit is not None else getattr(self._executor, "client", None)

    @client.setter
    def client(self, client: Any) -> None:
        self._client = client

    @property
    def dashboard_link(self) -> str | None:
        """The STRADS page of the cluster the last fit ran on (the fits on that cluster, their
        rounds, objective and gap, and what each worker computed; Dask's own dashboard is
        beside it, at ``status``); None for a fit in this process."""
        from ..dashboard import strads_link

        client = getattr(self._executor, "client", None)
        return None if client is None or _closed(client) else strads_link(client)

    _client = None
    _executor = None  # where the last fit ran

    def _check_params(self):
        """Check the hyperparameters against the class's ``_parameter_constraints`` (raises
        scikit-learn's ``InvalidParameterError``, a ValueError and a TypeError), the client and
        that ``checkpoint_dir`` can be written; the first thing a fit does, before any cluster
        work."""
        self._validate_params()
        self._check_client()
        if self.checkpoint_dir is not None and self.checkpoint_interval:
            check_writable(self.checkpoint_dir)

    def _check_client(self):
        if self._client is not None and _closed(self._client):
            raise ValueError("the client set on this estimator is closed: set est.client to a "
                             "live client or None")

    def _reset_features(self, X):
        """``n_features_in_`` and ``feature_names_in_`` of the X a fit was given: set last, so
        that a fit that fails leaves the estimator as it was."""
        validate_data(self, X, reset=True, skip_check_array=True)

    def _seed(self):
        return int(check_random_state(self.random_state).randint(2**31 - 1))

    def _fit_executor(self, stored_entries):
        """Where a new fit runs (see the class docstring)."""
        self._check_client()
        return executor_for(self._client, stored_entries)

    def _data_executor(self, stored_entries=None):
        """Where to compute on data after a fit: the client set, else the fit's cluster while it
        runs."""
        fitted_on = self._executor
        if (self._client is None and fitted_on is not None
                and not _closed(getattr(fitted_on, "client", None))):
            return fitted_on
        return self._fit_executor(stored_entries)

    def _run_engine(self, program, blocks, executor, max_rounds, data, staleness=0,
                    slots=None, stopping=None, watched=True):
        """Run ``program`` on ``blocks`` (cut from ``data``, the fit's arguments): a
        ``distributed.span`` named after the estimator on a cluster, watched as ``progress``
        asks (an iteration being ``max_rounds / max_iter`` rounds) and by the cluster's STRADS
        page, with a checkpoint every ``checkpoint_interval`` iterations. ``stopping``: the
        estimator's own stop test, a function of the user's callback (or None) giving the
        engine's callback, which must call it. ``watched=False``: no progress of its own (a run
        of a search that one bar watches as a whole)."""
        name = type(self).__name__
        rounds_per_iteration = max(1, max_rounds // self.max_iter)
        watching = watchers(self.progress if watched else False, name, max_rounds,
                            rounds_per_iteration, program)
        client = executor.client
        on_cluster = nullcontext()
        if client is not None:
            from distributed import span

            from ..dashboard import DashboardFeed, install

            on_cluster = span(name)
            if install(client):
                watching.append(DashboardFeed(client, name, program.name, max_rounds,
                                              rounds_per_iteration))
        callback = None if self.callback is None else StopNoting(self.callback)
        if stopping is not None:
            callback = stopping(callback)
        engine = Engine(program, staleness=staleness, max_rounds=max_rounds,
                        progress=watching, callback=callback, executor=executor,
                        checkpoint_interval=self.checkpoint_interval * rounds_per_iteration,
                        checkpoint_dir=self.checkpoint_dir,
                        fingerprint=partial(self._fingerprint, data, program.seed, len(blocks)))
        with on_cluster:
            return engine.run(blocks, slots)

    @staticmethod
    def _warn_unless_converged(history, message):
        """A ConvergenceWarning saying ``message``, unless the fit met its tolerance or its
        callback stopped it (a stop asked for is no failure to converge)."""
        if not (history.stats.converged
                or any(record.get("stopped_by_callback") for record in history)):
            warnings.warn(message, ConvergenceWarning, stacklevel=3)

    def _fingerprint(self, data, seed, n_blocks):
        """What a checkpoint on disk must match to be resumed (``max_iter`` may grow)."""
        params = {k: v for k, v in self.get_params().items() if k not in _RUN_ONLY}
        return {"data": tokenize(*data), "hyperparameters": tokenize(sorted(params.items())),
                "seed": seed, "blocks": n_blocks}

    def _parameters(self, result, carried=False):
        """The fitted parameter blocks (or carried blocks) as one array along the first axis: a
        Dask array left on the workers with ``keep_on_cluster``, else in memory."""
        if getattr(self, "keep_on_cluster", False):
            return result.carried_parameters() if carried else result.parameters()
        return np.concatenate(result.gather_carried() if carried else result.gather())

    def _in_memory(self, value):
        """A fitted array in memory: computed through the fit's client when kept on it."""
        if not is_dask_array(value):
            return value
        if self._executor is None:
            return value.compute()
        try:
            return np.asarray(self._executor.compute(value)[0])
        except Exception as error:
            raise RuntimeError(
                f"{type(self).__name__} was fitted with keep_on_cluster=True and its parameters "
                "cannot be read from the cluster any more (closed, or its workers lost): refit, "
                "or pickle it while the cluster runs (pickling gathers them)") from error

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_client", None)
        state.pop("_executor", None)
        for name, value in state.items():
            if is_dask_array(value):  # futures of one cluster mean nothing in a pickle
                state[name] = self._in_memory(value)
        return state


class StopNoting:
    """A fit's callback (called as the engine calls one) that marks the round's record
    ``stopped_by_callback`` when it returns True. The fit runs a graph a round, so that the
    stop is exact (a fused epoch's hub hears of it rounds late), unless the user's callback
    says it needs no round graphs (an attribute ``round_graphs = False``: a callback that only
    watches)."""

    def __init__(self, callback):
        self.callback = callback
        self.round_graphs = getattr(callback, "round_graphs", True)

    def __call__(self, record, running):
        stop = call_back(self.callback, record, running)
        if stop:
            record["stopped_by_callback"] = True
        return stop


def _closed(client):
    return getattr(client, "status", None) in ("closing", "closed")
