"""The progress bar in a non-TTY run (what a log or a headless notebook gets): its total, its
final count and the postfix, for a fit that converges, one that reaches max_iter and one that
fails; and the live plot's last drawing."""
import io
import logging
import re
import sys
import time
import warnings
from contextlib import contextmanager
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from dask_strads import (ElasticNetCV, Lasso, LassoCV, LatentDirichletAllocation,
                         MatrixFactorization)
from dask_strads.datasets import make_lda_corpus, make_ratings
from dask_strads.engine import progress
from dask_strads.kernels import compilation


@pytest.fixture
def bars(monkeypatch):
    """The bars the fits make, kept for inspection after they close."""
    made = []

    class Kept(progress.ProgressBar):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(progress, "ProgressBar", Kept)
    return made


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 60))
    return X, X[:, :5] @ np.arange(1.0, 6.0) + 0.1 * rng.standard_normal(150)


def last_line(captured):
    return re.split(r"[\r\n]+", captured.strip())[-1]


@contextmanager
def unconfigured_logging():
    """The root logger without handlers, as in a script that configured no logging (pytest's
    capture handlers are back afterwards)."""
    root = logging.getLogger()
    handlers = root.handlers[:]
    root.handlers.clear()
    try:
        yield
    finally:
        root.handlers[:] = handlers


def test_converged_lasso_bar_ends_at_the_tolerance(regression, bars, capsys):
    model = Lasso(alpha=0.05, tol=1e-9, progress=True).fit(*regression)
    (bar,) = bars
    assert bar.bar.total == 100 and bar.bar.n == 100
    line = last_line(capsys.readouterr().err)
    assert line.startswith("Lasso: 100%|") and "gap to tolerance" in line
    assert f"gap={model.dual_gap_:.4g}" in line


