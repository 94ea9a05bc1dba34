"""The STRADS prox-Newton program over feature blocks, with working sets: linear models whose
loss is a function of the margins,

    C sum_i s_i loss(z_i, y_i) + sum over classes k of l1 sum_j v_j |w_kj| + l2/2 ||w_k||^2,

with sample weights ``s_i`` (ones by default), margins ``z_k = X w_k + b_k`` and targets
``y_ik`` (labels in {-1, +1} for a classifier: one column per class, one for a binary problem).
The loss is a datafit of :mod:`.datafits`: logistic (logistic regression, one-vs-rest for
several classes), multinomial (softmax), the squared hinge (the linear SVM), or a regression
loss (squared error, Huber's, Poisson's); the penalty is of :mod:`.penalties` (``v_j`` the
features' l1 weights, ones by default). Classes are updated one at a time, the others'
margins fixed: for one-vs-rest they are independent problems solved side by side on the same
blocks, for the multinomial loss the pull takes them in turn.

Features are split into blocks, one worker each; the shared value is the margins and the
intercepts. In a push a block schedules its coordinates by priority, the violation of their
optimality conditions: the working set is the block's nonzero coefficients and its worst
violators. It then runs prox-Newton steps on that set against the margins it was sent (a
quadratic model solved by coordinate descent, then a line search), moving a shift of the
intercept with its coefficients (an unpenalised column of ones), and sends the change of the
margins it made and the shift it wanted. Blocks pushed in the same round moved from the same
margins, so their changes may interfere (two blocks that both shift the intercept shift it
twice): the pull weighs each block's change by a factor in [0, 1] and chooses one intercept
shift, on the second-order model of the objective in the span of the changes, checked on a convex
upper bound of the objective (see :meth:`ProxNewtonProgram._combine`). The next push commits its
factor to the block's coefficients.

Memory: a push updates its block's state in place (``updates_in_place``): the coefficients
and the last change, kept as its working set's positions and values. A push works on the
working set's coordinates only; of the block's width it holds one array, the gradient, which it
turns into the violations in place. A report measures the coefficients at the start of its
round's pushes (``report_lag`` 1); at the round that meets the tolerance the blocks' changes
keep a factor of 0 (``at_stop``) and the engine runs no push behind it, so the result is the
state the stopping report measured. The fit's result is the
state's own coefficients (``hand_over``), not a copy; a block's initial coefficients travel as a
sparse matrix (a fit from zero sends none).
"""
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..kernels.columns import add_columns, column_chunks
from ..kernels.elastic_net import dot
from ..kernels.prox_newton import (column_dots, column_range_dots, newton_direction,
                                   softmax_newton_direction, violations)
from ..sizes import register_dataclasses
from .base import Instruction, Program, Report, StopRule
from .pairs import check_pair
from .elastic_net import kernel_csc
from .penalties import Penalty
from .selection import TopScores, box_quadratic

#: Smallest working set of a block and class; it grows to twice the block's nonzeros. At 10 the
#: tweets' L1 fit took 3 more rounds to reach its support of 1000 coordinates, at 200 no fewer.
MIN_WORKING_SET = 100
#: Prox-Newton steps of a push when the program has one block, and coordinate-descent sweeps for
#: a step's direction. With several blocks a push takes one step: further steps, against margins
#: the other blocks are changing at the same time, did not save rounds (two blocks, the tweets).
MAX_NEWTON_STEPS = 20
MAX_SWEEPS = 50
#: A push goes on until the working set's violation is at most this share of the block's
#: violation when the push began; a direction is solved to this share of the working set's.
INNER_SHARE = 0.5
#: Sufficient decrease (Armijo) of the line searches, and the smallest step tried.
ARMIJO = 0.01
MIN_STEP = 2.0 ** -20
#: The softmax model's direction is solved to this share of the working set's violation: the
#: coupling of the classes makes a loosely solved direction costly (4 classes, 240 samples, l2:
#: 317 Newton steps at 0.5, 40 at this).
SOFTMAX_DIRECTION_SHARE = 0.1
#: The pull's intercept shift stops when its Newton step is this small, relative to it.
SHIFT_TOL = 1e-10


