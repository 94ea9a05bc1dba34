"""Putting the STRADS pages on a scheduler: at its start (``--preload dask_strads.dashboard``),
from the ``distributed.scheduler.http.routes`` configuration, or from the first fit a client runs
on it."""
import weakref

from ..log import logger
from .noise import silence_closed_tabs
from .pages import routes
from .store import store_of

_installed = weakref.WeakKeyDictionary()  # client -> whether its scheduler has the pages


def install_on(dask_scheduler):
    """Add the fit store and the pages to a scheduler, once. (The argument's name is the one
    ``Client.run_on_scheduler`` passes.) Also keeps the traceback tornado logs when a tab on a
    dashboard page closes out of the scheduler's output (see :mod:`.noise`)."""
    scheduler = dask_scheduler
    store_of(scheduler)
    silence_closed_tabs()
    if not getattr(scheduler, "_strads_pages", False):
        scheduler.http_application.add_handlers(
            r".*$", [(f"/{url}", cls, {**kwargs, "dask_server": scheduler})
                     for url, cls, kwargs in routes])
        scheduler._strads_pages = True


def install(client):
    """Make sure the scheduler of ``client`` keeps the fits and serves the pages (one call to
    the scheduler per client); False if it cannot."""
    if client not in _installed:
        try:
            client.run_on_scheduler(install_on)
            _installed[client] = True
        except Exception as error:  # e.g. a scheduler that cannot import dask_strads
            logger.warning("no STRADS dashboard page on this cluster: %s", error)
            _installed[client] = False
    return _installed[client]


def strads_link(client):
    """The address of the STRADS page beside the cluster's Dask dashboard, or None."""
    try:
        status = client.dashboard_link
    except Exception:
        return None
    if not status:
        return None
    root = status[:-len("status")] if status.endswith("status") else status.rstrip("/") + "/"
    return root + "strads"
