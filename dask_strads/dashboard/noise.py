"""Silencing one known traceback of the Dask dashboard: when a browser tab on a Bokeh page closes
while its websocket opens, Bokeh asks tornado for the connection's subprotocol after the
connection is gone, and tornado's ``assert self.ws_connection is not None`` fails. tornado logs
it as an uncaught exception on ``tornado.application``, which an embedded cluster prints among
the user's output. Nothing is wrong: the page the tab showed is closed."""
import logging
import os
import traceback

#: The logger tornado reports uncaught exceptions of request handlers on.
TORNADO_LOGGER = "tornado.application"
_WEBSOCKET_SOURCE = os.path.join("tornado", "websocket.py")


class ClosedTabNoise(logging.Filter):
    """Drops the records of an AssertionError raised in tornado's websocket module; lets every
    other record through."""

    def filter(self, record):
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, AssertionError) or error.__traceback__ is None:
            return True
        frames = traceback.extract_tb(error.__traceback__)
        return not frames[-1].filename.endswith(_WEBSOCKET_SOURCE)


def silence_closed_tabs():
    """Add :class:`ClosedTabNoise` to tornado's logger of this process, once."""
    log = logging.getLogger(TORNADO_LOGGER)
    if not any(isinstance(f, ClosedTabNoise) for f in log.filters):
        log.addFilter(ClosedTabNoise())
