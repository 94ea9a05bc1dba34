"""Carried blocks: parameter blocks that move from worker to worker (LDA's word rotation)."""
from dataclasses import dataclass

import numpy as np
import pytest
from distributed import get_worker

from dask_strads import Engine, run_sequential
from dask_strads.programs import Instruction, Program, Report


@dataclass(frozen=True, kw_only=True)
class PushCount(Report):
    pushes: int


class RotatingSums(Program):
    """Data block p holds rows A_p (one per carried block); in round t it adds row c of A_p to
    carried block c = (p + t) mod U, and notes where that happened. After k*U rounds carried
    block c holds k * sum_p A_p[c]: a closed form."""

    def __init__(self, n_data_blocks, n_carried, width):
        self.n_data_blocks = n_data_blocks
        self.n_carried = n_carried
        self.width = width

    def initial_shared(self):
        return 0

    def init_block(self, data, block_id):
        return 0, 0

    def init_carried(self, carried_id):
        return np.zeros(self.width), ()

    def schedule(self, round_index, history):
        return {p: Instruction(carried=(p + round_index) % self.n_carried)
                for p in range(self.n_data_blocks)}

    def push(self, block_id, data, state, instruction, shared, inbox):
        total, trail = inbox.carried
        where = _worker_address()
        return state + 1, 1, (total + data[instruction.carried], trail + (where,))

    def pull(self, partials, shared):
        return shared + sum(partials.values()), PushCount(pushes=len(partials))

    def collect(self, data, state, shared):
        return np.array([state])


def _worker_address():
    try:
        return get_worker().address
    except ValueError:  # run_sequential, no worker
        return None


def problem(n_data_blocks=2, n_carried=3, width=5, seed=0):
    rng = np.random.default_rng(seed)
    blocks = [rng.standard_normal((n_carried, width)) for _ in range(n_data_blocks)]
    return RotatingSums(n_data_blocks, n_carried, width), blocks


@pytest.mark.parametrize("n_workers", [1, 2])
def test_carried_blocks_rotate_and_sum_like_the_sequential_loop(client_factory, n_workers):
    client = client_factory(n_workers)
    program, blocks = problem()
    rounds = 2 * program.n_carried
    result = Engine(program, client=client, max_rounds=rounds).run(blocks)
    carried = client.gather(result.carried)
    _, _, reference = run_sequential(program, blocks, rounds)
    closed_form = 2 * sum(blocks)
    for c, ((total, trail), (expected, _)) in enumerate(zip(carried, reference)):
        np.testing.assert_allclose(total, expected, rtol=1e-12)
        np.testing.assert_allclose(total, closed_form[c], rtol=1e-12)
        # block c was updated in round t by data block p with (p + t) % U == c, on p's worker
        owners = [result.param_workers[p] for t in range(rounds) for p in range(len(blocks))
                  if (p + t) % program.n_carried == c]
        assert list(trail) == owners
    assert client.gather(result.params)[0][0] == rounds


def test_carried_blocks_with_two_workers_cross_between_them(client_factory):
    client = client_factory(2)
    program, blocks = problem()
    result = Engine(program, client=client, max_rounds=program.n_carried).run(blocks)
    assert result.param_workers[0] != result.param_workers[1]
    trails = [trail for _, trail in client.gather(result.carried)]
    assert all(len(set(trail)) == 2 for trail in trails if len(trail) == 2)
    assert sum(len(set(trail)) == 2 for trail in trails) >= 1


def test_one_carried_block_cannot_go_to_two_blocks_in_a_round(client_factory):
    class Clash(RotatingSums):
        def schedule(self, round_index, history):
            return {p: Instruction(carried=0) for p in range(self.n_data_blocks)}

    client = client_factory(2)
    _, blocks = problem()
    program = Clash(2, 3, 5)
    with pytest.raises(ValueError, match="carried block is scheduled for two blocks"):
        run_sequential(program, blocks, 1)
    with pytest.raises(ValueError, match="carried block is scheduled for two blocks"):
        Engine(program, client=client, max_rounds=1).run(blocks)


def test_the_push_after_a_checkpoint_waits_for_its_copy(client_factory):
    """A push may change its carried block in place: the first one after a checkpoint to take
    that block must depend on the checkpoint's copy of it, or the copy could catch it changing."""
    client = client_factory(2)
    program, blocks = problem()
    rounds = 2 * program.n_carried
    graphs = []
    engine = Engine(program, client=client, max_rounds=rounds, checkpoint_interval=2)
    submit = engine.executor.submit
    engine.executor.submit = lambda graph: graphs.append(graph) or submit(graph)
    engine.run(blocks)
    tasks = {"-".join(key.split("-")[:-1]): task for graph in graphs
             for part in graph.values() for key, task in part.items()}
    for t in (1, 3):  # checkpoint rounds
        for c in range(program.n_carried):
            r, p = next((r, p) for r in range(t + 1, rounds) for p in range(len(blocks))
                        if (p + r) % program.n_carried == c)
            dependencies = {"-".join(k.split("-")[:-1])
                            for k in tasks[f"strads-program-push-{p}-{r}"].dependencies}
            assert f"strads-program-checkpoint-carried-{c}-{t}" in dependencies, (t, c)
