"""The elastic-net (and Lasso) program: STRADS scheduling by priority over all blocks, with the
dependent coordinates solved jointly on one worker.

Features are split into blocks, one worker each. A round is one outer iteration of a
working-set solver (as celer and skglm), spread over the blocks:

- *push*, on every block in parallel: apply the coefficients the last pull set, drop the
  features that gap-safe screening proves zero at the optimum (for good), and make one full pass
  ``x~_j . r`` over the features left. It gives the block's duality-gap terms and each feature's
  priority, its violation of the optimality conditions; the block sends its non-zero and
  violating features (the ``ws_size`` most violating if there are more) with their columns.
- *pull*, one task: the duality gap at the state the pushes saw (the stopping test, as
  scikit-learn's), then the *working set*: the non-zero coefficients and the most violating
  features over all blocks, ``max(WS_START, 2 * non-zeros)`` in all (growing faster while
  more features violate than it has room for). Those coordinates depend on
  each other (the STRADS dependency structure): they are solved jointly, by coordinate descent
  with Anderson extrapolation on this one worker, to a fraction of the gap. The residual and the
  working set's new coefficients are the next round's shared value.

Full passes (the work that grows with the data) run once per round and in parallel; a round
costs one Dask graph. Screening needs no extra round: the gap-safe sphere of the previous
round's gap, centred at the dual point of the state it measured, holds the optimum's dual
point; the push tests each feature against it from the gradient it computes anyway, at the
new state, the sphere widened by the distance between the two states' scaled residuals (the
pull's), so a block keeps no gradient. It keeps its columns' squared norms as a byte each, the
code of an upper bound (the tests stay safe; the columns a push sends get exact ones), its
screening mask as bits, and a push works ``COLUMN_CHUNK`` columns at a time: it holds no array
of the block's width.

A push updates its block's state in place (``updates_in_place``): a worker holds one state per
block, its coefficients and screening mask (a bit a feature). A report measures the coefficients its
round's pushes saw, which are the block's coefficients after those pushes (a push changes them
only by the previous pull's working-set values). The pull that meets the tolerance commits no
working set, and the engine runs no push behind it: the fit's result is the state the stopping
report measured.
"""
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..kernels.columns import (COLUMN_CHUNK, add_columns, all_bits, column_chunks, column_norms,
                               column_stats, count_bits, index_type, kernel_dtype, unpacked_bits,
                               upper_bound_codes)
from ..kernels.compilation import kernel_set
from ..kernels.elastic_net import UNWEIGHTED, dot, half_norm2, screen_and_score
from ..kernels.weighted_columns import weighted_column_stats
from ..sizes import register_dataclasses
from .base import Instruction, Program, Report, StopRule, initial_parameters
from .selection import TopScores
from .working_set import (Columns, WeightedColumns, duality_gap, join_columns, least_squares,
                          residual_dot, solve)

#: Working-set size of the first round, and the least of any round.
WS_START = 100
#: Outside the last round, the working set is solved to this fraction of the current gap
#: (celer's choice): tighter is wasted while features outside it still violate.
INNER_RATIO = 0.3


@dataclass(frozen=True)
class BlockData:
    """A feature block as the kernels want it (on its worker)."""

    columns: Columns
    coef_init: np.ndarray


@dataclass
class BlockState:
    """A block's state, which its pushes update in place. A copy of it (a checkpoint's, made by
    ``copy.deepcopy``) is a :class:`PackedState`, which a push or collect takes as well."""

    block: int
    coef: np.ndarray
    active: np.ndarray  # not screened out: a bit a feature (see kernels.columns.all_bits)
    stage: int = 0  # of the penalties the screening was for

    def __deepcopy__(self, memo):
        positions = np.flatnonzero(self.coef)
        return PackedState(self.block, len(self.coef), positions, self.coef[positions],
                           self.active.copy(), self.stage)

    def active_features(self):
        """The screening mask, a bool a feature."""
        return unpacked_bits(self.active, len(self.coef))


