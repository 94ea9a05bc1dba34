"""Fused epochs: on a cluster, one task per worker runs several rounds; the model is the round
graphs' and the sequential loop's, for every program that fuses, with far fewer graphs."""
import os
import time
from pathlib import Path

import numpy as np
import pytest

from dask_strads import Engine, run_sequential
from dask_strads.engine import boards, epoch_checkpoints, epochs, runner, streams
from dask_strads.engine.run import Run
from dask_strads.engine.runner import epoch_length
from dask_strads.programs import BlockJacobi, StopRule, jacobi_blocks
from dask_strads.programs.elastic_net import ElasticNetProgram
from dask_strads.programs.mf import MFProgram

from test_implicit_mf import in_sub_rounds, tiny
from test_lda_program import setup as setup_lda
from test_mf_program import setup as setup_mf
from test_plane import RATINGS, _claim, linear_program, three_processes  # noqa: F401

ROUNDS = 24


def problem(name):
    """``(program, blocks, slots)`` of a small fit of each program that fuses."""
    if name == "mf":
        program, raw = setup_mf(RATINGS, 2, 2)
        return program, raw, [0, 1, 0, 1]  # a user block and an item block a worker
    if name == "implicit_mf":  # blocks sit rounds out: two sub-rounds a side
        program, raw, _ = in_sub_rounds(tiny(4, (40, 30)), 3, seed=1, n_blocks=4, sub_rounds=2)
        return program, raw, None
    if name == "lda":
        _, _, shards, program, _ = setup_lda(n_shards=2, n_blocks=4)
        return program, shards, None
    if name == "jacobi":
        rng = np.random.default_rng(0)
        A = rng.standard_normal((12, 12)) + 8 * np.eye(12)
        program, raw = jacobi_blocks(A, rng.standard_normal(12), 2)
        return program, raw, None
    program, raw = linear_program(name, 2)
    return program, raw, None


def fit(client, program, raw, slots, **options):
    """The engine's result, and the sizes of the graphs it submitted for rounds."""
    engine = Engine(program, client=client, max_rounds=ROUNDS, **options)
    sizes, submit = [], engine.executor.submit
    engine.executor.submit = lambda graph: sizes.append(sum(map(len, graph.values()))) or (
        submit(graph))
    result = engine.run(raw, slots)
    return result, sizes[1:-1]  # not the start's and the collection's


def test_an_epoch_is_as_short_as_keeps_the_graph_cost_within_its_share():
    share = runner.EPOCH_OVERHEAD_SHARE
    # a graph costing 0.1 s beside 0.2 s of compute a round: 0.1 <= share * 0.2 * F
    assert epoch_length(0.1, 0.2, [100]) == int(0.1 / (share * 0.2)) + 1
    assert 0.1 <= share * 0.2 * epoch_length(0.1, 0.2, [100])
    assert 0.1 > share * 0.2 * (epoch_length(0.1, 0.2, [100]) - 1)
    assert epoch_length(0.1, 0.2, [100, 3]) == 3  # the next checkpoint comes first
    assert epoch_length(0.0, 5.0, [100]) == 1  # a free graph: round graphs
    assert epoch_length(0.1, 0.0, [7, 9]) == 7  # no compute measured: as long as allowed
    assert epoch_length(0.1, 0.2, [0]) == 1


@pytest.mark.parametrize("name", ["mf", "implicit_mf", "lda", "elastic_net", "logistic",
                                  "multinomial", "lasso", "jacobi"])
