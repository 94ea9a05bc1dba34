"""The STRADS SVM program: the l2-penalised linear SVM by dual coordinate descent over blocks of
samples (the reference's ``svm_release``; liblinear's dual solvers, Hsieh et al., ICML 2008).

Per class (one-vs-rest problems side by side, one for two classes) the primal problem is

    min_w  1/2 ||w||^2 + sum_i C_i loss(y_i x_i . w),   loss(m) = max(0, 1 - m) (hinge)
                                                        or max(0, 1 - m)^2 (squared hinge),

with ``C_i`` the inverse penalty times the sample's weight (an intercept is the weight of a
constant feature, as liblinear's). Its dual, over one ``alpha_i`` a sample, is

    min_alpha  1/2 ||w(alpha)||^2 + sum_i (D_i / 2 alpha_i^2 - alpha_i),   0 <= alpha_i <= U_i,

``w(alpha) = sum_i alpha_i y_i x_i``; hinge: ``U_i = C_i``, ``D_i = 0``; squared hinge:
``U_i = inf``, ``D_i = 1 / (2 C_i)``. At the optimum ``w(alpha)`` is the primal solution.

Samples are split into blocks, one worker each; a block's ``alpha`` never leaves it, and the
shared value is ``w``. In a push a block measures its samples' margins at the ``w`` it was sent
(their losses and dual terms go to the report: the duality gap), then runs sweeps of dual
coordinate descent on its samples whose projected gradient is not 0, in seeded random orders,
against a copy of ``w`` it updates as it goes (as if alone), and sends the change of ``w`` it
made. Blocks pushed in the same round moved from the same ``w``, so their changes interfere: the
pull weighs each block's change by the factor in [0, 1] that minimises the dual objective
exactly (it is quadratic in the factors), which decreases it at least as much as averaging the
changes (CoCoA), and the next push commits its factor to the block's ``alpha``. With one block
this is liblinear's dual coordinate descent with its shrinking. Several blocks converge slowly
where their samples share features (an intercept, common words): each block's change is the
best for it alone, and their combination moves the shared weights by the sum (docs/linear_svc.md
measures it).

The fit stops when the duality gap, relative to the primal objective, is at most the tolerance:
the primal objective of the ``w`` it returns is then within that share of the optimum. A report
measures the state at the start of its round's pushes (``report_lag`` 1); at the stop the
blocks' last changes keep a factor of 0 and ``w`` is the one the report measured.
"""
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..kernels.svm_dual import change_terms, dual_sweeps, measure
from ..sizes import register_dataclasses
from .base import Instruction, Program, Report, StopRule, round_seed
from .pairs import check_pair
from .elastic_net import kernel_csc
from .selection import box_quadratic

#: A push's work: sweeps over its working set (its samples whose projected gradient is not 0),
#: each over the samples the sweep before kept (liblinear's shrinking, by the projected
#: gradients of the sweep before), until it has visited ``PASSES`` times the block's
#: samples or run ``MAX_SWEEPS`` sweeps. Between two measures of the gap (a pass over the
#: block), of 2, 3, 5, 10 and 20 passes' work 3 was the fastest with both losses on the tweets
#: (``python benchmarks/linear_svc.py --passes 2,3,5,10,20``, docs/linear_svc.md).
PASSES = 3
MAX_SWEEPS = 100


@dataclass(frozen=True)
class Sweeps(Instruction):
    """A push's sweeps, in the orders drawn from ``seed``."""

    seed: int = 0


@dataclass(frozen=True)
class Weights:
    """The shared state: ``w`` (classes x features) of the committed ``alpha``; ``step``
    (classes x blocks): the factor the pull gave each block's latest change, which is in ``w``
    already."""

    w: np.ndarray
    step: np.ndarray


@dataclass
class BlockState:
    """A block's ``alpha`` (classes x its samples), committed up to the pull before its last
    push, and that push's change, to be committed times the step of the pull that took it.
    Pushes update it in place."""

    alpha: np.ndarray
    change: np.ndarray


