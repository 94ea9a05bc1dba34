"""What every dask_strads estimator shares: where it runs, and staying picklable and clonable."""
from ..engine.cluster import resolve_client


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

    def _resolved_client(self):
        return resolve_client(self.client)

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_client", None)
        return state
