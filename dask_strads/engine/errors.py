"""What the engine raises when the cluster cannot carry a fit on."""


class ClusterError(RuntimeError):
    """The cluster lost what a fit needs: a worker holding blocks, or the scheduler
    (``workers``: the addresses of the workers at fault, if any)."""

    def __init__(self, message, workers=()):
        super().__init__(message)
        self.workers = list(workers)


class WorkerLost(ClusterError):
    """Workers holding blocks of a fit left the cluster: the fit can go on without them."""


class WorkerPaused(ClusterError):
    """A worker holding blocks of a fit stayed paused by Dask's memory manager past a bound."""
