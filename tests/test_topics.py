"""LDA's topic tools: vocabulary and top words against the sorted topics, coherence against
gensim's CoherenceModel, document-completion perplexity against closed forms and a planted
model."""
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from gensim.corpora import Dictionary
from gensim.models.coherencemodel import CoherenceModel
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.utils._param_validation import InvalidParameterError

from dask_strads import LatentDirichletAllocation
from dask_strads.datasets import make_lda_corpus
from dask_strads.estimators.topics import split_documents
from dask_strads.io import read_bag_of_words

K = 4


@pytest.fixture(scope="module")
def corpus():
    """150 training documents, and 100 new ones of the same topics with their mixtures."""
    X, phi, theta = make_lda_corpus(n_docs=250, n_words=50, n_topics=K, doc_length=60,
                                    topic_word_prior=0.3, random_state=5)
    X = sp.csr_matrix(X)
    assert np.all(np.asarray(X[:150].sum(axis=0)) > 0)  # every word occurs: NPMI is finite
    return X[:150], X[150:], phi, theta[150:]


@pytest.fixture(scope="module")
def words(corpus):
    return np.array([f"word{j}" for j in range(corpus[0].shape[1])], dtype=object)


@pytest.fixture(scope="module")
def model(corpus, words):
    return LatentDirichletAllocation(K, doc_topic_prior=0.1, topic_word_prior=0.01, max_iter=40,
                                     random_state=0).fit(corpus[0], feature_names=words)


def test_top_words_are_each_topics_largest_weights_by_name(model, words):
    assert list(model.vocabulary_) == list(words)
    top = model.top_words(5)
    assert len(top) == K
    for topic, row in zip(top, model.components_):
        # largest first, ties in vocabulary order (as gensim's show_topic)
        assert topic == list(words[sorted(range(len(row)), key=lambda j: (-row[j], j))[:5]])
        assert sorted(row[[int(w[4:]) for w in topic]]) == sorted(row)[::-1][:5][::-1]
    renamed = model.top_words(3, feature_names=[w.upper() for w in words])
    assert renamed == [[w.upper() for w in topic[:3]] for topic in top]


