"""dask_strads.MedLDA (Gibbs max-margin supervised topics) against planted labels, LDA topics
with a logistic regression, the sequential loop, and bad input."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from dask_strads import Engine, LatentDirichletAllocation, MedLDA, run_sequential
from dask_strads.datasets import make_lda_corpus
from dask_strads.programs.lda import make_shard, vocabulary_blocks
from dask_strads.programs.medlda import MedLDAProgram, labelled_shard

PRIORS = {"doc_topic_prior": 0.1, "topic_word_prior": 0.01}


def planted(seed, n_topics=10, n_docs=1200):
    """Documents of ``n_topics`` planted topics, labelled by which of topics 0 and 1 weighs
    more in them: (X, y)."""
    X, _, theta = make_lda_corpus(n_docs=n_docs, n_words=500, n_topics=n_topics, doc_length=60,
                                  random_state=seed)
    return X, (theta[:, 0] > theta[:, 1]).astype(int)


@pytest.mark.parametrize("seed", [0, 1])
def test_predicts_held_out_labels_at_least_as_well_as_lda_topics_and_logistic_regression(seed):
    """Five topics for ten planted ones: the supervised topics keep the two that decide the
    label apart, where unsupervised ones need not. Accuracies averaged over three fits each
    (one fit's varies by about 0.05 with its random_state)."""
    X, y = planted(seed)
    train, test = slice(0, 800), slice(800, None)
    ours, theirs = [], []
    for random_state in range(3):
        model = MedLDA(5, C=4.0, max_iter=50, random_state=random_state,
                       **PRIORS).fit(X[train], y[train])
        lda = LatentDirichletAllocation(5, max_iter=50, optimize_interval=0,
                                        random_state=random_state, **PRIORS).fit(X[train])
        peer = LogisticRegression(C=10).fit(lda.transform(X[train]), y[train])
        ours.append(model.score(X[test], y[test]))
        theirs.append(peer.score(lda.transform(X[test]), y[test]))
    chance = max(np.mean(y[test]), 1 - np.mean(y[test]))  # 0.54 and 0.51
    assert np.mean(ours) >= chance + 0.15
    assert np.mean(ours) >= np.mean(theirs)
    assert model.coef_.shape == (1, 5) and model.intercept_.shape == (1,)
    np.testing.assert_array_equal(model.classes_, [0, 1])
    assert model.components_.shape == (5, X.shape[1])
    assert len(model.history_) == 50 and "training_error" in model.history_[-1]


def test_multiclass_labels_make_one_classifier_per_class():
    X, _, theta = make_lda_corpus(n_docs=600, n_words=300, n_topics=3, doc_length=60,
                                  random_state=2)
    y = np.array(["a", "b", "c"])[theta.argmax(axis=1)]
    model = MedLDA(3, C=4.0, max_iter=30, random_state=0, **PRIORS).fit(X[:400], y[:400])
    scores = model.decision_function(X[400:])
    assert scores.shape == (200, 3) and model.coef_.shape == (3, 3)
    np.testing.assert_array_equal(model.predict(X[400:]), model.classes_[scores.argmax(axis=1)])
    assert model.score(X[400:], y[400:]) > 0.8
    proportions = model.topic_proportions(X[400:])
    np.testing.assert_allclose(proportions.sum(axis=1), 1.0)


def setup(n_shards=2, n_blocks=3, n_classes=2, seed=0):
    X, y = planted(seed, n_topics=4, n_docs=300)
    if n_classes > 2:
        y = y + (np.arange(len(y)) % 2) * 2  # four classes
    labels = (np.where(y[:, None] == np.unique(y), 1.0, -1.0) if n_classes > 2
              else np.where(y == 1, 1.0, -1.0)[:, None])
    block_of_word, local_index, sizes = vocabulary_blocks(np.asarray(X.sum(axis=0)).ravel(),
                                                          n_blocks)
    edges = np.linspace(0, X.shape[0], n_shards + 1).astype(int)
    shards = [labelled_shard(make_shard(X[lo:hi], block_of_word, local_index, n_blocks),
                             labels[lo:hi]) for lo, hi in zip(edges[:-1], edges[1:])]
    program = MedLDAProgram(4, alpha=0.1, beta=0.01, n_vocab=X.shape[1], block_sizes=sizes,
                            n_shards=n_shards, n_classifiers=labels.shape[1], c=2.0,
                            seed=seed)
    return shards, program


def test_the_sequential_loop_counts_every_token_and_learns_a_classifier_each_iteration():
    shards, program = setup()
    params, records, carried = run_sequential(program, shards, 6 * program.n_carried)
    n_dk = np.vstack(params)
    assert n_dk.sum() == sum(len(s.doc) for s in shards) == np.concatenate(carried).sum()
    updates = [r for r in records if "coef" in r]
    assert len(updates) == 6 and all(np.shape(r["coef"]) == (1, 5) for r in updates)
    assert updates[-1]["training_error"] < updates[0]["training_error"]


@pytest.mark.parametrize("n_classes, staleness", [(2, 0), (4, 0), (2, 1)])
def test_engine_on_worker_processes_matches_the_sequential_loop(client_factory, n_classes,
                                                                staleness):
    client = client_factory(2)
    shards, program = setup(n_classes=n_classes)
    rounds = 4 * program.n_carried
    result = Engine(program, client=client, staleness=staleness, max_rounds=rounds).run(shards)
    params, records, carried = run_sequential(program, shards, rounds, staleness=staleness)
    np.testing.assert_array_equal(np.vstack(client.gather(result.params)), np.vstack(params))
    np.testing.assert_array_equal(np.concatenate(client.gather(result.carried)),
                                  np.concatenate(carried))
    ours = [r["coef"] for r in result.history if "coef" in r]
    assert len(ours) == 4
    np.testing.assert_allclose(ours, [r["coef"] for r in records if "coef" in r], rtol=1e-10)


def test_fits_on_the_client_given_as_in_process(client_factory):
    """Two workers make two shards (one in process): the layouts differ, the API does not."""
    X, y = planted(0, n_topics=4, n_docs=300)
    here = MedLDA(4, max_iter=5, random_state=0, **PRIORS).fit(X, y)
    there = MedLDA(4, max_iter=5, random_state=0, n_vocab_blocks=2, **PRIORS)
    there.client = client_factory(2)
    there.fit(X, y)
    assert there.n_vocab_blocks_ == 2 and here.n_vocab_blocks_ == 1
    assert there.score(X, y) > 0.6 and here.score(X, y) > 0.6
    assert there.coef_.shape == here.coef_.shape


@pytest.mark.parametrize("X_change, y_change, message", [
    (None, lambda y: y[:-1], "labels for the"),
    (None, lambda y: np.zeros_like(y), "1 class"),
    (None, lambda y: y + 0.5, "Unknown label type"),
    (lambda X: X.multiply(np.nan), None, "NaN"),
    (lambda X: -X, None, "Negative"),
])
def test_bad_input_is_refused_before_any_work_and_leaves_the_fitted_model(monkeypatch, X_change,
                                                                           y_change, message):
    X, y = planted(0, n_topics=4, n_docs=200)
    model = MedLDA(4, max_iter=3, random_state=0, **PRIORS).fit(X, y)
    fitted = {k: np.copy(v) for k, v in vars(model).items() if k.endswith("_")
              and isinstance(v, np.ndarray)}

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was asked for")

    monkeypatch.setattr(MedLDA, "_fit_executor", no_cluster)
    monkeypatch.setattr(MedLDA, "_run_engine", no_cluster)
    bad_X = sp.csr_matrix(X_change(X)) if X_change else X
    with pytest.raises(ValueError, match=message):
        model.fit(bad_X, y_change(y) if y_change else y)
    for name, value in fitted.items():
        np.testing.assert_array_equal(getattr(model, name), value)
