"""The STRADS page (``/strads``, ``/strads/fits.json``) fetched over HTTP during and after fits:
on the embedded cluster (nothing configured) and on a ``dask scheduler --preload
dask_strads.dashboard`` cluster of worker processes; and rendered by a headless Chromium. The page
must tell what the fit itself recorded (``history_``) and where its blocks were."""
import json
import os
import shutil
import subprocess
import time
import urllib.request

import numpy as np
import pytest
from distributed import Client

import dask_strads
from dask_strads import Lasso, MatrixFactorization
from dask_strads.datasets import make_ratings

import leaks
from conftest import CLI_START_TIMEOUT, _dask_command, _stop


def fetch(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode()


def fits(link):
    return json.loads(fetch(link + "/fits.json"))["fits"]


def finished(link, estimator):
    """The newest fit of ``estimator`` on the page, once its client reported its end."""
    deadline = time.monotonic() + 10
    while True:
        fit = next(f for f in fits(link) if f["estimator"] == estimator)
        if fit["state"] != "running" or time.monotonic() > deadline:
            return fit
        time.sleep(0.05)


def watched_fit(model, X, y=None):
    """Fit ``model``, reading the page while its second round runs; returns what was read."""
    during = []

    def read_page(record):
        if record["round"] == 1:
            during.extend(fits(model.dashboard_link or dask_strads.dashboard.strads_link(
                model.client)))

    model.callback = read_page
    model.fit(X, y)
    return during


def check_page_tells_the_fit(link, model, during, estimator, program):
    running = next(f for f in during if f["estimator"] == estimator)
    assert running["state"] == "running" and running["program"] == program
    fit = finished(link, estimator)
    assert fit["id"] == running["id"]
    assert fit["state"] == ("converged" if model.history_.stats.converged else "max_iter reached")
    records = {r["round"]: r for r in fit["records"]}
    # up to the round the fit stopped at: none of the rounds still running then
    assert fit["rounds"] == max(records) + 1 == model.history_[-1]["round"] + 1
    assert fit["after_stop"] == model.history_.stats.rounds - fit["rounds"]
    for record in model.history_:  # per iteration for MF: its closing round's objective
        assert records[record["round"]]["objective"] == pytest.approx(record["objective"])
    assert records[max(records)]["objective"] is not None
    blocks = sorted(b for w in fit["workers"].values() for b in w["blocks"])
    assert blocks == list(range(len(blocks))) and blocks
    for worker in fit["workers"].values():
        assert worker["compute_seconds"] > 0 and worker["tasks"] > 0
        assert worker["compute_seconds"] + worker["waiting_seconds"] == pytest.approx(
            fit["wall_seconds"], rel=1e-6) or worker["compute_seconds"] > fit["wall_seconds"]
    page = fetch(link)
    assert f"id='fit-{fit['id']}'" in page and estimator in page
    section = page[page.index(f"id='fit-{fit['id']}'"):]
    section = section[:section.index("</section>")]
    most = fit["max_rounds"]
    assert f"<b>rounds</b> {fit['rounds']} of {most} ({100 * fit['rounds'] / most:.0f}%)" in (
        section)
    per_iteration = fit["rounds_per_iteration"]
    assert per_iteration == most // model.max_iter
    if per_iteration > 1:
        assert (f"<b>iterations</b> {model.n_iter_} of {model.max_iter} "
                f"({100 * model.n_iter_ / model.max_iter:.0f}%)") in section
    else:
        assert "<b>iterations</b>" not in section
    for worker, held in fit["workers"].items():  # a count, then the ids
        assert f"<td>{worker}</td><td>{len(held['blocks'])}</td><td>" in section
    assert "<th>blocks</th><th>block ids</th>" in section
    return fit


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 200))
    return X, X[:, :5] @ np.arange(1.0, 6.0) + 0.1 * rng.standard_normal(300)


@pytest.fixture(scope="module")
def ratings():
    return make_ratings(n_users=300, n_items=120, n_ratings=6000, rank=3, noise=0.1,
                        random_state=0)[0]


@pytest.mark.cluster  # the embedded cluster
def test_embedded_cluster_serves_the_page_without_configuration(regression):
    model = Lasso(alpha=0.01, tol=1e-8)
    model.client = dask_strads.embedded_client()
    during = watched_fit(model, *regression)
    link = model.dashboard_link
    assert link.startswith("http://127.0.0.1:") and link.endswith("/strads")
    fit = check_page_tells_the_fit(link, model, during, "Lasso", "lasso")
    assert fit["gap"] == pytest.approx(model.dual_gap_)
    spans = model.client.run_on_scheduler(
        lambda dask_scheduler: [s.name for s in dask_scheduler.extensions["spans"].spans.values()])
    assert ("Lasso",) in spans


def test_in_process_fit_has_no_dashboard(regression):
    X, y = regression
    model = Lasso(alpha=0.1).fit(X[:50, :20], y[:50])
    assert model.client is None and model.dashboard_link is None


