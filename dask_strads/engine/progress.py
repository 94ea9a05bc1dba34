"""Watching a fit while it runs: a progress bar (tqdm) and a live convergence plot (Jupyter).

Both are *watchers*: the engine calls ``update(record, run)`` with each round's record and
``close(run)`` when the fit ends (``run.history`` holds the records, ``run.history.stats`` the
totals); ``started(run)``, if it has one, when the data is placed and the first round begins.

The bar's total means something: for a program with a duality gap and a tolerance (the Lasso) it
is the way from the first gap to the tolerance on a log scale, in percent; for programs whose
iteration spans several rounds (LDA, matrix factorization) the iterations of ``max_iter``; else
the rounds. A fit that converges or runs its ``max_iter`` ends complete (green in Jupyter); one
stopped by an error or Ctrl-C does not.
"""
import math
import threading
from contextlib import contextmanager
from time import perf_counter

from ..kernels.compilation import announce_compiling
from ..log import logger, printed_above

#: The live plot redraws when the time since its last drawing is this many times what that
#: drawing cost: drawing then takes at most 1 / (1 + LIVE_PLOT_SPACING) of the fit's time.
LIVE_PLOT_SPACING = 100
#: ... and not more often than this (seconds).
LIVE_PLOT_MIN_INTERVAL = 0.5
#: Until the first round's record, the bar redraws (its elapsed time) this often (seconds).
TICK_SECONDS = 1.0


class ProgressBar:
    """A tqdm bar over a fit of at most ``max_rounds`` rounds of ``rounds_per_iteration`` each;
    with ``tolerance``, over the way from the first duality gap to it.

    Until the first round's record its description names the phase the fit is in: placing the
    data, then compiling the numba kernels (when they will compile; the notice saying so is
    logged above the bar, not over it), and the elapsed time is redrawn every
    :data:`TICK_SECONDS` meanwhile."""

    def __init__(self, name, max_rounds, rounds_per_iteration=1, tolerance=None, kernels=()):
        tqdm = _tqdm()
        self.name = name
        self.max_rounds = max_rounds
        self.rounds_per_iteration = rounds_per_iteration
        self.tolerance = tolerance
        self._first_gap = None
        desc = f"{name} (placing data)"
        if tolerance:
            self.bar = tqdm(total=100, desc=desc, unit="%",
                            bar_format="{l_bar}{bar}| gap to tolerance [{elapsed}{postfix}]")
        else:
            unit = "iteration" if rounds_per_iteration > 1 else "round"
            self.bar = tqdm(total=max_rounds // rounds_per_iteration, desc=desc, unit=unit)
        # what is pending is read from numba's cache on disk: checked once, by the notice
        self._compiling = bool(kernels) and announce_compiling(kernels, emit=self.write) is not None
        self._ticker = _Ticker(self.bar)

    def write(self, message):
        """Log ``message`` (the package's logger) above the bar instead of over its line."""
        with self.bar.external_write_mode():
            logger.info(message)

    def started(self, run=None):
        """The data is placed: the first round runs (and compiles its kernels)."""
        if self.bar.desc.startswith(self.name):  # not yet named by a record
            phase = " (compiling numba kernels)" if self._compiling else ""
            self.bar.set_description_str(self.name + phase)

    def update(self, record, run=None):
        self._ticker.stop()
        if run is not None and run.behind_stop(record):
            return  # a round in flight at the stop, no part of the fit
        bar = self.bar
        if bar.desc != self.name:
            bar.set_description_str(self.name, refresh=False)
        postfix = {key: f"{_shown(key, record[key]):.4g}" for key in ("objective", "gap")
                   if record.get(key) is not None}
        if postfix:  # before the count moves: moving it may redraw the bar
            bar.set_postfix(postfix, refresh=False)
        done = self._done(record)
        if done > bar.n:
            bar.update(done - bar.n)

    def _done(self, record):
        """Where the bar stands after ``record``."""
        if not self.tolerance:
            return (record["round"] + 1) // self.rounds_per_iteration
        gap = record.get("gap")
        if gap is None:
            return self.bar.n
        if self._first_gap is None:
            self._first_gap = gap
        if gap <= self.tolerance or self._first_gap <= self.tolerance:
            return 100
        way = math.log(self._first_gap / self.tolerance)
        return max(0, min(99, int(100 * math.log(self._first_gap / max(gap, 1e-300)) / way)))

    def close(self, run):
        self._ticker.stop()
        bar = self.bar
        last = run.history.records[-1]["round"] if run.history.records else -1
        if run.history.stats.converged or last + 1 >= self.max_rounds:
            if bar.n < bar.total:  # complete: the fit ran all it was asked to
                bar.total = bar.n or bar.total
                bar.n = bar.total
            if not run.history.stats.converged:
                bar.set_postfix_str(f"{bar.postfix or ''} max_iter reached".strip(),
                                    refresh=False)
            bar.refresh()
        bar.close()


@contextmanager
def watched_search(progress, name, total):
    """A search of ``total`` runs (a cross-validation's paths and its refit) watched as a whole:
    yields the function to call as each run ends (from any thread). When ``progress`` asks for
    any progress, one tqdm bar of the runs (a live plot would mix them: it is the bar too),
    its elapsed time redrawn every :data:`TICK_SECONDS`, the package's log records (a compile
    notice, say) printed above it; the runs show no bar of their own. Else nothing is shown."""
    if not progress:
        yield lambda: None
        return
    bar = _tqdm()(total=total, desc=name, unit="fit")
    ticker = _Ticker(bar)
    lock = threading.Lock()

    def advance():
        with lock:
            bar.update(1)

    try:
        with printed_above(bar):
            yield advance
    finally:
        ticker.stop()
        bar.close()


def _tqdm():
    try:
        from tqdm.auto import tqdm
    except ImportError as error:
        raise ImportError("progress=True needs tqdm: pip install tqdm") from error
    return tqdm


def _shown(key, value):
    """``value`` as the bar shows it: a duality gap is never below 0 (a negative one is
    rounding error of a gap met exactly)."""
    return max(value, 0.0) if key == "gap" else value


class _Ticker:
    """Redraws ``bar`` every :data:`TICK_SECONDS` until stopped, so that its elapsed time
    counts through a phase without records (placing data, compiling)."""

    def __init__(self, bar):
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._tick, args=(bar,), daemon=True,
                                        name="dask_strads-progress-ticker")
        self._thread.start()

    def _tick(self, bar):
        while not self._stopped.wait(TICK_SECONDS):
            bar.refresh()

    def stop(self):
        if not self._stopped.is_set():
            self._stopped.set()
            self._thread.join()


