"""Dask's memory accounting (``dask.sizeof.sizeof``) of the blocks, states and task values.

The reference is independent of :mod:`dask_strads.sizes`: the ``nbytes`` of every numpy array an
object holds, found by walking its attributes, tuples, lists and dicts (an array reached twice
counts once). Dask's size must be that, plus a small constant per Python object.
"""
import importlib
import pkgutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
from dask.sizeof import sizeof
from distributed import Client, LocalCluster

import dask_strads
from dask_strads import sizes
from dask_strads.datasets import make_correlated_regression, make_lda_corpus, make_ratings
from dask_strads.engine import tasks
from dask_strads.engine.cells import opened
from dask_strads.engine.tasks import BlockCell, Pulled, Pushed
from dask_strads.estimators.inputs import blocks_along
from dask_strads.partition import block_edges
from dask_strads.programs import lasso, lda, mf, prox_newton
from dask_strads.engine.plane import Source
from dask_strads.programs.base import Program

#: Allowed beyond the arrays: a few percent, and this many bytes per Python object held (the
#: instance, its ``__dict__``, tuples, dicts, scalars).
PER_OBJECT = 400


def walk(obj, seen=None):
    """``(bytes of the numpy arrays obj holds, Python objects walked)``."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0, 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        if 0 in obj.strides and obj.base is not None:  # a broadcast view holds its base only
            return obj.base.nbytes, 0
        return obj.nbytes, 0
    if isinstance(obj, dict):
        children = [*obj.keys(), *obj.values()]
    elif isinstance(obj, (tuple, list)):
        children = list(obj)
    elif isinstance(obj, Program):  # a cell's program: a Dask value of its own, shared
        return 0, 0
    elif type(obj).__module__.startswith("dask_strads"):
        children = list(vars(obj).values())
    else:
        return 0, 1  # a scalar, a string, None
    nbytes, objects = 0, 1
    for child in children:
        n, o = walk(child, seen)
        nbytes, objects = nbytes + n, objects + o
    return nbytes, objects


def check_size(obj, large=True):
    """Dask's size of obj is its arrays' bytes, up to a few percent and a constant an object;
    for a large object, far more than the ``sys.getsizeof`` Dask counts for a class it doesn't
    know."""
    nbytes, objects = walk(obj)
    size = sizeof(obj)
    assert nbytes <= size <= 1.03 * nbytes + PER_OBJECT * objects, (type(obj), size, nbytes)
    if large:
        assert nbytes > 5_000
        assert size > 50 * sys.getsizeof(obj)
    return size, nbytes


def run_cells(program, raw_blocks, rounds, staleness=0, keep=0):
    """The engine's task functions in a loop, as the engine chains them: ``(cells, pushed,
    pulled, carried)`` after ``rounds`` rounds, each cell keeping ``keep`` older states (the
    engine keeps a few when the program builds new states), carried blocks and messages
    fetched on the (in-process) message plane."""
    ids = list(range(len(raw_blocks)))
    cells = [tasks.prepare(program, raw, b) for b, raw in zip(ids, raw_blocks)]
    pushed = [tasks.initial_partial(cell) for cell in cells]
    pulled = {-1: tasks.initial_pull(program, Pulled(program.initial_shared(), {}), ids, *pushed)}
    carried = [tasks.initial_carried(program, c) for c in range(program.n_carried)]
    reports = []
    for t in range(rounds):
        source = pulled[max(-1, t - 1 - staleness)]
        pushes = {}
        for b, instruction in program.schedule(t, reports).items():
            c = instruction.carried
            sources = [Source(s, "here", cells[s], pushed[s]) for s in instruction.reads]
            pushes[b] = tasks.push(program, cells[b], pushed[b], source, instruction, t,
                                   t - keep, None if c is None else carried[c], sources)
            if c is not None:
                carried[c] = Source(b, "here", cells[b], pushes[b])
        pushed = [pushes.get(b, pushed[b]) for b in ids]
        pulled[t] = tasks.pull(program, pulled[t - 1], list(pushes), *pushes.values())
        reports.append(pulled[t].record)
    return (cells, pushed, pulled[rounds - 1],
            [tasks.carried_as_is(held, c) for c, held in enumerate(carried)])


# -- the programs' blocks, built as the estimators build them ----------------------------------

def lasso_setup(n_blocks=2, staleness=0):
    X, y, _ = make_correlated_regression(n_samples=1000, n_features=400, n_informative=20,
                                         random_state=0)
    y_centred = y - y.mean()
    means = X.mean(axis=0)
    edges = block_edges(X.shape[1], n_blocks)
    raw = [lasso.make_raw_block(X[:, lo:hi], y_centred, np.zeros(hi - lo), means[lo:hi], True)
           for lo, hi in zip(edges[:-1], edges[1:])]
    program = lasso.LassoProgram(np.diff(edges), y_centred=y_centred, alpha=0.05, positive=False,
                                 gap_tolerance=0.0,
                                 staleness=staleness)
    return program, raw


def lda_setup(n_shards=2, n_blocks=3):
    X, _, _ = make_lda_corpus(n_docs=200, n_words=400, n_topics=5, doc_length=80,
                              random_state=0)
    word_counts = np.asarray(X.sum(axis=0)).ravel()
    block_of_word, local_index, block_sizes = lda.vocabulary_blocks(word_counts, n_blocks)
    edges = np.linspace(0, X.shape[0], n_shards + 1).astype(int)
    shards = [lda.make_shard(X[lo:hi], block_of_word, local_index, n_blocks)
              for lo, hi in zip(edges[:-1], edges[1:])]
    return lda.LDAProgram(5, alpha=0.1, beta=0.01, n_vocab=X.shape[1], block_sizes=block_sizes,
                          n_shards=n_shards), shards


def mf_setup(n_blocks=2):
    X, _, _ = make_ratings(n_users=300, n_items=200, n_ratings=30_000, rank=4, noise=0.3,
                           random_state=0)
    user_edges = block_edges(X.shape[0], n_blocks)
    item_edges = block_edges(X.shape[1], n_blocks)
    raw = (blocks_along(X, user_edges, lambda part, lo, hi: mf.make_raw_block(part, mf.USERS, lo),
                        0)
           + blocks_along(X, item_edges,
                          lambda part, lo, hi: mf.make_raw_block(part, mf.ITEMS, lo), 1))
    program = mf.MFProgram(4, user_edges=user_edges, item_edges=item_edges, n_ratings=X.nnz,
                           alpha_W=1.0, alpha_H=1.0, alpha_bias=1.0, biases=True,
                           mean=X.data.mean(), tol=0.0)
    return program, raw


# -- tests ---------------------------------------------------------------------------------------

def test_every_task_value_class_is_registered():
    """Every dataclass of every program module (and of the engine's task values) is sized by
    its fields: a program module that does not register its own fails here."""
    modules = [importlib.import_module(info.name) for info in pkgutil.iter_modules(
        dask_strads.programs.__path__, "dask_strads.programs.")] + [tasks]
    classes = [cls for module in modules for cls in sizes.dataclasses_of(module)]
    assert {lda.ShardState, mf.Ratings, prox_newton.Margins, Pushed} <= set(classes)
    assert [c for c in classes if sizeof.dispatch(c) is not sizes.sizeof_dataclass] == []


def test_lasso_blocks_states_and_updates():
    # staleness 1 and older states kept: a cell holds states whose pending updates are shared
    program, raw = lasso_setup(staleness=1)
    cells, pushed, pulled, _ = run_cells(program, raw, 4, staleness=1, keep=3)
    cell = cells[0]
    assert len(cell.versions) > 1 and cell.latest().pending
    assert isinstance(cell.data, lasso.LassoData)
    check_size(cell.data)
    size, nbytes = check_size(cell)
    assert nbytes > cell.data.X.nbytes + 2 * cell.latest().pending[0].r.nbytes
    state = cell.latest()
    check_size(state, large=False)
    check_size(state.pending[-1])
    assert isinstance(pushed[0].partial, lasso.BlockUpdate)
    check_size(pushed[0].partial)
    check_size(pushed[0])
    assert isinstance(pulled.shared, lasso.Residual)
    check_size(pulled.shared)
    check_size(pulled)
    # a shared Pending counts once: the cell is less than the sum of its states
    assert size < sizeof(cell.data) + sum(sizeof(s) for s in cell.versions.values())


def test_lda_shards_states_carried_blocks_and_reports():
    program, shards = lda_setup()
    cells, pushed, pulled, carried = run_cells(program, shards, 3)
    cell = cells[0]
    assert isinstance(cell.data, lda.Shard) and isinstance(cell.latest(), lda.ShardState)
    check_size(cell.data)
    check_size(cell.latest())
    check_size(cell)
    assert isinstance(carried[0], lda.WordBlock)
    check_size(carried[0], large=False)
    assert isinstance(pushed[0].partial, lda.Sampled)
    check_size(pushed[0], large=False)
    check_size(pulled, large=False)
    # a cell between a push and its hand-off holds the carried block in its outbox
    cell.outbox[0] = carried[0]
    with_outbox = check_size(cell)[0]
    del cell.outbox[0]
    assert with_outbox - sizeof(cell) >= walk(carried[0])[0]


def test_mf_ratings_partials_and_shared_value():
    program, raw = mf_setup()
    cells, pushed, pulled, _ = run_cells(program, raw, 3, keep=2)
    for cell in cells:
        assert isinstance(cell.data, mf.Ratings)
        check_size(cell.data)
        check_size(cell)
    partials = [p.partial for p in pushed if p.partial is not None]
    assert partials and all(isinstance(p, mf.BlockObjective) for p in partials)
    for p in partials:
        check_size(p, large=False)
    assert isinstance(pulled.shared, mf.SharedFactor)
    check_size(pulled.shared, large=False)
    check_size(pulled, large=False)


def test_a_fresh_process_registers_on_first_use():
    """A worker that unpickles a task value imports its module, which registers it."""
    code = ("import numpy as np; from dask.sizeof import sizeof; "
            "from dask_strads.engine.tasks import Pushed; "
            "print(sizeof(Pushed(np.zeros(10_000), 0.0)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert 80_000 <= int(out) < 81_000


@pytest.mark.cluster
def test_scheduler_records_the_size_of_the_block_cells():
    X, _, _ = make_lda_corpus(n_docs=300, n_words=500, n_topics=5, doc_length=100,
                              random_state=0)
    prefix = "strads-lda-block-"
    seen = []

    def recorded(dask_scheduler):
        return {k: ts.nbytes for k, ts in dask_scheduler.tasks.items()
                if isinstance(k, str) and k.startswith(prefix)}

    def held(dask_worker):
        # the cells' data and state (LDA's state keeps its arrays: it changes in place)
        cells = {k: opened(v) for k, v in dask_worker.data.items()
                 if isinstance(k, str) and k.startswith(prefix)}
        return {k: walk((cell.data, cell.versions))[0] for k, cell in cells.items()}

    def callback(record):
        if not seen:  # during the fit, while the cells live
            seen.append((client.run_on_scheduler(recorded), client.run(held)))

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Port 8787 is already in use")
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                               dashboard_address=None)
    with cluster, Client(cluster, set_as_default=False) as client:
        est = dask_strads.LatentDirichletAllocation(5, max_iter=2, keep_on_cluster=True,
                                                     callback=callback)
        est.client = client
        est.fit(X)
        assert est.components_.shape == (5, X.shape[1])
    nbytes, per_worker = seen[0]
    held_bytes = {k: v for worker in per_worker.values() for k, v in worker.items()}
    assert len(nbytes) == 2 and set(nbytes) == set(held_bytes)
    for key, size in nbytes.items():
        assert held_bytes[key] <= size <= 1.03 * held_bytes[key] + 4096, (key, size)
    # a token's document and word, int64 each
    assert sum(nbytes.values()) >= 16 * X.sum()

