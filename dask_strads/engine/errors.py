"""What the engine raises when the cluster cannot carry a fit on."""


class ClusterError(RuntimeError):
    """The cluster lost what a fit needs: a worker holding blocks, or the scheduler
    (``workers``: the addresses of the workers at fault, if any)."""

    def __init__(self, message, workers=()):
        super().__init__(message)
        self.workers = list(workers)

    def __reduce__(self):  # raised in a task, it travels to the client with its workers
        return type(self), (str(self), self.workers)


class WorkerLost(ClusterError):
    """Workers holding blocks of a fit left the cluster: the fit can go on without them."""


class WorkerPaused(ClusterError):
    """A worker holding blocks of a fit stayed paused by Dask's memory manager past a bound."""


class PeerUnreachable(ClusterError):
    """A push could not fetch a message or a carried block from the worker holding it (see
    :mod:`.plane`): that worker is gone, or does not answer."""