def test_fused_epochs_give_the_sequential_loops_model_in_a_few_graphs(client_factory, name,
                                                                     monkeypatch):
    # epochs as long as allowed, whatever the machine's load makes of compute and graph costs
    monkeypatch.setattr(runner, "EPOCH_OVERHEAD_SHARE", 1e-9)
    client = client_factory(2)
    program, raw, slots = problem(name)
    # checkpoints every 3 rounds are taken inside the epochs and cost no graph; a program
    # with carried blocks would end its epochs at them
    result, graphs = fit(client, program, raw, slots,
                         checkpoint_interval=0 if program.n_carried else 3, max_epoch_rounds=8)
    reference = run_sequential(program, raw, ROUNDS)
    rounds = len(reference[1])
    # epochs of up to 8 rounds from the first round on (LDA: once every vocabulary block has
    # been taken once and is in a cell, two rounds here); at most one behind the stop
    first_round_graphs = 2 if program.n_carried else 0
    assert len(graphs) <= first_round_graphs + (rounds + 7) // 8 + 1 < rounds
    assert result.history.stats.graphs == len(graphs)
    for ours, expected in zip(client.gather(result.params), reference[0]):
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)
    if program.n_carried:
        for ours, expected in zip(result.gather_carried(), reference[2]):
            np.testing.assert_array_equal(ours, expected)
    kept = [r.get("objective") for r in result.history if not r.get("after_stop")]
    expected = [r.get("objective") for r in reference[1]]
    assert [o is None for o in kept] == [o is None for o in expected]
    assert [o for o in kept if o is not None] == pytest.approx(
        [o for o in expected if o is not None], rel=1e-12)
    assert [r["round"] for r in result.history] == list(range(len(result.history)))


@pytest.mark.parametrize("name", ["mf", "lda", "elastic_net"])
def test_partials_and_pulls_travel_a_tree_of_five_workers(client_factory, name, monkeypatch):
    """Five worker threads: the hub, two children, and two grandchildren under the first (the
    tree's three levels); every round's partials go up and its pull comes down it, and the
    model is the sequential loop's. Partials that add up (MF's objectives, LDA's topic totals)
    reach the pull as one."""
    monkeypatch.setattr(runner, "EPOCH_OVERHEAD_SHARE", 1e-9)
    client = client_factory(5, processes=False)
    slots = None
    if name == "mf":
        program, raw = setup_mf(RATINGS, 5, 5)
        slots = list(range(5)) * 2
    elif name == "lda":
        _, _, raw, program, _ = setup_lda(n_shards=5, n_blocks=5)
    else:
        program, raw = linear_program(name, 5)
    pulled, pull = [], type(program).pull  # how many partials each pull is given
    monkeypatch.setattr(type(program), "pull", lambda self, partials, shared: (
        pulled.append(len(partials)) or pull(self, partials, shared)))
    result, graphs = fit(client, program, raw, slots, checkpoint_interval=0, max_epoch_rounds=8)
    assert len(set(result.param_workers)) == 5  # every level of the tree holds blocks
    if name == "elastic_net":  # the hub's pull takes every block's partial: they travel
        assert set(pulled) == {5}
    else:  # added up on their way (after the first pull, and LDA's first round graph)
        assert set(pulled[2:]) == {1} and len(pulled) > 20
    reference = run_sequential(program, raw, ROUNDS)
    assert len(graphs) < len(reference[1])  # fused
    for ours, expected in zip(client.gather(result.params), reference[0]):
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)
    if program.n_carried:
        for ours, expected in zip(result.gather_carried(), reference[2]):
            np.testing.assert_array_equal(ours, expected)


def test_the_tree_puts_the_hub_at_its_root_and_two_children_under_each_worker():
    plan = epochs.EpochPlan("id", ("w3", "w1", "w2", "w1", "w0", "w4"), (), "w2", 0, 1, 0, 1.0)
    trees = {w: epochs.Tree.of(plan, w) for w in ["w0", "w1", "w2", "w3", "w4"]}
    # the hub first, then the others as their blocks come: w2, w3, w1, w0, w4
    assert trees["w2"] == (None, ["w3", "w1"])
    assert trees["w3"] == ("w2", ["w0", "w4"])
    assert trees["w1"] == ("w2", [])
    assert trees["w0"] == ("w3", []) and trees["w4"] == ("w3", [])


def test_a_graphs_cost_is_measured_between_consecutive_epochs_on_the_hub():
    run = Run("toy", "id", ["w0", "w1"], 0, 0.0, local=False)
    try:
        run.timed_epoch(0, [0.5, 0.1, 0.1], started=10.0, ended=10.7)
        assert run.graph_seconds is None  # nothing before it to measure against
        # waited 0.05 s after the epoch before, and its first round took 0.2 s more than typical
        run.timed_epoch(3, [0.3, 0.1, 0.1, 0.1], started=10.75, ended=11.35)
        assert run.graph_seconds == pytest.approx(0.05 + 0.2)
        run.timed_epoch(9, [0.1, 0.1], started=20.0, ended=20.2)  # not the round after 6
        assert run.graph_seconds == pytest.approx(0.25)
    finally:
        run.end()


