"""The SparseLDA Gibbs kernel (dask_strads.kernels.lda) without a program or a cluster.

* exactness: on corpora small enough to enumerate every topic assignment, the configurations the
  kernel visits follow the exact collapsed posterior p(z | w) (one block, and two blocks visited
  in turn as in the word rotation);
* bookkeeping: after many calls under the rotation with stale topic totals, the counts equal
  recounts from z and the nonzero-topic lists equal the nonzero patterns;
* cost: the work per token (operation count returned by the kernel) barely grows from K=100 to
  K=1000 on a sparse corpus;
* the blockwise log-likelihood against a dense numpy computation.
"""
import time

import numpy as np
import pytest
from scipy.special import gammaln

from dask_strads.kernels import lda


# -- helpers ---------------------------------------------------------------------------------------
def exact_posterior(doc, word, n_docs, n_vocab, n_topics, alpha, beta):
    """p(z | w) for every z in {0..K-1}^N, indexed by sum_i z_i K^i."""
    n = len(doc)
    configs = np.indices((n_topics,) * n).reshape(n, -1)[::-1].T  # row c: digits of c, z_0 first
    log_p = np.empty(len(configs))
    for c, z in enumerate(configs):
        n_dk = np.zeros((n_docs, n_topics))
        n_wk = np.zeros((n_vocab, n_topics))
        np.add.at(n_dk, (doc, z), 1)
        np.add.at(n_wk, (word, z), 1)
        # doc lengths are fixed, so Gamma(n_d + K alpha) is a constant
        log_p[c] = (gammaln(n_dk + alpha).sum() + gammaln(n_wk + beta).sum()
                    - gammaln(n_wk.sum(0) + n_vocab * beta).sum())
    codes = configs @ (n_topics ** np.arange(n))
    p = np.zeros(len(configs))
    p[codes] = np.exp(log_p - log_p.max())
    return p / p.sum()


def make_blocks(doc, word, z, n_docs, n_topics, bounds):
    """Split tokens already ordered by vocabulary block ``[bounds[b], bounds[b+1])`` into
    blocks. Returns the shard state and, per block, (token slice, local words, block state)."""
    shard = lda.row_state(doc, z, n_docs, n_topics)
    block_of = np.searchsorted(bounds, word, side="right") - 1
    assert np.all(np.diff(block_of) >= 0), "tokens must be ordered by block"
    starts = np.searchsorted(block_of, np.arange(len(bounds)))
    blocks = []
    for b in range(len(bounds) - 1):
        cut = slice(starts[b], starts[b + 1])
        local = (word[cut] - bounds[b]).astype(np.int64)
        blocks.append((cut, local, lda.row_state(local, z[cut], bounds[b + 1] - bounds[b],
                                                 n_topics)))
    return shard, blocks


def check_lists(counts, topics, nnz):
    """The nonzero-topic lists hold exactly the nonzero topics of each row, once each."""
    for row in range(counts.shape[0]):
        listed = topics[row, :nnz[row]]
        assert len(set(listed.tolist())) == nnz[row]
        np.testing.assert_array_equal(np.sort(listed), np.flatnonzero(counts[row]))


def run_chain(doc, word, z0, n_docs, n_vocab, n_topics, alpha, beta, bounds, n_sweeps, seed,
              sample=None):
    """Sweep the blocks in turn (one worker's rotation); code sum_i z_i K^i after every sweep,
    in the given token order."""
    sample = sample or lda.sample_block
    order = np.argsort(np.searchsorted(bounds, word, side="right"), kind="stable")
    doc, word, z = doc[order], word[order], z0[order].astype(np.int32)
    (n_dk, doc_topics, doc_nnz), blocks = make_blocks(doc, word, z, n_docs, n_topics, bounds)
    n_k = lda.topic_totals(z, n_topics)
    calls = [(doc[cut], local, z[cut], n_dk, doc_topics, doc_nnz, *state, n_k, alpha, beta,
              n_vocab) for cut, local, state in blocks]  # z[cut] is a view
    weights = (n_topics ** np.arange(len(z)))[order]
    codes = np.empty(n_sweeps, dtype=np.int64)
    call = 0
    for sweep in range(n_sweeps):
        for args in calls:
            sample(*args, seed + call)
            call += 1
        codes[sweep] = z @ weights
    return codes, z[np.argsort(order)], (n_dk, doc_topics, doc_nnz), blocks, n_k