@dataclass(frozen=True)
class Margins:
    """The shared state: margins ``z`` (classes x samples) of the committed coefficients and
    ``intercept``; ``step`` (classes x blocks) is the factor the pull gave each block's latest
    change, which is in ``z`` already. ``scale``: the largest |x_j . g| of a feature at w = 0,
    b = 0 (``tol`` is relative to it); None before the first pull."""

    z: np.ndarray
    intercept: np.ndarray
    step: np.ndarray
    scale: object = None


@dataclass
class BlockState:
    """A block's coefficients (classes x columns), committed up to the pull before its last
    push, and that push's change per class as ``(positions, values)``, to be committed times
    the step of the pull that took it. Pushes update it in place."""

    coef: np.ndarray
    changes: list


@dataclass(frozen=True)
class BlockUpdate:
    """What a push sends to the pull, per class: the change of the margins its coefficients made,
    the intercept shift it made with them, the block's penalty before and its change (precise
    when tiny), and the slope ``g . dz + penalty_change`` at the margins it was sent."""

    dz: np.ndarray
    shift: np.ndarray
    penalty_before: np.ndarray
    penalty_change: np.ndarray
    slope: np.ndarray
    violation: float
    newton_steps: int = 0
    scale: float = 0.0


@dataclass(frozen=True)
class BlockChanges:
    """The blocks' updates of one class, as arrays along the blocks."""

    dz: np.ndarray
    shift: np.ndarray
    before: np.ndarray
    penalty_change: np.ndarray
    slope: np.ndarray


@dataclass(frozen=True)
class BlockData:
    block: int
    X: object  # Fortran float64 array, or (indptr, indices, data) of a CSC matrix
    width: int  # the block's coordinates: its features, and the intercept's column if any
    coef_init: object  # classes x the block's features, as make_raw_block sends them
    has_intercept: bool  # the last coordinate is a column of ones (not stored in X)
    penalty: Penalty  # with the l1 weights of the block's features

    def committed_penalty(self, coef):
        """The penalty of one class's committed coefficients of the block (all its coordinates),
        from its non-zero ones, the intercept's column unpenalised."""
        positions = np.flatnonzero(coef)
        return self.penalty.value(coef[positions], positions, self.free_position(positions))

    def penalty_change(self, old, new, positions):
        """The penalty at ``new`` minus at ``old`` (one class's coefficients at ``positions``,
        sorted), precise when tiny."""
        return self.penalty.change(old, new, positions, self.free_position(positions))

    def free_position(self, columns):
        """Where the intercept's column (unpenalised) is among the sorted ``columns``, or -1."""
        last = self.width - 1
        return (int(np.searchsorted(columns, last)) if self.has_intercept and len(columns)
                and columns[-1] == last else -1)


def make_raw_block(X, coef_init, l1_weights=None):
    """The data of one feature block as sent to its worker: its columns, its initial
    coefficients (classes x columns) as a scipy CSR matrix, or as they are where that is smaller
    (nothing but their shape for a fit from zero), and its features' l1 weights (None: ones)."""
    sparse = sp.csr_matrix(coef_init)
    compact = sparse.data.nbytes + sparse.indices.nbytes < np.asarray(coef_init).nbytes
    return {"X": X, "coef": sparse if compact else coef_init, "l1_weights": l1_weights}


@dataclass(frozen=True, kw_only=True)
class ProxNewtonReport(Report):
    """The largest violation of the optimality conditions (relative to the scale), the
    smallest factor the pull gave a block's change, and the pushes' Newton steps."""

    violation: float | None = None
    step: float | None = None
    newton_steps: int | None = None