def test_a_short_fit_runs_in_one_graph_on_a_cluster(client_factory):
    """Without a measured graph cost the first epoch is as long as allowed, and the next is
    submitted only when the streamed rounds come within the pipeline's depth of its end: a
    fit that stops in fewer rounds than an epoch runs costs the scheduler one graph."""
    client = client_factory(2)
    unstopped, raw, _ = problem("elastic_net")
    program = ElasticNetProgram(unstopped.widths, y_centred=unstopped.y_centred, alpha=1e-3,
                                l1_ratio=0.5, positive=False, gap_tolerance=1e-6)
    result, graphs = fit(client, program, raw, None)
    params, reports = run_sequential(program, raw, ROUNDS)
    assert len(reports) < runner.CHECKPOINT_INTERVAL  # a fit shorter than the first epoch
    assert graphs == [graphs[0]] and result.history.stats.graphs == 1
    for ours, expected in zip(client.gather(result.params), params):
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("max_epoch_rounds", [1, 4])
def test_tasks_per_round_leave_a_checkpoints_copies_out(client_factory, max_epoch_rounds):
    """Every graph of a fit checkpointing every round holds copies; the tasks a round counts
    what a fit without checkpoints runs a round."""
    client = client_factory(2)
    program, raw, slots = problem("mf")
    counted = [fit(client, program, raw, slots, checkpoint_interval=interval,
                   max_epoch_rounds=max_epoch_rounds)[0].history.stats.tasks_per_round
               for interval in (0, 4)]
    assert counted[0] > 0 and counted[1] == counted[0]


def test_a_stop_inside_an_epoch_is_exact(client_factory):
    """MF meeting its tolerance inside an epoch (of 8 rounds, taking checkpoints every 5)
    stops every worker at that round: the factors are the sequential loop's."""
    client = client_factory(2)
    program, raw = setup_mf(RATINGS, 2, 2, tol=8e-3)  # met at round 17, of the epoch 15-19
    result, graphs = fit(client, program, raw, [0, 1, 0, 1], checkpoint_interval=5,
                         max_epoch_rounds=8)
    params, reports = run_sequential(program, raw, ROUNDS)
    assert result.history.stats.converged and 5 < len(reports) < ROUNDS
    for ours, expected in zip(client.gather(result.params), params):
        np.testing.assert_array_equal(ours, expected)
    ran = [r for r in result.history if not r.get("after_stop")]
    assert [r.get("objective") for r in ran] == [r.get("objective") for r in reports]


def stopping(name):
    """The Lasso program meeting its gap tolerance at round 18 (its result: the state of round
    17, a report later), Jacobi its tolerance at round 18: both inside the epoch 15-19."""
    program, raw, _ = problem(name)
    if name == "lasso":
        program.stop_rule = StopRule("gap", 0.1)
        return program, raw
    return BlockJacobi(program.row_starts, tol=2e-9), raw


@pytest.mark.parametrize("name", ["lasso", "jacobi"])
def test_a_program_keeping_earlier_states_stops_inside_an_epoch_as_the_loop_does(
        client_factory, name, monkeypatch):
    """Programs that keep earlier states (the result of a stop comes from a round before the
    newest) fuse too: the cells keep as many states behind as in round graphs, the hub's board
    as many pulls, and the result taken from inside an epoch is the sequential loop's."""
    monkeypatch.setattr(runner, "EPOCH_OVERHEAD_SHARE", 1e-9)
    client = client_factory(2)
    program, raw = stopping(name)
    result, graphs = fit(client, program, raw, None, checkpoint_interval=5, max_epoch_rounds=8)
    params, reports = run_sequential(program, raw, ROUNDS)
    assert result.history.stats.converged and 5 < len(reports) < ROUNDS
    assert len(graphs) < len(reports)  # fused
    for ours, expected in zip(client.gather(result.params), params):
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)
    ran = [r for r in result.history if not r.get("after_stop")]
    assert len(ran) == len(reports)


_ANSWERED = []