@dataclass(frozen=True)
class PackedState:
    """A :class:`BlockState` exactly, at a fraction of its size: its non-zero coefficients and
    its mask. A checkpoint copies every block's state while the blocks hold theirs:
    whole, the copies were the peak of a fit's memory."""

    block: int
    width: int
    positions: np.ndarray
    values: np.ndarray
    active_bits: np.ndarray
    stage: int

    def unpacked(self):
        coef = np.zeros(self.width)
        coef[self.positions] = self.values
        return BlockState(self.block, coef, self.active_bits.copy(), self.stage)


@dataclass(frozen=True)
class Shared:
    """The residual ``r + offset`` after the last pull, the working set's new coefficients per
    block (``(positions, values)``), and, for screening, the (n-times) gap and dual scale of the
    state the last pushes saw (infinite before any) and ``distance``, the norm of the change
    the pull made to the residual of the elastic net as a Lasso of augmented data,
    ``(r + offset, -sqrt(l2) w)``."""

    r: np.ndarray
    offset: float
    changes: tuple
    gap: float
    dual_scale: float
    ws_size: int
    stage: int = 0  # which penalties apply (a path's alpha)
    distance: float = 0.0


@dataclass(frozen=True)
class Start:
    """A block's initial coefficients' contribution to the residual."""

    r: np.ndarray
    offset: float


@dataclass(frozen=True)
class Candidates:
    """What a push sends: its most violating features and the block's gap terms."""

    positions: np.ndarray
    score: np.ndarray
    coef: np.ndarray
    columns: Columns
    n_active: int
    n_violating: int  # features at zero that violate the optimality conditions
    l1_norm: float
    coef_norm2: float
    dual_norm: float
    gradient_norm2: float


@dataclass(frozen=True, kw_only=True)
class ElasticNetReport(Report):
    """The duality gap (divided by n) at the state the pushes saw, the features screened out
    and the coordinates evaluated, and the working set's size and epochs."""

    gap: float | None = None
    screened: int | None = None
    evaluated: int | None = None
    working_set: int | None = None
    epochs: int | None = None


