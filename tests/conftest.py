"""Shared fixtures: Dask clusters that live for the whole test session.

Starting a cluster costs seconds on a small machine (2 cores), so clusters are started once per
session and shared. No client created here is set as the default client: a test that needs the
active-client behaviour opens its own ``Client(..., set_as_default=True)`` in a ``with`` block.

Markers: ``cluster`` (the test starts or uses a Dask cluster: any test that takes one of
``CLUSTER_FIXTURES``, and the tests marked where they start their own) and ``slow`` (marked
where declared). ``python -m pytest -m "not cluster"`` runs the rest. Every test is watched
for what it leaves behind (see ``leaks.py``), and one that starts a Dask scheduler unmarked
fails.
"""
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster, get_task_stream

import leaks
from dask_strads.engine import tasks
from dask_strads.programs import Instruction

TESTS_DIR = Path(__file__).resolve().parent

#: Dask's periodic watchers, slower. An idle worker process samples its threads' stacks every
#: 10 ms (the dashboard's profile), measures its event loop every 20 ms, its memory every 100 ms
#: and its system every 500 ms: 4-5% of a core per idle worker, and the session's clusters
#: (about ten worker processes per pytest process) are idle most of the session. What the tests
#: check does not read them; pausing a worker for its memory is seen within 0.5 s instead of
#: 0.1 s. Set in the environment, so that every cluster and script a test starts has them.
QUIET_WATCHERS = {
    "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
    "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
    "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "500ms",
    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s",
}
os.environ.update(QUIET_WATCHERS)
dask.config.update(dask.config.config, dask.config.collect_env(QUIET_WATCHERS))

#: The session's cluster fixtures: a test that takes one (directly or through another fixture)
#: is marked ``cluster``.
CLUSTER_FIXTURES = {"client_factory", "cli_cluster"}


def pytest_collection_modifyitems(items):
    for item in items:
        if CLUSTER_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(autouse=True)
def no_leaks(request):
    """Fail a test that leaves threads, processes or a Dask cluster running after it, or that
    starts a Dask scheduler without the ``cluster`` marker."""
    watch = leaks.Watch()
    yield
    if watch.started_schedulers() and request.node.get_closest_marker("cluster") is None:
        pytest.fail("the test starts a Dask cluster: mark it with pytest.mark.cluster")
    left = watch.leaks()
    if left:
        pytest.fail(f"the test left running: {', '.join(left)}")


@dataclass(frozen=True)
class Round(Instruction):
    """An instruction that knows its round (for programs that misbehave at a given round)."""

    round: int

# Cached clusters are kept for the whole session; cap the worker count so that a test asking for
# many workers cannot exhaust a small machine (2 cores, each worker process ~150 MB).
MAX_WORKERS = 8
CLI_START_TIMEOUT = 60


@pytest.fixture(scope="session")
def client_factory():
    """``get(n_workers, processes=True)``: a Client on a cached LocalCluster, 1 thread a worker.

    One cluster per ``(n_workers, processes)``, started on first request and closed at the end of
    the session. The clients are not the default client.
    """
    cache = {}

    def get(n_workers, processes=True):
        n_workers, processes = int(n_workers), bool(processes)
        if not 1 <= n_workers <= MAX_WORKERS:
            raise ValueError(f"n_workers must be in 1..{MAX_WORKERS}, got {n_workers}")
        key = (n_workers, processes)
        if key not in cache:
            with warnings.catch_warnings():
                # with no dashboard the scheduler still serves /health on 8787, else any port
                warnings.filterwarnings("ignore", message="Port 8787 is already in use")
                cluster = LocalCluster(
                    n_workers=n_workers, threads_per_worker=1, processes=processes,
                    dashboard_address=None,
                )
            try:
                client = Client(cluster, set_as_default=False)
                client.wait_for_workers(n_workers, timeout=60)
            except BaseException:
                cluster.close()
                raise
            leaks.keep(scheduler=cluster.scheduler)
            cache[key] = (client, cluster)
        client, _ = cache[key]
        return client

    yield get

    for client, cluster in cache.values():
        try:
            client.close()
        finally:
            cluster.close()


#: How long a test's throw-away cluster (``dask scheduler`` and ``dask worker`` processes it
#: started) may take to end on SIGTERM before it is killed: a worker still running a task of a
#: fit that lost a peer waits for that peer (``plane.FETCH_SECONDS``) and would take the whole
#: ``_stop`` timeout.
THROWAWAY_STOP_SECONDS = 0.5


def _stop(processes, timeout=3.0):
    """Terminate each process group we started, then kill what is left of it."""
    for proc in processes:
        if proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in processes:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for proc in processes:
        # The group may hold children (a nanny's worker) even when its leader has exited.
        _signal_group(proc, signal.SIGKILL)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - nothing more we can do
            pass


def _signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)  # the group id is the leader's pid (start_new_session=True)
    except (ProcessLookupError, PermissionError):
        pass


