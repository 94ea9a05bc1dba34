"""The message plane: messages and carried blocks go worker to worker outside the scheduler, so a
round is its pushes, its pull and its report for every program; a worker that dies while it
answers, or stops answering, ends in a recovery or a clear error, never a hang."""
import asyncio
import contextlib
import os
import signal
import threading
from pathlib import Path
from types import SimpleNamespace

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster

from dask_strads import (ElasticNet, ImplicitMatrixFactorization, Lasso,
                         LatentDirichletAllocation, LogisticRegression, MatrixFactorization)
from dask_strads.datasets import make_correlated_regression, make_lda_corpus, make_ratings
from dask_strads import run_sequential
from dask_strads.engine import Engine, LocalExecutor, stalls
from dask_strads.engine import plane
from dask_strads.engine.plane import Source
from dask_strads.partition import block_edges
from dask_strads.programs import Route, jacobi_blocks
from dask_strads.programs import lasso, prox_newton
from dask_strads.programs.datafits import Logistic, Multinomial
from dask_strads.programs.elastic_net import ElasticNetProgram
from dask_strads.programs.base import routes
from dask_strads.programs.mf import MFProgram
from dask_strads.programs.penalties import Penalty

from test_lda_program import setup as setup_lda
from test_mf_program import setup
from bounded import within
from test_waits import BOUND, logged

RATINGS = make_ratings(n_users=600, n_items=300, n_ratings=20000, random_state=0)[0]
REGRESSION = make_correlated_regression(200, 400, 10, random_state=0)[:2]
CORPUS = make_lda_corpus(n_docs=300, n_words=400, n_topics=5, random_state=0)[0]

