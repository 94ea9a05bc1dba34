"""Which worker runs a run's pulls (its *hub*).

A run's pulls and reports go to one of the workers that hold its blocks. Runs in progress at
the same time in one process (the paths of a cross-validation, the fits of a grid search on
threads) would all choose the first block's worker and queue there: each run takes, of its
blocks' workers, the one that is the hub of the fewest runs in progress, the first of them on a
tie (so a lone run's hub is its first block's worker).
"""
import threading
from collections import Counter

_hubs: Counter[str] = Counter()
_lock = threading.Lock()


def claim_hub(owners):
    """The hub of a new run on blocks held by ``owners`` (worker addresses, one a block)."""
    with _lock:
        hub = min(dict.fromkeys(owners), key=lambda worker: _hubs[worker])
        _hubs[hub] += 1
        return hub


def release_hub(hub):
    """The run whose hub is ``hub`` has ended."""
    with _lock:
        _hubs[hub] -= 1
        if _hubs[hub] <= 0:
            del _hubs[hub]
