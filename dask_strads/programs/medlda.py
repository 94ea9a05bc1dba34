"""The MedLDA program: LDA's word rotation (:mod:`.lda`) with a max-margin classifier learned
from each document's topic proportions, by Gibbs sampling with data augmentation (Zhu, Chen,
Perkins and Zhang, "Gibbs max-margin topic models with data augmentation", JMLR 2014).

Document d of N_d tokens and empirical topic proportions zbar_d = n_d. / N_d has labels
y_dm = +-1 for M one-vs-all classifiers (M = 1 for two classes). Classifier m scores
eta_m . zbar_d + b_m; with zeta_dm = l - y_dm (eta_m . zbar_d + b_m) (l the margin) the hinge
loss c max(0, zeta) is turned into a pseudo-likelihood exp(-2 c max(0, zeta)), the mixture over
an augmented lambda_dm > 0 of exp(-(lambda + c zeta)^2 / (2 lambda)). Gibbs sampling then cycles

- z given eta, lambda: LDA's conditional times the document's factor
  (:mod:`dask_strads.kernels.medlda`), in every sub-round, against the classifiers of the last
  update;
- lambda given z, eta: 1 / lambda_dm ~ InverseGaussian(1 / (c |zeta_dm|), 1), by each shard for
  its documents in the last sub-round of an iteration, after its tokens are drawn;
- eta given z, lambda: with x_d = (zbar_d, 1), each classifier (eta_m, b_m) ~ N(mu, Sigma),
  Sigma^-1 = I / nu^2 + c^2 sum_d x_d x_d' / lambda_dm, mu = Sigma c sum_d y_dm (lambda_dm + c l)
  / lambda_dm x_d. Both sums add up over shards: the shards send them with the iteration's last
  pushes, and the pull solves the (K + 1) x (K + 1) systems and draws the classifiers every
  push of the next iteration reads.

The report of an update carries the classifiers' conditional means mu (``coef``): the
estimator's classifier is the last one (the draw's mean, given the final topics, rather than a
draw). Until the first update the classifiers are zero and the sampler is LDA's.
"""
from dataclasses import dataclass, fields

import numpy as np
import scipy.linalg

from ..kernels.medlda import sample_block_supervised
from ..sizes import register_dataclasses
from .base import round_seed
from .lda import LDAProgram, Sampled, SamplingReport, Shard, ShardState, TopicTotals

#: Smallest |zeta| the lambda draw divides by (a document exactly on its margin).
MIN_ZETA = 1e-9


@dataclass(frozen=True)
class LabelledShard(Shard):
    """A shard's tokens (:class:`~.lda.Shard`) with its documents' labels (D, M) of +-1 and
    lengths (D,) in tokens."""

    labels: np.ndarray | None = None
    lengths: np.ndarray | None = None


def labelled_shard(shard, labels):
    """``shard`` with ``labels`` (D, M) of +-1, one row per document."""
    lengths = np.bincount(shard.doc, minlength=shard.n_docs).astype(np.int64)
    return LabelledShard(**_values(shard), labels=np.asarray(labels, dtype=np.float64),
                         lengths=lengths)


@dataclass(frozen=True)
class LabelledState(ShardState):
    """A shard's LDA state with its documents' augmented variables lambda (D, M)."""

    lam: np.ndarray | None = None


@dataclass(frozen=True)
class Classifiers(TopicTotals):
    """LDA's shared value with the classifiers' last draw: ``eta`` (M, K + 1), the bias last,
    and the number of updates so far (which seeds the next draw)."""

    eta: np.ndarray | None = None
    updates: int = 0


@dataclass(frozen=True)
class MarginSums:
    """A shard's (or several shards') terms of the classifiers' conditional: ``precision``
    (M, K + 1, K + 1) c^2 sum_d x_d x_d' / lambda_dm, ``linear`` (M, K + 1), and the hinge
    losses and training mistakes of the classifiers the iteration sampled with."""

    precision: np.ndarray
    linear: np.ndarray
    hinge: float
    mistakes: int
    documents: int

    @staticmethod
    def merged(parts):
        return MarginSums(sum(p.precision for p in parts), sum(p.linear for p in parts),
                          sum(p.hinge for p in parts), sum(p.mistakes for p in parts),
                          sum(p.documents for p in parts))


@dataclass(frozen=True)
class MarginSampled(Sampled):
    """LDA's partial, and in an iteration's last sub-round the shard's :class:`MarginSums`."""

    margin: MarginSums | None = None


@dataclass(frozen=True, kw_only=True)
class MarginReport(SamplingReport):
    """LDA's report; after an update of the classifiers also their conditional means ``coef``
    (M lists of K + 1, bias last), the mean hinge loss and the training error rate of the
    classifiers the iteration sampled with."""

    coef: list | None = None
    hinge_loss: float | None = None
    training_error: float | None = None