# A tiny corpus: 2 documents, 5 tokens, V = 3, K = 3 (243 configurations); the tokens of the
# two documents interleave, so the document bucket is rebuilt at every token.
TINY_DOC = np.array([0, 1, 0, 1, 0])
TINY_WORD = np.array([0, 2, 1, 1, 0])
TINY_ALPHA, TINY_BETA, TINY_K, TINY_V = 0.4, 0.3, 3, 3
N_SWEEPS = 80_000
TV_BOUND = 0.035


def total_variation(codes, exact):
    empirical = np.bincount(codes, minlength=len(exact)) / len(codes)
    return 0.5 * np.abs(empirical - exact).sum()


@pytest.fixture(scope="module")
def tiny_posterior():
    return exact_posterior(TINY_DOC, TINY_WORD, 2, TINY_V, TINY_K, TINY_ALPHA, TINY_BETA)


@pytest.mark.parametrize("bounds", [[0, 3], [0, 2, 3]], ids=["one-block", "two-blocks"])
def test_samples_the_exact_collapsed_posterior(tiny_posterior, bounds):
    z0 = np.zeros(len(TINY_DOC), dtype=np.int32)
    codes, *_ = run_chain(TINY_DOC, TINY_WORD, z0, 2, TINY_V, TINY_K, TINY_ALPHA, TINY_BETA,
                          np.array(bounds), N_SWEEPS + 100, seed=12345)
    tv = total_variation(codes[100:], tiny_posterior)
    # Sampling noise alone gives 0.016-0.018 here (i.i.d. draws from the exact posterior give the
    # same). Deliberately broken samplers, one block / two blocks: without the "-i" exclusion
    # 0.077 / 0.073, smoothing bucket not updated on removal 0.106 / 0.057, document bucket not
    # updated on removal 0.170 / 0.225, no document bucket 0.76 / 0.77, no smoothing bucket 0.99.
    print(f"total variation to the exact posterior: {tv:.4f}")
    assert tv < TV_BOUND


def test_rotation_with_stale_totals_keeps_counts_consistent():
    """Two shards x three blocks, rotated as the program does: each shard samples its tokens of
    block (p + t) mod U against its own copy of n_k; the deltas are reconciled after every
    sub-round and the blocks travel in packed form."""
    rng = np.random.default_rng(0)
    n_docs, n_vocab, n_topics, n_shards = 40, 90, 12, 2
    lengths = rng.integers(5, 40, n_docs)
    doc = np.repeat(np.arange(n_docs), lengths)
    word = rng.integers(0, n_vocab, len(doc))
    z = lda.random_topics(len(doc), n_topics, seed=1)
    bounds = np.array([0, 25, 60, n_vocab])
    n_blocks = len(bounds) - 1
    block_of = np.searchsorted(bounds, word, side="right") - 1
    shard_of_doc = np.arange(n_docs) % n_shards
    local_doc = np.arange(n_docs) // n_shards
    shard_docs = [int((shard_of_doc == p).sum()) for p in range(n_shards)]
    shard_of = shard_of_doc[doc]
    # shard states (doc ids local to the shard), packed block states (word ids local to the block)
    shards = [lda.row_state(local_doc[doc[shard_of == p]], z[shard_of == p], shard_docs[p],
                            n_topics) for p in range(n_shards)]
    packed = []
    for b in range(n_blocks):
        mask = block_of == b
        state = lda.row_state(word[mask] - bounds[b], z[mask], bounds[b + 1] - bounds[b], n_topics)
        packed.append(lda.pack_rows(*state))
    n_k = lda.topic_totals(z, n_topics)
    # tokens of (shard, block), grouped by document
    cell = {}
    for p in range(n_shards):
        for b in range(n_blocks):
            ids = np.flatnonzero((shard_of == p) & (block_of == b))
            cell[p, b] = ids[np.argsort(doc[ids], kind="stable")]
    seed = 0
    for round_ in range(60):
        for t in range(n_blocks):
            delta = np.zeros(n_topics, dtype=np.int64)
            for p in range(n_shards):
                b = (p + t) % n_blocks
                ids = cell[p, b]
                n_wk, word_topics, word_nnz = lda.unpack_rows(*packed[b], n_topics)
                local_k = n_k.copy()
                z_cell = z[ids]
                lda.sample_block(local_doc[doc[ids]], word[ids] - bounds[b], z_cell, *shards[p],
                                 n_wk, word_topics, word_nnz, local_k, 0.1, 0.05, n_vocab, seed)
                seed += 1
                z[ids] = z_cell
                delta += local_k - n_k
                packed[b] = lda.pack_rows(n_wk, word_topics, word_nnz)
            n_k += delta
    assert z.min() >= 0 and z.max() < n_topics
    np.testing.assert_array_equal(n_k, np.bincount(z, minlength=n_topics))
    for p in range(n_shards):
        mask = shard_of == p
        n_dk, doc_topics, doc_nnz = shards[p]
        np.testing.assert_array_equal(
            n_dk, lda.count_rows(local_doc[doc[mask]], z[mask], shard_docs[p], n_topics))
        check_lists(n_dk, doc_topics, doc_nnz)
    for b in range(n_blocks):
        mask = block_of == b
        n_wk, word_topics, word_nnz = lda.unpack_rows(*packed[b], n_topics)
        np.testing.assert_array_equal(
            n_wk, lda.count_rows(word[mask] - bounds[b], z[mask], bounds[b + 1] - bounds[b],
                                 n_topics))
        check_lists(n_wk, word_topics, word_nnz)


