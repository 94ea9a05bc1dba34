"""The engine against independent references: run_sequential, np.linalg.solve, who_has."""
import asyncio
from dataclasses import dataclass
import dask
import numpy as np
import pytest
import psutil
from distributed import Client, Worker, default_client, get_worker

from dask_strads.engine import (
    DistributedExecutor, Engine, EngineResult, LocalExecutor, close_embedded_client,
    embedded_client, executor_for,
)
from dask_strads.engine import executors, runner, runtime
from dask_strads.engine.errors import WorkerLost
from dask_strads.engine.blocks import PinnedBlock, PlacedBlocks, place_blocks
from dask_strads.programs import BlockJacobi, Instruction, jacobi_blocks, run_sequential
from dask_strads.programs.jacobi import JacobiReport

from conftest import Round

N, N_BLOCKS = 40, 4
ROUNDS = 30  # Jacobi contracts by ~1/DOMINANCE a round (its square root with staleness 1)
DOMINANCE = 8.0


def dominant_system(n=N, seed=0):
    """``A x = b`` with non-negative off-diagonals, so the Jacobi rate is close to 1/DOMINANCE."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.0, 1.0, (n, n))
    np.fill_diagonal(A, 0.0)
    signs = rng.choice([-1.0, 1.0], n)
    A[np.arange(n), np.arange(n)] = signs * DOMINANCE * A.sum(axis=1)
    return A, rng.standard_normal(n)


def gather_x(client, result):
    return np.concatenate(client.gather(result.params))


def assert_same_run(client, result, reference):
    """Engine result equals run_sequential's: parameters and the report of every round."""
    ref_params, ref_reports = reference
    np.testing.assert_allclose(gather_x(client, result), np.concatenate(ref_params),
                               rtol=1e-10, atol=1e-14)
    assert len(result.history) == len(ref_reports)
    np.testing.assert_allclose(result.history.column("change"),
                               [r["change"] for r in ref_reports], rtol=1e-10, atol=1e-14)


def _worker_address():
    try:
        return get_worker().address
    except ValueError:  # run_sequential: no worker
        return None


@dataclass(frozen=True, kw_only=True)
class WhereReport(JacobiReport):
    pushed_on: dict | None = None
    pulled_on: str | None = None


class WhereJacobi(BlockJacobi):
    """Block-Jacobi whose partials and data say on which worker they were made."""

    def prepare_block(self, raw, block_id):
        return {**raw, "prepared_on": _worker_address()}

    def init_block(self, data, block_id):
        state, partial = super().init_block(data, block_id)
        return state, (partial, _worker_address())

    def push(self, block_id, data, state, instruction, shared, inbox):
        state, partial = super().push(block_id, data, state, instruction, shared, inbox)
        return state, (partial, _worker_address())

    def pull(self, partials, shared):
        shared, report = super().pull({b: p for b, (p, _) in partials.items()}, shared)
        return shared, WhereReport(**vars(report),
                                   pushed_on={b: where for b, (_, where) in partials.items()},
                                   pulled_on=_worker_address())


class AlternatingJacobi(BlockJacobi):
    """Even blocks in even rounds, odd blocks in odd rounds: blocks sit rounds out."""

    def schedule(self, round_index, history):
        return {b: Instruction() for b in range(len(self.row_starts) - 1)
                if b % 2 == round_index % 2}


class LaggedJacobi(BlockJacobi):
    """Claims its reports describe the previous round: the result must come from round t - 1."""

    report_lag = 1


class FailingJacobi(BlockJacobi):
    def schedule(self, round_index, history):
        return {b: Round(round_index) for b in range(len(self.row_starts) - 1)}

    def push(self, block_id, data, state, instruction, shared, inbox):
        if instruction.round == 2 and block_id == 1:
            raise RuntimeError("push of block 1 failed on purpose in round 2")
        return super().push(block_id, data, state, instruction, shared, inbox)


@pytest.fixture(scope="module")
def system():
    A, b = dominant_system()
    program, raw = jacobi_blocks(A, b, N_BLOCKS)
    return A, b, program, raw


def fit(client, program, raw, **options):
    return Engine(program, client=client, **options).run(raw)