@dataclass(frozen=True)
class BlockUpdate:
    """What a push sends, per class: the change ``dw`` of ``w`` it made and the terms of its
    change of ``alpha`` the pull's factor needs (``linear``: ``sum_i (D_i alpha_i - 1)
    delta_i``, ``quadratic``: ``sum_i D_i delta_i^2``); and, at the ``w`` it was sent, its
    samples' primal loss, their part of the dual objective (``sum_i alpha_i - D_i / 2
    alpha_i^2``) and the largest |projected gradient|."""

    dw: np.ndarray
    linear: np.ndarray
    quadratic: np.ndarray
    loss: np.ndarray
    dual: np.ndarray
    violation: float


@dataclass(frozen=True)
class BlockData:
    block: int
    Xt: object  # the block's samples as columns: Fortran float64, or (indptr, indices, data)
    y: np.ndarray  # classes x samples, +-1
    cost: np.ndarray  # classes x samples, C_i
    upper: np.ndarray  # U_i
    diag: np.ndarray  # D_i
    curvature: np.ndarray  # ||x_i||^2 + D_i


@dataclass(frozen=True, kw_only=True)
class DualReport(Report):
    """The primal objective (``objective``), the dual one, their gap relative to the primal, the
    largest |projected gradient| and the smallest factor the pull gave a block's change."""

    dual: float | None = None
    gap: float | None = None
    violation: float | None = None
    step: float | None = None