def test_vocabulary_from_a_dataframe_a_vectorizer_and_a_uci_file(corpus, tmp_path):
    X = corpus[0][:, :12]
    X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
    columns = [f"c{j}" for j in range(12)]
    frame = pd.DataFrame(X.toarray(), columns=columns)
    lda = LatentDirichletAllocation(2, max_iter=5, random_state=0).fit(frame)
    assert list(lda.vocabulary_) == list(lda.feature_names_in_) == columns
    assert all(w in columns for topic in lda.top_words(4) for w in topic)
    assert LatentDirichletAllocation(2, max_iter=5).fit(X).vocabulary_ is None
    assert LatentDirichletAllocation(2, max_iter=5).fit(X).top_words(2)[0][0] in range(12)

    documents = ["apple banana apple cherry", "dog cat dog mouse", "banana cherry apple",
                 "cat mouse dog cat"] * 5
    pipeline = make_pipeline(CountVectorizer(),
                             LatentDirichletAllocation(2, max_iter=20, random_state=0))
    pipeline.fit(documents)
    vocabulary = pipeline[0].get_feature_names_out()
    topics = [set(t) for t in pipeline[-1].top_words(3, feature_names=vocabulary)]
    assert sorted(map(sorted, topics)) == [["apple", "banana", "cherry"], ["cat", "dog", "mouse"]]

    rows, cols = X.nonzero()
    lines = [f"{X.shape[0]}", f"{X.shape[1]}", f"{len(rows)}"] + [
        f"{r + 1} {c + 1} {X[r, c]}" for r, c in zip(rows, cols)]
    (tmp_path / "docword.tiny.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "vocab.tiny.txt").write_text("\n".join(columns) + "\n")
    counts, vocabulary = read_bag_of_words(str(tmp_path / "docword.tiny.txt"))
    lda = LatentDirichletAllocation(2, max_iter=5, random_state=0).fit(
        counts, feature_names=vocabulary)
    assert list(lda.vocabulary_) == columns


def gensim_coherence(top, X, words, measure):
    """gensim's per-topic coherence of the top words on X's documents, each one window."""
    texts = [[words[j] for j, c in zip(row.indices, row.data) for _ in range(c)] for row in X]
    dictionary = Dictionary([list(words)])
    corpus = {"corpus": [dictionary.doc2bow(t) for t in texts]} if measure == "u_mass" else {
        "texts": texts, "window_size": max(map(len, texts))}
    return CoherenceModel(topics=top, dictionary=dictionary, coherence=measure,
                          **corpus).get_coherence_per_topic()


@pytest.mark.parametrize("measure", ["u_mass", "c_npmi"])
def test_coherence_equals_gensims(model, corpus, words, measure):
    X = corpus[0]
    top = model.top_words(8)
    expected = gensim_coherence(top, X, words, measure)
    np.testing.assert_allclose(model.coherence(X, measure, n_words=8), expected, atol=1e-9)


def test_coherence_of_dask_input_is_counted_on_the_cluster(model, corpus, words, client_factory):
    X = corpus[0]
    client = client_factory(2)
    chunks = da.from_array(X, chunks=(40, 50), asarray=False)
    model.client = client
    try:
        for measure in ("u_mass", "c_npmi"):
            np.testing.assert_allclose(model.coherence(chunks, measure, n_words=6),
                                       gensim_coherence(model.top_words(6), X, words, measure),
                                       atol=1e-9)
        perplexity = model.completion_perplexity(chunks)
    finally:
        model.client = None
    assert perplexity == pytest.approx(model.completion_perplexity(X), rel=0.05)


def test_bad_arguments_are_named_before_any_work(model, corpus, words):
    X = corpus[0]
    with pytest.raises(NotFittedError):
        LatentDirichletAllocation().coherence(X)
    with pytest.raises(NotFittedError):
        LatentDirichletAllocation().top_words(3)
    with pytest.raises(InvalidParameterError, match="measure"):
        model.coherence(X, measure="c_v")
    with pytest.raises(InvalidParameterError, match="n_words"):
        model.coherence(X, n_words=1)
    with pytest.raises(ValueError, match="vocabulary has 50"):
        model.coherence(X, n_words=51)
    with pytest.raises(ValueError, match="50 features"):
        model.coherence(X[:, :49])
    with pytest.raises(ValueError, match="50 features"):
        model.completion_perplexity(X[:, :49])
    with pytest.raises(ValueError, match="2 names"):
        model.top_words(3, feature_names=["a", "b"])
    components = model.components_.copy()
    with pytest.raises(ValueError, match="feature_names has 3 names for the 50 words"):
        model.fit(X, feature_names=["a", "b", "c"])
    frame = pd.DataFrame(X[:, :3].toarray(), columns=["a", "b", "c"])
    with pytest.raises(ValueError, match="differ from the column names"):
        LatentDirichletAllocation().fit(frame, feature_names=["a", "b", "d"])
    np.testing.assert_array_equal(model.components_, components)
    assert list(model.vocabulary_) == list(words)


def test_split_documents_halves_each_documents_tokens():
    X = sp.csr_matrix(np.array([[3, 0, 2, 1], [0, 0, 0, 0], [0, 1, 0, 0], [5, 5, 0, 1]]))
    first, second = split_documents(X, np.random.default_rng(0))
    np.testing.assert_array_equal((first + second).toarray(), X.toarray())
    np.testing.assert_array_equal(np.asarray(first.sum(axis=1)).ravel(), [3, 0, 0, 5])
    draws = [split_documents(X, np.random.default_rng(s))[0][3, 0] for s in range(200)]
    assert np.mean(draws) == pytest.approx(5 * 5 / 11, abs=0.25)  # hypergeometric mean


def test_completion_perplexity_of_one_topic_is_its_closed_form():
    """With one topic theta is 1: the second half of a document of one repeated word scores
    log phi_w for each of its tokens."""
    counts = np.array([4, 6, 2, 8])
    X = sp.csr_matrix(np.diag(counts))
    model = LatentDirichletAllocation(1, max_iter=2, random_state=0).fit(X)
    phi = model.components_[0] / model.components_[0].sum()
    held_out = counts - counts // 2
    expected = np.exp(-np.sum(held_out * np.log(phi)) / held_out.sum())
    assert model.completion_perplexity(X) == pytest.approx(expected, rel=1e-9)


def test_completion_perplexity_of_planted_documents_approaches_the_true_models(model, corpus):
    """New documents of the planted topics: the fitted model completes them about as well as
    the true topics and mixtures score them, and far better than one topic (word frequencies)."""
    _, new, true_phi, true_theta = corpus
    dense = new.toarray()
    true = np.exp(-np.sum(dense * np.log(true_theta @ true_phi)) / dense.sum())
    completion = model.completion_perplexity(new)
    assert true * 0.95 < completion < true * 1.3
    unigram = LatentDirichletAllocation(1, max_iter=2).fit(corpus[0]).completion_perplexity(new)
    assert completion < 0.8 * unigram
    assert completion > model.perplexity(new)  # no token scored by a mixture fitted to it


def test_a_one_token_document_is_completed_from_the_prior_mixture(model):
    """A document of one token has nothing to infer from: theta is the prior's mean
    alpha / sum(alpha), and its token scores log of the topics' probabilities of its word
    weighted by that mean."""
    X = sp.csr_matrix(([1, 1], ([0, 1], [3, 7])), shape=(2, model.n_features_in_))
    phi = model.components_ / model.components_.sum(axis=1, keepdims=True)
    mean = model.alpha_ / model.alpha_.sum()
    expected = np.exp(-(np.log(mean @ phi[:, 3]) + np.log(mean @ phi[:, 7])) / 2)
    assert model.completion_perplexity(X) == pytest.approx(expected, rel=1e-9)
