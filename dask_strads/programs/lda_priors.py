"""Learning LDA's priors from the sampler's counts: Minka's fixed-point iteration for a Dirichlet
from multinomial counts (Minka 2000, "Estimating a Dirichlet distribution"), computed as Mallet's
``ParallelTopicModel`` and tomotopy do, from histograms of the counts.

- The document-topic prior alpha (asymmetric, one value per topic) from the document-topic counts
  n_dk: alpha_k <- alpha_k sum_d [psi(n_dk + alpha_k) - psi(alpha_k)]
  / sum_d [psi(n_d + alpha_0) - psi(alpha_0)], alpha_0 = sum_k alpha_k.
- The topic-word prior beta (symmetric) from the word-topic counts n_wk of V words:
  beta <- beta sum_{w,k} [psi(n_wk + beta) - psi(beta)] / (V sum_k [psi(n_k + V beta) - psi(V beta)]).

Only positive counts contribute to the numerators (psi(0 + a) - psi(a) = 0), so a shard sends the
(topic, count, multiplicity) triples of its nonzero n_dk and a vocabulary block the (count,
multiplicity) pairs of its nonzero n_wk: O(nonzeros), and the fixed point then runs on them.
"""
from dataclasses import dataclass

import numpy as np
from scipy.special import digamma

from ..sizes import register_dataclasses

#: Fixed-point steps per update (tomotopy's; Mallet's default is 200 with a tolerance, but the
#: counts move between updates anyway).
FIXED_POINT_STEPS = 10
#: Smallest prior a step may give (tomotopy's floor): a topic no document uses would otherwise
#: be driven to 0, where psi diverges.
SMALLEST_PRIOR = 1e-5


@dataclass(frozen=True)
class CountHistogram:
    """Multiplicities of the positive counts of a table: ``multiplicity[i]`` entries of row
    ``rows[i]`` equal ``values[i]`` (rows: the topic of n_dk; unused (zeros) for n_wk)."""

    rows: np.ndarray
    values: np.ndarray
    multiplicity: np.ndarray

    @classmethod
    def of_columns(cls, counts):
        """Of a (rows x K) table, by column: a shard's n_dk, by topic."""
        row, column = np.nonzero(counts)
        n_max = int(counts.max(initial=0)) + 1
        keys, multiplicity = np.unique(column.astype(np.int64) * n_max + counts[row, column],
                                       return_counts=True)
        return cls(keys // n_max, keys % n_max, multiplicity)

    @classmethod
    def of_values(cls, values):
        """Of a vector of non-negative counts (all in one row)."""
        values, multiplicity = np.unique(values[values > 0], return_counts=True)
        return cls(np.zeros(len(values), dtype=np.int64), values, multiplicity)

    @classmethod
    def merged(cls, histograms):
        """One histogram of the tables of ``histograms``, its entries in (row, value) order
        whatever theirs: merging in any grouping gives the same histogram."""
        rows, values, multiplicity = (np.concatenate([getattr(h, f) for h in histograms])
                                      for f in ("rows", "values", "multiplicity"))
        n_max = int(values.max(initial=0)) + 1
        keys, where = np.unique(rows.astype(np.int64) * n_max + values, return_inverse=True)
        return cls(keys // n_max, keys % n_max,
                   np.bincount(where, weights=multiplicity, minlength=len(keys)).astype(np.int64))


@dataclass(frozen=True)
class PriorCounts:
    """What a push that takes part in a prior update sends: its shard's document-topic and
    document-length histograms, the word-topic histogram of the block it holds, that block's
    topic totals and its number of words."""

    doc_topic: CountHistogram
    doc_length: CountHistogram
    word_topic: CountHistogram
    block_topic_totals: np.ndarray
    block_words: int


    @classmethod
    def merged(cls, counts):
        """The counts of all the shards and blocks of ``counts``, as one."""
        return cls(*(CountHistogram.merged([getattr(c, f) for c in counts])
                     for f in ("doc_topic", "doc_length", "word_topic")),
                   np.sum([c.block_topic_totals for c in counts], axis=0),
                   sum(c.block_words for c in counts))


def prior_counts(n_dk, n_wk):
    """:class:`PriorCounts` of a shard's n_dk and the block n_wk it holds."""
    return PriorCounts(CountHistogram.of_columns(n_dk), CountHistogram.of_values(n_dk.sum(axis=1)),
                       CountHistogram.of_values(n_wk.ravel()), n_wk.sum(axis=0, dtype=np.int64),
                       n_wk.shape[0])


def _digamma_sum(histogram, prior):
    """sum over the histogram's entries of psi(value + prior) - psi(prior), per row of
    ``prior`` (indexed by ``histogram.rows``)."""
    a = prior[histogram.rows]
    terms = histogram.multiplicity * (digamma(histogram.values + a) - digamma(a))
    return np.bincount(histogram.rows, weights=terms, minlength=len(prior))


def optimize_alpha(alpha, doc_topic, doc_length, steps=FIXED_POINT_STEPS):
    """Minka's fixed point for the asymmetric document-topic prior (K,) from the histograms of
    every shard's n_dk and document lengths."""
    alpha = np.asarray(alpha, dtype=np.float64).copy()
    for _ in range(steps):
        total = np.array([alpha.sum()])
        denominator = _digamma_sum(doc_length, total)[0]
        if denominator <= 0:
            break
        alpha = np.maximum(alpha * _digamma_sum(doc_topic, alpha) / denominator, SMALLEST_PRIOR)
    return alpha


def optimize_beta(beta, word_topic, topic_totals, n_words, steps=FIXED_POINT_STEPS):
    """Minka's fixed point for the symmetric topic-word prior from the histogram of the n_wk of
    ``n_words`` words and their topic totals (K,) over those words."""
    topic_totals = CountHistogram.of_values(np.asarray(topic_totals))
    for _ in range(steps):
        numerator = _digamma_sum(word_topic, np.array([beta]))[0]
        denominator = n_words * _digamma_sum(topic_totals, np.array([n_words * beta]))[0]
        if denominator <= 0:
            break
        beta = max(beta * numerator / denominator, SMALLEST_PRIOR)
    return float(beta)


def updated_priors(alpha, beta, counts):
    """``(alpha, beta)`` after one update from the :class:`PriorCounts` of every shard."""
    total = PriorCounts.merged(counts)
    alpha = optimize_alpha(alpha, total.doc_topic, total.doc_length)
    beta = optimize_beta(beta, total.word_topic, total.block_topic_totals, total.block_words)
    return alpha, beta


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
