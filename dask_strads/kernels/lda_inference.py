"""Topic proportions of new documents with the topics held fixed (LDA's ``transform``), and the
held-out chain a fit with validation data runs beside its training tokens.

Gibbs sampling of each document's tokens from p(z = k) ∝ (n_dk + alpha_k) phi_kw, with phi fixed:
O(K) a token, which is fine for inference (a few sweeps per document, no shared counts). The
document-topic distribution is averaged over the sweeps after burn-in.
"""
import numpy as np
from numba import njit

from .compilation import declare_kernel_set
from .lda import no_seeds, topic_priors
from .sampling import next_below, next_uniform, random_stream


@njit(cache=True, nogil=True)
def _drawn(stream, weights, total):
    """``(stream, k)``: a topic drawn with probabilities ``weights / total``."""
    stream, u = next_uniform(stream)
    u *= total
    k = 0
    while k < len(weights) - 1 and u >= weights[k]:
        u -= weights[k]
        k += 1
    return stream, k


@njit(cache=True, nogil=True)
def _infer_documents(indptr, words, counts, phi_by_word, alpha, n_sweeps, burn_in, seed):
    """theta (D x K) for documents in CSR form (``indptr``, ``words``, ``counts``).

    ``phi_by_word`` is (V x K): column-normalised topic-word probabilities, one row per word;
    ``alpha`` is (K,).
    """
    stream = random_stream(seed)
    n_docs = indptr.shape[0] - 1
    n_topics = phi_by_word.shape[1]
    theta = np.zeros((n_docs, n_topics))
    alpha_sum = alpha.sum()
    weights = np.empty(n_topics)
    for d in range(n_docs):
        n_tokens = 0
        for p in range(indptr[d], indptr[d + 1]):
            n_tokens += counts[p]
        if n_tokens == 0:
            theta[d, :] = alpha / alpha_sum
            continue
        token_words = np.empty(n_tokens, dtype=np.int64)
        i = 0
        for p in range(indptr[d], indptr[d + 1]):
            for _ in range(counts[p]):
                token_words[i] = words[p]
                i += 1
        z = np.empty(n_tokens, dtype=np.int64)
        for i in range(n_tokens):
            stream, z[i] = next_below(stream, n_topics)
        n_dk = np.zeros(n_topics)
        for i in range(n_tokens):
            n_dk[z[i]] += 1.0
        kept = 0
        for sweep in range(n_sweeps):
            for i in range(n_tokens):
                n_dk[z[i]] -= 1.0
                total = 0.0
                for k in range(n_topics):
                    weights[k] = (n_dk[k] + alpha[k]) * phi_by_word[token_words[i], k]
                    total += weights[k]
                stream, k = _drawn(stream, weights, total)
                z[i] = k
                n_dk[k] += 1.0
            if sweep >= burn_in:
                kept += 1
                for k in range(n_topics):
                    theta[d, k] += (n_dk[k] + alpha[k]) / (n_tokens + alpha_sum)
        for k in range(n_topics):
            theta[d, k] /= kept
    return theta


def infer_documents(indptr, words, counts, phi_by_word, alpha, n_sweeps, burn_in, seed):
    """:func:`_infer_documents`, with ``alpha`` one value or K and int counts of sweeps and
    seed (an int prior would compile a second specialisation)."""
    return _infer_documents(indptr, words, counts, phi_by_word,
                            topic_priors(alpha, phi_by_word.shape[1]), int(n_sweeps),
                            int(burn_in), int(seed))


@njit(cache=True, nogil=True)
def documents_log_likelihood(indptr, words, counts, theta, phi_by_word):
    """Sum over tokens of log sum_k theta_dk phi_kw."""
    total = 0.0
    for d in range(indptr.shape[0] - 1):
        for p in range(indptr[d], indptr[d + 1]):
            mixture = 0.0
            for k in range(theta.shape[1]):
                mixture += theta[d, k] * phi_by_word[words[p], k]
            total += counts[p] * np.log(mixture)
    return total