ESTIMATORS = {  # what each fits, with P blocks on P workers
    "lasso": (lambda P: Lasso(alpha=1e-3, max_iter=20, tol=0.0, n_blocks=P), REGRESSION),
    "elastic_net": (lambda P: ElasticNet(alpha=1e-3, max_iter=20, tol=0.0, n_blocks=P),
                    REGRESSION),
    "logistic": (lambda P: LogisticRegression(max_iter=10, tol=0.0, n_blocks=P),
                 (REGRESSION[0], REGRESSION[1] > np.median(REGRESSION[1]))),
    "lda": (lambda P: LatentDirichletAllocation(5, max_iter=4, random_state=0), (CORPUS,)),
    "mf": (lambda P: MatrixFactorization(4, max_iter=4, tol=0.0, random_state=0), (RATINGS,)),
    "implicit_mf": (lambda P: ImplicitMatrixFactorization(4, max_iter=4, random_state=0),
                    (abs(RATINGS),)),
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name, P", [(name, 2) for name in sorted(ESTIMATORS)] + [("mf", 4)])
def test_a_round_is_at_most_p_plus_3_tasks(client_factory, name, P):
    """Counted in the graphs the engine submits on worker processes: whatever a program sends,
    a round holds at most its P pushes, the pull and the report (and a spare); a fused epoch
    of several rounds, P tasks and the two. Every program on two workers, and MF, whose
    messages grow as P^2, on four; the bound at any P is counted for every program in
    test_rounds_stay_p_plus_2_tasks_up_to_256_workers."""
    client = client_factory(P)
    make, data = ESTIMATORS[name]
    est = make(P).set_params(checkpoint_interval=0)
    est.client = client
    est.fit(*data)
    assert 0 < est.history_.stats.tasks_per_round <= P + 3  # fewer in fused epochs


class DiesWhileAnswering(MFProgram):
    """MF whose worker process exits the first time it answers another worker's request for a
    message once the file ``armed`` exists: a worker lost in the middle of a round's messages."""

    def __init__(self, *args, armed, **kwargs):
        super().__init__(*args, **kwargs)
        self.armed = armed

    def message(self, block_id, data, state, to_block):
        answering = threading.current_thread() is threading.main_thread()  # its event loop
        if answering and _claim(self.armed):
            os._exit(1)
        return super().message(block_id, data, state, to_block)


def _claim(path):
    """True in the one process that takes ``path`` (renamed away), False in the others."""
    try:
        os.rename(path, f"{path}.taken")
    except FileNotFoundError:
        return False
    return True


@pytest.fixture
def three_processes():
    """A cluster of three worker processes of its own: the tests below lose one."""
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        with Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(3, timeout=60)
            yield client


@pytest.mark.cluster
def test_a_worker_dying_while_it_sends_a_message_is_recovered(three_processes, tmp_path):
    """The worker answering a push's request for a message exits mid-answer after round 4:
    the push fails naming it, the scheduler drops it, and the fit goes on from the checkpoint
    of round 3 on the two workers left, ending with the factors of the sequential loop. Round
    graphs, so that the answer after round 4 comes before the next checkpoint (a worker lost
    inside a fused epoch: test_epochs)."""
    armed = tmp_path / "armed"
    program, raw = setup(RATINGS, 3, 3, program_class=DiesWhileAnswering, armed=str(armed))
    rounds = 12

    def arm(record):
        if record["round"] == 4 and not Path(f"{armed}.taken").exists():  # not when replayed
            armed.touch()

    result = Engine(program, client=three_processes, max_rounds=rounds, checkpoint_interval=4,
                    max_epoch_rounds=1, callback=arm).run(raw)
    assert Path(f"{armed}.taken").exists(), "no worker answered a request after round 4"
    (recovery,) = result.history.stats.recoveries
    assert recovery["round"] == 3 and len(recovery["lost"]) == 1
    params, reports = run_sequential(program, raw, rounds)
    for ours, reference in zip(result.gather(), params):
        np.testing.assert_array_equal(ours, reference)
    assert [r["objective"] for r in result.history] == [r["objective"] for r in reports]


#: What plane._refuse_if_gone reads of a worker's connection pool: none idle.
NO_IDLE_CONNECTIONS = SimpleNamespace(available={})


def test_a_request_to_an_address_nobody_listens_at_fails_at_once():
    """The plane asks a peer that nothing listens for any more (a dead worker's address) no
    further: a refused connection raises at once, where distributed's connect would retry it
    for its connect timeout (30 s); a peer that listens is asked as before."""
    async def check():
        server = await asyncio.start_server(lambda reader, writer: writer.close(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        address = f"tcp://127.0.0.1:{port}"
        listening = await plane._refuse_if_gone(NO_IDLE_CONNECTIONS, address)
        server.close()
        await server.wait_closed()
        with pytest.raises(ConnectionRefusedError):
            await asyncio.wait_for(plane._refuse_if_gone(NO_IDLE_CONNECTIONS, address), 5)
        return listening

    assert asyncio.run(check()) is None


@pytest.mark.cluster
@pytest.mark.slow
def test_a_stopped_peer_is_named_then_left_behind(monkeypatch):
    """A worker holding blocks stopped (SIGSTOP) after round 3 answers nothing: the fit waits
    for it with a warning that names it, and once the scheduler drops it (its worker-ttl, 8 s
    here) goes on without it, ending with the factors of the sequential loop."""
    monkeypatch.setattr(stalls, "SILENT_SECONDS", 2.0)
    # the bound is also ROUNDS_OF_PATIENCE rounds: on a loaded machine that outlasts the ttl
    monkeypatch.setattr(stalls, "ROUNDS_OF_PATIENCE", 1)
    program, raw = setup(RATINGS, 3, 3)
    rounds = 12
    stopped = {}
    with dask.config.set({"distributed.scheduler.worker-ttl": "8s"}), LocalCluster(
            n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(3, timeout=60)
            pids = client.run(os.getpid)

            def stop_block_0(record):
                if record["round"] == 3 and not stopped:
                    key = next(k for k in client.who_has() if "-block-0-" in str(k))
                    stopped["worker"] = client.who_has()[key][0]
                    os.kill(pids[stopped["worker"]], signal.SIGSTOP)

            engine = Engine(program, client=client, max_rounds=rounds, checkpoint_interval=4,
                            callback=stop_block_0)
            try:
                with logged() as messages:
                    result = within(BOUND, engine.run, raw)
            finally:
                if stopped:  # unless its nanny, which the scheduler asks to, restarted it
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pids[stopped["worker"]], signal.SIGCONT)
            params = result.gather()
    assert any(f"worker {stopped['worker']} holding blocks 0" in m and "has not answered" in m
               for m in messages)
    (recovery,) = result.history.stats.recoveries
    assert stopped["worker"] in recovery["lost"]
    reference, reports = run_sequential(program, raw, rounds)
    for ours, expected in zip(params, reference):
        np.testing.assert_array_equal(ours, expected)


def feature_blocks(P, make_block):
    """The regression problem's features cut into P blocks, each made by ``make_block``."""
    X, y = REGRESSION
    edges = block_edges(X.shape[1], P)
    return np.diff(edges), y - y.mean(), [make_block(X[:, lo:hi])
                                          for lo, hi in zip(edges[:-1], edges[1:])]


def linear_program(name, P):
    """The Lasso, elastic-net or logistic program on P feature blocks, and the blocks."""
    if name == "logistic":
        widths, y, raw = feature_blocks(P, lambda X: prox_newton.make_raw_block(
            X, np.zeros((1, X.shape[1]))))
        Y = np.where(y > 0, 1.0, -1.0)[:, None]
        return (prox_newton.ProxNewtonProgram(P, datafit=Logistic(Y, 1.0),
                                              penalty=Penalty(0.5, 0.5), fit_intercept=True,
                                              tolerance=0.0),
                raw)
    if name == "multinomial":  # three classes: the target's thirds
        widths, y, raw = feature_blocks(P, lambda X: prox_newton.make_raw_block(
            X, np.zeros((3, X.shape[1]))))
        labels = np.searchsorted(np.quantile(y, [1 / 3, 2 / 3]), y)
        Y = np.where(labels[:, None] == np.arange(3), 1.0, -1.0)
        return (prox_newton.ProxNewtonProgram(P, datafit=Multinomial(Y, 1.0),
                                              penalty=Penalty(0.5, 0.5), fit_intercept=True,
                                                 tolerance=0.0), raw)
    widths, y, raw = feature_blocks(P, lambda X: lasso.make_raw_block(
        X, REGRESSION[1] - REGRESSION[1].mean(), np.zeros(X.shape[1]), X.mean(axis=0), True))
    if name == "lasso":
        return lasso.LassoProgram(widths, y_centred=y, alpha=1e-3, positive=False,
                                  gap_tolerance=0.0), raw
    return ElasticNetProgram(widths, y_centred=y, alpha=1e-3, l1_ratio=0.5, positive=False,
                             gap_tolerance=0.0), raw


@pytest.mark.parametrize("P", [64, 256])
@pytest.mark.parametrize("program_name",
                         ["mf", "lda", "lasso", "elastic_net", "logistic", "jacobi"])
def test_rounds_stay_p_plus_2_tasks_up_to_256_workers(program_name, P):
    """The graphs the engine emits for P virtual workers (Dask's synchronous scheduler, a
    block, or one block of each side, a worker): P pushes + pull + report a round at any P
    for every program, where MF's messages were P^2 and LDA's vocabulary-block hand-offs P
    tasks more."""
    slots = None
    if program_name == "mf":
        program, raw = setup(RATINGS, P, P)
        slots = list(range(P)) * 2  # user block b and item block b on worker b
    elif program_name == "lda":
        _, _, raw, program, _ = setup_lda(n_shards=P, n_blocks=P)
    elif program_name == "jacobi":
        rng = np.random.default_rng(0)
        A = rng.standard_normal((4 * P, 4 * P)) + 8 * P * np.eye(4 * P)
        program, raw = jacobi_blocks(A, rng.standard_normal(4 * P), P)
    else:
        program, raw = linear_program(program_name, P)
    engine = Engine(program, executor=LocalExecutor(dask.local.get_sync, P), max_rounds=2,
                    checkpoint_interval=0)
    sizes = []
    submit = engine.executor.submit
    engine.executor.submit = lambda graph: sizes.append(sum(map(len, graph.values()))) or submit(
        graph)
    engine.run(raw, slots)
    _, *rounds, _ = sizes  # placement and collection graphs around the rounds
    assert rounds == [P + 2] * 2


@pytest.mark.parametrize("program_name", ["mf", "lda"])
def test_a_static_schedule_declares_its_messages_before_the_rounds_run(program_name):
    """The routes of every round, planned from the schedule before the fit starts, are the
    messages the plane carried in it (plus, for LDA, the carried blocks a push took from
    another's cell: all but a block's first push, which gets its initial value as a task's)."""
    if program_name == "mf":
        program, raw = setup(RATINGS, 3, 2)
    else:
        _, _, raw, program, _ = setup_lda(n_shards=3, n_blocks=4)
    rounds = 6
    assert program.static_schedule
    plan = [program.schedule(t, []) for t in range(rounds)]
    with dask.config.set(scheduler="synchronous"):
        result = Engine(program, max_rounds=rounds, checkpoint_interval=0).run(raw)
    taken, expected = set(), []
    for instructions in plan:
        carried = {i.carried for i in instructions.values()} - {None}
        expected.append(len(routes(instructions)) + len(carried & taken))
        taken |= carried
    assert expected == result.history.column("plane_messages") and sum(expected) > 0
    if program_name == "mf":  # each push reads every block of the other side
        assert all(Route(s, b) in routes(plan[0]) for b in plan[0]
                   for s in program.block_ids("users"))


def test_a_message_of_a_round_the_source_has_moved_past_is_refused():
    """A source updating in place holds one state: asked for a message of a round it has
    already moved past, it refuses with an error naming the rounds, instead of answering from
    its newer state."""
    from dask_strads.engine import tasks
    from dask_strads.engine.plane import Received, messages

    program, raw = setup(RATINGS, 2, 2)
    cell = tasks.prepare(program, raw[0], 0)
    cell.record(5, cell.latest(), 5)  # its push of round 5 has run
    source = Source(0, "here", cell, None)
    assert messages([source], 2, 6, Received())[0] is not None  # made from round 5's state
    with pytest.raises(RuntimeError, match=r"states of rounds \[5\]: a message of round 5"):
        messages([source], 2, 5, Received())