class ProxNewtonProgram(Program):
    """A datafit of margins plus a penalty by prox-Newton over feature blocks (see the
    module docstring).

    ``datafit``: a :class:`.datafits.MarginLoss` (its targets and costs); ``penalty``: a
    :class:`.penalties.Penalty` (its strengths; the blocks bring their features' l1 weights, see
    :func:`make_raw_block`). ``tolerance``: stop when
    no coordinate or intercept violates its optimality condition by more than ``tolerance`` times
    the largest |x_j . g| at w = 0. ``intercept_init``: the intercepts to start from with
    ``fit_intercept`` (without, they are 0).
    """
    report_lag = 1  # the violation is measured at the start of a push
    updates_in_place = True  # one state a block (see the module's docstring for the stop)
    static_schedule = True

    #: What the program calls on its datafit and its penalty (see :func:`.pairs.check_pair`).
    needs = {"datafit": ("of_class", "value", "kernels", "coupled"),
             "coupled datafit": ("probabilities", "gradients", "C"),
             "penalty": ("l1", "l2", "for_block", "l1_at", "l1_range", "value")}

    def __init__(self, n_blocks, *, datafit, penalty, fit_intercept, tolerance,
                 intercept_init=None, sparse=False):
        check_pair(self, datafit, penalty)
        self.n_blocks = n_blocks
        self.datafit = datafit
        self.name = datafit.name
        self.n_classes, self.n_samples = datafit.n_classes, datafit.n_samples
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.tolerance = tolerance
        self.stop_rule = StopRule("violation", tolerance)
        self.intercept_init = (np.asarray(intercept_init, dtype=np.float64)
                               if fit_intercept and intercept_init is not None
                               else np.zeros(self.n_classes))
        self.seed = 0  # deterministic: nothing is drawn at random
        self.kernels = ("prox_newton_sparse" if sparse else "prox_newton",
                        datafit.kernels.set_name)

    # -- blocks ---------------------------------------------------------------------------
    def prepare_block(self, raw, block_id):
        X = raw["X"]
        width = X.shape[1] + self.fit_intercept
        if sp.issparse(X):
            X = X.tocsc()
            X.sum_duplicates()
            X = kernel_csc(X.indptr, X.indices, X.data, X.shape[0])
        else:
            X = np.asfortranarray(X, dtype=np.float64)
        return BlockData(block_id, X, width, raw["coef"], self.fit_intercept,
                         self.penalty.for_block(raw.get("l1_weights")))

    def initial_shared(self):
        z = np.repeat(self.intercept_init[:, None], self.n_samples, axis=1)
        return Margins(z, self.intercept_init.copy(), np.ones((self.n_classes, self.n_blocks)))

    def init_block(self, data, block_id):
        coef = np.zeros((self.n_classes, data.width))
        start = data.coef_init
        if sp.issparse(start):
            start = start.tocoo()
            coef[start.row, start.col] = start.data
        else:
            coef[:, :start.shape[1]] = start
        dz = np.array([add_columns(data.X, c, np.zeros(self.n_samples)) for c in coef])
        penalised = column_chunks(data.width - data.has_intercept)
        scale = max((_largest_magnitude(column_range_dots(data.X, start, stop, g))
                     for g in self._gradients_at_zero() for start, stop in penalised),
                    default=0.0)
        penalty = np.array([data.committed_penalty(c) for c in coef])
        nothing = (np.zeros(0, dtype=np.int64), np.zeros(0))
        return (BlockState(coef, [nothing] * len(coef)),
                BlockUpdate(dz, np.zeros(len(coef)), penalty, np.zeros(len(coef)),
                            np.zeros(len(coef)), 0.0, scale=scale))

    def _gradients_at_zero(self):
        """Each class's derivatives of the datafit in its margins at w = 0, b = 0."""
        Z = np.zeros((self.n_classes, self.n_samples))
        for k in range(self.n_classes):
            yield self.datafit.of_class(Z, k).derivatives(Z[k])[0]

    # -- schedule / push / pull -----------------------------------------------------------
    def schedule(self, round_index, history):
        return dict.fromkeys(range(self.n_blocks), Instruction())

    def push(self, block_id, data, state, instruction, shared, inbox):
        _commit(state.coef, state.changes, shared.step[:, block_id])
        n_classes = len(state.coef)
        floor = self.tolerance * shared.scale
        if self.datafit.coupled:
            ws, new, dz, violation, steps, G = self._softmax_newton_steps(
                data, state.coef, shared.z, floor)
            moves = [(ws, new[k], G[k]) for k in range(n_classes)]
        else:
            dz = np.zeros_like(shared.z)
            moves, violation, steps = [], 0.0, 0
            for k in range(n_classes):
                loss = self.datafit.of_class(shared.z, k)
                g, h = loss.derivatives(shared.z[k])
                ws, new, dz[k], worst, steps_k = self._newton_steps(
                    data, state.coef[k], shared.z[k], loss, g, h, floor)
                violation, steps = max(violation, worst), steps + steps_k
                moves.append((ws, new, g))
        shift, slope = np.zeros(n_classes), np.zeros(n_classes)
        before, penalty_change = np.zeros(n_classes), np.zeros(n_classes)
        for k, (ws, new, g) in enumerate(moves):
            coef = state.coef[k]
            free = data.free_position(ws)
            if free >= 0:  # the intercept's column moved the margins by its shift
                shift[k] = new[free]
                dz[k] -= shift[k]
                new[free] = 0.0
            old = coef[ws]
            before[k] = data.committed_penalty(coef)
            penalty_change[k] = data.penalty_change(old, new, ws)
            slope[k] = dot(g, dz[k]) + penalty_change[k]
            moved = new != old
            state.changes[k] = (ws[moved], (new - old)[moved])
        return state, BlockUpdate(dz, shift, before, penalty_change, slope, violation, steps)

    def _newton_steps(self, data, coef, z, loss, g, h, floor):
        """Prox-Newton steps of one class on a working set of the block's coordinates, from
        the committed ``coef`` (not modified) and the margins ``z`` (of the class's ``loss``, a
        :class:`.datafits.ClassLoss`, whose derivatives there are ``g`` and ``h``), until the
        set's violation is at most ``INNER_SHARE`` of the block's (or ``floor``). Returns the
        working set, its new coefficients, the change of the margins, the block's largest
        violation at ``z`` and the steps taken."""
        X = data.X
        z_start = z
        worst, ws = self._violators(data, coef, g)
        target = max(INNER_SHARE * worst, floor)
        new = coef[ws]
        free = data.free_position(ws)
        l1, l2 = data.penalty.l1_at(ws), data.penalty.l2
        steps = 0
        max_steps = MAX_NEWTON_STEPS if self.n_blocks == 1 else 1
        while steps < max_steps and len(ws):
            grad = column_dots(X, ws, g)
            ws_violation = violations(grad, new, l1, l2, free).max()
            if ws_violation <= target:
                break
            d, q, _ = newton_direction(X, ws, new, grad, h, l1, l2, free, MAX_SWEEPS,
                                       INNER_SHARE * ws_violation)
            t, _ = _line_search(lambda t: loss.change(z, q, t), dot(g, q),
                                lambda step: data.penalty_change(new, new + step, ws), d)
            if t == 0.0:
                break
            new += t * d
            z = z + t * q
            g, h = loss.derivatives(z)
            steps += 1
        return ws, new, z - z_start, worst, steps

    def _softmax_newton_steps(self, data, coef, Z, floor):
        """:meth:`_newton_steps` of the multinomial datafit, every class at once on one working
        set (the union of the classes'), with the softmax's Hessian coupling the classes.
        Returns the working set, its new coefficients (classes x the set), the change of the
        margins, the block's largest violation, the steps taken and the datafit's derivatives
        at ``Z``."""
        X = data.X
        P = self.datafit.probabilities(Z)
        G = G_start = self.datafit.gradients(P)
        smallest = MIN_WORKING_SET // len(coef)  # the union's columns start at the minimum
        picked = [self._violators(data, c, g, smallest) for c, g in zip(coef, G)]
        worst = max(w for w, _ in picked)
        ws = np.unique(np.concatenate([positions for _, positions in picked]))
        target = max(INNER_SHARE * worst, floor)
        new = coef[:, ws]
        free = data.free_position(ws)
        l1, l2 = data.penalty.l1_at(ws), data.penalty.l2
        Z_start, steps, value = Z, 0, self.datafit.value(Z)
        max_steps = MAX_NEWTON_STEPS if self.n_blocks == 1 else 1
        while steps < max_steps and len(ws):
            grad = np.array([column_dots(X, ws, g) for g in G])
            ws_violation = max(violations(g, c, l1, l2, free).max() for g, c in zip(grad, new))
            if ws_violation <= target:
                break
            d, q, _ = softmax_newton_direction(X, ws, new, grad, P, self.datafit.C, l1, l2, free,
                                               MAX_SWEEPS, SOFTMAX_DIRECTION_SHARE * ws_violation)
            t, change = _line_search(lambda t: self.datafit.value(Z + t * q) - value,
                                     dot(G.ravel(), q.ravel()),
                                     lambda step: data.penalty_change(new, new + step, ws),
                                     d)
            value += change
            if t == 0.0:
                break
            new = new + t * d
            Z = Z + t * q
            P = self.datafit.probabilities(Z)
            G = self.datafit.gradients(P)
            steps += 1
        return ws, new, Z - Z_start, worst, steps, G_start

    def _violators(self, data, coef, g, smallest=MIN_WORKING_SET):
        """The block's largest violation of its optimality conditions (the loss's derivative in
        the margins being ``g``) and its working set: the nonzero coefficients and the worst
        violators, twice as many coordinates as nonzeros, at least ``smallest``, none
        that satisfies its condition; sorted. The gradient and the violations are computed
        ``kernels.columns.COLUMN_CHUNK`` columns at a time, the worst so far kept."""
        size = max(smallest, 2 * np.count_nonzero(coef))
        free = data.width - 1 if data.has_intercept else -1
        worst, best = 0.0, TopScores(size)
        for start, stop in column_chunks(data.width):
            score = column_range_dots(data.X, start, stop, g)
            violations(score, coef[start:stop], data.penalty.l1_range(start, stop),
                       data.penalty.l2,
                       free - start if start <= free < stop else -1, out=score)
            worst = max(worst, float(score.max(initial=0.0)))
            score[coef[start:stop] != 0.0] = np.inf
            violating = np.flatnonzero(score > 0.0)
            best.add(violating + start, score[violating])
        return worst, np.sort(best.positions)

    def pull(self, partials, shared):
        blocks = list(partials)
        updates = [partials[b] for b in blocks]
        if shared.scale is None:  # the initial pull: warm-start coefficients, taken whole
            scale = max(u.scale for u in updates)
            z = shared.z + np.sum([u.dz for u in updates], axis=0)
            return Margins(z, shared.intercept, shared.step, scale or 1.0), ProxNewtonReport()
        z, intercept = shared.z.copy(), shared.intercept.copy()
        step = np.zeros((self.n_classes, self.n_blocks))
        objective = self.datafit.value(z) + sum(u.penalty_before.sum() for u in updates)
        if len(updates) == 1:  # its line search chose its step, its intercepts included
            (update,) = updates
            z += update.dz + update.shift[:, None]
            intercept += update.shift
            step[:, blocks] = 1.0
        else:
            self._reconcile(z, intercept, step, blocks, updates)
        report = ProxNewtonReport(objective=objective,
                                violation=max(u.violation for u in updates) / shared.scale,
                                step=float(step[:, blocks].min()),
                                newton_steps=sum(u.newton_steps for u in updates))
        return Margins(z, intercept, step, shared.scale), report

    def _reconcile(self, z, intercept, step, blocks, updates):
        """The changes of several blocks, which moved from the same margins, combined into
        ``z``, ``intercept`` and ``step`` (in place): factors per block (:meth:`_combine`,
        :meth:`_combine_classes`), then the intercepts refitted on the new margins."""
        if self.datafit.coupled:
            factors, shifts = self._combine_classes(z, updates)
            z += _combination(factors, np.array([u.dz for u in updates])) + shifts[:, None]
            intercept += shifts
            step[:, blocks] = factors
        for k in range(self.n_classes):
            loss = self.datafit.of_class(z, k)  # the classes before k moved already
            shift = 0.0
            if not self.datafit.coupled:
                change = BlockChanges(*(np.array([getattr(u, name)[k] for u in updates])
                                        for name in ("dz", "shift", "penalty_before",
                                                     "penalty_change", "slope")))
                factors, shift = self._combine(z[k], loss, change)
                z[k] += _combination(factors, change.dz) + shift
                step[k, blocks] = factors
            if self.fit_intercept:
                best = _best_shift(z[k], loss)
                z[k] += best
                shift += best
            intercept[k] += shift

    def _combine(self, z, loss, change):
        """Factors ``f`` in [0, 1] of the blocks' margin changes and one intercept shift ``s``
        (one class).

        For such factors the objective is at most ``datafit(z + f dz + s) + sum_b before_b +
        f_b penalty_change_b`` (the penalty is convex), equal at f = 0, s = 0. Two
        candidates: all ones with the blocks' shifts added (the blocks' own steps, best when
        they do not interfere), and the minimiser of the bound's second-order model at ``z``.
        The better one is taken if it decreases the bound, else halved until it decreases it
        enough (Armijo). The bound's change is the datafit's, summed sample by sample, plus the
        penalty's: near the optimum it is far below the objective's rounding.
        """
        def bound_change(candidate):
            f, s = candidate
            return (loss.change(z, _combination(f, change.dz) + s, 1.0)
                    + f @ change.penalty_change)

        g, h = loss.derivatives(z)
        directions = np.vstack([change.dz, np.ones(len(z))]) if self.fit_intercept else change.dz
        curvature = np.einsum("bn,cn->bc", directions * h, directions)
        linear = np.append(change.slope, g.sum()) if self.fit_intercept else change.slope
        model = box_quadratic(curvature, linear, free=self.fit_intercept)
        n = len(change.dz)
        candidates = [(np.ones(n), change.shift.sum()), (model[:n], model[n:].sum())]
        return _sufficient_decrease(bound_change, candidates,
                                    lambda f, s: f @ change.slope + s * g.sum())

    def _combine_classes(self, Z, updates):
        """:meth:`_combine` for a datafit whose classes are coupled: one factor per block for
        all its classes' changes, which move with the block's intercept shifts (a vector over
        the classes); the second-order model takes the softmax's Hessian."""
        dz = np.array([u.dz + u.shift[:, None] for u in updates])  # blocks x classes x samples
        shifts = np.array([u.shift for u in updates])
        gains = np.array([u.penalty_change.sum() for u in updates])
        start = self.datafit.value(Z)

        def bound_change(candidate):
            f, s = candidate
            return self.datafit.value(Z + _combination(f, dz)) - start + f @ gains

        P = self.datafit.probabilities(Z)
        G = self.datafit.gradients(P)
        weighted = P * self.datafit.C
        mixed = np.einsum("kn,bkn->bn", P, dz)
        curvature = (np.einsum("kn,bkn,ckn->bc", weighted, dz, dz)
                     - np.einsum("n,bn,cn->bc", self.datafit.C, mixed, mixed))
        linear = np.array([u.slope.sum() for u in updates]) + shifts @ G.sum(axis=1)
        model = box_quadratic(curvature, linear)
        n = len(updates)
        candidates = [(np.ones(n), shifts.sum(axis=0)), (model, model @ shifts)]
        return _sufficient_decrease(bound_change, candidates, lambda f, s: f @ linear)

    def at_stop(self, shared, new_shared):
        return replace(shared, step=np.zeros_like(shared.step))  # what the pushes started from

    def collect(self, data, state, shared):
        """The block's coefficients, features x classes, and with an intercept one row more,
        its column of ones': the intercepts in block 0, zeros in the others (see
        :meth:`coefficients`)."""
        return self._parameters(data, state.coef.copy(), state.changes, shared)

    def hand_over(self, data, state, shared):
        """What :meth:`collect` gives, in the state's own coefficients."""
        return self._parameters(data, state.coef, state.changes, shared)

    def _parameters(self, data, coef, changes, shared):
        _commit(coef, changes, shared.step[:, data.block])
        if data.has_intercept and data.block == 0:
            coef[:, -1] = shared.intercept
        return coef.T

    def coefficients(self, parameters):
        """``(coef, intercept)``, classes x features and per class, from the blocks'
        collected parameters in block order."""
        if not self.fit_intercept:
            return np.concatenate(parameters).T, np.zeros(self.n_classes)
        return np.concatenate([p[:-1] for p in parameters]).T, parameters[0][-1]


