"""Every estimator's ``history_``: one shape (leading columns), checked against the fitted model
(the Lasso objective and the MF training RMSE recomputed here in numpy), as a DataFrame, a plot
and a Jupyter summary."""
import sys

import matplotlib
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dask_strads import Lasso, LatentDirichletAllocation, MatrixFactorization
from dask_strads.datasets import make_lda_corpus, make_ratings
from dask_strads.engine.history import History

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def fitted():
    """Small fits, in this process."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 40))
    y = X[:, :4] @ np.array([3.0, -2.0, 1.5, 1.0]) + 0.1 * rng.standard_normal(120)
    lasso = Lasso(alpha=0.05, tol=1e-10, max_iter=200).fit(X, y)
    counts = make_lda_corpus(n_docs=60, n_words=80, n_topics=3, doc_length=30,
                             random_state=0)[0]
    lda = LatentDirichletAllocation(3, max_iter=6, random_state=0).fit(counts)
    R = make_ratings(n_users=60, n_items=30, n_ratings=900, rank=2, noise=0.1,
                     random_state=0)[0]
    mf = MatrixFactorization(n_components=2, max_iter=8, tol=0, random_state=0).fit(R)
    return {"lasso": (lasso, X, y), "lda": (lda, counts), "mf": (mf, sp.csr_matrix(R))}


def test_every_estimator_has_the_same_leading_columns(fitted):
    frames = {name: fit[0].history_.to_frame() for name, fit in fitted.items()}
    assert list(frames["lasso"].columns[:4]) == ["round", "time", "objective", "gap"]
    for name in ("lda", "mf"):
        assert list(frames[name].columns[:4]) == ["round", "iteration", "time", "objective"]
    for name, frame in frames.items():
        assert isinstance(fitted[name][0].history_, History)
        assert frame["round"].is_monotonic_increasing and frame["time"].is_monotonic_increasing
        assert frame["objective"].notna().any()


def test_lasso_records_end_at_the_fitted_model(fitted):
    lasso, X, y = fitted["lasso"]
    residual = y - X @ lasso.coef_ - lasso.intercept_
    objective = residual @ residual / (2 * len(y)) + lasso.alpha * np.abs(lasso.coef_).sum()
    last = lasso.history_[-1]
    assert last["round"] == lasso.n_iter_  # the rounds but the last updated coef_
    assert last["objective"] == pytest.approx(objective, rel=1e-9)
    assert last["gap"] == lasso.dual_gap_


def test_iteration_records_close_on_their_last_round(fitted):
    lda, counts = fitted["lda"]
    frame = lda.history_.to_frame()
    assert list(frame["iteration"]) == list(range(lda.n_iter_))
    assert list(frame["round"]) == [(i + 1) * lda.n_vocab_blocks_ - 1 for i in frame.iteration]
    np.testing.assert_array_equal(frame["objective"], -frame["log_likelihood"])

    mf, R = fitted["mf"]
    frame = mf.history_.to_frame()
    assert list(frame["round"]) == [2 * i + 1 for i in frame.iteration]
    users, items = R.nonzero()
    predicted = mf.predict_entries(users, items)
    rmse = np.sqrt(np.mean((np.asarray(R[users, items]).ravel() - predicted) ** 2))
    assert frame["rmse"].iloc[-1] == pytest.approx(rmse, rel=1e-6)


def test_frame_holds_the_records(fitted):
    history = fitted["mf"][0].history_
    expected = pd.DataFrame(history.records)
    pd.testing.assert_frame_equal(history.to_frame()[list(expected.columns)], expected)


@pytest.mark.parametrize("name, x, y", [
    ("lasso", "time", "objective"), ("lasso", "round", ["objective", "gap"]),
    ("lda", "iteration", "log_likelihood"), ("mf", "round", "rmse"), ("mf", "time", None)])
def test_plot_draws_the_columns(fitted, name, x, y):
    """The objective and gap go on a log scale when positive over a decade, nothing else."""
    history = fitted[name][0].history_
    ax = history.plot(x=x, y=y)
    frame = history.to_frame()
    names = [y] if isinstance(y, str) else y or ["objective"]
    assert len(ax.lines) == len(names)
    for line, column in zip(ax.lines, names):
        rows = frame[[x, column]].dropna()
        np.testing.assert_array_equal(line.get_xdata(), rows[x])
        np.testing.assert_array_equal(line.get_ydata(), rows[column])
    values = frame[names].to_numpy().ravel()
    values = values[~np.isnan(values)]
    log = (set(names) <= {"objective", "gap"} and values.min() > 0
           and values.max() >= 10 * values.min())
    assert (ax.get_yscale() == "log") == log
    matplotlib.pyplot.close(ax.figure)


def test_plot_names_a_missing_column(fitted):
    with pytest.raises(ValueError, match="no column 'gap'.*round, iteration"):
        fitted["mf"][0].history_.plot(y="gap")


def test_html_summary_states_the_totals_and_shows_a_plot(fitted):
    for name, (model, *_) in fitted.items():
        page = model.history_._repr_html_()
        stats = model.history_.stats
        assert f"<td style='text-align:left'>{stats.rounds}</td>" in page
        assert ("converged</th><td style='text-align:left'>"
                f"{'yes' if stats.converged else 'no'}") in page
        assert "<img alt='convergence plot' src='data:image/png;base64," in page


def test_terminal_repr_is_one_short_line_naming_rounds_and_the_last_objective(fitted):
    for name, (model, *_) in fitted.items():
        history = model.history_
        text = repr(history)
        assert "\n" not in text and len(text) < 250
        assert f"| rounds {history.stats.rounds} |" in text
        assert f"last objective {history.records[-1]['objective']:.6g}" in text
    longer = fitted["lda"][0].history_
    assert len(longer.records) > 2
    shorter = History(records=longer.records[:2], stats=longer.stats)
    assert len(repr(longer)) - len(repr(shorter)) < 3  # the record count's digits, not rounds


def test_without_pandas_a_clear_import_error(fitted, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install \"dask_strads\[plot\]\""):
        fitted["lasso"][0].history_.to_frame()
    assert "pip install" in fitted["lasso"][0].history_._repr_html_()