# --------------------------------------------------------------------------- results


@pytest.mark.parametrize("staleness", [0, 1])
@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
@pytest.mark.parametrize("n_workers", [1, 2, 4])
def test_jacobi_matches_sequential_and_solve(client_factory, system, n_workers, processes,
                                             staleness):
    A, b, program, raw = system
    client = client_factory(n_workers, processes=processes)
    result = fit(client, program, raw, staleness=staleness, max_rounds=ROUNDS)
    assert isinstance(result, EngineResult)
    assert len(result.params) == N_BLOCKS
    assert_same_run(client, result, run_sequential(program, raw, ROUNDS, staleness=staleness))
    np.testing.assert_allclose(gather_x(client, result), np.linalg.solve(A, b),
                               rtol=1e-9, atol=1e-12)
    assert len(set(result.param_workers)) == n_workers  # every worker holds a block


def test_a_local_graph_runs_when_its_thread_asks_and_not_before():
    """A local executor runs a thread's graphs when that thread asks for a value of them; a
    value of a graph another thread has not run yet is an error, never taken for a value."""
    import threading

    from dask_strads.engine.graph import RoundGraph

    executor = LocalExecutor(dask.local.get_sync, 1)
    graph = RoundGraph()
    two = graph.add("w", "two", int, "2")
    graph.add("w", "four", pow, two, 2)
    handles = {}
    thread = threading.Thread(target=lambda: handles.update(executor.submit(graph.layers)))
    thread.start()
    thread.join()
    assert not executor.done(handles["four"])
    with pytest.raises(RuntimeError, match="another thread submitted"):
        executor.result(handles["four"])
    later = RoundGraph()
    later.add("w", "eight", pow, two, 3)
    with pytest.raises(RuntimeError, match="another thread submitted"):
        executor.submit(later.layers)
    mine = executor.submit(graph.layers)
    assert not executor.done(mine["four"])
    assert executor.result(mine["four"]) == 4 and executor.done(mine["two"])


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
@pytest.mark.parametrize("staleness", [0, 1])
def test_local_schedulers_run_the_same_graphs(system, scheduler, staleness):
    """With dask.config naming a local scheduler and no client, no cluster starts and the
    result equals the sequential loop's and the distributed run's. The rounds submitted
    between two reports the engine reads run as one graph on the scheduler."""
    A, b, program, raw = system
    close_embedded_client()
    with dask.config.set(scheduler=scheduler):
        engine = Engine(program, staleness=staleness, max_rounds=ROUNDS)
        assert isinstance(engine.executor, LocalExecutor)
        calls, get = [], engine.executor.get
        engine.executor.get = lambda graph, keys, **kw: calls.append(keys) or get(graph, keys,
                                                                                  **kw)
        result = engine.run(raw)
    rounds_a_call = [sum("-report-" in key for key in keys) for keys in calls]
    assert sum(rounds_a_call) == ROUNDS
    assert max(rounds_a_call) == engine.pipeline_depth + 1
    times = result.history.column("time")
    assert times == sorted(times) and len(set(times)) == ROUNDS  # each at its own pull
    assert runtime._embedded is None
    reference = run_sequential(program, raw, ROUNDS, staleness=staleness)
    np.testing.assert_allclose(np.concatenate(result.gather()), np.concatenate(reference[0]),
                               rtol=1e-10, atol=1e-14)
    assert result.history.column("change") == pytest.approx(
        [r["change"] for r in reference[1]], rel=1e-10, abs=1e-14)
    array = result.parameters()
    assert array.chunks == ((10,) * N_BLOCKS,)
    np.testing.assert_allclose(array.compute(scheduler="sync"), np.linalg.solve(A, b),
                               rtol=1e-9, atol=1e-12)


def test_staleness_changes_the_trajectory(system):
    """Guard for the tests above: staleness 0 and 1 are distinguishable round by round."""
    _, _, program, raw = system
    fresh = [r["change"] for r in run_sequential(program, raw, 8, staleness=0)[1]]
    stale = [r["change"] for r in run_sequential(program, raw, 8, staleness=1)[1]]
    assert not np.allclose(fresh[1:], stale[1:], rtol=1e-3)


