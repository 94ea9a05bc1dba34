"""The older states a block keeps for a stop that may refer to them (a program that builds new
states each round, as the STRADS Lasso): the engine keeps them as ``Program.retained`` makes
them, which must give the same collected parameters as the whole states at a fraction of their
memory."""
import numpy as np
import scipy.sparse as sp
from dask.sizeof import sizeof

from dask_strads.datasets import make_sparse_regression
from dask_strads.engine import tasks
from dask_strads.engine.tasks import Pulled
from dask_strads.partition import block_edges
from dask_strads.programs import lasso

KEEP = 3  # older rounds kept, as with the engine's default pipeline depth and a lag of one


class WholeStates(lasso.LassoProgram):
    """The same program keeping its older states whole: the reference."""

    def retained(self, state):
        return state


def run(program_class, rounds=6):
    X, y, _ = make_sparse_regression(n_samples=300, n_features=4000, density=0.02,
                                     n_informative=10, random_state=0)
    X = sp.csc_matrix(X)
    y_centred = y - y.mean()
    alpha = 0.2 * np.abs(X.T @ y_centred).max() / len(y)
    edges = block_edges(X.shape[1], 2)
    raw = [lasso.make_raw_block(X[:, lo:hi], y_centred, np.zeros(hi - lo), np.zeros(hi - lo),
                                False) for lo, hi in zip(edges[:-1], edges[1:])]
    program = program_class(np.diff(edges), y_centred=y_centred, alpha=alpha, positive=False,
                            gap_tolerance=0.0, sparse=True)
    ids = list(range(len(raw)))
    cells = [tasks.prepare(program, block, b) for b, block in zip(ids, raw)]
    pushed = [tasks.initial_partial(cell) for cell in cells]
    pulled = {-1: tasks.initial_pull(program, Pulled(program.initial_shared(), {}), ids, *pushed)}
    for t in range(rounds):
        instructions = program.schedule(t, [])
        pushed = [tasks.push(program, cells[b], pushed[b], pulled[t - 1], instructions[b], t,
                             t - KEEP) for b in ids]
        pulled[t] = tasks.pull(program, pulled[t - 1], ids, *pushed)
    return program, cells, pulled


def test_older_states_collect_the_same_coefficients_as_whole_states():
    program, cells, pulled = run(lasso.LassoProgram)
    _, reference_cells, _ = run(WholeStates)
    for cell, reference in zip(cells, reference_cells):
        assert sorted(cell.versions) == sorted(reference.versions)
        assert len(cell.versions) == KEEP + 1
        for t in cell.versions:
            collected = program.collect(cell.data, cell.state_at(t), pulled[t].shared)
            expected = program.collect(reference.data, reference.state_at(t), pulled[t].shared)
            np.testing.assert_array_equal(collected, expected)
        assert np.count_nonzero(cell.latest().coef) > 0


def test_older_states_drop_what_only_the_next_push_reads():
    _, cells, _ = run(lasso.LassoProgram)
    _, reference_cells, _ = run(WholeStates)
    for cell, reference in zip(cells, reference_cells):
        newest = max(cell.versions)
        for t, state in cell.versions.items():
            assert (state.priority is not None) == (t == newest)
        width = len(cell.latest().coef)
        # the priorities cost 8 bytes a feature in each older state
        saved = sizeof(reference) - sizeof(cell)
        assert saved > KEEP * 8 * width * 0.9