class SVMDualProgram(Program):
    """The l2-penalised linear SVM, hinge or squared hinge, by dual coordinate descent over
    sample blocks (see the module docstring).

    ``datafit``: a :class:`.datafits.Hinge` or :class:`.datafits.SquaredHinge` (its +-1 labels
    and the samples' costs, the inverse penalty times their weights); ``n_features``: the
    columns of X (a constant column included); ``tolerance``: the relative duality gap at which
    the fit stops; ``seed``: the coordinate orders. The penalty is ``1/2 ||w||^2``.
    """

    name = "svm_dual"
    report_lag = 1  # the gap is measured at the start of a push
    updates_in_place = True
    static_schedule = True

    #: What the program calls on its datafit (see :func:`.pairs.check_pair`).
    needs = {"datafit": ("name", "Y", "C", "dual_box")}

    def __init__(self, n_blocks, *, datafit, n_features, tolerance, seed=0, sparse=False):
        check_pair(self, datafit, None)
        self.n_blocks = n_blocks
        self.datafit = datafit
        self.n_features = n_features
        self.tolerance = tolerance
        self.stop_rule = StopRule("gap", tolerance)
        self.seed = seed
        self.kernels = ("svm_dual_sparse" if sparse else "svm_dual",)

    @property
    def loss(self):
        return self.datafit.name

    @property
    def n_classes(self):
        return self.datafit.Y.shape[0]

    # -- blocks ---------------------------------------------------------------------------
    def prepare_block(self, raw, block_id):
        X, (lo, hi) = raw["X"], raw["rows"]
        if sp.issparse(X):
            # entries in any order, repeated ones too: the kernels' sums over a row add them up
            # as scipy means them (sorting them to sum them first cost 3% of a fit)
            X = sp.csr_matrix(X)
            Xt = kernel_csc(X.indptr, X.indices, X.data, self.n_features)
            norms = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        else:
            X = np.ascontiguousarray(X, dtype=np.float64)
            Xt, norms = X.T, np.einsum("ij,ij->i", X, X)
        labels = self.datafit.Y[:, lo:hi]
        cost = np.ascontiguousarray(np.broadcast_to(self.datafit.C, self.datafit.Y.shape)[:, lo:hi])
        upper, diag = self.datafit.dual_box(cost)
        return BlockData(block_id, Xt, labels, cost, upper, diag, norms + diag)

    def initial_shared(self):
        return Weights(np.zeros((self.n_classes, self.n_features)),
                       np.zeros((self.n_classes, self.n_blocks)))

    def init_block(self, data, block_id):
        alpha = np.zeros_like(data.y)
        return BlockState(alpha, np.zeros_like(alpha)), None  # w = 0: nothing to pull

    # -- schedule / push / pull -----------------------------------------------------------
    def schedule(self, round_index, history):
        return {b: Sweeps(seed=round_seed(self.seed, round_index, b))
                for b in range(self.n_blocks)}

    def push(self, block_id, data, state, instruction, shared, inbox):
        state.alpha += shared.step[:, block_id, None] * state.change
        n_classes = self.n_classes
        dw = np.zeros_like(shared.w)
        linear, quadratic = np.zeros(n_classes), np.zeros(n_classes)
        loss, dual = np.zeros(n_classes), np.zeros(n_classes)
        violation = 0.0
        for k in range(n_classes):
            alpha, y, diag, upper = state.alpha[k], data.y[k], data.diag[k], data.upper[k]
            loss[k], dual[k], worst, working = measure(data.Xt, shared.w[k], y, alpha,
                                                       data.cost[k], upper, diag,
                                                       self.loss == "squared_hinge")
            violation = max(violation, worst)
            new, w = alpha.copy(), shared.w[k].copy()
            dual_sweeps(data.Xt, y, new, upper, diag, data.curvature[k], working.copy(), w,
                        PASSES * len(alpha), MAX_SWEEPS,
                        instruction.seed * n_classes + k)  # a stream per block and class
            linear[k], quadratic[k] = change_terms(alpha, new, diag, working)
            state.change[k] = new - alpha
            dw[k] = w - shared.w[k]
        return state, BlockUpdate(dw, linear, quadratic, loss, dual, violation)

    def pull(self, partials, shared):
        blocks = list(partials)
        updates = [partials[b] for b in blocks]
        if all(u is None for u in updates):  # the initial pull: w = 0
            return shared, DualReport()
        w = shared.w.copy()
        step = np.zeros_like(shared.step)
        norms2 = np.einsum("ij,ij->i", shared.w, shared.w)
        for k in range(self.n_classes):  # products by einsum: no BLAS threads for a few rows
            changes = np.array([u.dw[k] for u in updates])
            curvature = (np.einsum("ip,jp->ij", changes, changes)
                         + np.diag([u.quadratic[k] for u in updates]))
            slope = (np.einsum("ip,p->i", changes, shared.w[k])
                     + np.array([u.linear[k] for u in updates]))
            factors = box_quadratic(curvature, slope)
            w[k] += np.einsum("i,ip->p", factors, changes)
            step[k, blocks] = factors
        primal = float(0.5 * norms2.sum() + sum(u.loss.sum() for u in updates))
        dual = float(sum(u.dual.sum() for u in updates) - 0.5 * norms2.sum())
        report = DualReport(objective=primal, dual=dual,
                            gap=(primal - dual) / primal if primal > 0.0 else 0.0,
                            violation=max(u.violation for u in updates),
                            step=float(step[:, blocks].min()))
        return Weights(w, step), report

    def at_stop(self, shared, new_shared):
        return replace(shared, step=np.zeros_like(shared.step))  # what the pushes started from

    def collect(self, data, state, shared):
        """``w`` (features x classes) in block 0, nothing in the others: it is shared."""
        return shared.w.T.copy() if data.block == 0 else np.zeros((0, self.n_classes))

    def coefficients(self, parameters):
        """``(coef, intercept)`` from the blocks' collected parameters, as
        :meth:`.ProxNewtonProgram.coefficients` gives them: ``w`` (classes x features) and
        zeros (an intercept is the weight of a constant column of X)."""
        return np.concatenate(parameters).T, np.zeros(self.n_classes)


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