# -- the held-out chain of a fit with validation data -----------------------------------------
# A held-out document's tokens are split in two: the first half is sampled, block by block as the
# vocabulary rotates, against the current word-topic rows of the block without changing them; the
# second half is scored against the same rows. O(K) a token: the held-out documents are few.
@njit(cache=True, nogil=True)
def _mixture_weights(weights, d, w, n_dk, n_wk, inv, alpha, beta, seed_indptr, seed_topics,
                     seed_boosts):
    """weights[k] = (n_dk + alpha_k) (n_wk + beta + b_wk) / D_k (``inv`` = 1 / D_k, the seeded
    pairs as in :func:`~.lda._sample_block`); returns their sum."""
    for k in range(weights.shape[0]):
        weights[k] = (n_dk[d, k] + alpha[k]) * (n_wk[w, k] + beta) * inv[k]
    for j in range(seed_indptr[w], seed_indptr[w + 1]):
        k = seed_topics[j]
        weights[k] += (n_dk[d, k] + alpha[k]) * seed_boosts[j] * inv[k]
    return weights.sum()


@njit(cache=True, nogil=True)
def _sample_held_out(doc, word, z, n_dk, n_wk, inv, alpha, beta, seed_indptr, seed_topics,
                     seed_boosts, seed):
    """Resample the held-out tokens (``doc``, ``word`` local to the block, ``z``) once from
    p(z = k) ∝ (n_dk + alpha_k) (n_wk + beta + b_wk) / D_k; ``z`` and ``n_dk`` in place."""
    stream = random_stream(seed)
    n_topics = inv.shape[0]
    weights = np.empty(n_topics)
    for i in range(z.shape[0]):
        d, w, t = doc[i], word[i], z[i]
        n_dk[d, t] -= 1
        total = _mixture_weights(weights, d, w, n_dk, n_wk, inv, alpha, beta, seed_indptr,
                                 seed_topics, seed_boosts)
        stream, k = _drawn(stream, weights, total)
        z[i] = k
        n_dk[d, k] += 1


@njit(cache=True, nogil=True)
def _score_held_out(doc, word, n_dk, lengths, n_wk, inv, alpha, beta, seed_indptr, seed_topics,
                    seed_boosts):
    """Sum over the scored tokens of log sum_k theta_dk phi_kw, with theta_dk = (n_dk +
    alpha_k) / (n_d + sum alpha) from the sampled halves (``lengths`` their n_d) and phi_kw =
    (n_wk + beta + b_wk) / D_k from the block's rows."""
    weights = np.empty(inv.shape[0])
    alpha_sum = alpha.sum()
    total = 0.0
    for i in range(doc.shape[0]):
        d = doc[i]
        mixture = _mixture_weights(weights, d, word[i], n_dk, n_wk, inv, alpha, beta,
                                   seed_indptr, seed_topics, seed_boosts)
        total += np.log(mixture / (lengths[d] + alpha_sum))
    return total


def _fixed_types(n_wk, n_k, alpha, beta, n_vocab, seeds, seed_totals):
    """The arguments the held-out kernels share: (inv, alpha, beta, *seeds)."""
    n_topics = n_k.shape[0]
    inv = 1.0 / (n_k + n_vocab * float(beta) + topic_priors(seed_totals, n_topics))
    return (inv, topic_priors(alpha, n_topics), float(beta),
            *(seeds or no_seeds(n_wk.shape[0])))


def sample_held_out(doc, word, z, n_dk, n_wk, n_k, alpha, beta, n_vocab, seed, seeds=None,
                    seed_totals=0.0):
    """:func:`_sample_held_out` with arguments of fixed types (``seeds``, ``seed_totals`` as
    :func:`~.lda.sample_block` takes them)."""
    _sample_held_out(doc, word, z, n_dk, n_wk,
                     *_fixed_types(n_wk, n_k, alpha, beta, n_vocab, seeds, seed_totals),
                     int(seed))


def score_held_out(doc, word, n_dk, lengths, n_wk, n_k, alpha, beta, n_vocab, seeds=None,
                   seed_totals=0.0):
    """:func:`_score_held_out` with arguments of fixed types."""
    return _score_held_out(doc, word, n_dk, lengths, n_wk,
                           *_fixed_types(n_wk, n_k, alpha, beta, n_vocab, seeds, seed_totals))


# LDA's transform (and score)
declare_kernel_set("lda_inference", "lda transform", (_infer_documents,))
