"""Fits on workers whose Dask memory manager spills to disk: block cells must not be spilled.

The cluster's workers have a memory limit of a few hundred kB and Dask's ``target`` threshold on:
every value above 60% of the limit goes to disk, and smaller ones as soon as the values held pass
it. The process-memory thresholds are off: a worker process takes far more than such a limit, and
would only pause or be killed.
"""
import gc
import time

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster

from dask_strads import Engine, LatentDirichletAllocation, run_sequential
from dask_strads.datasets import make_lda_corpus
from dask_strads.engine import cells, parking
from dask_strads.estimators.lda import BLOCK_MEMORY_SHARE, _blocks_within_memory
from dask_strads.kernels.lda import row_bytes
from dask_strads.partition import block_edges
from dask_strads.programs.lda import LDAProgram, make_shard, vocabulary_blocks

import leaks

pytestmark = pytest.mark.cluster

MEMORY_LIMIT = 200_000
SPILL_AT_TARGET_ONLY = {"distributed.worker.memory.target": 0.6,
                        "distributed.worker.memory.spill": False,
                        "distributed.worker.memory.pause": False,
                        "distributed.worker.memory.terminate": False}


@pytest.fixture(scope="module")
def client():
    with dask.config.set(SPILL_AT_TARGET_ONLY):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None, memory_limit=MEMORY_LIMIT)
    with cluster, Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=60)
        leaks.keep(scheduler=cluster.scheduler)  # for the module's tests
        yield client


def _disk_writes(dask_worker):
    return sum(v for k, v in dask_worker.digests_total.items()
               if isinstance(k, tuple) and k[-2:] == ("disk-write", "count"))


def _cells_held():
    return len(cells._CELLS)


def disk_writes(client):
    return sum(client.run(_disk_writes).values())


def _parked_on_disk(dask_worker):
    return parking.spilled_on(dask_worker)


def parked_on_disk(client):
    return sum(client.run(_parked_on_disk).values())


def lda_problem(n_words, n_topics, n_blocks, memory=None, seed=0):
    """A planted corpus, its two shards and the LDA program on them (sampling seed ``seed``),
    vocabulary blocks cut as the estimator cuts them for workers of ``memory`` bytes (by tokens
    alone if None)."""
    X, _, _ = make_lda_corpus(n_docs=200, n_words=n_words, n_topics=n_topics, doc_length=50,
                              random_state=seed)
    word_counts = np.asarray(X.sum(axis=0)).ravel()
    doc_lengths = np.asarray(X.sum(axis=1)).ravel()
    block_of_word, local_index, sizes = (
        vocabulary_blocks(word_counts, n_blocks) if memory is None else
        _blocks_within_memory(word_counts, n_blocks, n_topics, memory))
    edges = block_edges(X.shape[0], 2, weights=doc_lengths)
    shards = [make_shard(X[lo:hi], block_of_word, local_index, len(sizes))
              for lo, hi in zip(edges[:-1], edges[1:])]
    program = LDAProgram(n_topics, alpha=0.1, beta=0.01, n_vocab=X.shape[1], block_sizes=sizes,
                         n_shards=2, seed=seed)
    return X, shards, program, (block_of_word, local_index)


def word_topic_table(carried, words):
    block_of_word, local_index = words
    return np.stack([carried[u][i] for u, i in zip(block_of_word, local_index)], axis=1)


def test_a_fit_whose_cells_dask_would_spill_equals_the_sequential_loop(client):
    """Each shard's cell is larger than the spilling target: as a value in Dask's store it
    went straight to disk, and every push changed a copy read back from it (the carried block
    it left in that copy's outbox was then missing)."""
    X, shards, program, words = lda_problem(n_words=400, n_topics=5, n_blocks=3)
    writes_before = disk_writes(client)
    rounds = 4 * program.n_carried
    result = Engine(program, client=client, max_rounds=rounds, checkpoint_interval=5).run(shards)
    n_dk = np.vstack(client.gather(result.params))
    n_wk = word_topic_table(client.gather(result.carried), words)
    assert disk_writes(client) > writes_before  # Dask did spill during the fit
    params, _, carried = run_sequential(program, shards, rounds)
    np.testing.assert_array_equal(n_dk, np.vstack(params))
    np.testing.assert_array_equal(n_wk, word_topic_table(carried, words))
    del result  # the fit's keys are released, and with them its cells
    deadline = time.monotonic() + 30  # releases travel slowly on a loaded machine
    while sum(client.run(_cells_held).values()) and time.monotonic() < deadline:
        gc.collect()  # a finished fit's futures may live until the collector breaks their cycles
        time.sleep(0.1)
    assert sum(client.run(_cells_held).values()) == 0


def test_lda_trains_a_word_topic_table_twice_the_memory_limit(client):
    """The vocabulary blocks waiting on a worker for their next shard take more than its
    memory: those beyond the plane's budget for parked blocks wait on disk, and the model is
    the sequential loop's."""
    n_topics = 20
    model = LatentDirichletAllocation(n_topics, doc_topic_prior=0.1, topic_word_prior=0.01,
                                      max_iter=2, random_state=1)
    X, shards, program, words = lda_problem(n_words=4000, n_topics=n_topics, n_blocks=2,
                                            memory=MEMORY_LIMIT, seed=model._seed())
    assert X.shape[1] * row_bytes(n_topics) > 2 * MEMORY_LIMIT  # the word-topic table
    model.client = client
    spilled_before = parked_on_disk(client)
    model.fit(X)
    assert parked_on_disk(client) > spilled_before
    assert model.n_vocab_blocks_ == program.n_carried
    assert max(program.block_sizes) * row_bytes(n_topics) <= BLOCK_MEMORY_SHARE * MEMORY_LIMIT
    _, _, carried = run_sequential(program, shards, 2 * program.n_carried)
    np.testing.assert_allclose(model.components_, word_topic_table(carried, words) + 0.01,
                               rtol=0, atol=1e-12)