class LivePlot:
    """A convergence plot in the notebook (SVG lines of the gap and objective against seconds, from
    :func:`dask_strads.dashboard.charts.chart`), redrawn as rounds arrive (see
    :data:`LIVE_PLOT_SPACING`), and once more at the end."""

    def __init__(self, name):
        from IPython.display import display

        self.name = name
        self.handle = display(f"{name}: starting", display_id=True)
        self._next_draw = 0.0

    def update(self, record, run):
        now = perf_counter()
        if now >= self._next_draw:
            self._draw(run.history.records)
            cost = perf_counter() - now
            self._next_draw = perf_counter() + max(LIVE_PLOT_MIN_INTERVAL,
                                                   LIVE_PLOT_SPACING * cost)

    def close(self, run):
        self._draw(run.history.records)

    def _draw(self, records):
        from IPython.display import HTML

        from ..dashboard.charts import chart

        records = [r for r in records if not r.get("after_stop")]  # rounds that ran nothing
        last = records[-1] if records else {}
        lines = "".join(chart(records, name, x="time") for name in ("gap", "objective"))
        facts = ", ".join(f"{key} {last[key]:.4g}" for key in ("objective", "gap")
                          if last.get(key) is not None)
        self.handle.update(HTML(f"<div><b>{self.name}</b>: round {last.get('round', '-')}"
                                f"{', ' + facts if facts else ''}<br>{lines}</div>"))


def watchers(progress, name, max_rounds, rounds_per_iteration=1, program=None):
    """The watchers ``progress`` asks for: True a bar, "plot" a live plot in Jupyter (elsewhere
    the bar), False none."""
    if progress == "plot" and _in_ipython():
        return [LivePlot(name)]
    if progress:
        return [ProgressBar(name, max_rounds, rounds_per_iteration, gap_tolerance(program),
                            getattr(program, "kernels", ()))]
    return []


def gap_tolerance(program):
    """The duality gap at or below which ``program`` stops, as its stop rule says; None for a
    program that no gap stops."""
    rule = getattr(program, "stop_rule", None)
    return rule.tolerance if rule is not None and rule.field == "gap" else None


def _in_ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None
