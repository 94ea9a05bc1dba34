"""Seeded topics: a prior boost on chosen (word, topic) pairs draws a planted topic to the topic
its seed words name."""
import numpy as np
import pytest

from dask_strads import LatentDirichletAllocation
from dask_strads.datasets import make_lda_corpus, match_topics
from dask_strads.kernels import lda as kernels
from dask_strads.kernels.lda_inference import score_held_out

K = 5
#: planted topic j is seeded as fitted topic SEEDED_AS[j]
SEEDED_AS = [3, 0, 4, 1, 2]


@pytest.fixture(scope="module")
def planted():
    X, phi, _ = make_lda_corpus(n_docs=600, n_words=300, n_topics=K, doc_length=60,
                                topic_word_prior=0.05, random_state=7)
    seeds = {SEEDED_AS[j]: np.argsort(phi[j])[::-1][:3].tolist() for j in range(K)}
    return X, phi, seeds


def fit(X, **params):
    params = {"max_iter": 40, **params}
    return LatentDirichletAllocation(K, doc_topic_prior=0.1, topic_word_prior=0.01,
                                     random_state=0, **params).fit(X)


def test_seeded_topics_capture_their_seed_words(planted):
    X, phi, seeds = planted
    model = fit(X, seed_topics=seeds, seed_strength=50.0)
    score, matching = match_topics(model.components_, phi)
    assert score > 0.95
    assert matching.tolist() == SEEDED_AS  # each planted topic came out where its seeds said
    top = model.top_words(10)
    for topic, words in seeds.items():
        assert set(words) <= set(top[topic])


def test_components_hold_the_boost_on_the_seeded_pairs_only(planted):
    X, _, seeds = planted
    model = fit(X, seed_topics=seeds, seed_strength=5.0, max_iter=3)
    counts = model.components_ - model.beta_
    boosted = np.zeros_like(counts, dtype=bool)
    for topic, words in seeds.items():
        boosted[topic, words] = True
    assert counts.sum() == pytest.approx(X.sum() + 5.0 * boosted.sum())
    fractional = counts - np.floor(counts + 1e-9)
    np.testing.assert_allclose(fractional[~boosted], 0.0, atol=1e-9)


def test_seeded_sampler_draws_from_the_boosted_conditional():
    """One token of a one-word corpus, many draws: the frequency of each topic is
    (n_dk + alpha_k)(n_wk + beta + b_wk) / D_k normalised (counts without the token)."""
    n_topics, alpha, beta, n_vocab = 3, 0.5, 0.1, 4
    seeds = (np.array([0, 1, 1, 1, 1]), np.array([1]), np.array([2.0]))  # word 0, topic 1
    totals = np.array([0.0, 2.0, 0.0])
    doc, word = np.zeros(2, dtype=np.int64), np.array([0, 2], dtype=np.int64)
    draws = np.zeros(n_topics)
    for s in range(4000):
        z = np.array([0, 2], dtype=np.int32)
        (n_dk, dt, dn), (n_wk, wt, wn), n_k = kernels.initial_counts(doc, word, z, 1, n_vocab,
                                                                    n_topics)
        # only the first token moves: sample it alone, the second stays in topic 2
        kernels.sample_block(doc[:1], word[:1], z[:1], n_dk, dt, dn, n_wk, wt, wn, n_k, alpha,
                             beta, n_vocab, s, seeds, totals)
        draws[z[0]] += 1
    rest_dk = np.array([0, 0, 1])
    rest_wk = np.zeros(3)  # word 0's only token is the one drawn
    rest_k = np.array([0, 0, 1])
    expected = ((rest_dk + alpha) * (rest_wk + beta + np.array([0, 2.0, 0]))
                / (rest_k + n_vocab * beta + totals))
    expected /= expected.sum()
    np.testing.assert_allclose(draws / draws.sum(), expected, atol=0.03)


def test_held_out_score_includes_the_boost():
    n_dk = np.array([[1, 0]], dtype=np.int32)
    n_wk = np.array([[0, 0]], dtype=np.int32)
    n_k = np.array([1, 0])
    seeds = (np.array([0, 1]), np.array([1]), np.array([3.0]))
    totals = np.array([0.0, 3.0])
    ours = score_held_out(np.array([0]), np.array([0]), n_dk, np.array([1]), n_wk, n_k,
                          np.array([0.5, 0.5]), 0.1, 10, seeds, totals)
    theta = (n_dk[0] + 0.5) / 2.0
    phi = (n_wk[0] + 0.1 + np.array([0, 3.0])) / (n_k + 1.0 + totals)
    assert ours == pytest.approx(np.log(theta @ phi))


@pytest.mark.parametrize("seeds, message", [({5: [0]}, "topic 5"), ({0: [300]}, "column"),
                                            ({0: [-1]}, "column"), ({0: ["w"]}, "column")])
def test_bad_seeds_raise(planted, seeds, message):
    with pytest.raises(ValueError, match=message):
        LatentDirichletAllocation(K, seed_topics=seeds).fit(planted[0])


def test_weak_seeds_leave_topics_where_the_sampler_puts_them(planted):
    """A boost of 5 pseudo-counts against seed words of 600-1500 tokens does not decide the
    topics (the measurement behind the default of 50)."""
    X, phi, seeds = planted
    model = fit(X, seed_topics=seeds, seed_strength=5.0)
    assert match_topics(model.components_, phi)[1].tolist() != SEEDED_AS
