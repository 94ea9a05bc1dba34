"""What a fit records: one entry per round, and where the time went."""
from dataclasses import dataclass, field


@dataclass
class FitStats:
    """Totals of one engine run.

    ``compute_seconds`` adds, round by round, the slowest block's push plus the pull: the time the
    round would take with no Dask latency. ``overhead_share`` is the rest of the wall time.
    ``tasks_per_round``: the tasks in the graph of the last round. ``recoveries``: one dict
    per lost worker the fit went on after (round resumed from, lost workers, blocks moved,
    seconds). ``resumed_from``: the first round run after resuming from a checkpoint on disk
    (None for a fresh fit).
    """

    rounds: int = 0
    tasks_per_round: int = 0
    recoveries: list = field(default_factory=list)
    resumed_from: int = None
    wall_seconds: float = 0.0
    compute_seconds: float = 0.0
    converged: bool = False

    @property
    def overhead_share(self):
        if self.wall_seconds <= 0:
            return 0.0
        return max(0.0, 1.0 - self.compute_seconds / self.wall_seconds)

    @property
    def seconds_per_round(self):
        return self.wall_seconds / self.rounds if self.rounds else 0.0


@dataclass
class History:
    """Per-round records (dicts with at least ``round`` and ``time``) and the run's totals."""

    records: list = field(default_factory=list)
    stats: FitStats = field(default_factory=FitStats)

    def append(self, record):
        self.records.append(record)
        self.stats.compute_seconds += record.get("compute_seconds", 0.0)

    def truncate(self, last_round):
        """Forget the records after ``last_round`` (rounds that will run again)."""
        dropped = [r for r in self.records if r["round"] > last_round]
        self.records[:] = [r for r in self.records if r["round"] <= last_round]
        self.stats.compute_seconds -= sum(r.get("compute_seconds", 0.0) for r in dropped)

    def column(self, name):
        return [r.get(name) for r in self.records]

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]

    def __iter__(self):
        return iter(self.records)