def _combination(factors, changes):
    """``sum_b factors[b] * changes[b]``. Not ``factors @ changes``: BLAS's threads, over
    vectors of every sample, more than doubled a one-block fit's CPU time on 2 cores."""
    return np.einsum("b,b...->...", factors, changes)


def _largest_magnitude(values):
    """``max |values|`` (0 for none), without an array of the magnitudes."""
    return max(values.max(initial=0.0), -values.min(initial=0.0))


def _commit(coef, changes, steps):
    """Commit each class's last change times its pull's step into ``coef`` (in place)."""
    for k, (positions, values) in enumerate(changes):
        coef[k, positions] += steps[k] * values


def _line_search(change_at, datafit_slope, penalty_change_along, d):
    """The largest step in 1, 1/2, 1/4, ... along the direction ``d`` (of the working set's
    coefficients) with sufficient decrease of the objective, and the datafit's change there:
    ``change_at(t)`` is the datafit after a step ``t`` minus before (``datafit_slope`` its
    derivative at 0), ``penalty_change_along(step)`` the penalty after a step of the
    coefficients minus before. ``(0, 0)`` if no step decreases it enough."""
    slope = datafit_slope + penalty_change_along(d)
    t = 1.0
    while t >= MIN_STEP:
        change = change_at(t)
        if change + penalty_change_along(t * d) <= ARMIJO * t * slope:
            return t, change
        t *= 0.5
    return 0.0, 0.0


