"""dask_strads.LatentDirichletAllocation against planted topics and its own definitions."""
import dask.array as da
import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_param_validation

from dask_strads import LatentDirichletAllocation
from dask_strads.datasets import make_lda_corpus, match_topics
from dask_strads.estimators import lda as lda_estimator
from dask_strads.estimators.lda import (BLOCK_MEMORY_SHARE, IN_FLIGHT_SHARE, SMALL_SHARE,
                                       _blocks_within_memory, default_vocab_blocks)
from dask_strads.kernels.lda import row_bytes
from dask_strads.programs.lda import vocabulary_blocks

K = 5


@pytest.fixture(scope="module")
def corpus():
    return make_lda_corpus(n_docs=300, n_words=400, n_topics=K, doc_length=80, random_state=3)


@pytest.fixture
def client(client_factory):
    client = client_factory(2)
    with client.as_current():
        yield client


def fitted(X, client, **params):
    model = LatentDirichletAllocation(K, doc_topic_prior=0.1, topic_word_prior=0.01,
                                      max_iter=60, random_state=0, **params)
    model.client = client
    return model, model.fit(X).doc_topic_


@pytest.mark.parametrize("topic_totals_every", ["sub_round", "iteration"])
def test_recovers_planted_topics_and_counts_every_token(corpus, client, topic_totals_every):
    X, phi, _ = corpus
    model, theta = fitted(X, client, topic_totals_every=topic_totals_every)
    topics = model.components_ / model.components_.sum(axis=1, keepdims=True)
    assert match_topics(topics, phi)[0] >= 0.9
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    assert model.components_.shape == (K, X.shape[1])
    assert (model.components_ - model.beta_).sum() == pytest.approx(X.sum())
    assert model.n_iter_ == 60 and len(model.history_) == 60
    likelihoods = [r["log_likelihood"] for r in model.history_]
    assert likelihoods[-1] > likelihoods[0]


def test_transform_score_and_perplexity_agree_with_their_definitions(corpus, client):
    X, _, _ = corpus
    model, theta = fitted(X, client)
    new_theta = model.transform(X[:40])
    np.testing.assert_allclose(new_theta.sum(axis=1), 1.0)
    assert np.abs(new_theta - theta[:40]).mean() < 0.05  # same documents, topics fixed
    phi = model.components_ / model.components_.sum(axis=1, keepdims=True)
    dense = X[:40].toarray()
    expected = float(np.sum(dense * np.log(new_theta @ phi)))
    assert model.score(X[:40]) == pytest.approx(expected, rel=1e-2)  # transform is sampled
    assert model.perplexity(X[:40]) == pytest.approx(
        np.exp(-model.score(X[:40]) / dense.sum()), rel=1e-2)


def test_fit_transform_is_fit_then_transform(corpus, client):
    X, _, _ = corpus
    model, theta = fitted(X, client)
    again = LatentDirichletAllocation(K, doc_topic_prior=0.1, topic_word_prior=0.01, max_iter=60,
                                      random_state=0)
    again.client = client
    np.testing.assert_array_equal(again.fit_transform(X), model.transform(X))
    np.testing.assert_array_equal(again.doc_topic_, theta)


def test_dask_input_gives_the_in_memory_result(corpus, client):
    X, _, _ = corpus
    _, theta = fitted(X, client)
    model, theta_dask = fitted(da.from_array(X.toarray(), chunks=(100, 400)), client)
    np.testing.assert_array_equal(theta_dask, theta)


@pytest.mark.parametrize("bad, message", [
    (lambda X: -X, "Negative values"),
    (lambda X: X * 0.5, "non-integer"),
    (lambda X: np.where(X > 0, np.nan, 0.0), "NaN"),
    (lambda X: X[:0], "0 sample"),
])
def test_bad_counts_raise_and_leave_the_fit_intact(corpus, client, bad, message):
    X, _, _ = corpus
    model, _ = fitted(X, client)
    before = model.components_.copy()
    with pytest.raises(ValueError, match=message):
        model.fit(bad(X.toarray().astype(float)))
    np.testing.assert_array_equal(model.components_, before)