class DiesAfterAnswering(MFProgram):
    """MF whose worker process exits at the ``answers``-th message it answers, once (the
    process that renames ``armed`` first): a worker lost in the middle of an epoch."""

    def __init__(self, *args, armed, answers=40, **kwargs):
        super().__init__(*args, **kwargs)
        self.armed, self.answers = armed, answers

    def message(self, block_id, data, state, to_block):
        _ANSWERED.append(to_block)
        if len(_ANSWERED) == self.answers and _claim(self.armed):
            os._exit(1)
        return super().message(block_id, data, state, to_block)


@pytest.mark.cluster
def test_a_worker_lost_inside_an_epoch_is_recovered(three_processes, tmp_path):  # noqa: F811
    armed = tmp_path / "armed"
    armed.touch()
    program, raw = setup_mf(RATINGS, 3, 3, program_class=DiesAfterAnswering, armed=str(armed))
    result, _ = fit(three_processes, program, raw, None, checkpoint_interval=6,
                    max_epoch_rounds=6)
    assert Path(f"{armed}.taken").exists()
    (recovery,) = result.history.stats.recoveries
    assert len(recovery["lost"]) == 1
    params, reports = run_sequential(program, raw, ROUNDS)
    for ours, expected in zip(result.gather(), params):
        np.testing.assert_array_equal(ours, expected)
    # an epoch adds the partials up the workers' tree: in another order than the loop
    assert [r["objective"] for r in result.history] == pytest.approx(
        [r["objective"] for r in reports], rel=1e-12)


@pytest.mark.cluster
def test_a_worker_lost_inside_an_epoch_goes_on_from_a_checkpoint_taken_inside_it(
        three_processes, tmp_path, monkeypatch):  # noqa: F811
    """Checkpoints every 3 rounds, epochs of 12: the first epoch ends with a checkpoint in its
    graph (round 11), the second takes those of rounds 14, 17 and 20 on the workers' boards. A
    worker lost late in the second epoch sends the fit back to the newest of those that is
    whole, not to round 11, and the model is the sequential loop's."""
    monkeypatch.setattr(runner, "EPOCH_OVERHEAD_SHARE", 1e-9)
    recovered, recover = [], Engine._recover
    monkeypatch.setattr(Engine, "_recover", lambda *args: recovered.append(recover(*args)) or (
        recovered[-1]))
    armed = tmp_path / "armed"
    armed.touch()
    program, raw = setup_mf(RATINGS, 3, 3, program_class=DiesAfterAnswering, armed=str(armed),
                            answers=ANSWERS_INSIDE)
    result, graphs = fit(three_processes, program, raw, None, checkpoint_interval=3,
                         max_epoch_rounds=12)
    assert Path(f"{armed}.taken").exists()
    (recovery,) = result.history.stats.recoveries
    assert recovery["round"] in (14, 17)
    # the run going on keeps that checkpoint until it takes its own: a second loss before
    # then goes back to it, not to the start
    assert [c.round for c in recovered[0].checkpoints[:1]] == [recovery["round"]]
    params, reports = run_sequential(program, raw, ROUNDS)
    for ours, expected in zip(result.gather(), params):
        np.testing.assert_array_equal(ours, expected)
    assert [r["objective"] for r in result.history] == pytest.approx(
        [r["objective"] for r in reports], rel=1e-12)


ANSWERS_INSIDE = 60


class _Loop:
    def add_callback(self, callback):
        callback()


def test_a_board_keeps_its_two_newest_checkpoints_and_says_which_are_whole(monkeypatch):
    """Copies of a worker's blocks, the replicas of its ward's and the pull, at rounds 2, 5
    and 8: the board keeps rounds 5 and 8, and a round counts as held once its pull is there
    (its copies and replicas come first)."""
    worker = type("Worker", (), {"address": "tcp://a", "loop": _Loop()})()
    board = boards.board(worker, "run")
    try:
        for t in (2, 5, 8, 11):
            board.post((epoch_checkpoints.OWN, t), {0: f"state 0 of {t}", 1: f"state 1 of {t}"})
            board.post((epoch_checkpoints.REPLICAS, t), {2: f"state 2 of {t}"})
            if t < 11:  # round 11's pull not yet there
                epoch_checkpoints.copy_pull(board, t, f"pull {t}")
        assert epoch_checkpoints.held("run", worker) == {5: [0, 1, 2], 8: [0, 1, 2]}
        assert sorted({key[1] for key in board.values}) == [5, 8, 11]
        monkeypatch.setattr(epoch_checkpoints, "current_worker", lambda: worker)
        assert epoch_checkpoints.taken("run", 8, 2) == "state 2 of 8"
        assert epoch_checkpoints.taken("run", 8) == "pull 8"
    finally:
        boards.drop_with_cell("strads-x-block-0-run")


