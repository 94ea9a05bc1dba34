"""Learned LDA priors: Minka's fixed point from count histograms against a direct maximisation
of the Dirichlet-multinomial likelihood, and the estimator's learned alpha against a planted
asymmetric one."""
import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar
from scipy.special import gammaln

from dask_strads import LatentDirichletAllocation
from dask_strads.datasets import make_lda_corpus, match_topics
from dask_strads.programs.lda_priors import (
    CountHistogram,
    optimize_alpha,
    optimize_beta,
    prior_counts,
    updated_priors,
)

PLANTED_ALPHA = np.array([0.02, 0.05, 0.1, 0.2, 0.4, 0.8])
CORPUS_ALPHA = PLANTED_ALPHA[1:]  # a topic of alpha 0.02 is too rare to find in a small corpus


def dirichlet_multinomial_counts(alpha, n_rows, length, rng):
    theta = rng.dirichlet(alpha, size=n_rows)
    return np.array([rng.multinomial(n, p) for n, p in zip(length, theta)], dtype=np.int32)


def log_evidence(counts, alpha):
    """sum over rows of log p(counts_row | Dirichlet(alpha)), up to the multinomial terms."""
    total = alpha.sum()
    return float(np.sum(gammaln(total) - gammaln(counts.sum(axis=1) + total))
                 + np.sum(gammaln(counts + alpha) - gammaln(alpha)))


def test_alpha_fixed_point_is_the_dirichlet_multinomial_maximum_likelihood():
    rng = np.random.default_rng(0)
    counts = dirichlet_multinomial_counts(PLANTED_ALPHA, 3000, rng.poisson(50, 3000) + 1, rng)
    alpha = optimize_alpha(np.full(6, 0.5), CountHistogram.of_columns(counts),
                           CountHistogram.of_values(counts.sum(axis=1)), steps=2000)
    direct = np.exp(minimize(lambda a: -log_evidence(counts, np.exp(a)), np.zeros(6),
                             method="L-BFGS-B").x)
    np.testing.assert_allclose(alpha, direct, rtol=2e-3)
    np.testing.assert_allclose(alpha, PLANTED_ALPHA, rtol=0.2)


def test_beta_fixed_point_is_the_symmetric_dirichlet_multinomial_maximum_likelihood():
    rng = np.random.default_rng(1)
    n_words, beta_planted = 300, 0.03
    counts = dirichlet_multinomial_counts(np.full(n_words, beta_planted), 40,
                                          np.full(40, 5000), rng)  # topics x words
    beta = optimize_beta(1.0, CountHistogram.of_values(counts.ravel()), counts.sum(axis=1),
                         n_words, steps=2000)
    direct = minimize_scalar(lambda b: -log_evidence(counts, np.full(n_words, np.exp(b))),
                             bounds=(-10, 3), method="bounded").x
    assert beta == pytest.approx(np.exp(direct), rel=2e-3)
    assert beta == pytest.approx(beta_planted, rel=0.15)


def test_histograms_of_shards_add_up_to_the_whole_table():
    """Shards' histograms merged give the whole corpus's update (what the pull computes)."""
    rng = np.random.default_rng(2)
    n_dk = dirichlet_multinomial_counts(PLANTED_ALPHA, 400, rng.poisson(30, 400) + 1, rng)
    n_wk = rng.poisson(0.5, (50, 6)).astype(np.int32)
    whole = updated_priors(np.full(6, 0.1), 0.01, [prior_counts(n_dk, n_wk)])
    parts = updated_priors(np.full(6, 0.1), 0.01, [prior_counts(n_dk[:150], n_wk[:20]),
                                                   prior_counts(n_dk[150:], n_wk[20:])])
    np.testing.assert_allclose(parts[0], whole[0], rtol=1e-12)
    assert parts[1] == pytest.approx(whole[1], rel=1e-12)


@pytest.fixture(scope="module")
def planted():
    X, phi, _ = make_lda_corpus(n_docs=2000, n_words=300, n_topics=5, doc_length=80,
                                doc_topic_prior=CORPUS_ALPHA, topic_word_prior=0.02,
                                random_state=4)
    return X, phi


def fit(X, random_state=0, **params):
    return LatentDirichletAllocation(5, doc_topic_prior=0.1, topic_word_prior=0.1, max_iter=100,
                                     random_state=random_state, **params).fit(X)


def test_learned_alpha_recovers_the_planted_asymmetric_alpha(planted):
    """About half the fits of this corpus end with two planted topics merged, in a mode of
    lower likelihood: the fit kept is the likeliest of five restarts, as a user would pick."""
    X, phi = planted
    restarts = [fit(X, optimize_interval=5, random_state=seed) for seed in range(5)]
    model = max(restarts, key=lambda restart: restart.score(X))
    score, matching = match_topics(model.components_, phi)
    assert score > 0.98
    learned = model.alpha_[matching]
    assert np.corrcoef(np.log(learned), np.log(CORPUS_ALPHA))[0, 1] > 0.99
    np.testing.assert_allclose(learned, CORPUS_ALPHA, rtol=0.2)  # started at 0.1
    assert model.beta_ == pytest.approx(0.02, rel=0.2)  # started at 0.1


def test_learned_priors_fit_the_planted_corpus_better_than_fixed_ones(planted):
    X, _ = planted
    X, held_out = X[:1600], X[1600:]
    learned, fixed = fit(X, optimize_interval=5), fit(X, optimize_interval=0)
    np.testing.assert_array_equal(fixed.alpha_, 0.1)
    assert fixed.beta_ == 0.1
    assert learned.score(X) > fixed.score(X)
    assert learned.completion_perplexity(held_out) < fixed.completion_perplexity(held_out)


def test_priors_stay_fixed_during_burn_in(planted):
    X, _ = planted
    model = LatentDirichletAllocation(5, doc_topic_prior=0.1, max_iter=8, optimize_interval=2,
                                      burn_in=10, random_state=0).fit(X)
    np.testing.assert_array_equal(model.alpha_, 0.1)