def written_scheduler_file(scheduler_file, timeout=60):
    """Wait until a ``dask scheduler --scheduler-file`` has written ``scheduler_file`` whole
    (it may be half written the moment it appears); its address."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return json.loads(Path(scheduler_file).read_text())["address"]
        except (FileNotFoundError, ValueError, KeyError):
            assert time.monotonic() < deadline, f"no scheduler wrote {scheduler_file}"
            time.sleep(0.05)


def _dask_command(*args):
    # ``python -m dask`` is the ``dask`` entry point, found even when the venv's bin is not on PATH.
    return [sys.executable, "-m", "dask", *args]


@pytest.fixture(scope="session")
def cli_cluster(tmp_path_factory):
    """A Client on a cluster started with the ``dask scheduler`` / ``dask worker`` commands.

    One scheduler on 127.0.0.1 (port chosen by the OS, read from ``--scheduler-file``) and two
    single-threaded worker processes, as in a cluster script. The tests directory is on the
    workers' PYTHONPATH, as it is in LocalCluster's spawned workers.
    """
    workdir = tmp_path_factory.mktemp("cli-cluster")
    scheduler_file = workdir / "scheduler.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(TESTS_DIR)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    processes = []
    logs = []
    client = None

    def start(name, command):
        log = open(workdir / f"{name}.log", "wb")
        logs.append(log)
        processes.append(subprocess.Popen(
            command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True))
        return processes[-1]

    def fail(message):
        text = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(workdir.glob("*.log")))
        raise RuntimeError(f"{message}\n{text}")

    try:
        scheduler = start("scheduler", _dask_command(
            "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
            "--scheduler-file", str(scheduler_file)))
        deadline = time.monotonic() + CLI_START_TIMEOUT
        address = None
        while address is None:
            if scheduler.poll() is not None:
                fail(f"dask scheduler exited with code {scheduler.returncode}")
            if time.monotonic() > deadline:
                fail("dask scheduler did not write its scheduler file in time")
            try:
                address = json.loads(scheduler_file.read_text())["address"]
            except (FileNotFoundError, ValueError, KeyError):
                time.sleep(0.1)  # not written yet, or written partially
        port = address.rsplit(":", 1)[1]
        for i in range(2):
            start(f"worker-{i}", _dask_command(
                "worker", f"tcp://127.0.0.1:{port}", "--nthreads", "1", "--nworkers", "1",
                "--no-dashboard", "--name", f"cli-worker-{i}",
                "--local-directory", str(workdir / f"worker-{i}"),
                # if the test session dies without tearing down, the workers follow the scheduler
                "--death-timeout", "30"))
        leaks.keep(pids=[p.pid for p in processes])
        client = Client(address, set_as_default=False, timeout=CLI_START_TIMEOUT)
        try:
            client.wait_for_workers(2, timeout=CLI_START_TIMEOUT)
        except Exception:
            fail("dask workers did not connect in time")
        yield client
    finally:
        if client is not None:
            client.close()
        _stop(processes)
        for log in logs:
            log.close()


@pytest.fixture(scope="session", autouse=True)
def close_the_embedded_cluster():
    """Close the embedded cluster, if a test started it, while pytest still captures output
    (at interpreter exit its shutdown would log to closed streams)."""
    yield
    from dask_strads import close_embedded_client

    close_embedded_client()


def fit_is_refused(est, client, fit_args, error, match):
    """Assert that ``est.fit(*fit_args)`` raises ``error`` (matching ``match``) before any task
    of a fit (``strads-...``: a block placed, a round run) reaches ``client``'s cluster; return
    the tasks that did run there (checking a Dask input is cluster work, checking in-memory data
    is not)."""
    _wait_until_idle(client)  # rounds a previous fit ran past its stop may still finish
    with get_task_stream(client=client) as stream:
        with pytest.raises(error, match=match):
            est.fit(*fit_args)
    ran = [t["key"] for t in stream.data if str(t["key"]).startswith("strads-")]
    assert not ran, f"tasks of the fit ran before it was refused: {ran[:5]}"
    return stream.data


def _wait_until_idle(client, timeout=30):
    deadline = time.monotonic() + timeout
    while any(client.processing().values()):
        assert time.monotonic() < deadline, f"the cluster is still busy: {client.processing()}"
        time.sleep(0.05)


def run_past_the_stop(program, raw_blocks, behind=2, max_rounds=300):
    """A program's rounds chained as the engine chains its tasks, the pushes updating the
    blocks' cells in place as on a worker, until ``behind`` rounds have run after the round
    whose pull met the stopping test: ``(parameters at the stop, parameters at the end, that
    round's record)``, the parameters being the blocks' ``collect`` one after the other."""
    ids = list(range(len(raw_blocks)))
    cells = [tasks.prepare(program, raw, b) for b, raw in zip(ids, raw_blocks)]
    pulled = tasks.initial_pull(program, tasks.Pulled(program.initial_shared(), {}), ids,
                                *map(tasks.initial_partial, cells))

    def parameters():
        return np.concatenate([program.collect(c.data, c.latest(), pulled.shared)
                               for c in cells])

    stop = None
    for t in range(max_rounds):
        instructions = program.schedule(t, [])
        pushed = [tasks.push(program, cells[b], None, pulled, instructions[b], t, t)
                  for b in ids]
        pulled = tasks.pull(program, pulled, ids, *pushed)
        if stop is None and pulled.stopped:
            stop, at_stop = pulled.record, parameters()
        elif stop is not None:
            assert pulled.record.get("after_stop"), "a record after the stop"
            behind -= 1
            if not behind:
                return at_stop, parameters(), stop
    raise AssertionError(f"no stop and {behind} rounds behind it in {max_rounds} rounds")
