"""The STRADS page of the Dask dashboard: the fits on a cluster, live.

The scheduler's web server serves ``/strads`` (HTML) and ``/strads/fits.json`` (JSON): for each
fit its estimator, state, rounds, objective and gap per round, the blocks each worker holds, the
seconds each worker computed for it and waited, and the recoveries after lost workers.

Nothing to configure: the first fit a client runs on a cluster adds the page to its scheduler.
To have it from the scheduler's start::

    dask scheduler --preload dask_strads.dashboard

or list ``dask_strads.dashboard`` in the ``distributed.scheduler.http.routes`` configuration.
"""
from .feed import DashboardFeed
from .install import install, install_on, strads_link
from .pages import routes


def dask_setup(scheduler):
    """The preload hook (``dask scheduler --preload dask_strads.dashboard``)."""
    install_on(scheduler)


__all__ = ["DashboardFeed", "dask_setup", "install", "install_on", "routes", "strads_link"]
