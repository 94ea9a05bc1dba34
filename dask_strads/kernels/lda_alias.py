"""The large-K LDA sampler: alias tables and Metropolis-Hastings (LightLDA, Yuan et al. 2015),
beside the SparseLDA kernel of :mod:`.lda` and on the same state (the same counts, nonzero-topic
lists, topic totals and seeded priors), so that the program runs either.

A token i of document d and word w, with its own counts taken out, has the target

    pi(k)  ∝  (n_dk + alpha_k) (n_wk + beta + b_wk) / D_k,      D_k = n_k + V beta + B_k,

which SparseLDA draws exactly in O(K_d + K_w). Here a short Metropolis-Hastings chain moves the
token instead, alternating two proposals, each O(1) a draw:

- the *word proposal* g(k) ∝ (N_wk + b_wk + beta) c_k, from a snapshot N, c of the word's
  counts and of 1 / D_k taken when the block arrives (this push's start): an alias table over
  the word's nonzero and seeded topics for the N + b part and one table over all K topics for
  the beta part, built once a push and drawn from by every token of the word in it (stale by at
  most the sub-round, as in LightLDA). Its acceptance is min(1, pi(t) g(s) / (pi(s) g(t))).
  The snapshot counts the token itself (at its topic s0 then); a draw of s0 is kept with
  probability g(s0) / f(s0), where f counts it and g does not (N_ws0 - 1, n_s0 - 1), so the
  proposal does not depend on the token's own topic;
- the *document proposal* q(k) ∝ n_dk + alpha_k, the token's own topic included: the topic of a
  uniformly drawn token of the document (with probability n_d / (n_d + sum alpha)) or a topic
  drawn from alpha (an alias table). Its acceptance is min(1, W(t) / W(s)), with W(k) = (n_wk +
  beta + b_wk) / D_k from the current counts.

Each proposal is a Metropolis-Hastings step with pi(. | all other tokens) stationary. What keeps
the chain from being exact is the snapshot: the word proposal of token i depends on the topics
that earlier tokens of the same push had at its start (LightLDA's staleness), an effect that
vanishes as the counts grow and the chain mixes (measured against the exact sampler in
tests/test_lda_alias.py and docs/lda.md).

Cost a token: ``mh_steps`` (word, document) pairs of O(1) draws and count look-ups, plus a
binary search of the word's snapshot (O(log K_w)) for the snapshot count of a topic a document
proposal moved to. A push also builds its words' tables, O(nonzeros of those words' rows),
and the nonzero-topic lists are kept as SparseLDA keeps them (O(K_w) when a count drops to 0).

The training log-likelihood (the leave-one-out log predictive probability SparseLDA sums for
free) costs O(K_d + K_w) a token here, so it is summed over every ``LOG_LIKELIHOOD_STRIDE``-th
token of a push, and over at most about ``LOG_LIKELIHOOD_TOKENS`` tokens of a push, and scaled
to the push's tokens: an estimate.
"""
import numpy as np
from numba import njit

from .compilation import declare_kernel_set
from .lda import (_list_append, _list_remove, add_counts, fill_nonzero, no_seeds, topic_priors,
                  topic_totals)
from .sampling import alias_build, alias_draw, next_uniform, random_stream

#: Metropolis-Hastings cycles (a word proposal, then a document proposal) per token.
MH_STEPS = 2
#: A push sums the log predictive probability of one token in this many ...
LOG_LIKELIHOOD_STRIDE = 64
#: ... and of about this many tokens at most (at K = 10,000 on NewsArticles every 64th token's
#: O(K_d + K_w) took most of the sampler's operations).
LOG_LIKELIHOOD_TOKENS = 2048


def document_index(doc, n_docs):
    """``(starts, positions)``: the positions of document d's tokens in a shard's token arrays
    are ``positions[starts[d]:starts[d + 1]]`` (for the document proposal's uniform token)."""
    doc = np.asarray(doc)
    dtype = np.int32 if len(doc) <= np.iinfo(np.int32).max else np.int64
    positions = np.argsort(doc, kind="stable").astype(dtype)
    starts = np.searchsorted(doc[positions], np.arange(n_docs + 1)).astype(np.int64)
    return starts, positions