@pytest.mark.parametrize("params", [dict(n_components=0), dict(max_iter=1.5),
                                    dict(doc_topic_prior=-1.0), dict(staleness=-1),
                                    dict(topic_totals_every="epoch")])
def test_bad_parameters_raise(corpus, client, params):
    X, _, _ = corpus
    with pytest.raises(ValueError):
        LatentDirichletAllocation(**params).fit(X)


@pytest.mark.parametrize("params", [
    dict(n_components=True), dict(transform_iter=1), dict(topic_word_prior=0.0),
    dict(doc_topic_prior=np.inf), dict(topic_word_prior=np.nan), dict(n_vocab_blocks=0),
    dict(staleness=0.5), dict(progress=1), dict(callback="print"), dict(random_state="seed"),
], ids=str)
def test_invalid_params_raise_invalid_parameter_error(corpus, params):
    X, _, _ = corpus
    with pytest.raises(InvalidParameterError,
                       match=f"'{next(iter(params))}' parameter of LatentDirichletAllocation"):
        LatentDirichletAllocation(**params).fit(X)


def test_sklearn_check_param_validation():
    """scikit-learn's own check of ``_parameter_constraints`` (not part of ``check_estimator``)."""
    check_param_validation("LatentDirichletAllocation", LatentDirichletAllocation())


@pytest.mark.parametrize("n_topics, memory", [(1000, 50 * 2**20), (200, 4 * 2**20)])
def test_vocabulary_blocks_fit_their_share_of_a_workers_memory(n_topics, memory):
    """Blocks cut so that none takes more than BLOCK_MEMORY_SHARE of the memory, the table
    being several times that memory: every word in one block, in order."""
    counts = np.minimum(np.random.default_rng(0).zipf(1.4, size=30_000), 10**4).astype(float)
    counts[:5000] = 0  # a long run of words that never occur
    table = len(counts) * row_bytes(n_topics)
    assert table > 2 * memory
    block_of_word, local_index, sizes = _blocks_within_memory(counts, 2, n_topics, memory)
    assert sizes.max() * row_bytes(n_topics) <= BLOCK_MEMORY_SHARE * memory
    assert len(sizes) >= table / (BLOCK_MEMORY_SHARE * memory)
    assert sizes.sum() == len(counts) and np.all(np.diff(block_of_word) >= 0)
    # cut by tokens and rows alike, a block holds up to about twice the average rows
    assert len(sizes) <= 2.5 * table / (BLOCK_MEMORY_SHARE * memory) + 1


def test_vocabulary_blocks_within_memory_are_the_asked_ones():
    counts = np.arange(1, 1001, dtype=float)
    asked = vocabulary_blocks(counts, 4)
    kept = _blocks_within_memory(counts, 4, 100, 2**30)
    for a, b in zip(asked, kept):
        np.testing.assert_array_equal(a, b)


def test_default_vocabulary_blocks_keep_the_block_in_flight_within_a_quarter_share(
        corpus, monkeypatch):
    memory = 2**30
    share = SMALL_SHARE * memory  # a shard's share of the table up to which one block each
    assert default_vocab_blocks(4 * share, 4, memory) == 4
    assert default_vocab_blocks(4 * share + 4, 4, memory) == 16
    for shards in (1, 2, 3, 4):
        table = 10 * share
        blocks = default_vocab_blocks(table, shards, memory)
        assert table / blocks <= IN_FLIGHT_SHARE * table / shards < table / (blocks - 1)
    # the estimator takes it: with a threshold below this table, 4 blocks for the one shard
    X = corpus[0]
    monkeypatch.setattr(lda_estimator, "SMALL_SHARE", 1e-12)
    model = LatentDirichletAllocation(K, max_iter=1, random_state=0).fit(X)
    assert model.n_vocab_blocks_ == 4 and model.history_.stats.rounds == 4
