"""What a wait on the cluster watches for, besides lost workers and the scheduler: workers that
hold a fit's blocks and stop making progress while Dask still lists them.

- A worker *paused* by Dask's memory manager (its memory past ``distributed.worker.memory.pause``)
  runs no task until its memory falls again. When the fit's own blocks fill it, that never
  happens: past a bound the fit stops with :class:`WorkerPaused`, which names the worker, its
  memory limit and what it holds.
- A worker *silent* to the scheduler (stopped by SIGSTOP, swapping, a frozen node) sends no
  heartbeat. Dask removes it after ``distributed.scheduler.worker-ttl``, and the fit then goes on
  without it (see :mod:`.recovery`); until then a warning past a bound says which worker the fit
  waits for and why.

Both bounds are the longer of a floor in seconds and :data:`ROUNDS_OF_PATIENCE` times the fit's
typical round, so that a fit whose rounds take minutes is not stopped by a bound made for
milliseconds.
"""
from ..log import logger
from .errors import WorkerPaused

#: A worker paused at least this long (and this many typical rounds) stops the fit.
PAUSED_SECONDS = 60.0
#: A worker silent at least this long (and this many typical rounds) is warned about.
SILENT_SECONDS = 20.0
ROUNDS_OF_PATIENCE = 20


def patience(floor, round_seconds):
    """How long to wait for what a fit's round needs: ``floor`` seconds, or
    :data:`ROUNDS_OF_PATIENCE` typical rounds if that is longer."""
    return max(floor, ROUNDS_OF_PATIENCE * round_seconds)


class Stalls:
    """Watches the workers of a fit across the polls of one wait; ``round_seconds`` is the
    fit's typical round so far (0 before its first)."""

    def __init__(self, round_seconds=0.0, held_bytes=None):
        self.round_seconds = round_seconds
        self.held_bytes = held_bytes  # worker -> bytes of dask_strads values Dask holds there
        self._paused_since = {}  # worker -> when first seen paused
        self._heartbeat = {}  # worker -> (its last_seen as the scheduler said, when we saw it)
        self._warned = set()

    def bound(self, floor):
        return patience(floor, self.round_seconds)

    def see(self, owners, workers, now):
        """Look at the scheduler's ``workers`` info (``{address: identity}``) for the workers in
        ``owners`` at time ``now`` (seconds, monotonic): warn of a silent worker, raise
        :class:`WorkerPaused` for one paused past its bound."""
        for worker in sorted(set(owners) & set(workers)):
            info = workers[worker]
            self._watch_pause(worker, info, now)
            self._watch_heartbeat(worker, info, now, owners)

    def _watch_pause(self, worker, info, now):
        if info.get("status") != "paused":
            self._paused_since.pop(worker, None)
            return
        since = self._paused_since.setdefault(worker, now)
        if "paused" not in self._warned:
            self._warned.add("paused")
            logger.warning("worker %s is paused by Dask's memory manager (memory limit reached): "
                           "the fit waits for it, %.0f s at most", worker,
                           self.bound(PAUSED_SECONDS))
        if now - since >= self.bound(PAUSED_SECONDS):
            held = self.held_bytes(worker) if self.held_bytes else None
            raise WorkerPaused(_paused_message(worker, info, now - since, held), [worker])

    def _watch_heartbeat(self, worker, info, now, owners):
        seen = info.get("last_seen")
        previous = self._heartbeat.get(worker)
        if previous is None or previous[0] != seen:
            self._heartbeat[worker] = (seen, now)
            self._warned.discard(worker)
            return
        silent = now - previous[1]
        if silent >= self.bound(SILENT_SECONDS) and worker not in self._warned:
            self._warned.add(worker)
            blocks = ", ".join(str(b) for b, owner in enumerate(owners) if owner == worker)
            logger.warning(
                "worker %s holding blocks %s has not answered the scheduler for %.0f s (a round "
                "takes about %.2f s; is it stopped or swapping?): the fit waits for it. The "
                "scheduler removes a worker silent for its distributed.scheduler.worker-ttl (5 "
                "minutes by default), and the fit then goes on without it", worker, blocks,
                silent, self.round_seconds)


def _paused_message(worker, info, seconds, held):
    metrics = info.get("metrics", {})
    limit = info.get("memory_limit")
    return (f"worker {worker} has been paused by Dask's memory manager for {seconds:.0f} s: its "
            f"memory ({_mb(metrics.get('memory'))} in use, {_mb(metrics.get('managed_bytes'))} "
            f"of it data Dask holds, {_mb(held)} of that dask_strads' blocks and values, besides "
            "the blocks' state the fit keeps in the worker's memory) stays past its pause "
            f"threshold (memory limit {_mb(limit) if limit else 'none'}), so the fit cannot go on "
            "there. Give the workers more memory (dask worker --memory-limit), or use more "
            "workers so that each holds less")


def _mb(n_bytes):
    return "?" if n_bytes is None else f"{n_bytes / 2**20:.0f} MB"