@njit(cache=True, nogil=True)
def _boost(seed_indptr, seed_topics, seed_boosts, w, k):
    """b_wk: the seeded boost of (w, k), 0 if unseeded."""
    for j in range(seed_indptr[w], seed_indptr[w + 1]):
        if seed_topics[j] == k:
            return seed_boosts[j]
    return 0.0


@njit(cache=True, nogil=True)
def _snapshot(topics, values, lo, hi, k):
    """N_wk + b_wk in the word's snapshot (entries [lo, hi), sorted by topic); 0 if absent."""
    last = hi
    while lo < hi:
        mid = (lo + hi) // 2
        if topics[mid] < k:
            lo = mid + 1
        else:
            hi = mid
    if lo < last and topics[lo] == k:
        return values[lo]
    return 0.0


@njit(cache=True, nogil=True)
def _word_proposals(word, start, stop, n_wk, word_topics, word_nnz, seed_indptr, seed_topics,
                    seed_boosts, c):
    """The snapshot and alias tables of the words of tokens [start, stop): word w's entries are
    [ptr[w], end[w]), sorted by topic, with ``topics``, ``values`` (N_wk + b_wk) and the alias
    table (``prob``, ``alias``) of the weights (N_wk + b_wk) c_k, whose total is ``mass[w]``."""
    n_rows = n_wk.shape[0]
    present = np.zeros(n_rows, dtype=np.bool_)
    for i in range(start, stop):
        present[word[i]] = True
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    most = 0
    for w in range(n_rows):
        size = 0
        if present[w]:
            size = word_nnz[w] + seed_indptr[w + 1] - seed_indptr[w]
        ptr[w + 1] = ptr[w] + size
        most = max(most, size)
    end = ptr[:-1].copy()
    topics = np.empty(ptr[n_rows], dtype=np.int32)
    values = np.empty(ptr[n_rows])
    prob = np.empty(ptr[n_rows])
    alias = np.empty(ptr[n_rows], dtype=np.int64)
    mass = np.zeros(n_rows)
    small = np.empty(most, dtype=np.int64)
    large = np.empty(most, dtype=np.int64)
    for w in range(n_rows):
        if not present[w]:
            continue
        lo = ptr[w]
        m = 0
        for j in range(word_nnz[w]):
            topics[lo + m] = word_topics[w, j]
            m += 1
        for j in range(seed_indptr[w], seed_indptr[w + 1]):
            if n_wk[w, seed_topics[j]] == 0:
                topics[lo + m] = seed_topics[j]
                m += 1
        topics[lo:lo + m].sort()
        for j in range(lo, lo + m):
            k = topics[j]
            values[j] = n_wk[w, k] + _boost(seed_indptr, seed_topics, seed_boosts, w, k)
            prob[j] = values[j] * c[k]
        end[w] = lo + m
        mass[w] = alias_build(prob, alias, lo, lo + m, small, large)
    return ptr, end, topics, values, prob, alias, mass, ptr[n_rows]


@njit(cache=True, nogil=True)
def _predictive(d, w, n_dk, doc_topics, doc_nnz, n_wk, word_topics, word_nnz, inv, alpha,
                beta, smoothing, seed_indptr, seed_topics, seed_boosts):
    """sum_k (n_dk + alpha_k)(n_wk + beta + b_wk) / D_k by SparseLDA's buckets (the token's own
    counts out): O(K_d + K_w)."""
    r = 0.0
    for j in range(doc_nnz[d]):
        k = doc_topics[d, j]
        r += n_dk[d, k] * inv[k]
    q = 0.0
    for j in range(word_nnz[w]):
        k = word_topics[w, j]
        q += (alpha[k] + n_dk[d, k]) * n_wk[w, k] * inv[k]
    for j in range(seed_indptr[w], seed_indptr[w + 1]):
        k = seed_topics[j]
        q += (alpha[k] + n_dk[d, k]) * seed_boosts[j] * inv[k]
    return smoothing + beta * r + q