class ElasticNetProgram(Program):
    """``(1/(2n)) ||y - Xw - b||^2 + alpha l1_ratio ||w||_1 + alpha (1 - l1_ratio)/2 ||w||^2``.

    ``widths``: features per block. ``gap_tolerance``: stop when the duality gap divided by n
    (scikit-learn's ``dual_gap_``) is at most this. ``working_set``, ``anderson``, ``screening``
    switch the solver's parts off for ablations (without a working set, every feature not
    screened out is in it). ``sample_weight``: weights of the rows, as in scikit-learn (scaled
    here to sum to n), the objective's ``||y - Xw - b||^2`` becoming ``sum_i s_i (y_i - x_i w
    - b)^2``; ``y_centred`` is then ``sqrt(s) (y - b)`` (see :mod:`.working_set`). ``dtype``:
    the type of X's values; float32 blocks keep their values in float32 (the kernels'
    float32 specialisation, which computes in float64), the residual and coefficients are
    float64 whatever it is.
    """

    name = "lasso"
    report_lag = 1  # a report measures the state its round's pushes saw
    updates_in_place = True  # one state a block (see the module's docstring for the stop)
    static_schedule = True

    def __init__(self, widths, *, y_centred, alpha, l1_ratio, positive, gap_tolerance, seed=0,
                 sparse=False, working_set=True, anderson=True, screening=True,
                 sample_weight=None, dtype=np.float64):
        self.widths = list(widths)
        # y serves the duality gap's y . (r + offset), on the pull's worker (one copy there)
        self.y_centred = np.asarray(y_centred, dtype=np.float64)
        self.n_samples = len(self.y_centred)
        self.l1 = alpha * l1_ratio * self.n_samples
        self.l2 = alpha * (1.0 - l1_ratio) * self.n_samples
        self.positive = positive
        self.tolerance = gap_tolerance * self.n_samples
        self.stop_rule = StopRule("gap", self.tolerance / self.n_samples)
        self.seed = seed
        self.working_set = working_set
        self.anderson = anderson
        self.screening = screening
        self.values = kernel_dtype(dtype)
        self.kernels = (kernel_set("enet", sparse, self.values),)
        if sample_weight is None:
            self.weights = self.root_weights = UNWEIGHTED
        else:
            weights = np.asarray(sample_weight, dtype=np.float64)
            self.weights = weights * (self.n_samples / weights.sum())
            self.root_weights = np.sqrt(self.weights)

    # -- blocks -----------------------------------------------------------------------------------
    @property
    def weighted(self):
        return len(self.weights) > 0

    def prepare_block(self, raw, block_id):
        if self.weighted:
            columns = weighted_solver_columns(raw["X"], self.weights, self.root_weights,
                                              raw["means"])
        else:
            columns = solver_columns(raw["X"], len(raw["y"]), raw["means"])
        return BlockData(columns, initial_parameters(raw["coef"]))

    def initial_shared(self):
        ws_size = WS_START if self.working_set else sum(self.widths)
        return Shared(self.y_centred, 0.0, (), np.inf, 1.0, ws_size)

    def init_block(self, data, block_id):
        columns, coef = data.columns, data.coef_init.copy()
        r_change = self._product(columns, coef)
        state = BlockState(block_id, coef, all_bits(columns.width))
        return state, Start(r_change, -dot(coef, columns.col_means) if columns.centred else 0.0)

    def _product(self, columns, coef):
        """``X coef`` over the rows the program fits (scaled by the root weights)."""
        return self._scaled(add_columns(columns.X, coef, np.zeros(self.n_samples)))

    def _scaled(self, values):
        """A vector of the rows fitted, scaled by the root weights."""
        return values * self.root_weights if self.weighted else values

    # -- schedule / push / pull -------------------------------------------------------------------
    def schedule(self, round_index, history):
        return dict.fromkeys(range(len(self.widths)), Instruction())

    def push(self, block_id, data, state, instruction, shared, inbox):
        state = _unpacked(state)
        columns, coef = data.columns, state.coef
        shared = self._pass_residual(data, shared)
        _commit(state, shared)
        if state.stage != shared.stage:  # a path's next alpha: screening starts again
            state.active[:] = all_bits(len(coef))
        wanted = max(shared.ws_size, int(np.count_nonzero(coef)))
        terms, positions, score = self._full_pass(columns, state, shared, wanted)
        update = Candidates(positions, score, coef[positions], columns.take(positions), *terms)
        state.stage = shared.stage
        return state, update

    def _pass_residual(self, data, shared):
        """``shared`` with the residual the block's full pass reads: under sample weights, the
        block's columns are unscaled, and it reads ``s (y - Xw - b)``, with offset 0."""
        if not self.weighted:
            return shared
        return replace(shared, r=self.root_weights * shared.r + shared.offset * self.weights,
                       offset=0.0)

    def penalties(self, shared):
        """``(l1, l2)`` of the round (a path program changes them with ``shared.stage``)."""
        return self.l1, self.l2

    def _full_pass(self, columns, state, shared, wanted):
        """The block's full pass, ``COLUMN_CHUNK`` columns at a time: it screens the features
        (in place on ``state.active``), and gives the block's gap terms ``(n_active,
        n_violating, l1_norm, coef_norm2, dual_norm, gradient_norm2)`` and the features it
        sends with their scores: every active feature if there were at most ``wanted`` before
        the pass, else the ``wanted`` highest scores among the non-zero and violating features (a
        feature that satisfies its optimality condition would stay at zero in the working set;
        only the sent features are scored).

        Screening is the gap-safe rule (Fercoq, Gramfort, Salmon 2015, on the elastic net as a
        Lasso of augmented data): the optimum's dual point lies within ``sqrt(2 gap)`` of the
        scaled residual of the state the gap measured, so within ``sqrt(2 gap) + scale
        distance`` of the current state's, and a feature at zero with ``scale |g_j| + that
        radius ||x~_j|| < l1`` is zero at the optimum. Only features at zero now are dropped
        (no residual to fix)."""
        l1, l2 = self.penalties(shared)
        screening = self.screening and np.isfinite(shared.gap) and l1 > 0.0
        radius = (np.sqrt(2.0 * max(shared.gap, 0.0)) + shared.dual_scale * shared.distance
                  if screening else 0.0)
        every_one = count_bits(state.active, len(state.coef)) <= wanted
        found = np.empty(min(COLUMN_CHUNK, columns.width), dtype=np.int64)
        found_scores = np.empty(len(found))
        parts = []
        best = TopScores(wanted)
        for start, stop in column_chunks(columns.width):
            parts.append(screen_and_score(
                columns.X, start, stop, state.coef, state.active, shared.r, shared.offset,
                columns.col_sums, columns.col_means, columns.col_norm2, l1, l2, self.positive,
                screening, shared.dual_scale, radius, every_one, found, found_scores))
            count = parts[-1][-1]
            best.add(found[:count], found_scores[:count])
        _, gradient_norm2, violating, n_active, l1_norm, coef_norm2, _ = np.sum(parts, axis=0)
        terms = (int(n_active), int(violating), l1_norm, coef_norm2, max(p[0] for p in parts),
                 gradient_norm2)
        order = np.argsort(best.positions)
        return terms, best.positions[order], best.scores[order]

    def pull(self, partials, shared):
        if all(isinstance(p, Start) for p in partials.values()):
            r = shared.r - np.sum([p.r for p in partials.values()], axis=0)
            offset = shared.offset - sum(p.offset for p in partials.values())
            return Shared(r, offset, (), np.inf, 1.0, shared.ws_size), ElasticNetReport()
        updates = [partials[b] for b in range(len(self.widths))]
        gap, scale, report = self._gap(shared, updates)
        if gap <= self.tolerance:
            return Shared(shared.r, shared.offset, (), gap, scale, shared.ws_size), report
        chosen = self._working_set(shared, updates)
        columns = join_columns([u.columns.take(c) for u, c in zip(updates, chosen)])
        coef = np.concatenate([u.coef[c] for u, c in zip(updates, chosen)])
        violating = sum(u.n_violating for u in updates)
        nonzero = int(sum(np.count_nonzero(u.coef) for u in updates))
        # every feature left, or every violating one, in the working set: solve it to the end
        complete = (len(coef) == sum(u.n_active for u in updates)
                    or violating <= len(coef) - nonzero)
        tolerance = 0.5 * self.tolerance if complete else max(INNER_RATIO * gap,
                                                               0.5 * self.tolerance)
        r, before = shared.r.copy(), coef.copy()
        l1, l2 = self.penalties(shared)
        offset, n_epochs = solve(columns, coef, r, shared.offset, l1, l2, self.positive,
                                 self.y_centred, tolerance, self.anderson, self.root_weights)
        distance = np.sqrt(2.0 * half_norm2(r - shared.r, offset - shared.offset,
                                            self.root_weights)
                           + l2 * dot(coef - before, coef - before))
        edges = np.cumsum([0] + [len(c) for c in chosen])
        changes = tuple((u.positions[c], coef[lo:hi])
                        for u, c, lo, hi in zip(updates, chosen, edges[:-1], edges[1:]))
        ws_size = self._next_size(len(coef), int(np.count_nonzero(coef)),
                                  violating) if self.working_set else shared.ws_size
        # coordinates evaluated: the pushes' full passes, then the working set's epochs
        report = replace(report, working_set=len(coef), epochs=n_epochs,
                         evaluated=report.evaluated + n_epochs * len(coef))
        return Shared(r, offset, changes, gap, scale, ws_size, distance=distance), report

    def _gap(self, shared, updates):
        """The (n-times) duality gap and dual scale at the state the pushes saw, and the
        round's report."""
        l1, l2 = self.penalties(shared)
        r_norm2 = 2.0 * half_norm2(shared.r, shared.offset, self.root_weights)
        l1_norm = sum(u.l1_norm for u in updates)
        coef_norm2 = sum(u.coef_norm2 for u in updates)
        dual_norm = max(u.dual_norm for u in updates)
        primal = 0.5 * r_norm2 + l1 * l1_norm + 0.5 * l2 * coef_norm2
        if l1 == 0.0 and l2 == 0.0:
            gap = self._least_squares_gap(shared, updates, primal)
        else:
            gap = duality_gap(primal, r_norm2,
                              residual_dot(self.y_centred, shared.r, shared.offset,
                                           self.root_weights), dual_norm,
                              sum(u.gradient_norm2 for u in updates), l1, l2, coef_norm2)
        scale = min(1.0, l1 / dual_norm) if dual_norm > 0 else 1.0
        n = self.n_samples
        n_active = sum(u.n_active for u in updates)
        report = ElasticNetReport(objective=primal / n, gap=gap / n,
                                  screened=sum(self.widths) - n_active, evaluated=n_active)
        return gap, scale, report

    def _least_squares_gap(self, shared, updates, primal):
        """Least squares (``alpha=0``) has no dual: its gap is the objective's distance to the
        minimum, exact (from the least-squares solution on the pushes' columns) when they sent
        every feature, else the objective itself (a bound: the minimum is at least 0)."""
        if sum(len(u.positions) for u in updates) < sum(u.n_active for u in updates):
            return primal
        columns = join_columns([u.columns for u in updates])
        coef = np.concatenate([u.coef for u in updates])
        return least_squares(columns, coef, shared.r, shared.offset, self.positive,
                             self.root_weights)[1]

    def _working_set(self, shared, updates):
        """Per block, the positions (in its candidates) of the features in the working set: every
        non-zero coefficient, then the highest scores over all blocks."""
        scores = np.concatenate([u.score for u in updates])
        size = max(shared.ws_size, int(np.count_nonzero(np.isposinf(scores))))
        if size < len(scores):
            picked = np.zeros(len(scores), dtype=np.bool_)
            picked[np.argpartition(-scores, size - 1)[:size]] = True
        else:
            picked = np.ones(len(scores), dtype=np.bool_)
        edges = np.cumsum([0] + [len(u.score) for u in updates])
        return [np.flatnonzero(picked[lo:hi]) for lo, hi in zip(edges[:-1], edges[1:])]

    @staticmethod
    def _next_size(size, nonzero, violating):
        """Twice the non-zeros (skglm's rule), and up to twice the last size while more features
        violate than the working set had room for: a large support is reached in a few rounds."""
        grown = min(2 * size, nonzero + violating) if violating > size - nonzero else 0
        return max(WS_START, 2 * nonzero, grown)

    def collect(self, data, state, shared):
        # the coefficients the last report measured (not yet the last pull's working set: the
        # result is always a state a report describes)
        return np.array(_unpacked(state).coef)

    def hand_over(self, data, state, shared):
        return _unpacked(state).coef  # nothing reads the state after: no copy