def test_lasso_at_max_iter_ends_complete_and_says_so(regression, bars, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = Lasso(alpha=0.05, tol=1e-30, max_iter=2, progress=True).fit(*regression)
    assert model.n_iter_ == 2 and not model.history_.stats.converged
    (bar,) = bars
    assert 0 < bar.bar.n == bar.bar.total
    assert "max_iter reached" in last_line(capsys.readouterr().err)


def test_lda_bar_counts_iterations(bars, capsys):
    counts = make_lda_corpus(n_docs=60, n_words=80, n_topics=3, doc_length=30,
                             random_state=0)[0]
    model = LatentDirichletAllocation(3, max_iter=5, random_state=0, progress=True).fit(counts)
    (bar,) = bars
    assert bar.bar.total == bar.bar.n == model.n_iter_ == 5
    line = last_line(capsys.readouterr().err)
    assert line.startswith("LatentDirichletAllocation: 100%|") and " 5/5 " in line


def test_converged_mf_bar_is_complete_at_its_iterations(bars, capsys):
    R = make_ratings(n_users=60, n_items=30, n_ratings=900, rank=2, noise=0.1,
                     random_state=0)[0]
    model = MatrixFactorization(n_components=2, max_iter=100, tol=1e-3, progress=True).fit(R)
    assert model.history_.stats.converged and model.n_iter_ < 100
    (bar,) = bars
    assert bar.bar.total == bar.bar.n == model.n_iter_
    assert f" {model.n_iter_}/{model.n_iter_} " in last_line(capsys.readouterr().err)


def test_a_failed_fit_leaves_the_bar_incomplete(bars):
    counts = make_lda_corpus(n_docs=60, n_words=80, n_topics=3, doc_length=30,
                             random_state=0)[0]

    def fail(record):
        if record["round"] == 1:
            raise RuntimeError("stop here")

    model = LatentDirichletAllocation(3, max_iter=5, progress=True, callback=fail)
    with pytest.raises(RuntimeError, match="stop here"):
        model.fit(counts)
    (bar,) = bars
    assert bar.bar.n < bar.bar.total == 5


@pytest.fixture
def drawings(monkeypatch):
    """Every drawing of the bars made from now on (tqdm asked to draw at each update, into a
    buffer): a function returning them in order."""
    import tqdm.auto

    buffer = io.StringIO()

    class EveryUpdate(tqdm.auto.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, file=buffer, mininterval=0, miniters=1, **kwargs)

    monkeypatch.setattr(tqdm.auto, "tqdm", EveryUpdate)
    return lambda: [line.strip() for line in re.split(r"[\r\n]+", buffer.getvalue())
                    if line.strip()]


def finished(records, converged=True):
    """What a bar's ``close`` reads of a run that made ``records``."""
    return SimpleNamespace(history=SimpleNamespace(
        records=records, stats=SimpleNamespace(converged=converged)))


def test_the_bar_reaching_100_percent_shows_the_last_rounds_gap(regression, drawings):
    model = Lasso(alpha=0.05, tol=1e-9, progress=True).fit(*regression)
    gaps = [record["gap"] for record in model.history_]
    assert len(gaps) >= 2 and f"{gaps[-2]:.4g}" != f"{gaps[-1]:.4g}"
    first_complete = next(line for line in drawings() if "100%" in line)
    assert first_complete.endswith(f"gap={model.dual_gap_:.4g}]")


def test_a_negative_gap_is_shown_as_zero(drawings):
    bar = progress.ProgressBar("Lasso", 10, tolerance=1e-6)
    records = [{"round": 0, "objective": 2.0, "gap": 1.0},
               {"round": 1, "objective": 1.5, "gap": -2.27e-17}]
    for record in records:
        bar.update(record)
    bar.close(finished(records))
    assert drawings()[-1].endswith("[00:00, objective=1.5, gap=0]")


def test_the_bar_names_its_phases_and_logs_the_compile_notice_above_itself(
        regression, capsys, monkeypatch):
    """Placing data, then compiling (here made to seem pending), then the rounds; the notice is
    a line of its own, the bar drawn again below it."""
    monkeypatch.setattr(compilation, "pending", lambda names: list(names))
    compilation.reset_announced()
    with unconfigured_logging():
        Lasso(alpha=0.05, progress=True).fit(*regression)
    compilation.reset_announced()
    err = capsys.readouterr().err
    before, notice, after = re.split(r"(dask_strads: compiling numba kernels for [^\n]*\n)",
                                     err)
    assert before.startswith("\rLasso (placing data):") and before.endswith("\r")
    assert after.lstrip("\r").startswith("Lasso (placing data):")
    assert "\rLasso (compiling numba kernels):" in after
    assert last_line(after).startswith("Lasso: 100%")


def test_the_elapsed_time_is_redrawn_until_the_first_record(drawings, monkeypatch):
    monkeypatch.setattr(progress, "TICK_SECONDS", 0.01)
    bar = progress.ProgressBar("Lasso", 10, tolerance=1e-6)
    while len(drawings()) < 3:  # the first drawing and two ticks
        time.sleep(0.01)
    bar.update({"round": 0, "objective": 2.0, "gap": 1e-7})
    drawn = len(drawings())
    time.sleep(0.1)
    assert len(drawings()) == drawn
    bar.close(finished([{"round": 0}]))


def test_live_plot_shows_the_last_round(regression, monkeypatch):
    """In Jupyter (faked here: the notebooks' test runs it in a real kernel) the plot is one
    display, updated with SVG lines, the last one after the last round."""
    import IPython.display

    class Handle:
        def __init__(self):
            self.shown = []

        def update(self, image):
            self.shown.append(image)

    handle = Handle()
    monkeypatch.setattr(progress, "_in_ipython", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda obj, display_id: handle)
    model = Lasso(alpha=0.05, progress="plot").fit(*regression)
    last = handle.shown[-1].data
    assert f"round {model.history_[-1]['round']}, objective " in last
    assert last.count("<polyline") == 2  # the gap and the objective
    assert "duality gap (log scale) against seconds" in last
    assert model.history_.stats.converged


def test_plot_outside_jupyter_is_the_bar(regression, bars):
    Lasso(alpha=0.05, progress="plot").fit(*regression)
    assert len(bars) == 1


@pytest.mark.parametrize("in_kernel", [False, True])
def test_the_package_log_goes_to_stdout_only_in_a_jupyter_kernel(in_kernel, capsys,
                                                                 monkeypatch):
    """Jupyter shows stderr as a warning box: a notice such as the compile one goes to stdout
    there, to stderr in a terminal."""
    from dask_strads.log import logger

    shell = SimpleNamespace(kernel=object()) if in_kernel else None
    monkeypatch.setitem(sys.modules, "IPython", SimpleNamespace(get_ipython=lambda: shell))
    with unconfigured_logging():
        logger.info("compiling numba kernels for lasso")
    captured = capsys.readouterr()
    said, silent = (captured.out, captured.err) if in_kernel else (captured.err, captured.out)
    assert said == "dask_strads: compiling numba kernels for lasso\n" and silent == ""


def test_an_application_that_configured_logging_gets_each_record_once(capsys):
    """The records propagate: with a handler on the root logger (``logging.basicConfig``) a
    notice is printed by it, in its format, and not by the package as well; pytest's caplog
    sees it."""
    from dask_strads.log import logger

    with unconfigured_logging():
        logging.basicConfig(format="app %(name)s %(levelname)s %(message)s", stream=sys.stdout)
        try:
            logger.info("placing data")
        finally:
            logging.getLogger().handlers.clear()
    captured = capsys.readouterr()
    assert captured.out == "app dask_strads INFO placing data\n" and captured.err == ""


def test_pytests_caplog_captures_the_package_records(caplog):
    from dask_strads.log import logger

    with caplog.at_level(logging.INFO, logger="dask_strads"):
        logger.warning("a worker has not answered")
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("dask_strads", "a worker has not answered")]


