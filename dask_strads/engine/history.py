"""What a fit records: one entry per round (or per iteration), and where the time went.

Every estimator's ``history_`` is a :class:`History` whose records share their leading keys
(:data:`LEADING`): ``round`` (the round that closed the record), ``iteration`` for programs whose
iteration spans several rounds (LDA, matrix factorization), ``time`` (seconds since the fit
started), ``objective`` (what the fit minimises) and ``gap`` (a duality gap, where the program
has one); program-specific columns follow. ``to_frame`` and ``plot`` need pandas and matplotlib
(``pip install "dask_strads[plot]"``).
"""
import base64
import html
import importlib
import io
from dataclasses import dataclass, field
from statistics import median_high
from typing import Any

#: The keys every record starts with, in this order (``iteration`` and ``gap`` where they exist).
LEADING = ("round", "iteration", "time", "objective", "gap")
#: What the rounds of programs using the message plane count (see :mod:`.plane`).
PLANE_COUNTS = ("plane_messages", "plane_bytes")
#: Columns plotted on a log scale when all their values are positive and span a decade or more.
LOG_SCALE = ("objective", "gap", "relative_decrease")


@dataclass
class FitStats:
    """Totals of one engine run.

    ``compute_seconds`` adds, round by round, the slowest block's push plus the pull: the time the
    round would take with no Dask latency. ``overhead_share`` is the rest of the wall time.
    ``tasks_per_round``: the tasks of the last graph over the rounds it ran (a fused epoch's
    graph runs many rounds, so it may be a fraction), a checkpoint's copies left out.
    ``graphs``: the graphs submitted to run rounds (round graphs and fused epochs; placing the
    data and collecting the model left out). ``recoveries``: one dict
    per lost worker the fit went on after (round resumed from, lost workers, blocks moved,
    seconds). ``resumed_from``: the first round run after resuming from a checkpoint on disk
    (None for a fresh fit).
    """

    rounds: int = 0
    tasks_per_round: float = 0
    graphs: int = 0
    recoveries: list = field(default_factory=list)
    resumed_from: int | None = None
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

    records: list[dict[str, Any]] = field(default_factory=list)
    stats: FitStats = field(default_factory=FitStats)

    def append(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        self.stats.compute_seconds += record.get("compute_seconds", 0.0)

    @property
    def last_round(self) -> int:
        """The newest round recorded (-1 before the first)."""
        return self.records[-1]["round"] if self.records else -1

    def typical_round_seconds(self, last: int = 10) -> float:
        """The median time between the ``last`` newest records (0 before the second)."""
        times = [r["time"] for r in self.records[-last - 1:]]
        gaps = [b - a for a, b in zip(times, times[1:])]
        return median_high(gaps) if gaps else 0.0

    def truncate(self, last_round: int) -> None:
        """Forget the records after ``last_round`` (rounds that will run again)."""
        dropped = [r for r in self.records if r["round"] > last_round]
        self.records[:] = [r for r in self.records if r["round"] <= last_round]
        self.stats.compute_seconds -= sum(r.get("compute_seconds", 0.0) for r in dropped)

    def column(self, name: str) -> list:
        return [r.get(name) for r in self.records]

    def columns(self) -> list[str]:
        """The keys of the records: :data:`LEADING` first (those present), then the others in
        the order they first appear."""
        seen = dict.fromkeys(key for record in self.records for key in record)
        return [key for key in LEADING if key in seen] + [k for k in seen if k not in LEADING]

    def to_frame(self) -> Any:
        """The records as a pandas DataFrame, a row each, columns as :meth:`columns`."""
        pandas = _optional("pandas")
        return pandas.DataFrame.from_records(self.records, columns=self.columns())

    def plot(self, x="time", y=None, ax=None, **kwargs):
        """Plot ``y`` (a column or a list of them; default ``gap`` where the records have it,
        else ``objective``) against ``x`` (``"time"``, ``"round"`` or ``"iteration"``) and return
        the matplotlib Axes. The objective, gap and relative decrease go on a log scale when
        positive over a decade or more."""
        pyplot = _optional("matplotlib.pyplot")
        frame = self.to_frame()
        names = [y] if isinstance(y, str) else list(y or [self._default_y()])
        for name in [x, *names]:
            if name not in frame.columns:
                raise ValueError(f"the history has no column {name!r}; it has "
                                 f"{', '.join(frame.columns)}")
        if ax is None:
            _, ax = pyplot.subplots()
        for name in names:
            rows = frame[[x, name]].dropna()
            ax.plot(rows[x], rows[name], marker=".", label=name, **kwargs)
        ax.set_xlabel("seconds" if x == "time" else x)
        ax.set_ylabel(names[0] if len(names) == 1 else "value")
        if len(names) > 1:
            ax.legend()
        values = frame[names].to_numpy(dtype=float).ravel()
        values = values[values == values]  # not NaN
        if (set(names) <= set(LOG_SCALE) and len(values) and values.min() > 0
                and values.max() >= 10 * values.min()):
            ax.set_yscale("log")
        return ax

    def _default_y(self):
        columns = self.columns()
        return "gap" if "gap" in columns else "objective" if "objective" in columns else (
            columns[-1])

    def summary(self) -> dict[str, str]:
        """The run's totals as ``{label: text}``: rounds, wall time, overhead, converged, and the
        last objective and gap."""
        stats = self.stats
        last = {key: value for record in self.records for key, value in record.items()}
        rows = {"rounds": str(stats.rounds),
                "wall time": f"{stats.wall_seconds:.3g} s",
                "Dask overhead": f"{100 * stats.overhead_share:.0f}% of the wall time",
                "converged": "yes" if stats.converged else "no"}
        if "iteration" in last:
            rows["iterations"] = str(last["iteration"] + 1)
        for key in ("objective", "gap"):
            if last.get(key) is not None:
                rows[f"last {key}"] = f"{last[key]:.6g}"
        if stats.recoveries:
            rows["recoveries"] = str(len(stats.recoveries))
        return rows

    def __repr__(self):
        """The summary on one line, whatever the number of records (they are in ``records``,
        or a table with ``to_frame()``)."""
        facts = "".join(f" | {label} {text}" for label, text in self.summary().items())
        return f"<History: {len(self.records)} records{facts}>"

    def _repr_html_(self):
        """A summary table and, with matplotlib, a small convergence plot (for Jupyter)."""
        table = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                        f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
                        for k, v in self.summary().items())
        return (f"<div><strong>History</strong> ({len(self.records)} records)"
                f"<table>{table}</table>{self._plot_html()}</div>")

    def _plot_html(self):
        if not self.records:
            return ""
        try:
            from matplotlib.figure import Figure
            _optional("pandas")
        except ImportError:
            return "<p>pip install \"dask_strads[plot]\" for a plot</p>"
        figure = Figure(figsize=(4, 2.5), dpi=80)  # no pyplot: nothing left open
        self.plot(ax=figure.subplots())
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        return f"<img alt='convergence plot' src='data:image/png;base64,{data}'/>"

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]

    def __iter__(self):
        return iter(self.records)


def _optional(module):
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"History.to_frame and History.plot need pandas and matplotlib: "
                          f"pip install \"dask_strads[plot]\" ({error})") from error


def plane_totals(records):
    """The :data:`PLANE_COUNTS` of ``records`` added up, for a record that stands for them all
    (an iteration's); empty if they count none."""
    return {key: sum(r[key] for r in records if key in r)
            for key in PLANE_COUNTS if any(key in r for r in records)}
