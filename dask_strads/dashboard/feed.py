"""What a fit on a cluster tells the scheduler's STRADS page: its estimator and program, where
its blocks are, its records (round, iteration, time, objective, gap), recoveries and state.

The records of rounds that were in flight when the fit stopped are not sent, only counted.
Sent as Dask events (``Client.log_event``): the first record at once, then at most one message
every :data:`SEND_INTERVAL` seconds while the fit runs, and one when it ends.
"""
from time import perf_counter

from ..log import logger
from .store import TOPIC

#: Seconds between two messages of a running fit.
SEND_INTERVAL = 0.5
#: The record keys the page shows.
SHOWN = ("round", "iteration", "time", "objective", "gap", "plane_messages", "plane_bytes")


class DashboardFeed:
    """A watcher (see :mod:`dask_strads.engine.progress`) that reports a fit to the scheduler
    of ``client``."""

    def __init__(self, client, estimator, program, max_rounds, rounds_per_iteration=1):
        self.client = client
        self.head = {"estimator": estimator, "program": program, "max_rounds": max_rounds,
                     "rounds_per_iteration": rounds_per_iteration}
        self.after_stop = 0  # rounds in flight at the stop whose records came in after it
        self.fit = None
        self.placed = None  # the run whose blocks the page knows
        self.pending = []
        self.next_send = 0.0  # the first record is sent at once: the page shows the fit

    def update(self, record, run):
        if self.fit is None:
            self.fit = run.id
        if run.behind_stop(record):
            self.after_stop += 1  # no part of the fit's result: counted, not shown
            return
        self.pending.append({k: _plain(record[k]) for k in SHOWN if k in record})
        if perf_counter() >= self.next_send:
            self._send(run, "running")

    def close(self, run):
        stats = run.history.stats
        last = run.history.records[-1]["round"] if run.history.records else -1
        state = ("converged" if stats.converged else
                 "max_iter reached" if last + 1 >= self.head["max_rounds"] else "stopped")
        self.fit = self.fit or run.id
        self._send(run, state)

    def _send(self, run, state):
        message = {"fit": self.fit, "run": run.id, "state": state, **self.head,
                   "records": self.pending, "after_stop": self.after_stop,
                   "wall_seconds": perf_counter() - run.start,
                   "recoveries": [{k: _plain(v) for k, v in r.items()}
                                  for r in run.history.stats.recoveries]}
        if self.placed != run.id:
            blocks = {}
            for b, worker in enumerate(run.owners):
                blocks.setdefault(worker, []).append(b)
            message["blocks"] = blocks
        if self.client.status != "running":  # log_event would wait for a reconnection
            logger.debug("not reporting to the STRADS page: client %s", self.client.status)
            return
        try:
            self.client.log_event(TOPIC, message)
        except Exception as error:  # the page is a view: a fit never fails for it
            logger.debug("could not report to the STRADS page: %s", error)
            return
        self.placed = run.id
        self.pending = []
        self.next_send = perf_counter() + SEND_INTERVAL


def _plain(value):
    """``value`` as msgpack sends it (numpy scalars as Python numbers, lists kept)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value
