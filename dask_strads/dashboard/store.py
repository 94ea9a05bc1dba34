"""The scheduler's record of the fits on its cluster: what the clients report, and the compute
time of each fit's tasks per worker, read from the scheduler's own task transitions.

Every message a client sends (topic :data:`TOPIC`) names its fit, so messages need no order; a
fit's tasks are recognised by their keys (``strads-<program>-<kind>-...-<run id>``), counted
even before the fit's first message arrives.
"""
from collections import OrderedDict
from time import time

from distributed.diagnostics.plugin import SchedulerPlugin

#: The event topic the clients report on.
TOPIC = "dask_strads"
#: Fits, runs and records kept (the oldest are forgotten first).
MAX_FITS = 50
MAX_RUNS = 200
MAX_RECORDS = 10_000


class FitStore(SchedulerPlugin):
    """A scheduler plugin that keeps :data:`MAX_FITS` fits: for each its estimator, program,
    state, records (round, time, objective, gap, messages on the plane), the most rounds it may
    run, blocks per worker, recoveries, and the seconds its tasks computed on each worker."""

    name = "dask_strads"

    def __init__(self):
        self.fits = OrderedDict()  # fit id -> dict
        self.run_compute = OrderedDict()  # run id -> {worker: [seconds, tasks]}

    # -- what the scheduler tells ---------------------------------------------------------
    def transition(self, key, start, finish, *args, **kwargs):
        if finish != "memory" or start != "processing" or not isinstance(key, str) or (
                not key.startswith("strads-")):
            return
        seconds = sum(s["stop"] - s["start"] for s in kwargs.get("startstops", ())
                      if s.get("action") == "compute")
        run = key.rsplit("-", 1)[-1]
        if run not in self.run_compute:
            self.run_compute[run] = {}
            while len(self.run_compute) > MAX_RUNS:
                self.run_compute.popitem(last=False)
        counts = self.run_compute[run].setdefault(kwargs.get("worker"), [0.0, 0])
        counts[0] += seconds
        counts[1] += 1

    def log_event(self, topic, msg):
        if topic == TOPIC and isinstance(msg, dict) and "fit" in msg:
            self.receive(msg)

    # -- what the clients tell ------------------------------------------------------------
    def receive(self, msg):
        fit = self.fits.get(msg["fit"])
        if fit is None:
            fit = self.fits[msg["fit"]] = {
                "id": msg["fit"], "estimator": msg.get("estimator"),
                "program": msg.get("program"), "started": time(), "state": "running",
                "runs": [], "records": {}, "blocks": {}, "recoveries": [], "wall_seconds": 0.0}
            while len(self.fits) > MAX_FITS:
                self.fits.popitem(last=False)
        if msg.get("run") and msg["run"] not in fit["runs"]:
            fit["runs"].append(msg["run"])
        for record in msg.get("records", ()):
            fit["records"][record["round"]] = record
        while len(fit["records"]) > MAX_RECORDS:
            del fit["records"][min(fit["records"])]
        for name in ("blocks", "recoveries", "state", "wall_seconds", "max_rounds",
                     "rounds_per_iteration", "after_stop"):
            if name in msg:
                fit[name] = msg[name]

    # -- what the pages show --------------------------------------------------------------
    def summary(self):
        """The fits, newest first, as JSON-ready dicts."""
        return [self._describe(fit) for fit in reversed(self.fits.values())]

    def _describe(self, fit):
        compute = {}
        for run in fit["runs"]:
            for worker, (seconds, tasks) in self.run_compute.get(run, {}).items():
                totals = compute.setdefault(worker, [0.0, 0])
                totals[0] += seconds
                totals[1] += tasks
        wall = fit["wall_seconds"]
        workers = {}
        for worker in sorted(set(compute) | set(fit["blocks"])):
            seconds, tasks = compute.get(worker, (0.0, 0))
            workers[worker] = {"blocks": fit["blocks"].get(worker, []), "tasks": tasks,
                               "compute_seconds": seconds,
                               "waiting_seconds": max(0.0, wall - seconds)}
        records = [fit["records"][r] for r in sorted(fit["records"])]
        last = {k: v for record in records for k, v in record.items() if v is not None}
        return {"id": fit["id"], "estimator": fit["estimator"], "program": fit["program"],
                "state": fit["state"], "started": fit["started"], "wall_seconds": wall,
                "rounds": last["round"] + 1 if records else 0,
                "max_rounds": fit.get("max_rounds"),
                "rounds_per_iteration": fit.get("rounds_per_iteration", 1),
                "after_stop": fit.get("after_stop", 0),
                "objective": last.get("objective"), "gap": last.get("gap"),
                "plane_messages": last.get("plane_messages"),
                "plane_bytes": last.get("plane_bytes"),
                "records": records, "workers": workers, "recoveries": fit["recoveries"]}


def store_of(scheduler):
    """The scheduler's :class:`FitStore`, added on first use."""
    store = scheduler.plugins.get(FitStore.name)
    if store is None:
        store = FitStore()
        scheduler.add_plugin(store, name=FitStore.name)
    return store