@pytest.mark.parametrize("staleness", [0, 1])
def test_jacobi_on_cli_cluster(cli_cluster, system, staleness):
    A, b, program, raw = system
    result = fit(cli_cluster, program, raw, staleness=staleness, max_rounds=ROUNDS)
    assert_same_run(cli_cluster, result, run_sequential(program, raw, ROUNDS, staleness=staleness))
    np.testing.assert_allclose(gather_x(cli_cluster, result), np.linalg.solve(A, b),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("staleness, pipeline_depth", [(0, 1), (2, 1), (2, 4), (3, 2)])
def test_pipeline_depth_and_staleness(client_factory, system, staleness, pipeline_depth):
    _, _, program, raw = system
    client = client_factory(2, processes=False)
    result = fit(client, program, raw, staleness=staleness, pipeline_depth=pipeline_depth,
                 max_rounds=20)
    assert_same_run(client, result, run_sequential(program, raw, 20, staleness=staleness))


@pytest.mark.parametrize("staleness", [0, 1])
def test_blocks_sitting_rounds_out(client_factory, system, staleness):
    _, _, base, raw = system
    program = AlternatingJacobi(base.row_starts)
    client = client_factory(2, processes=False)
    result = fit(client, program, raw, staleness=staleness, max_rounds=15)
    assert_same_run(client, result, run_sequential(program, raw, 15, staleness=staleness))


def test_report_lag_takes_the_previous_rounds_state(client_factory, system):
    _, _, base, raw = system
    program = LaggedJacobi(base.row_starts)
    client = client_factory(2, processes=False)
    full = fit(client, program, raw, max_rounds=6)
    assert_same_run(client, full, run_sequential(program, raw, 6))
    stopped = fit(client, program, raw, max_rounds=30, callback=lambda r: r["round"] == 3)
    assert_same_run(client, stopped, run_sequential(program, raw, 4))
    # and the lag matters: round 3's own state is a different vector
    assert not np.allclose(gather_x(client, stopped),
                           np.concatenate(run_sequential(base, raw, 4)[0]))


# --------------------------------------------------------------------------- placement


@pytest.mark.parametrize("where", ["processes", "cli"])
def test_blocks_stay_pinned_and_parameters_are_a_dask_array(request, client_factory, system,
                                                            where):
    A, b, base, raw = system
    client = client_factory(2, processes=True) if where == "processes" else (
        request.getfixturevalue("cli_cluster"))
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    program = WhereJacobi(base.row_starts)
    snapshots = []

    def callback(record):
        snapshots.append(client.who_has())
        return False

    result = Engine(program, client=client, max_rounds=8, callback=callback).run(raw)
    owners = result.param_workers
    assert set(owners) == set(workers)
    assert len(snapshots) == 8
    run_id = result.params[0].key.rsplit("-", 1)[1]  # the shared cluster may hold others' cells
    for snapshot in snapshots:  # during the fit: each block's cell on its worker, only there
        cells = {key: where for key, where in snapshot.items()
                 if key.startswith("strads-jacobi-block-") and key.endswith(f"-{run_id}")}
        assert len(cells) == N_BLOCKS
        for key, where in cells.items():
            assert list(where) == [owners[int(key.split("-")[3])]], key
    # every push ran on its block's worker
    for record in result.history:
        assert record["pushed_on"] == dict(enumerate(owners))
    # the parameters: a Dask array whose chunks are the blocks, left on their workers
    array = result.parameters()
    assert array.chunks == ((10,) * N_BLOCKS,)
    who = client.who_has(result.params)
    assert [list(who[f.key]) for f in result.params] == [[w] for w in owners]
    np.testing.assert_allclose(client.compute(array).result(), gather_x(client, result))
    np.testing.assert_allclose(gather_x(client, result),
                               np.concatenate(run_sequential(base, raw, 8)[0]), rtol=1e-10)


def test_a_round_is_one_graph_with_readable_keys(client_factory, system):
    """A round graph (the reference path, F = 1): one push per block, one pull, one report;
    keys name program, kind, block, round."""
    _, _, program, raw = system
    client = client_factory(2, processes=False)
    graphs = []
    engine = Engine(program, client=client, max_rounds=3, max_epoch_rounds=1)
    submit = engine.executor.submit
    engine.executor.submit = lambda graph: graphs.append(graph) or submit(graph)
    engine.run(raw)
    start, *rounds, end = graphs
    assert len(rounds) == 3
    for t, graph in enumerate(rounds):
        keys = sorted("-".join(k.split("-")[:-1]) for tasks in graph.values() for k in tasks)
        assert keys == sorted([f"strads-jacobi-push-{b}-{t}" for b in range(N_BLOCKS)]
                              + [f"strads-jacobi-pull-{t}", f"strads-jacobi-report-{t}"])


def test_runs_from_blocks_placed_once(client_factory, system):
    """Two runs (the second with another program) from one placement: results as from fresh
    placements, and the data sent once, under the first placement's keys only."""
    A, b, program, raw = system
    client = client_factory(2, processes=True)
    sent = []
    engine = Engine(program, client=client, max_rounds=ROUNDS)
    place = engine.executor.place
    engine.executor.place = lambda *args: sent.append(args) or place(*args)
    placed = PlacedBlocks.on(engine.executor, raw, prefix="strads-jacobi-data")
    first = engine.run(placed)
    lagged = Engine(LaggedJacobi(program.row_starts), max_rounds=6,
                    executor=engine.executor).run(placed)
    assert len(sent) == 1 and len(placed) == N_BLOCKS
    assert_same_run(client, first, run_sequential(program, raw, ROUNDS))
    assert_same_run(client, lagged, run_sequential(LaggedJacobi(program.row_starts), raw, 6))
    assert first.param_workers == lagged.param_workers == placed.owners
    data_keys = {key for key in client.who_has() if key.startswith("strads-jacobi-data-")}
    assert data_keys == {handle.key for handle in placed.handles}


def test_a_run_started_while_another_is_in_progress_pulls_on_another_worker(client_factory,
                                                                            system):
    """Runs in progress at once on the same blocks (cross-validation's paths) spread their
    pulls over the blocks' workers; a lone run pulls on its first block's worker."""
    A, b, program, raw = system
    client = client_factory(2, processes=True)
    where = WhereJacobi(program.row_starts)
    engine = Engine(where, client=client, max_rounds=ROUNDS)
    placed = PlacedBlocks.on(engine.executor, raw, prefix="strads-jacobi-data")
    assert len(set(placed.owners)) == 2
    lone = engine.run(placed)
    in_progress = engine.start(placed)
    try:
        second = Engine(where, max_rounds=ROUNDS, executor=engine.executor).run(placed)
    finally:
        in_progress.end()
    assert set(lone.history.column("pulled_on")) == {placed.owners[0]} == {in_progress.hub}
    assert set(second.history.column("pulled_on")) == set(placed.owners) - {placed.owners[0]}
    assert_same_run(client, second, run_sequential(program, raw, ROUNDS))


def test_place_blocks_persists_lazy_blocks(client_factory):
    import dask.array as da
    client = client_factory(2, processes=True)
    x = np.arange(40.0).reshape(20, 2)
    lazy = da.from_array(x, chunks=(5, 2))
    blocks = place_blocks(client, list(lazy.to_delayed().ravel()))
    assert len(blocks) == 4 and all(isinstance(blk, PinnedBlock) for blk in blocks)
    who = client.who_has([blk.future for blk in blocks])
    for blk in blocks:
        assert list(who[blk.future.key]) == [blk.worker]
    np.testing.assert_array_equal(np.concatenate(client.gather([b.future for b in blocks])), x)


def test_place_blocks_names_the_error_of_a_lazy_block(client_factory):
    import dask
    client = client_factory(2, processes=True)
    blocks = [dask.delayed(np.ones)(3), dask.delayed(np.reshape)(np.ones(3), (2, 2))]
    with pytest.raises(RuntimeError, match="placing a data block failed.*reshape"):
        place_blocks(client, blocks)



def test_a_value_lost_before_the_scheduler_knew_its_worker_left_is_a_worker_lost(
        client_factory, monkeypatch):
    """A gather finding no holder of a computed value, its worker killed before the scheduler
    dropped it (the full suite met this under load): the executor waits for the scheduler to
    drop that worker and raises WorkerLost, from which a fit recovers, where it raised a
    ClusterError that ended the fit."""
    client = client_factory(2, processes=False)
    executor = DistributedExecutor(client)
    handle = client.submit(sum, [1, 2], pure=False)
    assert handle.result() == 3

    async def held_by_no_worker(client, keys):
        raise KeyError(f"no worker holds {keys[0]}")

    looks = []

    def check(owners, cause=None, stalls=None):  # the scheduler drops it at its second look
        looks.append(owners)
        if len(looks) > 1:
            raise WorkerLost("worker w holding blocks 0 was lost during the fit", ["w"])

    monkeypatch.setattr(executors, "fetch", held_by_no_worker)
    monkeypatch.setattr(executor, "check", check)
    with pytest.raises(WorkerLost):
        executor.gather([handle], ["w"])


def test_values_reach_a_client_whose_gathers_distributed_broke(client_factory):
    """A gather cancelled at the wrong moment (a wait's timeout, Ctrl-C) leaves distributed's
    client awaiting a cancelled request in every later gather: ``Future.result`` and
    ``Client.gather`` of that client fail from then on (UnboundLocalError out of its sync()),
    which once made fits wait forever. The executor brings values to it all the same."""
    with Client(client_factory(2).scheduler.address, set_as_default=False) as client:
        future = client.submit(sum, [1, 2, 3], pure=False)
        assert future.result() == 6

        async def cancel_a_gather(steps):
            gathering = asyncio.ensure_future(client.gather([future], asynchronous=True))
            for _ in range(steps):
                await asyncio.sleep(0)
            gathering.cancel()

        for steps in range(50):
            client.sync(cancel_a_gather, steps)
            try:
                future.result(timeout=10)
            except UnboundLocalError:
                break
        else:
            pytest.fail("no cancelled gather broke the client")
        with pytest.raises(UnboundLocalError):
            client.gather([client.submit(sum, [4, 5], pure=False)])
        executor = DistributedExecutor(client)
        assert executor.result(client.submit(sum, [1, 2, 3, 4], pure=False)) == 10
        assert executor.gather([future]) == [6]


# --------------------------------------------------------------------------- history


def test_history_records_and_max_rounds(client_factory, system):
    _, _, program, raw = system
    client = client_factory(2, processes=False)
    result = fit(client, program, raw, max_rounds=7)
    history = result.history
    assert len(history) == 7 and history.stats.rounds == 7
    assert [r["round"] for r in history] == list(range(7))
    times = history.column("time")
    assert all(t >= 0 for t in times) and times == sorted(times)
    assert history.stats.wall_seconds >= times[-1]
    assert not history.stats.converged
    assert history.stats.compute_seconds == pytest.approx(sum(history.column("compute_seconds")))
    assert all(c > 0 for c in history.column("compute_seconds"))
    assert 0.0 <= history.stats.overhead_share <= 1.0
    assert history.stats.seconds_per_round == pytest.approx(history.stats.wall_seconds / 7)
    assert_same_run(client, result, run_sequential(program, raw, 7))


def test_converges_at_tol(client_factory, system):
    A, b, base, raw = system
    tol = 1e-9
    program = BlockJacobi(base.row_starts, tol=tol)
    reference = run_sequential(program, raw, 500)
    n_rounds = len(reference[1])
    assert 5 < n_rounds < 500
    client = client_factory(2, processes=False)
    result = fit(client, program, raw, max_rounds=500, pipeline_depth=3)
    changes = result.history.column("change")
    assert result.history.stats.converged
    assert result.history.stats.rounds == len(result.history) == n_rounds
    assert changes[-1] <= tol and all(c > tol for c in changes[:-1])
    assert_same_run(client, result, reference)
    np.testing.assert_allclose(gather_x(client, result), np.linalg.solve(A, b), atol=1e-8)


def test_tol_not_reached_within_max_rounds(client_factory, system):
    _, _, base, raw = system
    program = BlockJacobi(base.row_starts, tol=1e-12)
    result = fit(client_factory(2, processes=False), program, raw, max_rounds=4)
    assert len(result.history) == result.history.stats.rounds == 4
    assert not result.history.stats.converged


def test_callback_stops_the_fit(client_factory, system):
    _, _, program, raw = system
    client = client_factory(2, processes=False)
    seen = []

    def callback(record):
        seen.append(record)
        return record["round"] == 4

    result = fit(client, program, raw, max_rounds=40, pipeline_depth=3, callback=callback)
    assert [r["round"] for r in seen] == list(range(5))
    assert seen == result.history.records
    assert result.history.stats.rounds == len(result.history) == 5
    assert not result.history.stats.converged  # stopped by the user, not by the program
    assert_same_run(client, result, run_sequential(program, raw, 5))


# --------------------------------------------------------------------------- errors


class _NoCluster:
    def __getattr__(self, name):
        raise AssertionError(f"the engine touched the cluster ({name}) before validating")


@pytest.mark.parametrize("options", [
    {"staleness": -1}, {"staleness": 1.5}, {"pipeline_depth": 0}, {"pipeline_depth": -2},
])
def test_engine_rejects_bad_options_before_cluster_work(system, options):
    _, _, program, _ = system
    close_embedded_client()
    with pytest.raises(ValueError):
        Engine(program, **options)  # no client: validation must come before starting one
    assert runtime._embedded is None
    with pytest.raises(ValueError):
        Engine(program, client=_NoCluster(), **options)


@pytest.mark.parametrize("blocks, error", [([], ValueError), (None, TypeError),
                                           ("not blocks", TypeError)])
def test_run_rejects_bad_blocks_before_cluster_work(client_factory, system, blocks, error):
    _, _, program, _ = system
    engine = Engine(program, client=client_factory(1, processes=False))
    engine.executor = _NoCluster()
    with pytest.raises(error):
        engine.run(blocks)


def test_exception_in_push_propagates(client_factory, system):
    _, _, base, raw = system
    client = client_factory(2, processes=True)
    with pytest.raises(RuntimeError, match="push of block 1 failed on purpose in round 2"):
        fit(client, FailingJacobi(base.row_starts), raw, max_rounds=10)
    # the cluster is still usable afterwards
    result = fit(client, base, raw, max_rounds=3)
    assert_same_run(client, result, run_sequential(base, raw, 3))


# --------------------------------------------------------------------------- cluster


def test_executor_for_a_given_client(client_factory):
    client = client_factory(1, processes=False)
    executor = executor_for(client)
    assert isinstance(executor, DistributedExecutor) and executor.client is client


@pytest.mark.parametrize("bad", ["tcp://127.0.0.1:8786", object(), 3])
def test_executor_for_refuses_what_is_not_a_client(bad):
    with pytest.raises(TypeError, match="distributed.Client"):
        executor_for(bad)


@pytest.mark.cluster  # the embedded cluster
def test_fits_run_in_process_unless_their_data_are_large(system):
    close_embedded_client()
    tiny = executor_for(None, stored_entries=runtime.ONE_BLOCK_BELOW - 1)
    assert isinstance(tiny, LocalExecutor) and len(tiny.workers) == 1
    assert tiny.get is dask.local.get_sync
    medium = executor_for(None, stored_entries=runtime.ONE_BLOCK_BELOW)
    assert isinstance(medium, LocalExecutor) and medium.get is dask.threaded.get
    assert len(medium.workers) == runtime.default_cluster_size()
    assert runtime._embedded is None
    memory = psutil.virtual_memory().total
    large = executor_for(None, stored_entries=int(memory * runtime.CLUSTER_MEMORY_SHARE))
    assert isinstance(large, DistributedExecutor) and large.client is runtime._embedded
    close_embedded_client()


def test_the_active_client_is_used(client_factory, system):
    _, _, program, raw = system
    base = client_factory(1, processes=True)
    close_embedded_client()  # another test may have left it running
    with pytest.raises(ValueError):
        default_client()  # the fixtures leak no default client
    with Client(base.scheduler.address, set_as_default=True) as active:
        engine = Engine(program, max_rounds=3)
        assert engine.executor.client is active
        result = engine.run(raw)
        assert_same_run(active, result, run_sequential(program, raw, 3))
        del result
    with pytest.raises(ValueError):
        default_client()
    assert runtime._embedded is None


def _listening():
    return {(c.laddr.ip, c.laddr.port) for c in psutil.Process().net_connections("inet")
            if c.status == psutil.CONN_LISTEN}


@pytest.mark.cluster  # the embedded cluster
def test_embedded_cluster_threads_on_localhost_started_once_not_default(system):
    _, _, program, raw = system
    close_embedded_client()
    before = _listening()
    try:
        first = embedded_client()
        new = _listening() - before
        assert new and {ip for ip, _ in new} == {"127.0.0.1"}, new  # the dashboard, no more
        assert first.dashboard_link.startswith("http://127.0.0.1:")
        assert embedded_client() is first
        with pytest.raises(ValueError):
            default_client()  # never the process-wide default
        info = first.scheduler_info(n_workers=-1)
        assert len(info["workers"]) == runtime.default_cluster_size()
        assert all(w["nthreads"] == 1 for w in info["workers"].values())
        assert {w["cls"] for w in first.cluster.worker_spec.values()} == {Worker}  # threads
        engine = Engine(program, max_rounds=3)
        assert engine.executor.client is first
        result = engine.run(raw)
        assert_same_run(first, result, run_sequential(program, raw, 3))
        del result
    finally:
        close_embedded_client()
    assert first.status == "closed"
    assert runtime._embedded is None


def test_a_callback_sees_the_parameters_as_a_dask_array(system):
    """``callback(record, run)``: on the synchronous scheduler the newest round run is the
    record's, so ``run.parameters()`` is the state after it, as in the sequential loop."""
    _, _, program, raw = system
    seen = {}

    def callback(record, run):
        seen[record["round"]] = run.parameters()
        return record["round"] == 4

    with dask.config.set(scheduler="synchronous"):
        Engine(program, max_rounds=20, callback=callback).run(raw)
    assert sorted(seen) == list(range(5))
    for r, array in seen.items():
        assert array.chunks == ((10,) * N_BLOCKS,)
        expected = np.concatenate(run_sequential(program, raw, r + 1)[0])
        np.testing.assert_allclose(array.compute(scheduler="sync"), expected, rtol=1e-12)


def _tasks_known(dask_worker):
    return {key for key in dask_worker.state.tasks if str(key).startswith("strads-")}


@pytest.mark.parametrize("staleness", [0, 1])
def test_workers_forget_the_rounds_before_a_lineage_cut(client_factory, system, monkeypatch,
                                                        staleness):
    """A Dask worker keeps a finished task's state as long as a task on it that depends on it,
    however indirectly, is alive, and each round depends on the one before. Every
    ``LINEAGE_ROUNDS`` rounds a run lets the workers forget the rounds before: the tasks they
    know stop growing with the rounds, where without a cut they grow with every round, and the
    result is the sequential loop's either way."""
    A, b, program, raw = system
    client = client_factory(2)
    rounds = 60

    def growth(period):
        monkeypatch.setattr(runner, "LINEAGE_ROUNDS", period)
        counts = {}
        before = client.run(_tasks_known)  # what earlier fits left may be forgotten meanwhile

        def count(record):
            if record["round"] in (20, 55):
                known = client.run(_tasks_known)
                counts[record["round"]] = sum(len(known[w] - before.get(w, set())) for w in known)

        # round graphs (fused epochs would keep a task a worker for several rounds)
        result = fit(client, program, raw, staleness=staleness, max_rounds=rounds,
                     callback=count, max_epoch_rounds=1)
        assert_same_run(client, result, run_sequential(program, raw, rounds,
                                                       staleness=staleness))
        return counts[55] - counts[20]

    uncut = growth(period=10**6)
    cut = growth(period=8)
    assert uncut >= 35 * N_BLOCKS  # at least a push a block and round, kept
    # cut: no more than two periods' rounds (those since the last cut, and those in flight or
    # not yet released on a loaded machine) of a round's pushes, pull and report
    assert cut <= 2 * 8 * (N_BLOCKS + 2) < 35 * N_BLOCKS