def solver_columns(X, n_samples, means):
    """A block's :class:`Columns` (a dense array or a CSC matrix of ``n_samples`` rows) as the
    working-set program keeps them, from one pass over the data: the centred squared norms as
    the byte codes of upper bounds (see :class:`Columns`), and the sums only where ``means``
    are not all zero (None: the columns' own means)."""
    X_kernel = _kernel_matrix(X)
    centred = means is None or bool(np.any(means))
    col_sums, norms2, canonical = column_norms(X_kernel, np.zeros(n_samples), centred)
    if not canonical:  # a row repeated in a column (or unsorted rows): sum them, count again
        X = sp.csc_matrix(X, copy=True)
        X.sum_duplicates()
        return solver_columns(X, n_samples, means)
    return bounded(centred_columns(X_kernel, col_sums, norms2, n_samples, means))


def weighted_solver_columns(X, weights, root_weights, means):
    """A block's :class:`~.working_set.WeightedColumns` under sample ``weights`` (scaled to sum
    to n; ``root_weights`` their square roots), as :func:`solver_columns` gives the unweighted
    ones: centred by the weighted means (``means`` None) or not at all (``means`` all zero)."""
    if sp.issparse(X) and not sp.csc_matrix(X).has_canonical_format:
        X = sp.csc_matrix(X, copy=True)
        X.sum_duplicates()
    X_kernel = _kernel_matrix(X)
    sums, norms2, _ = weighted_column_stats(X_kernel, weights, weights)
    columns = centred_columns(X_kernel, sums, norms2, len(weights), means)
    return bounded(WeightedColumns(**vars(columns), root_weights=root_weights))


