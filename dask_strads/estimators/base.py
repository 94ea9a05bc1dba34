"""What every dask_strads estimator shares: where it runs, checking its hyperparameters, and
staying picklable and clonable."""
from sklearn.utils._param_validation import Interval

from ..engine.cluster import resolve_client


class NumberInterval(Interval):
    """scikit-learn's ``Interval`` that refuses bools: ``numbers.Integral`` and ``numbers.Real``
    include ``True`` and ``False``, which are no iteration count or penalty."""

    def is_satisfied_by(self, val):
        return not isinstance(val, bool) and super().is_satisfied_by(val)


class DaskEstimatorMixin:
    """Client handling as in xgboost.dask: ``client`` is a property, not a constructor parameter.

    A live ``distributed.Client`` cannot be pickled or deep-copied, so it is kept out of
    ``get_params`` (``sklearn.clone`` gives an estimator that runs on the default client) and out
    of the pickled state. Without a client the fit runs on the active client, else on the
    embedded local cluster.
    """

    @property
    def client(self):
        return getattr(self, "_client", None)

    @client.setter
    def client(self, client):
        self._client = client

    def _check_params(self):
        """Check the hyperparameters against the class's ``_parameter_constraints`` (raises
        scikit-learn's ``InvalidParameterError``, a ValueError and a TypeError); the first thing
        a fit does, before any cluster work."""
        self._validate_params()

    def _resolved_client(self):
        return resolve_client(self.client)

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_client", None)
        return state