def test_same_seed_same_draws():
    rng = np.random.default_rng(3)
    doc = np.repeat(np.arange(20), 15)
    word = rng.integers(0, 30, len(doc))
    z0 = lda.random_topics(len(doc), 8, seed=2)
    runs = []
    for seed in (7, 7, 8):
        z = z0.copy()
        (n_dk, dt, dn), (n_wk, wt, wn), n_k = lda.initial_counts(doc, word, z, 20, 30, 8)
        lda.sample_block(doc, word, z, n_dk, dt, dn, n_wk, wt, wn, n_k, 0.1, 0.1, 30, seed)
        runs.append(z)
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_pack_unpack_round_trip():
    rng = np.random.default_rng(4)
    counts = (rng.random((30, 50)) < 0.1) * rng.integers(1, 9, (30, 50))
    counts = counts.astype(np.int32)
    topics, nnz = lda.nonzero_topics(counts)
    packed = lda.pack_rows(counts, topics, nnz)
    assert len(packed[1]) == np.count_nonzero(counts)
    back = lda.unpack_rows(*packed, 50)
    np.testing.assert_array_equal(back[0], counts)
    np.testing.assert_array_equal(back[2], nnz)
    for row in range(30):
        np.testing.assert_array_equal(back[1][row, :nnz[row]], topics[row, :nnz[row]])


# -- cost ------------------------------------------------------------------------------------------
def sparse_corpus(n_docs=2000, doc_length=100, n_vocab=5000, n_labels=1000, words_per_label=20,
                  labels_per_doc=3, seed=0):
    """Tokens from ``n_labels`` topics with ``words_per_label`` words each; every document mixes
    ``labels_per_doc`` of them. Returns (doc, word, label), grouped by document."""
    rng = np.random.default_rng(seed)
    vocab = rng.integers(0, n_vocab, (n_labels, words_per_label))
    doc_labels = rng.integers(0, n_labels, (n_docs, labels_per_doc))
    doc = np.repeat(np.arange(n_docs), doc_length)
    label = doc_labels[doc, rng.integers(0, labels_per_doc, len(doc))]
    word = vocab[label, rng.integers(0, words_per_label, len(doc))]
    return doc, word, label


