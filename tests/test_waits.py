"""Every wait of a fit on a cluster ends: with the fit's result, or with an error that says what
the cluster did. A loaded machine (slow transfers, a lagging event loop), a worker paused by its
memory manager, a worker stopped with SIGSTOP and Ctrl-C, on real worker processes."""
import asyncio
import contextlib
import gc
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time

import dask
import numpy as np
import pytest
from distributed import Client
from sklearn.utils import estimator_checks

from dask_strads import LatentDirichletAllocation, Lasso
from dask_strads.datasets import make_correlated_regression, make_lda_corpus
from dask_strads.engine import executors, stalls
from dask_strads.engine.blocks import worker_info
from dask_strads.engine import WorkerPaused
from dask_strads.log import logger

from bounded import within
from conftest import (THROWAWAY_STOP_SECONDS, TESTS_DIR, _dask_command, _stop,
                      written_scheduler_file)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

BOUND = 120  # seconds any of these fits may take on a loaded 2-core machine


@contextlib.contextmanager
def logged():
    """The messages of the ``dask_strads`` logger while in the block."""
    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


def regression():
    return make_correlated_regression(100, 300, 10, random_state=0)[:2]


def fitted_lasso(client, X, y, **params):
    est = Lasso(alpha=1e-4, max_iter=40, tol=0.0, random_state=0, n_blocks=2, **params)
    est.client = client
    return est.fit(X, y)


@pytest.fixture
def own_client(client_factory):
    """A client of its own on the session's two-worker cluster: a test that breaks a client's
    state breaks only this one."""
    with Client(client_factory(2).scheduler.address, set_as_default=False) as client:
        yield client