def test_plot_captions_say_what_is_drawn_against_what_and_ticks_the_axes():
    from dask_strads.dashboard.charts import chart

    records = [{"round": 0, "time": 0.5, "gap": 100.0, "objective": 3.0},
               {"round": 1, "time": 1.25, "gap": 1e-3, "objective": 2.0}]
    gap = chart(records, "gap", x="time")
    assert "<figcaption>duality gap (log scale) against seconds: 100 → 0.001</figcaption>" in gap
    ticks = re.findall(r"<text [^>]*>([^<]*)</text>", gap)
    assert ticks == ["100", "0.001", "0.5", "1.25"]  # y top and bottom, x start and end
    assert "<path " in gap  # the axes
    assert "objective against round: 3 → 2" in chart(records, "objective")


def search(**params):
    """An ElasticNetCV of 4 paths (2 folds x 2 l1_ratios) and a refit."""
    return ElasticNetCV(cv=2, alphas=3, l1_ratio=[0.5, 0.9], **params)


def test_a_cross_validation_prints_nothing_unless_asked(regression, capfd):
    """As scikit-learn's LassoCV at ``verbose=0``: no line per fold, alpha or refit, on stderr
    or stdout, in a script that configured no logging (the kernels compiled beforehand: their
    one notice per machine is not what is tested)."""
    search().fit(*regression)
    capfd.readouterr()
    with unconfigured_logging():
        search().fit(*regression)
        LassoCV(cv=3, alphas=4).fit(*regression)
    assert capfd.readouterr() == ("", "")


def test_verbose_says_each_path_and_the_refit(regression, caplog):
    with caplog.at_level(logging.INFO, logger="dask_strads"):
        model = search(verbose=1).fit(*regression)
    said = [r.getMessage() for r in caplog.records if "compiling" not in r.getMessage()]
    assert sorted(said[1:-1]) == sorted(
        f"ElasticNetCV: the path of 3 alphas on fold {fold} of 2 (l1_ratio={ratio})"
        for fold in (1, 2) for ratio in ("0.5", "0.9"))
    assert said[0].startswith("ElasticNetCV: placing 1 feature blocks")
    assert said[-1] == f"ElasticNetCV: the refit at alpha={model.alpha_:.3g} on the whole data"


@pytest.mark.parametrize("shown", [True, "plot"])
def test_a_cross_validation_shows_one_bar_for_the_whole_search(regression, bars, shown,
                                                               monkeypatch, capsys):
    """One bar of the 4 paths and the refit, complete at the end; none of each run's own (in
    Jupyter too: a live plot would mix the runs)."""
    monkeypatch.setattr(progress, "_in_ipython", lambda: True)
    search(progress=shown).fit(*regression)
    err = capsys.readouterr().err
    assert bars == []
    assert set(re.findall(r"(\w+): +\d+%", err)) == {"ElasticNetCV"}
    assert re.match(r"ElasticNetCV: 100%\|[^|]*\| 5/5 ", last_line(err))


def test_a_searchs_compile_notice_is_printed_above_its_bar(regression, capsys, monkeypatch):
    monkeypatch.setattr(compilation, "pending", lambda names: list(names))
    compilation.reset_announced()
    with unconfigured_logging():
        search(progress=True).fit(*regression)
    compilation.reset_announced()
    err = capsys.readouterr().err
    notices = re.findall(r"[^\r\n]*dask_strads: compiling numba kernels for [^\n]*\n", err)
    assert notices and all(n.startswith("dask_strads: ") for n in notices)  # each a line
    assert last_line(err).startswith("ElasticNetCV: 100%")
