"""Datafits of the prox-Newton program: losses of the margins ``Z`` (classes x samples, the linear
predictions) and targets ``Y`` (classes x samples: labels in {-1, +1} for the classifiers'
losses, one row of values for the regression losses), each sample's loss times its cost (the
inverse penalty ``C`` times the sample's weight).

The program updates one class's margins at a time, the other classes' fixed; so a datafit says
what it is as a function of class ``k``'s margins (:meth:`MarginLoss.of_class`, a
:class:`ClassLoss`: a value and two derivatives per sample, equal to the whole datafit up to a
constant) and what it is in all (:meth:`MarginLoss.value`). A new datafit is a subclass holding
its loss's kernels (a :class:`~dask_strads.kernels.margin_losses.LossKernels`, declared beside
them) and, when its classes are coupled, its own ``of_class`` and ``value``; a regression
datafit also says how its predictions are made from its margins (``inverse_link``) and which
targets it takes (``check_targets``).
"""
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp, softmax

from ..kernels import margin_losses
from ..kernels.elastic_net import dot
from ..sizes import register_dataclasses


@dataclass(frozen=True)
class ClassLoss:
    """One class's loss as a function of its margins ``z``: ``loss(z - offset, y, C)`` (offset
    0: none) and its derivatives ``(g, h)`` in ``z``."""

    kernels: margin_losses.LossKernels
    y: np.ndarray
    C: np.ndarray
    offset: object = None
    parameters: tuple = ()  # the loss's own, after ``C`` in its kernels' arguments

    def _shifted(self, z):
        return z if self.offset is None else z - self.offset

    def value(self, z):
        return self.kernels.value(self._shifted(z), self.y, self.C, *self.parameters)

    def derivatives(self, z):
        return self.kernels.derivatives(self._shifted(z), self.y, self.C, *self.parameters)

    def change(self, z, q, t):
        """``value(z + t q) - value(z)``, summed sample by sample (precise when tiny)."""
        return self.kernels.change(self._shifted(z), q, t, self.y, self.C, *self.parameters)


class MarginLoss:
    """A datafit whose classes are independent problems (one-vs-rest, or one class for two):
    the sum over classes of ``sum_i C_i loss(y_ik z_ik)``."""

    name: str
    #: Whether a class's loss depends on the other classes' margins.
    coupled = False
    #: Its loss's kernels (declaring their kernel set).
    kernels: margin_losses.LossKernels
    #: The loss's own parameters, passed to its kernels.
    parameters: tuple = ()

    def __init__(self, Y, C, sample_weight=None):
        self.Y = np.ascontiguousarray(np.asarray(Y, dtype=np.float64).T)
        # a weight per sample, or per class and sample (classes x samples: one-vs-rest problems
        # that weigh a sample differently, as liblinear's class weights do)
        self.C = float(C) * (np.ones(self.Y.shape[1]) if sample_weight is None
                             else np.ascontiguousarray(sample_weight, dtype=np.float64))

    @property
    def n_classes(self):
        return self.Y.shape[0]

    @property
    def n_samples(self):
        return self.Y.shape[1]

    def of_class(self, Z, k):
        return ClassLoss(self.kernels, self.Y[k], self.C if self.C.ndim == 1 else self.C[k],
                         parameters=self.parameters)

    def value(self, Z):
        return sum(self.of_class(Z, k).value(Z[k]) for k in range(self.n_classes))


class Logistic(MarginLoss):
    """``log(1 + exp(-y z))``: logistic regression."""

    name = "logistic"
    kernels = margin_losses.LOGISTIC


class SquaredHinge(MarginLoss):
    """``max(0, 1 - y z)^2``: the linear SVM's squared hinge."""

    name = "squared_hinge"
    kernels = margin_losses.SQUARED_HINGE

    @staticmethod
    def dual_box(cost):
        """:meth:`Hinge.dual_box` of the squared hinge: no upper bound, ``D_i = 1 / (2 C_i)``
        (samples of cost 0 are left out: their alpha stays 0)."""
        weighted = cost > 0.0
        return (np.where(weighted, np.inf, 0.0),
                np.where(weighted, 0.5 / np.where(weighted, cost, 1.0), 0.0))