@pytest.fixture
def lagging_loop(own_client):
    """The client's event loop blocked 20 ms at a time, as a loaded machine delays it."""
    stop = threading.Event()

    async def lag():
        while not stop.is_set():
            time.sleep(0.02)
            await asyncio.sleep(0)

    future = asyncio.run_coroutine_threadsafe(lag(), own_client.loop.asyncio_loop)
    yield own_client
    stop.set()
    future.result(timeout=10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_waits_shorter_than_a_transfer_leave_the_client_working(lagging_loop, monkeypatch):
    """The engine checks the cluster every POLL_SECONDS while it waits. Made shorter than the
    client takes to bring a value back (here, a loop that lags), those checks must never cancel
    the transfer: distributed's client then keeps a cancelled request that every later gather
    awaits, and no value ever reaches it again (fits hung on a loaded machine that way). The
    fits end with the model of an unhurried fit, and the client still gathers."""
    client = lagging_loop
    X, y = regression()
    reference = within(BOUND, fitted_lasso, client, X, y).coef_
    monkeypatch.setattr(executors, "POLL_SECONDS", 0.005)
    for _ in range(2):
        np.testing.assert_allclose(within(BOUND, fitted_lasso, client, X, y).coef_, reference,
                                   rtol=1e-12, atol=1e-14)
    assert within(30, client.gather, client.submit(sum, [1, 2], pure=False)) == 3


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ctrl_c_releases_everything_the_fit_submitted(own_client):
    """A KeyboardInterrupt in the middle of a fit (raised where Ctrl-C raises it, in the
    client's thread) reaches the caller, and the cluster forgets every key of the fit within
    seconds, although the traceback, which holds the fit's frames, is kept (as an interactive
    session keeps the last one)."""
    client = own_client
    X, y = regression()

    def keys():
        return {k for k in client.run_on_scheduler(_task_keys) if k.startswith("strads-")}

    before = keys()

    def interrupt(record):
        if record["round"] == 3:
            assert keys() - before, "the fit's keys are on the cluster while it runs"
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as kept:
        fitted_lasso(client, X, y, callback=interrupt)
    deadline = time.monotonic() + 30
    while keys() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not keys() - before, sorted(keys() - before)[:5]
    assert kept.traceback  # still held
    assert within(BOUND, fitted_lasso, client, X, y).n_iter_ == 40  # the next fit works


def _task_keys(dask_scheduler):
    return [str(k) for k in dask_scheduler.tasks]


@pytest.fixture
def start_workers(tmp_path):
    """``start(*workers)``: a ``dask scheduler`` and a ``dask worker --no-nanny`` process per
    ``(environment added to this process's, more arguments)`` given, on 127.0.0.1; a client of
    them and the workers' pids by address."""
    processes = []
    tests_path = os.pathsep.join([str(TESTS_DIR), *filter(None, [os.environ.get("PYTHONPATH")])])

    def start(*workers, scheduler_env=None):
        scheduler_file = tmp_path / "scheduler.json"
        processes.append(subprocess.Popen(
            _dask_command("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                          "--scheduler-file", str(scheduler_file)),
            cwd=tmp_path, env={**os.environ, **(scheduler_env or {})},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        written_scheduler_file(scheduler_file)
        for i, (env, args) in enumerate(workers):
            processes.append(subprocess.Popen(
                _dask_command("worker", "--scheduler-file", str(scheduler_file), "--nthreads",
                              "1", "--no-nanny", "--no-dashboard", "--death-timeout", "30",
                              "--local-directory", str(tmp_path / f"worker-{i}"), *args),
                cwd=tmp_path, env={**os.environ, "PYTHONPATH": tests_path, **env},
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        client = Client(scheduler_file=str(scheduler_file), set_as_default=False, timeout=60)
        client.wait_for_workers(len(workers), timeout=60)
        pids = client.run(os.getpid)
        clients.append(client)
        return client, pids

    clients = []
    yield start
    for process in processes:  # a stopped worker must be able to die
        try:
            os.killpg(process.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    for client in clients:
        client.close()
    _stop(processes, THROWAWAY_STOP_SECONDS)


def _pause_for_good(dask_worker):
    """Make this worker's memory past its pause threshold for good: the threshold below any
    process's memory, and nothing it could spill to fall under it."""
    dask_worker.memory_manager.memory_pause_fraction = 1e-6
    dask_worker.memory_manager.memory_spill_fraction = False
    dask_worker.memory_manager.memory_target_fraction = False


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_worker_paused_for_good_stops_the_fit_with_an_error_that_names_it(
        start_workers, monkeypatch):
    """A worker holding blocks whose memory stays past its pause threshold runs no task again:
    the fit stops once it has been paused past the bound, with an error naming the worker and
    its memory limit, and the estimator keeps its model."""
    client, _ = start_workers(({}, ()), ({}, ("--memory-limit", "2GB")))
    monkeypatch.setattr(stalls, "PAUSED_SECONDS", 3.0)
    X, y = regression()
    est = fitted_lasso(client, X, y)
    coef = est.coef_.copy()
    paused = {}

    def pause_block_1(record):
        if record["round"] == 3:
            paused["worker"] = next(where[0] for key, where in client.who_has().items()
                                    if "-block-1-" in str(key))
            paused["limit"] = client.scheduler_info()["workers"][paused["worker"]]["memory_limit"]
            client.run(_pause_for_good, workers=[paused["worker"]])

    est.set_params(callback=pause_block_1, checkpoint_interval=0)
    started = time.monotonic()
    with pytest.raises(WorkerPaused, match="has been paused.*memory limit") as error:
        within(BOUND, est.fit, X, y)
    assert f"memory limit {paused['limit'] / 2**20:.0f} MB" in str(error.value)
    assert re.search(r"\d+ MB of that dask_strads' blocks", str(error.value))
    assert error.value.workers == [paused["worker"]] and paused["worker"] in str(error.value)
    assert time.monotonic() - started < 60
    np.testing.assert_array_equal(est.coef_, coef)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_fit_places_no_block_on_a_worker_paused_before_it(start_workers):
    """A worker already paused when a fit starts would never run its blocks' tasks: the fit
    says so, runs on the others and ends with the model of a fit on an unpaused cluster."""
    client, _ = start_workers(({}, ()), ({}, ()))
    X, y = regression()
    clean = within(BOUND, fitted_lasso, client, X, y)
    _wait_until_released(client)  # the clean fit's keys are the same as the next fit's
    (paused,) = client.run(_pause_for_good, workers=[sorted(worker_info(client))[0]])
    deadline = time.monotonic() + 30
    while worker_info(client)[paused]["status"] != "paused":
        assert time.monotonic() < deadline, "the worker was never paused"
        time.sleep(0.1)
    with logged() as messages:
        est = within(BOUND, fitted_lasso, client, X, y)
    assert any(f"workers {paused} are paused" in message for message in messages)
    assert not [key for key, where in client.who_has().items()
                if "strads-" in str(key) and paused in where]
    np.testing.assert_allclose(est.coef_, clean.coef_, rtol=1e-10, atol=1e-12)


def _wait_until_released(client, timeout=30):
    """Wait until the cluster holds no ``strads-`` value (a finished fit's futures may live
    until the garbage collector breaks their cycles)."""
    deadline = time.monotonic() + timeout
    while True:
        gc.collect()
        held = [key for key in client.who_has() if "strads-" in str(key)]
        if not held:
            return
        assert time.monotonic() < deadline, f"a finished fit's values stay on the cluster: {held}"
        time.sleep(0.2)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_stopped_worker_is_named_then_left_behind(start_workers, monkeypatch):
    """A worker holding blocks stopped with SIGSTOP: past the bound a warning names it, and once
    the scheduler drops it (``worker-ttl``, 8 s here) the fit goes on without it and ends with
    the model of a clean fit."""
    ttl = {"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": "8s"}
    client, pids = start_workers(({}, ()), ({}, ()), ({}, ()), scheduler_env=ttl)
    monkeypatch.setattr(stalls, "SILENT_SECONDS", 2.0)
    # the bound is also ROUNDS_OF_PATIENCE rounds: on a loaded machine that outlasts the ttl
    monkeypatch.setattr(stalls, "ROUNDS_OF_PATIENCE", 1)
    X, y = regression()
    clean = Lasso(alpha=1e-4, max_iter=40, tol=0.0, random_state=0, n_blocks=3)
    clean.client = client
    clean.fit(X, y)
    stopped = {}

    def stop_block_0(record, running):
        if record["round"] == 5 and not stopped:
            # the running fit's worker of block 0: a key the clean fit left may name another
            stopped["worker"] = running._run.owners[0]
            os.kill(pids[stopped["worker"]], signal.SIGSTOP)

    est = Lasso(alpha=1e-4, max_iter=40, tol=0.0, random_state=0, n_blocks=3,
                callback=stop_block_0)
    est.client = client
    with logged() as messages:
        within(BOUND, est.fit, X, y)
    said = [message for message in messages if "has not answered" in message]
    assert len(said) == 1 and f"worker {stopped['worker']} holding blocks 0 " in said[0]
    (recovery,) = est.history_.stats.recoveries
    assert recovery["lost"] == [stopped["worker"]]
    np.testing.assert_allclose(est.coef_, clean.coef_, rtol=1e-10, atol=1e-12)


@pytest.fixture
def cpu_hogs():
    """Busy loops beside the test, one per core (with the suite's other tests, a load of 4 or
    more on 2 cores), each ending by itself after BOUND seconds."""
    hogs = [subprocess.Popen([sys.executable, "-c",
                              f"import time\nend = time.time() + {BOUND}\n"
                              "while time.time() < end: pass"],
                             start_new_session=True) for _ in range(os.cpu_count() or 2)]
    yield
    _stop(hogs)


LDA_CHECKS = [estimator_checks.check_fit_idempotent, estimator_checks.check_fit_check_is_fitted,
              estimator_checks.check_n_features_in, estimator_checks.check_estimators_dtypes,
              estimator_checks.check_dont_overwrite_parameters]


def test_estimator_checks_and_a_cluster_fit_under_load(cpu_hogs, own_client):
    """What hung on a loaded machine: LDA's scikit-learn checks, one fit after another on a
    cluster of worker processes, and a larger fit, with busy loops on every core beside them."""
    counts = make_lda_corpus(n_docs=300, n_words=400, n_topics=5, random_state=0)[0]
    with own_client.as_current():
        for check in LDA_CHECKS:
            within(BOUND, check, "LatentDirichletAllocation",
                   LatentDirichletAllocation(max_iter=5))
        lda = within(BOUND, LatentDirichletAllocation(5, max_iter=10, random_state=0).fit,
                     counts)
    with dask.config.set(scheduler="synchronous"):  # two virtual workers: the same blocks
        reference = LatentDirichletAllocation(5, max_iter=10, random_state=0).fit(counts)
    np.testing.assert_array_equal(lda.components_, reference.components_)


def worker(status="running", last_seen=0.0):
    return {"status": status, "last_seen": last_seen, "memory_limit": 2**30,
            "metrics": {"memory": 900 * 2**20, "managed_bytes": 700 * 2**20}}


def test_a_pause_stops_the_fit_past_its_bound_and_not_before():
    """The bound is PAUSED_SECONDS, or ROUNDS_OF_PATIENCE rounds when rounds are longer; a
    pause that ends restarts the count."""
    owners = ["a", "b", "a"]
    watch = stalls.Stalls(round_seconds=0.1, held_bytes={"b": 300 * 2**20}.get)
    watch.see(owners, {"a": worker(), "b": worker("paused")}, now=0.0)
    watch.see(owners, {"a": worker(), "b": worker()}, now=stalls.PAUSED_SECONDS - 1)
    watch.see(owners, {"a": worker(), "b": worker("paused")}, now=stalls.PAUSED_SECONDS)
    watch.see(owners, {"a": worker(), "b": worker("paused")}, now=2 * stalls.PAUSED_SECONDS - 1)
    with pytest.raises(WorkerPaused, match=r"worker b has been paused .* for 60 s: its memory "
                       r"\(900 MB in use, 700 MB of it data Dask holds, 300 MB of that "
                       r"dask_strads' blocks and values.*memory limit 1024 MB"):
        watch.see(owners, {"a": worker(), "b": worker("paused")}, now=2 * stalls.PAUSED_SECONDS)
    slow = stalls.Stalls(round_seconds=10.0)  # 20 rounds of 10 s: 200 s
    slow.see(owners, {"a": worker("paused"), "b": worker()}, now=0.0)
    slow.see(owners, {"a": worker("paused"), "b": worker()}, now=199.0)
    with pytest.raises(WorkerPaused, match="worker a"):
        slow.see(owners, {"a": worker("paused"), "b": worker()}, now=200.0)


def test_a_silent_worker_is_named_once_and_again_after_it_answered():
    owners = ["a", "b"]
    watch = stalls.Stalls(round_seconds=0.0)
    with logged() as messages:
        for now in range(0, 41, 5):  # b's heartbeat stops at 0 and comes back at 35
            watch.see(owners, {"a": worker(last_seen=now), "b": worker(
                last_seen=0.0 if now < 35 else now)}, now=float(now))
        for now in range(40, 70, 5):  # and stops again at 40
            watch.see(owners, {"a": worker(last_seen=now), "b": worker(last_seen=40.0)},
                      now=float(now))
    said = [m for m in messages if "has not answered" in m]
    assert len(said) == 2 and all(m.startswith("worker b holding blocks 1 ") for m in said)
    assert "for 20 s" in said[0]