@njit(cache=True, nogil=True)
def _sample_block_alias(doc, word, z, start, stop, doc_starts, doc_positions, n_dk, doc_topics,
                        doc_nnz, n_wk, word_topics, word_nnz, n_k, alpha, beta, prior_totals,
                        seed_indptr, seed_topics, seed_boosts, mh_steps, stride, seed):
    """Resample tokens ``start:stop`` of a shard (``doc``, ``word``, ``z`` its whole arrays:
    the document proposal reads the topics of a document's tokens in every block) by
    ``mh_steps`` Metropolis-Hastings cycles each; the state is updated in place as by
    :func:`.lda._sample_block`. Returns ``(operations, accepted, log_predictive)``: draws,
    look-up steps and table entries built; proposals accepted; the push's log predictive
    probability, estimated from every ``stride``-th token."""
    stream = random_stream(seed)
    n_topics = n_k.shape[0]
    inv = 1.0 / (n_k + prior_totals)  # 1 / D_k, kept current
    c = inv.copy()  # the word proposal's snapshot of 1 / D_k
    n_start = n_k.copy()
    dense_prob = beta * c
    dense_alias = np.empty(n_topics, dtype=np.int64)
    small = np.empty(n_topics, dtype=np.int64)
    large = np.empty(n_topics, dtype=np.int64)
    dense_mass = alias_build(dense_prob, dense_alias, 0, n_topics, small, large)
    alpha_prob = alpha.copy()
    alpha_alias = np.empty(n_topics, dtype=np.int64)
    alpha_sum = alias_build(alpha_prob, alpha_alias, 0, n_topics, small, large)
    ptr, end, topics, values, prob, alias, mass, operations = _word_proposals(
        word, start, stop, n_wk, word_topics, word_nnz, seed_indptr, seed_topics, seed_boosts, c)
    operations += 3 * n_topics
    smoothing = 0.0  # sum_k alpha_k beta / D_k, for the log-likelihood
    for k in range(n_topics):
        smoothing += alpha[k] * beta * inv[k]
    accepted = 0
    log_predictive = 0.0
    scored = 0
    for i in range(start, stop):
        d = doc[i]
        w = word[i]
        s0 = z[i]
        n_dk[d, s0] -= 1
        n_wk[w, s0] -= 1
        n_k[s0] -= 1
        updated = 1.0 / (n_k[s0] + prior_totals[s0])
        smoothing += alpha[s0] * beta * (updated - inv[s0])
        inv[s0] = updated
        n_d = doc_starts[d + 1] - doc_starts[d]
        if (i - start) % stride == 0:
            log_predictive += np.log(_predictive(
                d, w, n_dk, doc_topics, doc_nnz, n_wk, word_topics, word_nnz, inv, alpha, beta,
                smoothing, seed_indptr, seed_topics, seed_boosts) / (n_d - 1 + alpha_sum))
            scored += 1
            operations += doc_nnz[d] + word_nnz[w]
        lo, hi = ptr[w], end[w]
        # g without the token itself: its snapshot count and its topic total, one less at s0
        v0 = _snapshot(topics, values, lo, hi, s0)
        c0 = 1.0 / (max(n_start[s0] - 1, 0) + prior_totals[s0])
        g0 = (v0 - 1.0 + beta) * c0
        keep_s0 = g0 / ((v0 + beta) * c[s0])
        t_cur = s0
        pi_cur = (n_dk[d, s0] + alpha[s0]) * (
            n_wk[w, s0] + beta + _boost(seed_indptr, seed_topics, seed_boosts, w, s0)) * inv[s0]
        g_cur = g0
        for _ in range(mh_steps):
            # word proposal: f's draws, s0 kept with probability g(s0) / f(s0)
            while True:
                operations += 1
                stream, u = next_uniform(stream)
                if u * (mass[w] + dense_mass) < mass[w]:
                    stream, j = alias_draw(stream, prob, alias, lo, hi)
                    t = topics[j]
                    v = values[j]
                else:
                    stream, t = alias_draw(stream, dense_prob, dense_alias, 0, n_topics)
                    v = _snapshot(topics, values, lo, hi, t)
                    operations += 8
                if t != s0:
                    break
                stream, u = next_uniform(stream)
                if u < keep_s0:
                    break
            if t != t_cur:
                g_t = g0 if t == s0 else (v + beta) * c[t]
                if g_cur < 0.0:  # unknown since a document proposal moved the token
                    g_cur = g0 if t_cur == s0 else (
                        _snapshot(topics, values, lo, hi, t_cur) + beta) * c[t_cur]
                    operations += 8
                pi_t = (n_dk[d, t] + alpha[t]) * (
                    n_wk[w, t] + beta + _boost(seed_indptr, seed_topics, seed_boosts, w, t)
                ) * inv[t]
                stream, u = next_uniform(stream)
                if u * pi_cur * g_t < pi_t * g_cur:
                    t_cur, pi_cur, g_cur = t, pi_t, g_t
                    z[i] = t
                    accepted += 1
            # document proposal: a uniform token of the document (this one at t_cur), or alpha
            stream, u = next_uniform(stream)
            u *= n_d + alpha_sum
            if u < n_d:
                t = z[doc_positions[doc_starts[d] + min(int(u), n_d - 1)]]
            else:
                stream, t = alias_draw(stream, alpha_prob, alpha_alias, 0, n_topics)
            operations += 1
            if t != t_cur:
                pi_t = (n_dk[d, t] + alpha[t]) * (
                    n_wk[w, t] + beta + _boost(seed_indptr, seed_topics, seed_boosts, w, t)
                ) * inv[t]
                stream, u = next_uniform(stream)
                if u * pi_cur * (n_dk[d, t] + alpha[t]) < pi_t * (n_dk[d, t_cur] + alpha[t_cur]):
                    t_cur, pi_cur, g_cur = t, pi_t, -1.0
                    z[i] = t
                    accepted += 1
        new = t_cur
        n_dk[d, new] += 1
        n_wk[w, new] += 1
        n_k[new] += 1
        updated = 1.0 / (n_k[new] + prior_totals[new])
        smoothing += alpha[new] * beta * (updated - inv[new])
        inv[new] = updated
        z[i] = new
        if new != s0:
            if n_dk[d, s0] == 0:
                operations += _list_remove(doc_topics, doc_nnz, d, s0)
            if n_wk[w, s0] == 0:
                operations += _list_remove(word_topics, word_nnz, w, s0)
            if n_dk[d, new] == 1:
                _list_append(doc_topics, doc_nnz, d, new)
            if n_wk[w, new] == 1:
                _list_append(word_topics, word_nnz, w, new)
    if scored:
        log_predictive *= (stop - start) / scored
    return operations, accepted, log_predictive


