"""Numba kernels of the LDA program: collapsed Gibbs sampling of the tokens of one (document
shard, vocabulary block) pair with the SparseLDA bucket sampler (Yao, Mimno, McCallum, KDD 2009),
which also sums the tokens' leave-one-out log predictive probabilities (a training log-likelihood).

Model: K topics, V words in the whole vocabulary, a document-topic prior ``alpha_k`` per topic
(asymmetric once learned) and a topic-word prior ``beta + b_wk``: a symmetric ``beta`` plus a
boost ``b_wk`` on seeded (word, topic) pairs (none unless topics are seeded), B_k = sum_w b_wk.
With D_k = n_k + V beta + B_k, a token i of document d with word w is resampled from

    p(z_i = k | rest)  ∝  (n_dk + alpha_k) (n_wk + beta + b_wk) / D_k     (counts without i)
                        =  alpha_k beta / D_k                          smoothing bucket s
                        +  n_dk beta / D_k                             document bucket r
                        +  (alpha_k + n_dk) (n_wk + b_wk) / D_k        topic-word bucket q

(q's terms: the word's nonzero topics, then its seeded topics where n_wk = 0.)

The r terms vanish unless n_dk > 0 and the q terms unless n_wk > 0, so a token costs
O(K_d + K_w) (nonzero topics of its document and of its word). s is one number updated in O(1)
when a count changes; a draw from s walks the K terms, but it is rare (alpha beta is small
against the counts: about one token in a thousand on real corpora), so its expected cost per
token stays far below K. (A Fenwick tree made that walk O(log K), but its two O(log K) updates on
every token cost 30% of the sampler's time at K = 100 and 15% at K = 1000.) r is rebuilt in
O(K_d) when the document changes and updated in O(1) when a count changes; q is computed per
token.

State, all numpy arrays, updated in place by :func:`sample_block`
-----------------------------------------------------------------
tokens of a shard in a block  ``doc`` (int, local document index), ``word`` (int, word index
                              local to the block, 0..V_b-1), ``z`` (int32 topic). Any order is
                              correct; grouped by document is fast (r is rebuilt on each change
                              of document).
shard (never moves)           ``n_dk`` (D x K int32), ``doc_topics`` (D x K), ``doc_nnz`` (D,)
block (moves with its rows)   ``n_wk`` (V_b x K int32), ``word_topics`` (V_b x K), ``word_nnz``
                              (V_b,); :func:`pack_rows` / :func:`unpack_rows` give the compact
                              CSR form to send between workers.
topic totals (local copy)     ``n_k`` (K,) int64. The caller keeps the value it had before the
                              call and sends ``n_k - before`` (the delta) to be reconciled.

Nonzero-topic lists: ``topics[row, :nnz[row]]`` holds, in no particular order, the topics with
``counts[row, k] > 0``. A topic whose count becomes 1 is appended, O(1); one whose count falls
to 0 is found by scanning its row's list and replaced by the last entry, O(nnz of that row) —
within the O(K_d + K_w) a token costs anyway, and it spares the (rows x K) position index that
would otherwise travel with every block. Topic ids are int16 when K <= 32768
(:func:`topic_dtype`), int32 otherwise. Any order is correct; a sampler call first orders its
block's word lists by decreasing count (nearly sorted from its last call: an insertion sort,
O(nnz)), so that a draw from q, walking the word's topics, stops after 4.7 of them on average
instead of 8.7 (NewsArticles, K = 100: 21.4 operations a token instead of 25.4).

Local topic totals may be stale (other workers' changes arrive once per sub-round); as each
worker starts from the reconciled totals and only moves its own tokens, ``n_k >= n_wk, n_dk``
holds and every denominator stays positive.
"""
import numpy as np
from numba import njit

from .compilation import declare_kernel_set
from .sampling import next_uniform, random_stream


def topic_dtype(n_topics):
    """Integer type of the topic ids in the nonzero-topic lists: the smallest that holds K - 1."""
    return np.int16 if n_topics <= np.iinfo(np.int16).max + 1 else np.int32


def row_bytes(n_topics):
    """Bytes of one row of a count table: int32 counts, its nonzero-topic list and length."""
    return n_topics * (4 + np.dtype(topic_dtype(n_topics)).itemsize) + 4


# -- builders ------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def add_counts(counts, rows, z):
    """Add one to ``counts[rows[i], z[i]]`` for every token i, in place."""
    for i in range(rows.shape[0]):
        counts[rows[i], z[i]] += 1