class Hinge(MarginLoss):
    """``max(0, 1 - y z)``: the linear SVM's hinge. Not smooth: fitted in the dual only (no
    kernels for the prox-Newton program)."""

    name = "hinge"

    @staticmethod
    def dual_box(cost):
        """``(U, D)`` of the dual, ``0 <= alpha_i <= U_i`` and ``D_i / 2 alpha_i^2`` (see
        :mod:`.svm_dual`), for samples of costs ``cost``."""
        return cost, np.zeros_like(cost)


class Multinomial(Logistic):
    """The softmax cross-entropy ``sum_i C_i (log sum_j exp(z_ij) - z_i,label_i)`` (``Y`` +1 at
    the sample's class, -1 elsewhere). As a function of class k's margins, the others fixed, it
    is the logistic loss of ``z_k - o_k`` with ``o_k = log sum_{j != k} exp(z_j)``, up to a
    constant."""

    name = "multinomial"
    coupled = True

    def of_class(self, Z, k):
        others = logsumexp(np.delete(Z, k, axis=0), axis=0)
        return ClassLoss(self.kernels, self.Y[k], self.C, others)

    def value(self, Z):
        labelled = np.where(self.Y > 0, Z, 0.0).sum(axis=0)
        return dot(self.C, logsumexp(Z, axis=0) - labelled)

    def probabilities(self, Z):
        """The classes' probabilities at the margins ``Z`` (classes x samples)."""
        return softmax(Z, axis=0)

    def gradients(self, P):
        """The derivatives of the datafit in the margins, at the probabilities ``P``."""
        return self.C * (P - (self.Y > 0))


class Regression(MarginLoss):
    """A loss of one row of real targets ``y`` and predictions ``inverse_link(z)``."""

    @staticmethod
    def inverse_link(z):
        return z

    @staticmethod
    def check_targets(y):
        """Raise a ValueError if the loss is not defined at targets ``y``."""

    @staticmethod
    def initial_intercept(y, weights):
        """The intercept a fit starts from: the best constant prediction's margin (a start at
        0 can leave Huber's loss without curvature, every residual beyond its threshold)."""
        return float(np.average(y, weights=weights))


class SquaredError(Regression):
    """``(z - y)^2 / 2``: least squares."""

    name = "squared_error"
    kernels = margin_losses.SQUARED_ERROR


class Huber(Regression):
    """Huber's loss of the residual ``z - y``: its square halved within ``delta``, linear
    beyond (robust to outlying targets)."""

    name = "huber"
    kernels = margin_losses.HUBER

    def __init__(self, Y, C, sample_weight=None, *, delta):
        super().__init__(Y, C, sample_weight)
        self.parameters = (float(delta),)

    @staticmethod
    def initial_intercept(y, weights):
        """The weighted median of ``y``."""
        order = np.argsort(y)
        cumulative = np.cumsum(weights[order])
        return float(y[order][np.searchsorted(cumulative, 0.5 * cumulative[-1])])


class Poisson(Regression):
    """``exp(z) - y z``: the Poisson deviance with a log link (counts, rates), up to a term of
    ``y`` alone; predictions ``exp(z)``."""

    name = "poisson"
    kernels = margin_losses.POISSON
    inverse_link = staticmethod(np.exp)

    @staticmethod
    def check_targets(y):
        if np.min(y) < 0 or np.sum(y) <= 0:
            raise ValueError("Some value(s) of y are out of the valid range of the loss "
                             "'poisson': the targets must be non-negative, not all zero")

    @staticmethod
    def initial_intercept(y, weights):
        return float(np.log(np.average(y, weights=weights)))


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