class MedLDAProgram(LDAProgram):
    """Gibbs MedLDA with K topics, M one-vs-all classifiers, regularisation constant ``c``,
    margin ``margin`` (l) and prior variance ``prior_variance`` (nu^2) of the classifiers'
    weights; the rest is :class:`~.lda.LDAProgram`'s (the supervised sampler is its own, so
    ``sampler`` and ``seeds`` do not apply). Its blocks are :class:`LabelledShard` s."""

    name = "medlda"

    def __init__(self, n_topics, *, alpha, beta, n_vocab, block_sizes, n_shards, n_classifiers,
                 c=1.0, margin=1.0, prior_variance=1.0, seed=0, optimize_interval=0, burn_in=0,
                 topic_totals_every="sub_round"):
        super().__init__(n_topics, alpha=alpha, beta=beta, n_vocab=n_vocab,
                         block_sizes=block_sizes, n_shards=n_shards, seed=seed,
                         optimize_interval=optimize_interval, burn_in=burn_in,
                         topic_totals_every=topic_totals_every)
        self.n_classifiers = n_classifiers
        self.c = float(c)
        self.margin = float(margin)
        self.prior_variance = float(prior_variance)
        self.kernels = ("medlda",)

    def initial_shared(self):
        eta = np.zeros((self.n_classifiers, self.n_topics + 1))
        return Classifiers(**_values(super().initial_shared()), eta=eta)

    def init_block(self, data, block_id):
        state, started = super().init_block(data, block_id)
        lam = np.ones((data.n_docs, self.n_classifiers))
        return LabelledState(**_values(state), lam=lam), MarginSampled(**_values(started))

    def _draw(self, data, state, tokens, rows, shared):
        # the documents' factors: c y (lambda + c l) / (lambda N) and c^2 / (lambda N^2)
        length = np.maximum(data.lengths, 1)[:, None].astype(np.float64)
        gain = self.c * data.labels * (state.lam + self.c * self.margin) / (state.lam * length)
        weight = self.c ** 2 / (state.lam * length ** 2)
        eta, bias = shared.eta[:, :-1], shared.eta[:, -1]
        return sample_block_supervised(data.doc[tokens], data.word[tokens], state.z[tokens],
                                       *rows[:11], eta, bias, gain, weight, data.lengths)

    def push(self, block_id, data, state, instruction, shared, inbox):
        state, sampled, block = super().push(block_id, data, state, instruction, shared, inbox)
        margin = None
        if self.ends_iteration(instruction.round):
            margin = self._augment(data, state, shared.eta, instruction.seed)
        return state, MarginSampled(**_values(sampled), margin=margin), block

    def _augment(self, data, state, eta, seed):
        """Draw the shard's lambda given its topics and ``eta`` (in place), and return its
        :class:`MarginSums` under the new lambda."""
        x = np.hstack([state.n_dk / np.maximum(data.lengths, 1)[:, None],
                       np.ones((data.n_docs, 1))])
        zeta = self.margin - data.labels * (x @ eta.T)
        rng = np.random.default_rng([seed, 1])
        state.lam[:] = 1.0 / rng.wald(1.0 / (self.c * np.maximum(np.abs(zeta), MIN_ZETA)), 1.0)
        precision = np.stack([(x / lam[:, None]).T @ x for lam in state.lam.T]) * self.c ** 2
        linear = self.c * (data.labels * (state.lam + self.c * self.margin) / state.lam).T @ x
        mistakes = int(np.count_nonzero(predicted_class(x @ eta.T)
                                        != predicted_class(data.labels)))
        return MarginSums(precision, linear, float(np.maximum(zeta, 0.0).sum()), mistakes,
                          data.n_docs)

    def combine(self, partials):
        margins = [p.margin for p in partials if p.margin is not None]
        return MarginSampled(**_values(super().combine(partials)),
                             margin=MarginSums.merged(margins) if margins else None)

    def pull(self, partials, shared):
        new, report = super().pull(partials, shared)
        margins = [p.margin for p in partials.values() if p.margin is not None]
        if not margins:
            return (Classifiers(**_values(new), eta=shared.eta, updates=shared.updates),
                    MarginReport(**_values(report)))
        sums = MarginSums.merged(margins)
        rng = np.random.default_rng(round_seed(self.seed, shared.updates, self.n_shards))
        means, draws = zip(*(self._classifier(p, b, rng)
                             for p, b in zip(sums.precision, sums.linear)))
        return (Classifiers(**_values(new), eta=np.array(draws), updates=shared.updates + 1),
                MarginReport(**_values(report), coef=np.array(means).tolist(),
                             hinge_loss=sums.hinge / max(sums.documents, 1),
                             training_error=sums.mistakes / max(sums.documents, 1)))

    def _classifier(self, precision, linear, rng):
        """(mean, draw) of N(mu, Sigma), Sigma^-1 = I / nu^2 + ``precision``, mu = Sigma
        ``linear``."""
        inverse = precision + np.eye(len(linear)) / self.prior_variance
        factor = scipy.linalg.cholesky(inverse, lower=True)
        mean = scipy.linalg.cho_solve((factor, True), linear)
        noise = scipy.linalg.solve_triangular(factor.T, rng.standard_normal(len(linear)))
        return mean, mean + noise


def _values(instance):
    """A dataclass's fields as keyword arguments (to build a subclass's instance from it)."""
    return {f.name: getattr(instance, f.name) for f in fields(instance)}


def predicted_class(scores):
    """Class index of each row of one-vs-all ``scores`` (one column, for two classes: its
    sign); of the +-1 labels too, the true classes."""
    return (scores[:, 0] > 0).astype(int) if scores.shape[1] == 1 else scores.argmax(axis=1)


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