def count_rows(rows, z, n_rows, n_topics):
    """(n_rows x K) int32 counts: ``counts[rows[i], z[i]]`` summed over tokens i."""
    counts = np.zeros((n_rows, n_topics), dtype=np.int32)
    add_counts(counts, rows, z)
    return counts


@njit(cache=True, nogil=True)
def topic_totals(z, n_topics):
    """(K,) int64 number of tokens in each topic."""
    n_k = np.zeros(n_topics, dtype=np.int64)
    for i in range(z.shape[0]):
        n_k[z[i]] += 1
    return n_k


@njit(cache=True, nogil=True)
def fill_nonzero(counts, topics, nnz):
    """Rebuild the nonzero-topic lists of the rows of ``counts`` in place (ascending order)."""
    for row in range(counts.shape[0]):
        n = 0
        for k in range(counts.shape[1]):
            if counts[row, k] != 0:
                topics[row, n] = k
                n += 1
        nnz[row] = n


def nonzero_topics(counts):
    """``(topics, nnz)``: the nonzero-topic lists of the rows of ``counts`` (ascending order)."""
    topics = np.zeros(counts.shape, dtype=topic_dtype(counts.shape[1]))
    nnz = np.zeros(counts.shape[0], dtype=np.int32)
    fill_nonzero(counts, topics, nnz)
    return topics, nnz


def row_state(rows, z, n_rows, n_topics):
    """``(counts, topics, nnz)`` of a shard (rows = local doc ids of all its tokens, every
    block) or of a block (rows = local word ids of all its tokens, every shard)."""
    counts = count_rows(np.asarray(rows), np.asarray(z), n_rows, n_topics)
    return (counts,) + nonzero_topics(counts)


def initial_counts(doc, word, z, n_docs, n_words, n_topics):
    """Whole state of one corpus (or of a shard x block pair that is the whole model):
    ``((n_dk, doc_topics, doc_nnz), (n_wk, word_topics, word_nnz), n_k)``."""
    return (row_state(doc, z, n_docs, n_topics), row_state(word, z, n_words, n_topics),
            topic_totals(np.asarray(z), n_topics))


def random_topics(n_tokens, n_topics, seed):
    """Uniform initial topics, int32."""
    return np.random.default_rng(seed).integers(0, n_topics, n_tokens).astype(np.int32)


@njit(cache=True, nogil=True)
def pack_rows(counts, topics, nnz):
    """CSR form ``(indptr, ids, values)`` of count rows, in list order (for the trip of a
    block between workers: O(nonzeros) instead of O(rows x K))."""
    n_rows = counts.shape[0]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    for row in range(n_rows):
        indptr[row + 1] = indptr[row] + nnz[row]
    ids = np.empty(indptr[n_rows], dtype=topics.dtype)
    values = np.empty(indptr[n_rows], dtype=counts.dtype)
    for row in range(n_rows):
        for j in range(nnz[row]):
            k = topics[row, j]
            ids[indptr[row] + j] = k
            values[indptr[row] + j] = counts[row, k]
    return indptr, ids, values


@njit(cache=True, nogil=True)
def _unpack(indptr, ids, values, counts, topics, nnz):
    for row in range(counts.shape[0]):
        nnz[row] = indptr[row + 1] - indptr[row]
        for j in range(nnz[row]):
            k = ids[indptr[row] + j]
            topics[row, j] = k
            counts[row, k] = values[indptr[row] + j]


def unpack_rows(indptr, ids, values, n_topics):
    """Inverse of :func:`pack_rows`: ``(counts, topics, nnz)``, list order preserved."""
    n_rows = indptr.shape[0] - 1
    counts = np.zeros((n_rows, n_topics), dtype=np.int32)
    topics = np.zeros((n_rows, n_topics), dtype=topic_dtype(n_topics))
    nnz = np.zeros(n_rows, dtype=np.int32)
    _unpack(indptr, ids, values, counts, topics, nnz)
    return counts, topics, nnz


# -- nonzero-topic lists ---------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _list_append(topics, nnz, row, k):
    topics[row, nnz[row]] = k
    nnz[row] += 1


@njit(cache=True, nogil=True)
def _list_remove(topics, nnz, row, k):
    """Drop topic k from the row's list (the last entry takes its place); returns entries read."""
    n = nnz[row]
    for j in range(n):
        if topics[row, j] == k:
            topics[row, j] = topics[row, n - 1]
            nnz[row] = n - 1
            return j + 1
    raise ValueError("topic missing from a nonzero-topic list: counts and lists disagree")