@pytest.fixture(scope="module")
def preloaded(tmp_path_factory):
    """A ``dask scheduler --preload dask_strads.dashboard`` with two ``dask worker`` processes:
    (client, address of the STRADS page)."""
    workdir = tmp_path_factory.mktemp("preloaded")
    scheduler_file = workdir / "scheduler.json"
    processes = []
    try:
        processes.append(subprocess.Popen(
            _dask_command("scheduler", "--host", "127.0.0.1", "--port", "0",
                          "--dashboard-address", "127.0.0.1:0", "--scheduler-file",
                          str(scheduler_file), "--preload", "dask_strads.dashboard"),
            cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True))
        deadline = time.monotonic() + CLI_START_TIMEOUT
        while not scheduler_file.exists() or not scheduler_file.read_text().endswith("}"):
            assert time.monotonic() < deadline, "dask scheduler did not start"
            time.sleep(0.1)
        info = json.loads(scheduler_file.read_text())
        for i in range(2):
            processes.append(subprocess.Popen(
                _dask_command("worker", info["address"], "--nthreads", "1", "--no-dashboard",
                              "--local-directory", str(workdir / f"w{i}"), "--death-timeout",
                              "30"),
                cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        link = f"http://127.0.0.1:{info['services']['dashboard']}/strads"
        leaks.keep(pids=[p.pid for p in processes])  # for the module's tests
        with Client(info["address"], set_as_default=False, timeout=CLI_START_TIMEOUT) as client:
            client.wait_for_workers(2, timeout=CLI_START_TIMEOUT)
            yield client, link
    finally:
        _stop(processes)


@pytest.mark.cluster
def test_preloaded_scheduler_serves_the_page_before_and_during_a_fit(preloaded, ratings):
    client, link = preloaded
    if not fits(link):  # before any fit the preload has put the page there
        assert "No fit has run on this cluster yet." in fetch(link)
    model = MatrixFactorization(n_components=3, max_iter=6, tol=0, random_state=0)
    model.client = client
    during = watched_fit(model, ratings)
    assert model.dashboard_link == link
    fit = check_page_tells_the_fit(link, model, during, "MatrixFactorization", "mf")
    assert len(fit["workers"]) == 2  # user block b and item block b on each worker
    rounds = fit["records"]  # the page's, a round each; the estimator's, an iteration each
    assert sum(r["plane_messages"] for r in rounds) == sum(
        model.history_.column("plane_messages")) > 0
    assert sum(r["plane_bytes"] for r in rounds) == sum(model.history_.column("plane_bytes")) > 0
    assert (f"{rounds[-1]['plane_messages']} in the last round, "
            f"{rounds[-1]['plane_bytes'] / 1e6:.3g} MB between processes") in fetch(link)
    keys = client.run_on_scheduler(lambda dask_scheduler: [
        k for k in dask_scheduler.tasks if isinstance(k, str) and k.endswith(fit["id"])])
    assert all(k.startswith("strads-mf-") for k in keys)


def chromium():
    """Debian's Chromium, installed with apt-get where missing and possible; None otherwise."""
    found = shutil.which("chromium")
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "install", "-y", "--no-install-recommends", "chromium"],
                    ["apt-get", "update"],
                    ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]):
        done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=600)
        if command[1] == "install" and done.returncode == 0:
            break
    return shutil.which("chromium")


@pytest.mark.cluster
def test_chromium_renders_the_fits(preloaded, ratings, tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("no chromium, and it could not be installed (needs root and apt-get)")
    client, link = preloaded
    model = MatrixFactorization(n_components=2, max_iter=3, tol=0, random_state=1)
    model.client = client
    model.fit(ratings)
    fit = finished(link, "MatrixFactorization")
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp_path}", "--dump-dom", link],
        capture_output=True, text=True, timeout=120).stdout
    assert f"<section class=\"fit\" id=\"fit-{fit['id']}\">" in dom
    assert "MatrixFactorization" in dom and "<polyline" in dom
    assert f"<b>rounds</b> {fit['rounds']}" in dom


def closed_tab_record(error_source):
    """A record as tornado logs an uncaught exception of a request handler: of the
    AssertionError tornado raises asking a closed websocket for its subprotocol, or of an
    AssertionError raised here."""
    import logging

    from tornado.websocket import WebSocketHandler

    handler = object.__new__(WebSocketHandler)
    handler.ws_connection = None
    try:
        if error_source == "tornado":
            handler.selected_subprotocol
        else:
            assert handler.ws_connection is not None
    except AssertionError:
        import sys

        return logging.LogRecord("tornado.application", logging.ERROR, __file__, 0,
                                 "Uncaught exception GET /status/ws", (), sys.exc_info())
    raise RuntimeError("no AssertionError raised")


def test_the_closed_tab_traceback_alone_is_kept_out_of_the_output():
    import logging

    from dask_strads.dashboard.noise import silence_closed_tabs

    silence_closed_tabs()
    silence_closed_tabs()  # once only
    log = logging.getLogger("tornado.application")
    assert sum(type(f).__name__ == "ClosedTabNoise" for f in log.filters) == 1
    assert not log.filter(closed_tab_record("tornado"))
    assert log.filter(closed_tab_record("elsewhere"))
    assert log.filter(logging.LogRecord("tornado.application", logging.ERROR, __file__, 0,
                                        "Uncaught exception", (), None))