def sample_block_alias(doc, word, z, start, stop, doc_index, n_dk, doc_topics, doc_nnz, n_wk,
                       word_topics, word_nnz, n_k, alpha, beta, n_vocab, seed, seeds=None,
                       seed_totals=0.0, mh_steps=MH_STEPS):
    """:func:`_sample_block_alias` with the arguments of :func:`.lda.sample_block` (fixed types),
    the shard's whole ``doc``, ``word``, ``z`` with the block's token range ``start:stop``, and
    its :func:`document_index`."""
    n_topics = n_k.shape[0]
    prior_totals = n_vocab * float(beta) + topic_priors(seed_totals, n_topics)
    return _sample_block_alias(doc, word, z, int(start), int(stop), *doc_index, n_dk,
                               doc_topics, doc_nnz, n_wk, word_topics, word_nnz, n_k,
                               topic_priors(alpha, n_topics), float(beta), prior_totals,
                               *(seeds or no_seeds(n_wk.shape[0])), int(mh_steps),
                               max(LOG_LIKELIHOOD_STRIDE, (stop - start) // LOG_LIKELIHOOD_TOKENS),
                               int(seed))


declare_kernel_set("lda_alias", "lda (alias sampler)",
                   (add_counts, topic_totals, fill_nonzero, _sample_block_alias))