def _sufficient_decrease(bound_change, candidates, slope):
    """The better of the ``(factors, shift)`` candidates if it does not increase the bound
    (``bound_change`` of a candidate: the bound there minus at zero), else it halved until it
    decreases it enough (Armijo; ``slope(f, s)`` the bound's derivative along it); zeros if
    nothing does."""
    best = min(candidates, key=bound_change)
    if bound_change(best) <= 0.0:
        return best
    f, s = best
    t = 0.5
    while t >= MIN_STEP:
        if bound_change((t * f, t * s)) <= ARMIJO * t * slope(f, s):
            return t * f, t * s
        t *= 0.5
    return np.zeros_like(f), np.zeros_like(s)


def _best_shift(z, loss):
    """The shift of the margins that minimises ``loss.value(z + shift)``: Newton steps, halved
    while they do not decrease it, until one is below ``SHIFT_TOL`` (relative)."""
    shift = 0.0
    current = loss.value(z)
    for _ in range(MAX_SWEEPS):
        g, h = loss.derivatives(z + shift)
        curvature = float(h.sum())
        if curvature <= 0.0:
            break
        newton = -float(g.sum()) / curvature
        t = 1.0
        while abs(t * newton) > SHIFT_TOL * (1.0 + abs(shift)):
            trial = loss.value(z + shift + t * newton)
            if trial < current:
                shift, current = shift + t * newton, trial
                break
            t *= 0.5
        else:
            break
    return shift


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
