"""Topic proportions of new documents with the topics held fixed (LDA's ``transform``).

Gibbs sampling of each document's tokens from p(z = k) ∝ (n_dk + alpha) phi_kw, with phi fixed:
O(K) a token, which is fine for inference (a few sweeps per document, no shared counts). The
document-topic distribution is averaged over the sweeps after burn-in.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _infer_documents(indptr, words, counts, phi_by_word, alpha, n_sweeps, burn_in, seed):
    """theta (D x K) for documents in CSR form (``indptr``, ``words``, ``counts``).

    ``phi_by_word`` is (V x K): column-normalised topic-word probabilities, one row per word.
    """
    np.random.seed(seed)
    n_docs = indptr.shape[0] - 1
    n_topics = phi_by_word.shape[1]
    theta = np.zeros((n_docs, n_topics))
    weights = np.empty(n_topics)
    for d in range(n_docs):
        n_tokens = 0
        for p in range(indptr[d], indptr[d + 1]):
            n_tokens += counts[p]
        if n_tokens == 0:
            theta[d, :] = 1.0 / n_topics
            continue
        token_words = np.empty(n_tokens, dtype=np.int64)
        i = 0
        for p in range(indptr[d], indptr[d + 1]):
            for _ in range(counts[p]):
                token_words[i] = words[p]
                i += 1
        z = np.random.randint(0, n_topics, n_tokens)
        n_dk = np.zeros(n_topics)
        for i in range(n_tokens):
            n_dk[z[i]] += 1.0
        kept = 0
        for sweep in range(n_sweeps):
            for i in range(n_tokens):
                n_dk[z[i]] -= 1.0
                total = 0.0
                for k in range(n_topics):
                    weights[k] = (n_dk[k] + alpha) * phi_by_word[token_words[i], k]
                    total += weights[k]
                u = np.random.random() * total
                k = 0
                while k < n_topics - 1 and u >= weights[k]:
                    u -= weights[k]
                    k += 1
                z[i] = k
                n_dk[k] += 1.0
            if sweep >= burn_in:
                kept += 1
                for k in range(n_topics):
                    theta[d, k] += (n_dk[k] + alpha) / (n_tokens + n_topics * alpha)
        for k in range(n_topics):
            theta[d, k] /= kept
    return theta


def infer_documents(indptr, words, counts, phi_by_word, alpha, n_sweeps, burn_in, seed):
    """:func:`_infer_documents`, with a float prior and int counts of sweeps and seed (an int
    prior would compile a second specialisation)."""
    return _infer_documents(indptr, words, counts, phi_by_word, float(alpha), int(n_sweeps),
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