@njit(cache=True, nogil=True)
def _sort_by_count(counts, topics, nnz):
    """Order each row's nonzero-topic list by decreasing count (insertion sort: the lists come
    nearly sorted from the last call), so that a draw's walk meets the likely topics first."""
    for row in range(counts.shape[0]):
        for j in range(1, nnz[row]):
            k = topics[row, j]
            count = counts[row, k]
            i = j - 1
            while i >= 0 and counts[row, topics[row, i]] < count:
                topics[row, i + 1] = topics[row, i]
                i -= 1
            topics[row, i + 1] = k


# -- sampler ---------------------------------------------------------------------------------------
# error_model="numpy": no zero test on each division (every denominator is positive, see above)
@njit(cache=True, nogil=True, error_model="numpy")
def _sample_block(doc, word, z, n_dk, doc_topics, doc_nnz, n_wk, word_topics, word_nnz, n_k,
                  alpha, beta, prior_totals, seed_indptr, seed_topics, seed_boosts, seed):
    """Resample every token ``i`` (``doc[i]``, ``word[i]``, ``z[i]``) once, in order, by
    collapsed Gibbs; ``z``, the counts, the nonzero-topic lists and ``n_k`` are updated in place.

    ``alpha`` is (K,) float64, ``prior_totals`` (K,) V beta + B_k (V the full vocabulary's
    size, not the block's); the seeded topics of local word w are
    ``seed_topics[seed_indptr[w]:seed_indptr[w + 1]]``, with their boosts in ``seed_boosts``.
    ``seed`` seeds the stream of uniforms (:func:`.sampling.next_uniform`).
    Returns ``(terms, from_s, from_r, from_q, log_predictive)``: an operation count (bucket terms
    computed or walked, list entries scanned, plus K for the set-up), how
    many tokens drew from each bucket, and the sum over tokens of the log leave-one-out
    predictive probability
    log p(w_i | all other tokens) = log (s + r + q) / (n_d - 1 + sum_k alpha_k),
    a training log-likelihood that the sampler computes anyway.
    """
    stream = random_stream(seed)
    _sort_by_count(n_wk, word_topics, word_nnz)
    n_topics = n_k.shape[0]
    inv = np.empty(n_topics)  # 1 / D_k
    for k in range(n_topics):
        inv[k] = 1.0 / (n_k[k] + prior_totals[k])
    s = 0.0  # smoothing bucket, kept up to date term by term
    for k in range(n_topics):
        s += alpha[k] * beta * inv[k]
    q_terms = np.empty(2 * n_topics)
    q_topics = np.empty(2 * n_topics, dtype=np.int64)
    terms = n_topics
    from_s = from_r = from_q = 0
    log_predictive = 0.0
    alpha_sum = alpha.sum()
    current = -1
    a_d = np.empty(n_topics)  # alpha_k + n_dk of the current document
    r = 0.0
    n_d_rest = 0.0  # the document's other tokens plus sum_k alpha_k
    predictive = 1.0  # a product of predictive probabilities, its log added before it underflows
    for i in range(z.shape[0]):
        d = doc[i]
        w = word[i]
        t = z[i]
        if d != current:  # document bucket of the new document, O(K_d)
            current = d
            r = 0.0
            n_d = 0
            for j in range(doc_nnz[d]):
                k = doc_topics[d, j]
                r += n_dk[d, k] * inv[k]
                n_d += n_dk[d, k]
            r *= beta
            n_d_rest = n_d - 1 + alpha_sum
            for k in range(n_topics):
                a_d[k] = alpha[k] + n_dk[d, k]
            terms += doc_nnz[d]
        # take token i out of the counts (the "-i" of the conditional); s, r follow topic t
        r -= beta * n_dk[d, t] * inv[t]
        n_dk[d, t] -= 1
        a_d[t] -= 1.0
        n_wk[w, t] -= 1
        n_k[t] -= 1
        if n_dk[d, t] == 0:
            terms += _list_remove(doc_topics, doc_nnz, d, t)
        if n_wk[w, t] == 0:
            terms += _list_remove(word_topics, word_nnz, w, t)
        updated = 1.0 / (n_k[t] + prior_totals[t])
        s += alpha[t] * beta * (updated - inv[t])
        inv[t] = updated
        r = max(r + beta * n_dk[d, t] * inv[t], 0.0)
        # topic-word bucket, O(K_w + seeds of w)
        n_w = word_nnz[w]
        q = 0.0
        for j in range(n_w):
            k = word_topics[w, j]
            term = a_d[k] * n_wk[w, k] * inv[k]
            q_terms[j] = term
            q_topics[j] = k
            q += term
        for j in range(seed_indptr[w], seed_indptr[w + 1]):
            k = seed_topics[j]
            term = a_d[k] * seed_boosts[j] * inv[k]
            q_terms[n_w] = term
            q_topics[n_w] = k
            n_w += 1
            q += term
        terms += n_w
        predictive *= (s + r + q) / n_d_rest
        if predictive < 1e-250:
            log_predictive += np.log(predictive)
            predictive = 1.0
        stream, u = next_uniform(stream)
        u *= s + r + q
        new = -1
        if u < q:
            from_q += 1
            j = 0
            while j < n_w - 1 and u >= q_terms[j]:
                u -= q_terms[j]
                j += 1
            terms += j + 1
            new = q_topics[j]
        else:
            u -= q
            n_d = doc_nnz[d]
            if u < r and n_d > 0:
                from_r += 1
                new = np.int64(doc_topics[d, n_d - 1])  # if rounding runs the walk off the end
                for j in range(n_d):
                    k = doc_topics[d, j]
                    terms += 1
                    u -= beta * n_dk[d, k] * inv[k]
                    if u < 0.0:
                        new = np.int64(k)
                        break
            else:
                # smoothing bucket, rare (alpha beta is small against the counts): O(K)
                from_s += 1
                u = max(u - r, 0.0)
                new = n_topics - 1  # if rounding runs the walk off the end
                for k in range(n_topics):
                    terms += 1
                    u -= alpha[k] * beta * inv[k]
                    if u < 0.0:
                        new = k
                        break
        # put token i back with its new topic
        r -= beta * n_dk[d, new] * inv[new]
        n_dk[d, new] += 1
        a_d[new] += 1.0
        n_wk[w, new] += 1
        n_k[new] += 1
        if n_dk[d, new] == 1:
            _list_append(doc_topics, doc_nnz, d, new)
        if n_wk[w, new] == 1:
            _list_append(word_topics, word_nnz, w, new)
        updated = 1.0 / (n_k[new] + prior_totals[new])
        s += alpha[new] * beta * (updated - inv[new])
        inv[new] = updated
        r += beta * n_dk[d, new] * inv[new]
        z[i] = new
    return terms, from_s, from_r, from_q, log_predictive + np.log(predictive)