def cost_per_token(doc, word, z, n_docs, n_vocab, n_topics, sweeps=3, burn_in=2):
    (n_dk, dt, dn), (n_wk, wt, wn), n_k = lda.initial_counts(doc, word, z, n_docs, n_vocab,
                                                             n_topics)
    args = (n_dk, dt, dn, n_wk, wt, wn, n_k, 0.1, 0.01, n_vocab)
    for s in range(burn_in):
        lda.sample_block(doc, word, z, *args, s)
    terms = 0
    buckets = np.zeros(3, dtype=np.int64)
    start = time.perf_counter()
    for s in range(sweeps):
        out = lda.sample_block(doc, word, z, *args, 100 + s)
        terms += out[0]
        buckets += out[1:4]
    elapsed = time.perf_counter() - start
    n = sweeps * len(doc)
    return terms / n, n / elapsed, buckets / buckets.sum(), dn.mean(), wn[wn > 0].mean()


def test_cost_per_token_is_sublinear_in_k():
    """200k tokens from 1000 sparse topics (3 a document, ~4 a word), sampled with K = 100 and
    K = 1000 from the generating assignment (labels mod K), 2 sweeps of burn-in, 3 measured."""
    doc, word, label = sparse_corpus()
    n_docs, n_vocab = doc.max() + 1, 5000
    results = {}
    for k in (100, 1000):
        z = (label % k).astype(np.int32)  # start from the sparse generating assignment
        results[k] = cost_per_token(doc, word, z, n_docs, n_vocab, k)
        ops, rate, shares, k_d, k_w = results[k]
        print(f"K={k}: {ops:.1f} operations/token, {rate / 1e6:.2f}M tokens/s, "
              f"buckets s/r/q {np.round(shares, 3)}, mean K_d {k_d:.2f}, mean K_w {k_w:.2f}")
    ratio = results[1000][0] / results[100][0]
    print(f"operations per token, K=1000 / K=100: {ratio:.2f}; "
          f"time per token: {results[100][1] / results[1000][1]:.2f}")
    assert ratio < 2.0  # O(K) per token would give ~10


# -- log-likelihood --------------------------------------------------------------------------------
def test_log_predictive_is_the_leave_one_out_probability_of_each_token():
    """Replay the kernel's draws in numpy: take each token out, add up
    log sum_k (n_dk + alpha)(n_wk + beta) / (n_k + V beta) / (n_d - 1 + K alpha), put it back
    with the topic the kernel drew."""
    rng = np.random.default_rng(5)
    n_docs, n_vocab, n_topics, alpha, beta = 25, 40, 7, 0.3, 0.05
    doc = np.repeat(np.arange(n_docs), rng.integers(1, 30, n_docs))
    word = rng.integers(0, n_vocab, len(doc))
    z = lda.random_topics(len(doc), n_topics, seed=6)
    state = lda.initial_counts(doc, word, z, n_docs, n_vocab, n_topics)
    for s in range(3):  # move away from the uniform start; the lists are no longer sorted
        lda.sample_block(doc, word, z, *state[0], *state[1], state[2], alpha, beta, n_vocab, s)
    (n_dk, _, _), (n_wk, _, _), n_k = lda.initial_counts(doc, word, z, n_docs, n_vocab, n_topics)
    n_dk, n_wk, n_k = n_dk.astype(float), n_wk.astype(float), n_k.astype(float)
    before = z.copy()
    *_, log_predictive = lda.sample_block(doc, word, z, *state[0], *state[1], state[2], alpha,
                                          beta, n_vocab, 3)
    n_d = n_dk.sum(axis=1)
    expected = 0.0
    for i, (d, w) in enumerate(zip(doc, word)):
        n_dk[d, before[i]] -= 1
        n_wk[w, before[i]] -= 1
        n_k[before[i]] -= 1
        joint = (n_dk[d] + alpha) * (n_wk[w] + beta) / (n_k + n_vocab * beta)
        expected += np.log(joint.sum() / (n_d[d] - 1 + n_topics * alpha))
        n_dk[d, z[i]] += 1
        n_wk[w, z[i]] += 1
        n_k[z[i]] += 1
    np.testing.assert_allclose(log_predictive, expected, rtol=1e-10)
