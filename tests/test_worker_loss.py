"""A worker killed mid-fit, on a cluster of real processes: the fit goes on with the workers left
and ends with the clean run's model; without checkpoints it stops within seconds with an error
that names the worker and its blocks. Ctrl-C interrupts a fit at once, and the next fit works."""
import os
import signal
import subprocess
import sys
import time

import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

from dask_strads import Lasso, LatentDirichletAllocation, MatrixFactorization
from dask_strads.datasets import make_correlated_regression, make_lda_corpus, make_ratings
from dask_strads.engine import ClusterError, Engine
from dask_strads.engine import blocks as placement
from dask_strads.engine.blocks import place_blocks, worker_info
from dask_strads.estimators.inputs import blocks_along
from dask_strads.programs import BlockJacobi, jacobi_blocks

from conftest import (THROWAWAY_STOP_SECONDS, Round, _dask_command, _stop,
                      written_scheduler_file)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

DEADLINE = 30  # seconds from the kill to the error, generous for a loaded 2-core machine


@pytest.fixture
def add_workers(tmp_path):
    """``add_workers(n)``: ``n`` more ``dask worker --no-nanny`` processes (a thread each) of a
    ``dask scheduler`` on 127.0.0.1 that the first call starts; returns a client of it once
    they are all there."""
    scheduler_file = tmp_path / "scheduler.json"
    processes, clients = [], []

    def start(*command):
        processes.append(subprocess.Popen(
            _dask_command(*command), cwd=tmp_path, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True))

    def add(n):
        if not clients:
            start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                  "--scheduler-file", str(scheduler_file))
            written_scheduler_file(scheduler_file)
            clients.append(Client(scheduler_file=str(scheduler_file), set_as_default=False,
                                  timeout=60))
        expected = len(worker_info(clients[0])) + n
        for _ in range(n):
            start("worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1",
                  "--no-nanny", "--no-dashboard", "--death-timeout", "30",
                  "--local-directory", str(tmp_path / f"worker-{len(processes)}"))
        clients[0].wait_for_workers(expected, timeout=60)
        return clients[0]

    yield add
    for client in clients:
        client.close()
    _stop(processes, THROWAWAY_STOP_SECONDS)


@pytest.fixture
def three_workers(add_workers):
    """``dask scheduler`` and three ``dask worker --no-nanny`` processes on 127.0.0.1."""
    return add_workers(3)


def _killer(client, after_round, prefix="-block-0-"):
    """A callback that SIGKILLs the worker of block 0 once round ``after_round`` is read: the
    running fit's (the engine passes it), else the holder of the first key named ``prefix``
    (a key of an earlier fit that the scheduler still lists may name another worker)."""
    pids = client.run(os.getpid)
    state = {}

    def callback(record, running=None):
        if record["round"] == after_round and "killed" not in state:
            if running is not None:
                address = running._run.owners[0]
            else:
                victim = next(k for k in client.who_has() if prefix in str(k)
                              and "checkpoint" not in str(k) and "replica" not in str(k))
                address = client.who_has()[victim][0]
            os.kill(pids[address], signal.SIGKILL)
            state.update(killed=address, at=time.monotonic())
        return False

    return callback, state


CASES = {  # fits of a fixed number of rounds, so that a clean run and a recovered one compare
    "lasso": (lambda: Lasso(alpha=1e-4, tol=0.0, max_iter=30, random_state=0, n_blocks=3),
              lambda: make_correlated_regression(100, 300, 10, random_state=0)[:2]),
    "lda": (lambda: LatentDirichletAllocation(5, max_iter=10, random_state=0,
                                              checkpoint_interval=2),
            lambda: (make_lda_corpus(n_docs=300, n_words=400, n_topics=5, random_state=0)[0],)),
    "mf": (lambda: MatrixFactorization(4, max_iter=15, tol=0.0, random_state=0,
                                       checkpoint_interval=5),
           lambda: (make_ratings(n_users=600, n_items=300, n_ratings=20000,
                                 random_state=0)[0],)),
}
FITTED = {"lasso": ["coef_", "intercept_"], "lda": ["components_", "doc_topic_"],
          "mf": ["user_factors_", "components_", "user_bias_", "item_bias_"]}

_CLEAN = {}


