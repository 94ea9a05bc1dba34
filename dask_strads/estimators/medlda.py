"""``dask_strads.MedLDA``: max-margin supervised topics (Gibbs MedLDA) with the STRADS word
rotation."""
import os
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import _num_samples, check_is_fitted, column_or_1d

from ..programs.medlda import MedLDAProgram, labelled_shard, predicted_class
from .base import SHARED_CONSTRAINTS, NumberInterval
from .inputs import DaskArray, is_dask_array, one_vs_rest_signs
from .lda import LatentDirichletAllocation


class MedLDA(ClassifierMixin, LatentDirichletAllocation):
    """Max-margin supervised topic model (MedLDA) by Gibbs sampling with data augmentation,
    with the STRADS word rotation.

    Topics and a linear classifier of each document's topic proportions are learned together:
    the topics are drawn towards those that separate the classes with a margin. Two classes
    make one classifier; more make one per class, one-vs-all, each with its own weights over
    the same topics (see docs/medlda.md). Every token costs O(K M) (K topics, M classifiers)
    where LDA's sampler costs O(K_d + K_w): the supervised factor is nonzero for every topic.
    New documents' topic proportions are inferred as by
    :meth:`LatentDirichletAllocation.transform` (the topics fixed, without labels) and
    classified with the fitted classifier.

    Parameters
    ----------
    n_components : int
        Number of topics K.
    C : float
        The hinge loss's weight c against the topics' likelihood: larger draws the topics
        harder towards the labels.
    margin : float
        The margin l of the hinge loss c max(0, l - y (coef . zbar + intercept)) (zbar: a
        document's topic proportions, which sum to 1).
    prior_variance : float
        Variance nu^2 of the Gaussian prior of the classifier's weights and intercept.
    doc_topic_prior, topic_word_prior : float or None
        alpha and beta, as in :class:`LatentDirichletAllocation` (None: 1 / n_components).
    max_iter : int
        Gibbs iterations: each samples every token once, then each document's augmented
        variables and the classifier.
    optimize_interval, burn_in : int
        Learn the priors as :class:`LatentDirichletAllocation` does (0: fixed).
    n_vocab_blocks, staleness, topic_totals_every
        As in :class:`LatentDirichletAllocation`.
    transform_iter : int
        Gibbs sweeps per document when inferring new documents' topics (half of them burn-in).
    random_state : int, RandomState or None
        Seeds the fit, and the inference of new documents (with None: the fixed seed
        ``INFERENCE_SEED``, so that two calls give equal results).
    keep_on_cluster, checkpoint_interval, checkpoint_dir, progress, callback
        As in :class:`dask_strads.Lasso`.

    Attributes
    ----------
    classes_ : ndarray (n_classes,)
        The labels seen in fit.
    coef_ : ndarray (1, K) for two classes, else (n_classes, K)
        Each classifier's weights of the topic proportions: the mean of their conditional
        distribution given the fit's final topics and augmented variables.
    intercept_ : ndarray (1,) or (n_classes,)
        The classifiers' intercepts.
    components_, doc_topic_, alpha_, beta_, n_vocab_blocks_, vocabulary_
        As in :class:`LatentDirichletAllocation`.
    n_iter_, history_
        Iterations run; per-iteration records as :class:`LatentDirichletAllocation`'s, with
        ``hinge_loss`` (mean over documents and classifiers) and ``training_error`` of the
        classifier each iteration sampled with.
    """

    _parameter_constraints = {
        key: value for key, value in LatentDirichletAllocation._parameter_constraints.items()
        if key not in ("validation_data", "n_iter_no_change", "seed_topics", "seed_strength",
                       "sampler")}
    _parameter_constraints.update({
        **SHARED_CONSTRAINTS,
        "C": [NumberInterval(Real, 0, None, closed="neither")],
        "margin": [NumberInterval(Real, 0, None, closed="neither")],
        "prior_variance": [NumberInterval(Real, 0, None, closed="neither")],
        "transform_iter": [NumberInterval(Integral, 2, None, closed="left")],
    })

    # what LatentDirichletAllocation's fit reads and MedLDA does not offer
    validation_data = None
    seed_topics = None
    seed_strength = 0.0
    sampler = "sparse"
    n_iter_no_change = 1

    def __init__(self, n_components: int = 10, *, C: float = 1.0, margin: float = 1.0,
                 prior_variance: float = 1.0, doc_topic_prior: float | None = None,
                 topic_word_prior: float | None = None, max_iter: int = 100,
                 optimize_interval: int = 0, burn_in: int = 0,
                 n_vocab_blocks: int | None = None, staleness: int = 0,
                 topic_totals_every: Literal["sub_round", "iteration"] = "sub_round",
                 transform_iter: int = 50,
                 random_state: int | np.random.RandomState | None = None,
                 keep_on_cluster: bool = False, checkpoint_interval: int = 10,
                 checkpoint_dir: str | os.PathLike | None = None,
                 progress: bool | Literal["plot"] = False,
                 callback: Callable[..., Any] | None = None) -> None:
        self.n_components = n_components
        self.C = C
        self.margin = margin
        self.prior_variance = prior_variance
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.max_iter = max_iter
        self.optimize_interval = optimize_interval
        self.burn_in = burn_in
        self.n_vocab_blocks = n_vocab_blocks
        self.staleness = staleness
        self.topic_totals_every = topic_totals_every
        self.transform_iter = transform_iter
        self.random_state = random_state
        self.keep_on_cluster = keep_on_cluster
        self.checkpoint_interval = checkpoint_interval
        self.checkpoint_dir = checkpoint_dir
        self.progress = progress
        self.callback = callback

    def fit(self, X: Any, y: ArrayLike | None = None,
            feature_names: ArrayLike | None = None) -> "MedLDA":
        """Fit topics and classifier to a document-term count matrix (documents x words) and
        one label per document.

        Refused (ValueError, before any work, leaving a fitted model as it was): labels of
        another length than X's rows, of a single class or not class labels (continuous or
        multi-output), and what :meth:`LatentDirichletAllocation.fit` refuses of X.
        ``feature_names`` is kept as ``vocabulary_``, as by
        :meth:`LatentDirichletAllocation.fit`.
        """
        self._check_params()
        classes, labels = _checked_labels(y, X, type(self).__name__)
        records = self._fit_topics(X, feature_names, labels)
        coef = np.array([r["coef"] for r in records if "coef" in r][-1])
        self.classes_ = classes
        self.coef_, self.intercept_ = coef[:, :-1], coef[:, -1]
        n_blocks = self.n_vocab_blocks_
        for record, last in zip(self.history_, records[n_blocks - 1::n_blocks]):
            record.update({key: last[key] for key in ("hinge_loss", "training_error")
                           if key in last})
        return self

    def _program(self, alpha, beta, n_vocab, block_sizes, n_shards, seeds, labels):
        return MedLDAProgram(self.n_components, alpha=alpha, beta=beta, n_vocab=n_vocab,
                             block_sizes=block_sizes, n_shards=n_shards,
                             n_classifiers=labels.shape[1], c=self.C, margin=self.margin,
                             prior_variance=self.prior_variance,
                             seed=self._seed(), optimize_interval=self.optimize_interval,
                             burn_in=self.burn_in,
                             topic_totals_every=self.topic_totals_every)

    _labelled_shard = staticmethod(labelled_shard)

    def topic_proportions(self, X: Any) -> np.ndarray | DaskArray:
        """Each document's empirical topic proportions zbar (rows sum to 1; zero for a
        document without tokens), as the classifier reads them: from the mean document-topic
        counts of :meth:`transform`'s Gibbs sweeps."""
        check_is_fitted(self)
        X = self._check_counts(X, reset=False)[0]
        weights = self._transform_counts(X, normalize=False)  # n_dk + alpha_k, averaged
        lengths = X.sum(axis=1)
        if not is_dask_array(X):
            lengths = np.asarray(lengths)
        lengths = lengths.reshape(-1, 1)
        return (weights - self.alpha_) / np.maximum(lengths, 1)

    def decision_function(self, X: Any) -> np.ndarray:
        """Classifier scores of documents: (n_documents,) for two classes (positive: the second
        class), else (n_documents, n_classes), one-vs-all."""
        scores = self._scores(X)
        return scores[:, 0] if len(self.classes_) == 2 else scores

    def predict(self, X: Any) -> np.ndarray:
        """Each document's class: the sign of its score for two classes, else the class of the
        largest one-vs-all score."""
        index = predicted_class(self._scores(X))  # not fitted: raises before classes_
        return self.classes_[index]

    def _scores(self, X):
        """(n_documents, one score per classifier)."""
        return self._in_memory(self.topic_proportions(X)) @ self.coef_.T + self.intercept_

    def score(self, X: Any, y: Any = None, sample_weight: ArrayLike | None = None) -> float:
        """Mean accuracy of :meth:`predict` on documents X with labels y."""
        return ClassifierMixin.score(self, X, y, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        tags.target_tags.required = True
        # a topic model classifies by its documents' topic proportions, which drop their
        # lengths: scikit-learn's blobs (two word counts a document) are not separable so
        tags.classifier_tags.poor_score = True
        return tags


def _checked_labels(y, X, name):
    """``(classes, labels)``: the sorted classes of y and, per document, +-1 for each
    one-vs-all classifier (one column for two classes); raises ValueError for what a fit
    refuses."""
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None.")
    y = column_or_1d(y, warn=True)
    target = type_of_target(y, input_name="y")
    if target not in ("binary", "multiclass"):
        raise ValueError(f"Unknown label type: {target}. {name} needs class labels, one per "
                         "document.")
    if len(y) != _num_samples(X):
        raise ValueError(f"y has {len(y)} labels for the {_num_samples(X)} documents (rows) of X: "
                         "give one label per document.")
    classes = np.unique(y)
    if len(classes) < 2:
        raise ValueError(f"y holds {len(classes)} class{'es' if len(classes) != 1 else ''} "
                         f"{classes.tolist()}: {name} needs at least two.")
    return classes, one_vs_rest_signs(y, classes)
