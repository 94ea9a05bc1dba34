"""Our LDA against the `lda` package (a reference collapsed Gibbs sampler) on a real corpus."""
import logging

import lda
import numpy as np
import pytest

from dask_strads import LatentDirichletAllocation
from dask_strads.datasets import load_reuters

N_TOPICS, ALPHA, BETA, ITERATIONS = 20, 0.1, 0.01, 60


def per_token_log_likelihood(X, theta, phi):
    """(1/N) sum over tokens of log sum_k theta_dk phi_kw."""
    X = X.tocoo()
    mixture = np.einsum("ik,ki->i", theta[X.row], phi[:, X.col])
    return float(np.sum(X.data * np.log(mixture)) / X.sum())


@pytest.fixture(scope="module")
def reuters_reference():
    X, _ = load_reuters()
    logging.getLogger("lda").setLevel(logging.WARNING)
    reference = lda.LDA(n_topics=N_TOPICS, n_iter=ITERATIONS, alpha=ALPHA, eta=BETA,
                        random_state=0).fit(X)
    return X, per_token_log_likelihood(X, reference.doc_topic_, reference.topic_word_)


@pytest.mark.parametrize("n_workers", [1, 2, 4])
def test_training_log_likelihood_within_one_percent_of_lda(client_factory, reuters_reference,
                                                           n_workers):
    X, reference = reuters_reference
    model = LatentDirichletAllocation(N_TOPICS, doc_topic_prior=ALPHA, topic_word_prior=BETA,
                                      max_iter=ITERATIONS, optimize_interval=0,
                                      random_state=0)  # lda keeps its priors fixed
    model.client = client_factory(n_workers)
    theta = model.fit(X).doc_topic_
    phi = model.components_ / model.components_.sum(axis=1, keepdims=True)
    ours = per_token_log_likelihood(X, theta, phi)
    assert abs(ours - reference) <= 0.01 * abs(reference)
    assert model.n_vocab_blocks_ == n_workers  # one shard and one vocabulary block per worker
