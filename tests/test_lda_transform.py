"""LDA's transform (deterministic, normalize as scikit-learn's) and early stopping on the held-out
perplexity of validation data."""
import numpy as np
import pytest
from scipy.special import digamma
from sklearn.decomposition import LatentDirichletAllocation as SklearnLDA
from sklearn.utils._param_validation import InvalidParameterError

from dask_strads import LatentDirichletAllocation
from dask_strads.datasets import make_lda_corpus

K, ALPHA = 4, 0.1


@pytest.fixture(scope="module")
def corpus():
    X, _, _ = make_lda_corpus(n_docs=500, n_words=200, n_topics=K, doc_length=60,
                              doc_topic_prior=ALPHA, topic_word_prior=0.05, random_state=2)
    return X[:400], X[400:]


@pytest.fixture(scope="module")
def model(corpus):
    return LatentDirichletAllocation(K, doc_topic_prior=ALPHA, max_iter=40,
                                     optimize_interval=0).fit(corpus[0])  # random_state None


def test_transform_is_deterministic_without_a_random_state(model, corpus):
    np.testing.assert_array_equal(model.transform(corpus[1]), model.transform(corpus[1]))
    assert model.score(corpus[1]) == model.score(corpus[1])
    assert model.completion_perplexity(corpus[1]) == model.completion_perplexity(corpus[1])


def test_unnormalised_transform_is_the_weights_of_the_normalised_one(model, corpus):
    X = corpus[1]
    weights = model.transform(X, normalize=False)
    lengths = np.asarray(X.sum(axis=1)).ravel()
    np.testing.assert_allclose(weights.sum(axis=1), lengths + model.alpha_.sum())
    np.testing.assert_allclose(weights / weights.sum(axis=1, keepdims=True), model.transform(X))


def test_transform_matches_scikit_learns_on_the_same_topics(corpus):
    """scikit-learn's variational transform with our fitted topics: its unnormalised rows are
    the Dirichlet parameters gamma_d (summing to n_d + K alpha, like ours), its normalised rows
    about our Gibbs estimate of theta. A seeded fit: about one fit in 25 of this corpus ends
    with two planted topics merged, whose documents' split between the two the two methods
    estimate differently."""
    X = corpus[1]
    model = LatentDirichletAllocation(K, doc_topic_prior=ALPHA, max_iter=40,
                                      optimize_interval=0, random_state=0).fit(corpus[0])
    peer = SklearnLDA(K, doc_topic_prior=ALPHA, max_iter=1, random_state=0).fit(corpus[0])
    peer.components_ = model.components_.copy()
    peer.exp_dirichlet_component_ = np.exp(
        digamma(peer.components_) - digamma(peer.components_.sum(axis=1, keepdims=True)))
    theirs = peer.transform(X, normalize=False)
    ours = model.transform(X, normalize=False)
    np.testing.assert_allclose(ours.sum(axis=1), theirs.sum(axis=1), rtol=1e-6)
    assert np.abs(model.transform(X) - peer.transform(X)).mean() < 0.03


def test_early_stopping_stops_when_held_out_perplexity_stops_improving(corpus):
    """A planted corpus of 4 well-separated topics mixes within a few dozen sweeps: after that,
    more iterations do not lower the held-out perplexity and the fit stops, long before
    max_iter. history_ records the held-out perplexity of every iteration, about the
    completion perplexity of the fitted model."""
    X, held_out = corpus
    model = LatentDirichletAllocation(K, doc_topic_prior=ALPHA, max_iter=500,
                                      validation_data=held_out, n_iter_no_change=5,
                                      random_state=0).fit(X)
    assert model.n_iter_ < 200
    perplexities = [r["held_out_perplexity"] for r in model.history_]
    assert len(perplexities) == len(model.history_) >= model.n_iter_
    best = int(np.argmin(perplexities))
    assert best <= len(perplexities) - 1 - 5  # no improvement in the last 5 evaluations
    assert perplexities[-1] < 0.7 * perplexities[0]
    assert perplexities[-1] == pytest.approx(model.completion_perplexity(held_out), rel=0.05)
    assert any(r.get("stopped_early") for r in model.history_)


def test_without_validation_data_the_fit_runs_max_iter(corpus):
    model = LatentDirichletAllocation(K, max_iter=7, n_iter_no_change=1, random_state=0)
    model.fit(corpus[0])
    assert model.n_iter_ == 7 and "held_out_perplexity" not in model.history_[0]


@pytest.mark.parametrize("bad, message", [
    (lambda X: X[:, :-1], "columns"),
    (lambda X: -X.toarray(), "validation_data: Negative"),
    (lambda X: X * 0.5, "validation_data: Input X contains non-integer"),
])
def test_bad_validation_data_raises_before_fitting(corpus, bad, message):
    X, held_out = corpus
    with pytest.raises(ValueError, match=message):
        LatentDirichletAllocation(K, validation_data=bad(held_out)).fit(X)


def test_validation_data_of_single_tokens_raises(corpus):
    X, held_out = corpus
    single = (held_out[:, :3] > 0).astype(np.int64)[:, :1]
    empty = np.zeros(X.shape, dtype=np.int64)[:3]
    empty[:, 0] = single[:3].toarray().ravel()
    with pytest.raises(ValueError, match="nothing to score"):
        LatentDirichletAllocation(K, validation_data=empty).fit(X)


@pytest.mark.parametrize("params", [{"n_iter_no_change": 0}, {"validation_data": "data"},
                                    {"optimize_interval": -1}, {"burn_in": 1.5},
                                    {"seed_topics": [1]}, {"seed_strength": 0.0}], ids=str)
def test_invalid_params_raise_invalid_parameter_error(corpus, params):
    with pytest.raises(InvalidParameterError, match=f"'{next(iter(params))}' parameter"):
        LatentDirichletAllocation(**params).fit(corpus[0])
