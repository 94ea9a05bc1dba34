"""The package's logger: what a fit is doing when it takes long (starting a cluster, compiling).

Like ``distributed``'s, it prints INFO to stderr unless the application configured it.
"""
import logging

logger = logging.getLogger("dask_strads")
if not logger.handlers:
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("dask_strads: %(message)s"))
    logger.addHandler(_handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