class Watching:
    """A callback that only watches: it needs no round graphs."""

    round_graphs = False

    def __init__(self):
        self.seen = []

    def __call__(self, record):
        self.seen.append(record["round"])


@pytest.mark.parametrize("watching_only", [False, True])
def test_an_estimators_callback_runs_round_graphs_unless_it_only_watches(client_factory,
                                                                         watching_only):
    """An estimator's callback may stop the fit, exactly at its round: the fit runs a graph a
    round, unless the callback says it needs none (``round_graphs = False``); either way it
    sees every round, in order."""
    from dask_strads import MatrixFactorization

    callback = Watching()
    if not watching_only:
        callback = callback.__call__  # a plain function of the record
    est = MatrixFactorization(4, max_iter=6, tol=0, random_state=0, callback=callback)
    est.client = client_factory(2)
    est.fit(RATINGS)
    stats = est.history_.stats
    assert getattr(callback, "__self__", callback).seen == list(range(stats.rounds))
    assert (stats.graphs < stats.rounds) if watching_only else (stats.graphs == stats.rounds)


def test_the_configuration_turns_epochs_off_for_estimators(client_factory):
    """``dask-strads.max-epoch-rounds`` = 1: an estimator's fit on a cluster runs a graph of
    P pushes, a pull and a report a round, with the same model as when it fuses."""
    import dask

    from dask_strads import MatrixFactorization

    client = client_factory(2)
    fitted = {}
    for rounds in (1, 32):
        with dask.config.set({"dask-strads.max-epoch-rounds": rounds}):
            est = MatrixFactorization(4, max_iter=12, tol=0.0, random_state=0,
                                      checkpoint_interval=0)
            est.client = client
            fitted[rounds] = est.fit(RATINGS)
    assert fitted[1].history_.stats.tasks_per_round == 2 + 2  # a block of each side a worker
    assert fitted[32].history_.stats.tasks_per_round < 2 + 2
    np.testing.assert_array_equal(fitted[1].user_factors_, fitted[32].user_factors_)


class Slow(MFProgram):
    """MF whose pushes take ``seconds`` more: rounds long enough to watch an epoch run."""

    def __init__(self, *args, seconds, **kwargs):
        super().__init__(*args, **kwargs)
        self.seconds = seconds

    def push(self, *args):
        time.sleep(self.seconds)
        return super().push(*args)


def test_an_epoch_streams_its_rounds_and_a_callback_stops_it_inside(client_factory):
    """While an epoch runs, the client records each round as the hub pulls it: a callback
    sees every round in order, and its stop reaches the hub within a few rounds, inside the
    epoch (the epoch's own reports, read when it ends, come rounds later). The factors are
    the sequential loop's after the rounds that ran."""
    client = client_factory(2)
    open_before = set(streams._STREAMS.get(client.id, {}))  # the session's client is shared
    program, raw = setup_mf(RATINGS, 2, 2, program_class=Slow, seconds=0.3)
    seen, stop_at = [], 8  # inside the first epoch, which runs up to 16 rounds from round 3 to 5
    result, graphs = fit(client, program, raw, [0, 1, 0, 1], checkpoint_interval=0,
                         max_epoch_rounds=16,
                         callback=lambda record: seen.append(record["round"]) or
                         record["round"] == stop_at)
    ran = [r["round"] for r in result.history if not r.get("after_stop")]
    assert len(graphs) < len(result.history)  # it fused
    assert seen[:stop_at + 1] == list(range(stop_at + 1))
    assert stop_at < ran[-1] <= stop_at + 3
    assert set(streams._STREAMS.get(client.id, {})) == open_before  # its stream closed with it
    program.seconds = 0.0
    params, _ = run_sequential(program, raw, len(ran))
    for ours, expected in zip(client.gather(result.params), params):
        np.testing.assert_array_equal(ours, expected)