def bounded(columns):
    """``columns`` with their squared norms kept as a byte each, the code of an upper bound
    (``(codes, table)``, see :func:`~dask_strads.kernels.columns.upper_bound_codes`)."""
    return replace(columns, col_norm2=upper_bound_codes(columns.col_norm2))


def block_columns(X, y_centred, means):
    """A block's columns (a dense array or a CSC matrix) in the kernels' format with their sums
    and centred squared norms, and their ``x~_j . y``, from one pass over the data: ``(Columns,
    X_dot_y)``. ``means`` None: the columns' own means (the intercept's centring, computed here,
    on the block's worker)."""
    X_kernel = _kernel_matrix(X)
    col_sums, norms2, X_dot_y, canonical = column_stats(X_kernel, y_centred)
    if not canonical:  # a row repeated in a column (or unsorted rows): sum them, count again
        X = sp.csc_matrix(X, copy=True)
        X.sum_duplicates()
        return block_columns(X, y_centred, means)
    columns = centred_columns(X_kernel, col_sums, norms2, len(y_centred), means)
    if columns.centred:
        X_dot_y -= columns.col_means * y_centred.sum()
    return columns, X_dot_y


def centred_columns(X_kernel, col_sums, norms2, n_samples, means):
    """The :class:`Columns` of ``n_samples`` rows whose raw sums and squared norms are given,
    centred implicitly by ``means`` (None: their own; all zero: not centred, without sums and
    means)."""
    if means is not None and not np.any(means):
        nothing = np.zeros(0)
        return Columns(X_kernel, nothing, nothing, norms2)
    means = col_sums / n_samples if means is None else np.asarray(means, dtype=np.float64)
    col_norm2 = np.maximum(norms2 - n_samples * means**2, 0.0)
    return Columns(X_kernel, col_sums, means, col_norm2)