def topic_priors(alpha, n_topics):
    """The document-topic prior as the kernels take it: (K,) float64, from one value or K."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(alpha, dtype=np.float64), (n_topics,)))


def no_seeds(n_rows):
    """The seeded (word, topic) pairs of a block of ``n_rows`` words without any: (indptr,
    topics, boosts)."""
    return (np.zeros(n_rows + 1, dtype=np.int64), np.zeros(0, dtype=np.int64),
            np.zeros(0, dtype=np.float64))


# Entry point: arguments of fixed types, so that an int prior (``doc_topic_prior=1``) does not
# compile a second specialisation of the kernel (see kernels/lasso.py).
def sample_block(doc, word, z, n_dk, doc_topics, doc_nnz, n_wk, word_topics, word_nnz, n_k,
                 alpha, beta, n_vocab, seed, seeds=None, seed_totals=0.0):
    """:func:`_sample_block`, with ``alpha`` one value or K (:func:`topic_priors`), a float
    ``beta`` and int ``n_vocab`` and ``seed``; ``seeds`` the block's seeded pairs as
    (indptr, topics, boosts) over its rows (None: none), ``seed_totals`` B_k (K,) over every
    block."""
    n_topics = n_k.shape[0]
    prior_totals = n_vocab * float(beta) + topic_priors(seed_totals, n_topics)
    return _sample_block(doc, word, z, n_dk, doc_topics, doc_nnz, n_wk, word_topics, word_nnz,
                         n_k, topic_priors(alpha, n_topics), float(beta), prior_totals,
                         *(seeds or no_seeds(n_wk.shape[0])), int(seed))


declare_kernel_set("lda", "lda", (add_counts, topic_totals, fill_nonzero, _sample_block))