def clean_fit(client, name, args, data="in memory"):
    """The clean run (no worker killed) of ``CASES[name]``'s estimator on ``args`` (``data``
    names them), fitted on ``client``'s cluster of three workers the first time a test of this
    module asks for it and kept for the others: the fits it is compared with run the same blocks,
    rounds and seeds on any cluster of three workers."""
    key = (name, data)
    if key not in _CLEAN:
        assert len(worker_info(client)) == 3
        clean = CASES[name][0]()
        clean.client = client
        _CLEAN[key] = clean.fit(*args)
    return _CLEAN[key]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("after_round", [3, 14], ids=["before-a-checkpoint", "after-one"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fit_goes_on_after_a_killed_worker(three_workers, name, after_round):
    """SIGKILL the worker of block 0: the fit goes on with the two workers left, from the last
    checkpoint (every ``checkpoint_interval`` iterations) or from the start, and ends with the
    clean run's model."""
    client = three_workers
    make, data = CASES[name]
    args = data()
    clean = clean_fit(client, name, args)
    callback, state = _killer(client, after_round)
    recovered = make().set_params(callback=callback)
    recovered.client = client
    recovered.fit(*args)
    assert "killed" in state
    assert len(worker_info(client)) == 2  # the scheduler's own view, not the client's cache
    (recovery,) = recovered.history_.stats.recoveries
    assert recovery["lost"] == [state["killed"]] and recovery["blocks_moved"] >= 1
    every = clean.checkpoint_interval * (clean.history_.stats.rounds // clean.max_iter)
    assert every < 14  # a checkpoint comes before the kill "after-one"
    # the newest checkpoint before the kill, or one taken while the kill was noticed (a fused
    # epoch's rounds run ahead of the records)
    newest_before = (after_round + 1) // every * every - 1
    assert recovery["round"] >= newest_before and (recovery["round"] + 1) % every == 0
    assert recovered.n_iter_ == clean.n_iter_
    for attribute in FITTED[name]:
        np.testing.assert_allclose(getattr(recovered, attribute), getattr(clean, attribute),
                                   rtol=1e-10, atol=1e-12, err_msg=attribute)
    assert len(recovered.history_) == len(clean.history_)  # replayed rounds are recorded once


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_worker_lost_after_the_last_report_is_recovered_from_the_round_before(three_workers):
    """With a checkpoint every round, the worker of block 0 killed once the last round's report
    is read (before the parameters are collected): the result is the state that report measured,
    one round back, which the last round's checkpoint no longer holds; the fit goes on from the
    checkpoint before it, runs the last round again and ends with the clean run's model."""
    client = three_workers
    make, data = CASES["lasso"]
    args = data()
    clean = make().set_params(checkpoint_interval=1)
    clean.client = client
    clean.fit(*args)
    last = len(clean.history_) - 1
    kill, state = _killer(client, last)

    def callback(record):
        if record["round"] == last and "killed" not in state:
            time.sleep(1.0)  # the copies of the last rounds' checkpoints are made meanwhile
        return kill(record)

    recovered = make().set_params(checkpoint_interval=1, callback=callback)
    recovered.client = client
    recovered.fit(*args)
    assert "killed" in state
    (recovery,) = recovered.history_.stats.recoveries
    assert recovery["round"] == last - 1
    assert recovered.n_iter_ == clean.n_iter_
    np.testing.assert_allclose(recovered.coef_, clean.coef_, rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_one_block_fit_resumes_from_its_checkpoint_on_another_worker(three_workers):
    """One block (the Lasso's default below 1e7 stored values) lives on one worker: its
    checkpoint's replica goes to another worker of the cluster, so that killing the block's
    worker after round 14 resumes the fit from the checkpoint of round 9, not from the start,
    and the fit ends with the clean run's model."""
    client = three_workers

    def make(**params):
        return Lasso(alpha=1e-4, tol=0.0, max_iter=30, random_state=0, **params)

    X, y = CASES["lasso"][1]()
    clean = make()
    clean.client = client
    clean.fit(X, y)
    assert clean.n_blocks_ == 1
    callback, state = _killer(client, 14)
    recovered = make(callback=callback)
    recovered.client = client
    recovered.fit(X, y)
    assert "killed" in state
    (recovery,) = recovered.history_.stats.recoveries
    assert recovery["lost"] == [state["killed"]] and recovery["round"] == 9
    assert recovered.n_iter_ == clean.n_iter_
    np.testing.assert_allclose(recovered.coef_, clean.coef_, rtol=1e-10, atol=1e-12)
    assert len(recovered.history_) == len(clean.history_)


def test_without_checkpoints_a_lost_worker_is_a_clear_error(three_workers):
    """The engine with recovery off stops within seconds, naming the worker and its blocks."""
    client = three_workers
    rng = np.random.default_rng(0)
    A = rng.uniform(0, 1, (30, 30)) + 30 * np.eye(30)
    program, blocks = jacobi_blocks(A, rng.standard_normal(30), 3)
    callback, state = _killer(client, 2, prefix="-block-0-")
    engine = Engine(program, client=client, max_rounds=10_000, callback=callback,
                    checkpoint_interval=0)
    with pytest.raises(ClusterError, match="worker .* holding blocks .*0.* was lost") as error:
        engine.run(blocks)
    assert state["killed"] in str(error.value)
    assert time.monotonic() - state["at"] < DEADLINE


def _assert_lasso_recovers(client, X, y):
    """A Lasso fit whose worker of block 0 is killed after round 14 ends as a clean one."""
    make, _ = CASES["lasso"]
    clean = clean_fit(client, "lasso", (X, y))
    callback, state = _killer(client, 14)
    recovered = make().set_params(callback=callback)
    recovered.client = client
    recovered.fit(X, y)
    assert "killed" in state and len(recovered.history_.stats.recoveries) == 1
    np.testing.assert_allclose(recovered.coef_, clean.coef_, rtol=1e-10, atol=1e-12)


def _dask_lasso_data():
    """A Lasso's data as Dask arrays of a dense array, chunks (n/4, p/2): 1.2 MB, scattered to
    the cluster when a placement computes its blocks."""
    X, y = make_correlated_regression(100, 1500, 10, random_state=0)[:2]
    return da.from_array(X, chunks=(25, 750)), da.from_array(y, chunks=25)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dask_input_is_recomputed_on_the_workers_left_fit_after_fit(add_workers):
    """Lazy blocks of a lost worker are computed again from their collection: two fits on
    Dask arrays, each losing the worker of block 0 (SIGKILL, no nanny) at 40% of its rounds,
    each end with the clean run's model (a new worker joins before the next fit). (In the
    suite, the other tests' processes load the machine beyond its cores meanwhile.)"""
    client = add_workers(3)
    X, y = _dask_lasso_data()
    make, _ = CASES["lasso"]
    clean = clean_fit(client, "lasso", (X, y), data="dask")
    for fit_number in range(2):
        if fit_number:
            add_workers(1)  # back to three workers before the next fit
        callback, state = _killer(client, 12)  # of 30 rounds
        recovered = make().set_params(callback=callback)
        recovered.client = client
        recovered.fit(X, y)
        assert "killed" in state and len(recovered.history_.stats.recoveries) == 1
        np.testing.assert_allclose(recovered.coef_, clean.coef_, rtol=1e-10, atol=1e-12)


def _workers_left(client, n):
    """Wait until the scheduler lists at most ``n`` workers."""
    deadline = time.monotonic() + DEADLINE
    while len(worker_info(client)) > n:
        assert time.monotonic() < deadline, "the killed worker was not removed"
        time.sleep(0.1)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_worker_lost_while_the_blocks_are_placed_again_is_lost_too(three_workers,
                                                                     monkeypatch):
    """The worker of block 0 killed after round 14; while the blocks are placed again from the
    Dask arrays, once their data is scattered, another worker holding some of it is killed
    (its keys forgotten: the placement's tasks are cancelled). The placement starts afresh on
    the worker left, and the fit ends with the clean run's model."""
    client = three_workers
    X, y = _dask_lasso_data()
    make, _ = CASES["lasso"]
    clean = clean_fit(client, "lasso", (X, y), data="dask")
    pids = client.run(os.getpid)
    callback, state = _killer(client, 14)
    scattered = placement._scattered

    def kill_a_holder(client_, graph):
        futures = scattered(client_, graph)
        if "killed" in state and "also" not in state:
            holders = sorted({w for where in client.who_has(list(futures.values())).values()
                              for w in where})
            state["also"] = holders[0]
            os.kill(pids[holders[0]], signal.SIGKILL)
            _workers_left(client, 1)
        return futures

    monkeypatch.setattr(placement, "_scattered", kill_a_holder)
    recovered = make().set_params(callback=callback)
    recovered.client = client
    recovered.fit(X, y)
    assert "also" in state and len(worker_info(client)) == 1
    (recovery,) = recovered.history_.stats.recoveries
    assert recovery["lost"] == [state["killed"], state["also"]]
    np.testing.assert_allclose(recovered.coef_, clean.coef_, rtol=1e-10, atol=1e-12)


def test_blocks_are_placed_again_after_their_held_data_was_lost(three_workers):
    """Placing the same lazy blocks after a lost worker that held part of the scattered array
    computes them again from the array, not from tasks of the first placement whose scattered
    inputs died with the worker (they are under keys of their own)."""
    client = three_workers
    X = np.random.default_rng(0).standard_normal((300, 600))  # 1.4 MB: scattered, a chunk a worker
    blocks = blocks_along(da.from_array(X, chunks=(100, 600)), [0, 200, 400, 600],
                          lambda part, lo, hi: part, axis=1)
    first = place_blocks(client, blocks)
    pids = client.run(os.getpid)
    os.kill(pids[first[0].worker], signal.SIGKILL)
    deadline = time.monotonic() + DEADLINE
    while len(worker_info(client)) > 2:
        assert time.monotonic() < deadline, "the killed worker was not removed"
        time.sleep(0.1)
    again = place_blocks(client, blocks)
    assert first[0].worker not in {p.worker for p in again}
    for b, block in enumerate(client.gather([p.future for p in again])):
        np.testing.assert_array_equal(block, X[:, 200 * b:200 * (b + 1)])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_with_nannies_the_fit_goes_on_and_the_worker_comes_back():
    """A nanny restarts its killed worker at a new address: the fit goes on on the others."""
    X, y = CASES["lasso"][1]()
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, \
            Client(cluster, set_as_default=False) as client:
        _assert_lasso_recovers(client, X, y)
        client.wait_for_workers(3, timeout=60)  # the nanny brought one back


def test_a_killed_scheduler_is_a_clear_error_within_the_deadline(tmp_path):
    """Scheduler gone mid-fit: a ClusterError saying so, within seconds."""
    scheduler_file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen(
        _dask_command("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                      "--scheduler-file", str(scheduler_file)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    workers = []
    try:
        written_scheduler_file(scheduler_file)
        workers = [subprocess.Popen(
            _dask_command("worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1",
                          "--no-nanny", "--no-dashboard", "--death-timeout", "5"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            for _ in range(2)]
        with Client(scheduler_file=str(scheduler_file), set_as_default=False,
                    timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
            killed = {}

            def callback(record):
                if record["round"] == 2 and not killed:
                    os.killpg(scheduler.pid, signal.SIGKILL)
                    killed["at"] = time.monotonic()

            model = Lasso(alpha=0.001, tol=0.0, max_iter=10_000, callback=callback)
            model.client = client
            with pytest.raises(ClusterError, match="scheduler .* unreachable"):
                model.fit(*make_correlated_regression(200, 400, 10, random_state=0)[:2])
            assert time.monotonic() - killed["at"] < DEADLINE
            assert not hasattr(model, "coef_")
    finally:
        _stop([scheduler, *workers], THROWAWAY_STOP_SECONDS)


class KillsItsWorker(BlockJacobi):
    """Block 0's push ends the worker process it runs in, wherever it is placed."""

    def push(self, block_id, data, state, instruction, shared, inbox):
        if block_id == 0 and instruction.round >= 2:
            os._exit(1)
        return super().push(block_id, data, state, instruction, shared, inbox)

    def schedule(self, round_index, history):
        return {b: Round(round_index) for b in range(len(self.row_starts) - 1)}


def test_a_block_that_keeps_killing_its_workers_stops_the_fit():
    """With nannies the workers come back, so recovery could go on for ever: a block whose
    worker is lost three times stops the fit with an error that says so."""
    rng = np.random.default_rng(0)
    A = rng.uniform(0, 1, (30, 30)) + 30 * np.eye(30)
    base, blocks = jacobi_blocks(A, rng.standard_normal(30), 3)
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, \
            Client(cluster, set_as_default=False) as client:
        engine = Engine(KillsItsWorker(base.row_starts), client=client, max_rounds=50,
                        checkpoint_interval=1)
        with pytest.raises(ClusterError, match="block 0 has now lost its worker 3 times"):
            engine.run(blocks)


SIGINT_SCRIPT = """
import sys
import time
import warnings
warnings.simplefilter("ignore")
from dask_strads import Lasso, embedded_client
from dask_strads.datasets import make_correlated_regression

X, y, _ = make_correlated_regression(1000, 2000, 20, random_state=0)
model = Lasso(alpha=0.001, tol=1e-15, max_iter=100000)
if sys.argv[1] == "cluster":
    model.client = embedded_client()
print("fitting", flush=True)
try:
    model.fit(X, y)
    print("finished: the fit was not interrupted")
except KeyboardInterrupt:
    print("interrupted", flush=True)
if model.client is not None:  # the fit's tasks are released
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(model.client.processing().values()):
        time.sleep(0.1)
    print("processing", sum(map(len, model.client.processing().values())), flush=True)
model.set_params(alpha=0.1, tol=1e-4, max_iter=1000).fit(X, y)
print("next fit", model.n_iter_, "rounds", flush=True)
"""


@pytest.mark.parametrize("where", ["default", "cluster"])
@pytest.mark.parametrize("group", [False, True], ids=["process", "process-group"])
def test_ctrl_c_interrupts_a_fit_and_the_next_fit_works(tmp_path, where, group):
    script = tmp_path / "interrupted.py"
    script.write_text(SIGINT_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), where], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "fitting"
        time.sleep(3)  # well into the fit
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    assert "interrupted" in out and "next fit" in out, (out, err[-2000:])
    if where == "cluster":
        assert "processing 0" in out, out