def _kernel_matrix(X):
    """A Fortran array, or a CSC triple (see :func:`kernel_csc`), of float64 or float32 values
    (:func:`~dask_strads.kernels.columns.kernel_dtype`): the copies the kernels' compiled
    types need, no others."""
    if isinstance(X, np.ndarray):
        return np.asfortranarray(X, dtype=kernel_dtype(X.dtype))
    X = X.tocsc()
    return kernel_csc(X.indptr, X.indices, X.data, X.shape[0])


def kernel_csc(indptr, indices, data, n_rows):
    """A CSC matrix in the kernels' types: 32-bit column pointers and row indices where the
    stored values and the rows allow (scipy's own type, so that they are not copied, and the
    one variant a fit compiles), 64-bit beyond; float32 values kept, any other as float64."""
    return (indptr.astype(index_type(indptr[-1]), copy=False),
            indices.astype(index_type(n_rows), copy=False),
            data.astype(kernel_dtype(data.dtype), copy=False))


def _unpacked(state):
    """A block's state as pushes update it (a checkpoint's copy is packed)."""
    return state.unpacked() if isinstance(state, PackedState) else state


def _commit(state, shared):
    """Set the last pull's working-set values in the block's coefficients."""
    if shared.changes:
        positions, values = shared.changes[state.block]
        state.coef[positions] = values


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
