"""The package's logger: what a fit is doing when it takes long (starting a cluster, compiling).

Its records propagate, as a library's should: an application that configured logging (a
handler on the root logger: ``logging.basicConfig``, ``dictConfig``, pytest's ``caplog``) gets
them through its own handlers, once. Until then the package prints its INFO records itself,
so that a plain script still says what a long step is doing: to stderr, or in a Jupyter
kernel to stdout, where stderr is shown as a warning (a pink box). While a progress bar that
spans several runs is open (:func:`printed_above`), its records are printed above the bar rather
than over its line.
"""
import logging
import sys
from contextlib import contextmanager

#: The open bars the package's records are printed above (the newest last).
_bars = []


def in_jupyter_kernel():
    """Running in a Jupyter (IPython) kernel rather than a terminal."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


class _UserStream(logging.StreamHandler):
    """Writes to the current ``sys.stderr`` (``sys.stdout`` in a Jupyter kernel), looked up at
    each record: a stream kept from import time would miss a replaced one."""

    def __init__(self):
        super().__init__(sys.stderr)

    def emit(self, record):
        if logging.getLogger().handlers:  # the application's handlers print it
            return
        self.stream = sys.stdout if in_jupyter_kernel() else sys.stderr
        if not _bars:
            super().emit(record)
            return
        with _bars[-1].external_write_mode():
            super().emit(record)


@contextmanager
def printed_above(bar):
    """In this block the package's records are printed above ``bar`` (a tqdm bar)."""
    _bars.append(bar)
    try:
        yield bar
    finally:
        _bars.remove(bar)


logger = logging.getLogger("dask_strads")
if not logger.handlers:
    _handler = _UserStream()
    _handler.setFormatter(logging.Formatter("dask_strads: %(message)s"))
    logger.addHandler(_handler)
    logger.setLevel(logging.INFO)
