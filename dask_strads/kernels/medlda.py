"""Numba kernel of the MedLDA program: collapsed Gibbs sampling of a (document shard, vocabulary
block) pair's tokens with each document's max-margin factor (Gibbs MedLDA with data
augmentation, Zhu, Chen, Perkins and Zhang, JMLR 2014).

Document d has labels y_dm = +-1 for M one-vs-all classifiers (eta_m, b_m) and augmented
variables lambda_dm. With S_dm = sum_k eta_mk n_dk + b_m N_d (its score times N_d, token i left
out) the conditional of token i is LDA's times

    exp( sum_m  gain_dm eta_mk - weight_dm (eta_mk^2 / 2 + eta_mk S_dm) )
    gain_dm = c y_dm (lambda_dm + c l) / (lambda_dm N_d),   weight_dm = c^2 / (lambda_dm N_d^2)

(l the margin, c the regularisation constant): the pseudo-likelihood
exp(-(lambda + c zeta)^2 / (2 lambda)), zeta = l - y (eta . zbar_d + b), expanded in the
token's topic. The factor is nonzero for every topic, so SparseLDA's buckets do not apply: a
token costs O(K M) (the factor over all topics and classes) where LDA's sampler costs
O(K_d + K_w).

The counts, nonzero-topic lists and topic totals are LDA's (:mod:`.lda`), kept in place the same
way, so that the same blocks travel between workers and the LDA estimator's tools read them.
"""
import numpy as np
from numba import njit

from .compilation import declare_kernel_set
from .lda import _list_append, _list_remove, add_counts, fill_nonzero, topic_totals
from .sampling import next_uniform, random_stream

#: A topic whose factor is below e^MIN_EXPONENT (1e-26) times the largest one's is not drawn
#: (nor is its exp computed, which for far smaller factors would be a slow subnormal number).
MIN_EXPONENT = -60.0


@njit(cache=True, nogil=True)
def _sample_block_supervised(doc, word, z, n_dk, doc_topics, doc_nnz, n_wk, word_topics,
                             word_nnz, n_k, alpha, beta, prior_total, eta, bias, gain, weight,
                             lengths, seed):
    """Resample every token ``i`` (``doc[i]``, ``word[i]``, ``z[i]``) once, in order; the counts,
    their lists and ``n_k`` are updated in place. ``eta`` (M, K) and ``bias`` (M,) are the
    classifiers, ``gain`` and ``weight`` (D, M) the documents' factors (see the module),
    ``lengths`` (D,) their tokens, ``prior_total`` V beta. Returns the sum over tokens of LDA's
    log leave-one-out predictive probability (the supervised factor left out), as
    :func:`.lda._sample_block` does."""
    stream = random_stream(seed)
    n_topics = n_k.shape[0]
    n_classes = eta.shape[0]
    exponent = np.empty(n_topics)
    base = np.empty(n_topics)  # per document: sum_m gain eta_mk - weight eta_mk^2 / 2
    cumulative = np.empty(n_topics)
    score = np.empty(n_classes)  # S_dm, token i left out while it is drawn
    alpha_sum = alpha.sum()
    log_predictive = 0.0
    current = -1
    for i in range(z.shape[0]):
        d = doc[i]
        w = word[i]
        t = z[i]
        if d != current:
            current = d
            for k in range(n_topics):
                base[k] = 0.0
            for m in range(n_classes):
                score[m] = bias[m] * lengths[d]
                for k in range(n_topics):
                    score[m] += eta[m, k] * n_dk[d, k]
                    base[k] += gain[d, m] * eta[m, k] - 0.5 * weight[d, m] * eta[m, k] ** 2
        n_dk[d, t] -= 1
        n_wk[w, t] -= 1
        n_k[t] -= 1
        if n_dk[d, t] == 0:
            _list_remove(doc_topics, doc_nnz, d, t)
        if n_wk[w, t] == 0:
            _list_remove(word_topics, word_nnz, w, t)
        for m in range(n_classes):
            score[m] -= eta[m, t]
        top = -np.inf
        for k in range(n_topics):
            e = base[k]
            for m in range(n_classes):
                e -= weight[d, m] * eta[m, k] * score[m]
            exponent[k] = e
            top = max(top, e)
        lda_total = 0.0
        total = 0.0
        for k in range(n_topics):
            p = (n_dk[d, k] + alpha[k]) * (n_wk[w, k] + beta) / (n_k[k] + prior_total)
            lda_total += p
            below = exponent[k] - top
            # a negligible share (see MIN_EXPONENT)
            if below > MIN_EXPONENT:
                total += p * np.exp(below)
            cumulative[k] = total
        log_predictive += np.log(lda_total / (lengths[d] - 1 + alpha_sum))
        stream, u = next_uniform(stream)
        u *= total
        new = n_topics - 1  # if rounding runs the walk off the end
        for k in range(n_topics):
            if u < cumulative[k]:
                new = k
                break
        n_dk[d, new] += 1
        n_wk[w, new] += 1
        n_k[new] += 1
        if n_dk[d, new] == 1:
            _list_append(doc_topics, doc_nnz, d, new)
        if n_wk[w, new] == 1:
            _list_append(word_topics, word_nnz, w, new)
        for m in range(n_classes):
            score[m] += eta[m, new]
        z[i] = new
    return log_predictive


def sample_block_supervised(doc, word, z, n_dk, doc_topics, doc_nnz, n_wk, word_topics,
                            word_nnz, n_k, alpha, beta, n_vocab, seed, eta, bias, gain, weight,
                            lengths):
    """:func:`_sample_block_supervised` with arguments of fixed types (one compiled
    specialisation): ``alpha`` (K,), float ``beta``, the vocabulary's size ``n_vocab``."""
    return _sample_block_supervised(
        doc, word, z, n_dk, doc_topics, doc_nnz, n_wk, word_topics, word_nnz, n_k,
        np.asarray(alpha, dtype=np.float64), float(beta), float(n_vocab) * float(beta),
        np.ascontiguousarray(eta, dtype=np.float64), np.ascontiguousarray(bias, dtype=np.float64),
        gain, weight, lengths, int(seed))


declare_kernel_set("medlda", "MedLDA",
                   (add_counts, topic_totals, fill_nonzero, _sample_block_supervised))
