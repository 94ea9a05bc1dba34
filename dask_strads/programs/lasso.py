"""The STRADS Lasso program over feature blocks.

Features are split into blocks, one worker each. Every block keeps a copy of the residual; a
round runs STRADS sub-rounds inside each block (priority sampling, dependency check, parallel
commit: see :func:`dask_strads.kernels.lasso.sub_rounds`), and the pull adds the blocks'
residual changes. Updates of different blocks in the same round may interfere; with no
staleness the pull commits them in full when the objective goes down and averages them
otherwise, which never increases it (convexity).
"""
import math
from dataclasses import dataclass, replace

import numpy as np

from ..kernels.columns import add_columns, kernel_dtype
from ..kernels.compilation import kernel_set
from ..kernels.lasso import CYCLIC, PRIORITY, RANDOM, full_pass, sub_rounds
from ..sizes import register_dataclasses
from .base import Instruction, Program, Report, StopRule, initial_parameters, round_seed
from .elastic_net import block_columns
from .selection import box_quadratic

SCHEDULES = {"priority": PRIORITY, "cyclic": CYCLIC, "random": RANDOM}
#: Fewest sub-rounds in a round: a round costs tens of milliseconds of Dask latency, so even a
#: narrow block does this much work per round.
MIN_SUB_ROUNDS = 50
#: A round goes on, a sweep's worth of sub-rounds at a time, until no coefficient moved more than
#: LOCAL_TOL times the largest one in the last sweep, or MAX_SWEEPS sweeps: fewer, fuller rounds.
#: For the priority schedule a sweep covers the coordinates the full pass found would move (the
#: others are only drawn through the base weight); for the ablations, the whole block.
MAX_SWEEPS = 50
LOCAL_TOL = 1e-6


@dataclass(frozen=True)
class LassoData:
    """A feature block as the kernels want it (on its worker)."""

    X: object  # Fortran array, or (indptr, indices, data) of a CSC matrix (float64 or float32)
    col_sums: np.ndarray
    col_means: np.ndarray
    col_norm2: np.ndarray
    X_dot_y: np.ndarray  # x~_j . y_c, for the duality gap
    coef_init: np.ndarray
    cyclic_order: np.ndarray  # the sweep order of the "cyclic" schedule


@dataclass(frozen=True)
class Residual:
    """The shared state: residual ``r + offset`` after round ``round``. Block ``b``'s update of
    round ``t`` went in with weight ``weights[t][b]`` (missing: 1); the last ``staleness + 1``
    rounds are kept, as far back as a block may still hold an update the pull has weighed."""

    r: np.ndarray
    offset: float
    round: int
    weights: tuple = ()  # ((round, {block: weight}), ...)


@dataclass(frozen=True)
class Pending:
    """A block's own update of one round, until the shared residual includes it."""

    round: int
    coef: np.ndarray
    r: np.ndarray
    offset: float


@dataclass(frozen=True)
class BlockState:
    block: int
    coef: np.ndarray
    priority: np.ndarray
    cursor: int
    pending: tuple


@dataclass(frozen=True)
class BlockUpdate:
    """What a push sends to the pull: the residual change and the gap terms of its block."""

    r: np.ndarray
    offset: float
    l1_after: float
    dual_norm: float = 0.0
    evaluated: int = 0
    l1: float = 0.0
    coef_dot_y: float = 0.0
    updates: int = 0
    rejected: int = 0
    fallbacks: int = 0
    moved: bool = False
    has_gap_terms: bool = False
    r_norm2: float = 0.0  # ||r + offset||^2 of the shared state the push saw (stale or not)


@dataclass(frozen=True)
class SubRounds(Instruction):
    """A block's round: its sub-rounds draw from ``seed``."""

    round: int
    seed: int


@dataclass(frozen=True, kw_only=True)
class LassoReport(Report):
    """The coordinates the pushes evaluated and updated, the updates the dependency checks
    rejected and the fallbacks to single updates; the duality gap (divided by n) and the
    smallest weight the pull gave a block's update."""

    evaluated: int = 0
    updates: int = 0
    rejected: int = 0
    fallbacks: int = 0
    gap: float | None = None
    gamma: float = 1.0


def make_raw_block(X, y_centred, coef_init, col_means, centre_dense):
    """The data of one feature block as sent to its worker (also used through dask.delayed)."""
    return {"X": X, "y": y_centred, "coef": coef_init, "means": col_means,
            "centre_dense": centre_dense}


def prepare_columns(raw):
    """A raw block's columns as the kernels want them and their ``x~_j . y``
    (:func:`.elastic_net.block_columns`); dense blocks are centred here when asked, in the type
    of their values (float32 data stay float32)."""
    X, means = raw["X"], np.asarray(raw["means"], dtype=np.float64)
    if raw["centre_dense"] and isinstance(X, np.ndarray):
        X = np.subtract(X, means, dtype=kernel_dtype(X.dtype))
        means = np.zeros_like(means)
    return block_columns(X, raw["y"], means)


class LassoProgram(Program):
    """(1/(2n)) ||y - Xw - b||^2 + alpha ||w||_1 by STRADS coordinate descent.

    ``widths``: features per block. ``gap_tolerance``: stop when the duality gap (divided by n,
    as sklearn's ``dual_gap_``) is at most this. ``sparse``: the blocks are CSC matrices.
    ``alpha`` must be positive: at 0 the duality gap is the objective itself, which no round
    brings to the tolerance. ``dtype``: the type of X's values (float32 blocks stay float32, as
    in :class:`.elastic_net.ElasticNetProgram`).
    """

    name = "lasso"
    static_schedule = True

    def __init__(self, widths, *, y_centred, alpha, positive, gap_tolerance, schedule="priority",
                 n_candidates=32, sub_rounds=None, rho=0.1, eta=0.1, power=1, staleness=0,
                 seed=0, sparse=False, dtype=np.float64):
        self.widths = list(widths)
        self.y_centred = np.asarray(y_centred, dtype=np.float64)
        self.n_samples = len(self.y_centred)
        self.y_norm2 = float(np.dot(self.y_centred, self.y_centred))
        self.alpha_n = alpha * self.n_samples
        self.positive = positive
        self.gap_tolerance = gap_tolerance
        self.stop_rule = StopRule("gap", gap_tolerance)
        self.schedule_code = SCHEDULES[schedule]
        self.n_candidates = n_candidates
        self.sub_rounds = sub_rounds
        self.rho = rho
        self.eta = eta
        self.power = power
        self.staleness = staleness
        self.seed = seed
        self.report_lag = 1 + staleness
        self.kernels = (kernel_set("lasso", sparse, kernel_dtype(dtype)),)

    # -- blocks ---------------------------------------------------------------------------
    def prepare_block(self, raw, block_id):
        columns, X_dot_y = prepare_columns(raw)
        return LassoData(columns.X, *columns.centring(), columns.col_norm2, X_dot_y,
                         initial_parameters(raw["coef"]), _cyclic_order(columns.width, self.seed))

    def __getstate__(self):
        # y is needed on the client only, for the first residual: keep it out of every task
        return {**self.__dict__, "y_centred": None}

    def initial_shared(self):
        # round -2: the init pull makes it -1, and the pull of round t makes it t, the round
        # that _committed compares a block's pending updates with
        return Residual(self.y_centred, 0.0, -2)

    def init_block(self, data, block_id):
        coef = np.array(data.coef_init, dtype=np.float64)
        r_change = add_columns(data.X, coef, np.zeros(self.n_samples))
        state = BlockState(block_id, coef, np.zeros_like(coef), 0, ())
        update = BlockUpdate(r_change, -float(np.dot(coef, data.col_means)),
                             float(np.abs(coef).sum()))
        return state, update

    # -- schedule / push / pull -----------------------------------------------------------
    def schedule(self, round_index, history):
        return {b: SubRounds(round_index, round_seed(self.seed, round_index, b))
                for b in range(len(self.widths))}

    def push(self, block_id, data, state, instruction, shared, inbox):
        coef, pending = self._committed(state, shared)
        coef = coef.copy()  # sub_rounds works in place; state.coef is still referenced
        r = shared.r.copy()
        offset = shared.offset
        coef_at_shared = coef.copy()
        for p in pending:
            r -= p.r
            offset -= p.offset
            coef_at_shared -= p.coef
        gradient = np.empty(len(coef))
        proposal = full_pass(data.X, coef_at_shared, shared.r, shared.offset, data.col_sums,
                             data.col_means, data.col_norm2, self.alpha_n, self.positive,
                             gradient)
        dual_norm = (gradient.max(initial=0.0) if self.positive
                     else np.abs(gradient).max(initial=0.0))
        priority = proposal  # the change each coordinate would make now: the freshest priority
        start_coef, start_r, start_offset = coef.copy(), r.copy(), offset
        offset, cursor, evaluated, updates, rejected, fallbacks = sub_rounds(
            data.X, data.col_sums, data.col_means, data.col_norm2, coef, priority, r, offset,
            *self._sub_round_bounds(priority), LOCAL_TOL,
            self.n_candidates, self.schedule_code,
            data.cyclic_order, state.cursor, self.rho, self.alpha_n,
            self.positive, self.eta, self.power, instruction.seed)
        mine = Pending(instruction.round, coef - start_coef, start_r - r, start_offset - offset)
        update = BlockUpdate(
            r=mine.r, offset=mine.offset, l1_after=float(np.abs(coef).sum()),
            dual_norm=float(dual_norm),
            l1=float(np.abs(coef_at_shared).sum()),
            coef_dot_y=float(np.dot(coef_at_shared, data.X_dot_y)),
            evaluated=evaluated, updates=updates, rejected=rejected, fallbacks=fallbacks,
            moved=bool(np.any(mine.coef)), has_gap_terms=True,
            r_norm2=2.0 * _half_norm2(shared.r, shared.offset))
        return BlockState(state.block, coef, priority, cursor, pending + (mine,)), update

    def _sub_round_bounds(self, priority):
        if self.sub_rounds:
            return self.sub_rounds, self.sub_rounds
        sweep = np.count_nonzero(priority) if self.schedule_code == PRIORITY else len(priority)
        low = max(MIN_SUB_ROUNDS, math.ceil(sweep / self.n_candidates))
        return low, MAX_SWEEPS * low

    def pull(self, partials, shared):
        updates = list(partials.values())
        r_change = np.sum([u.r for u in updates], axis=0)
        offset_change = sum(u.offset for u in updates)
        counts = {name: sum(getattr(u, name) for u in updates)
                  for name in ("evaluated", "updates", "rejected", "fallbacks")}
        gamma, objective, gap = None, None, None
        if all(u.has_gap_terms for u in updates):
            objective, gap = self._objective_and_gap(shared, updates)
            n_moved = sum(u.moved for u in updates)
            if n_moved > 1 and self.staleness == 0:
                gamma = dict(zip(partials, self._commit_weights(shared, updates)))
            elif n_moved > 1:
                # Updates made from different stale residuals: the bound behind
                # _commit_weights does not hold, average them (a convex combination).
                gamma = dict.fromkeys(partials, 1.0 / n_moved)
        if gamma is None:
            r, offset = shared.r - r_change, shared.offset - offset_change
        else:
            r, offset = shared.r.copy(), shared.offset
            for b, u in partials.items():
                r -= gamma[b] * u.r
                offset -= gamma[b] * u.offset
        report = LassoReport(**counts, objective=objective, gap=gap,
                             gamma=min(gamma.values()) if gamma else 1.0)
        new_round = shared.round + 1
        weights = tuple((t, w) for t, w in shared.weights if t > new_round - 1 - self.staleness)
        if gamma:
            weights += ((new_round, gamma),)
        return Residual(r, offset, new_round, weights), report

    def _commit_weights(self, shared, updates, sweeps=50):
        """Weights in [0, 1] for the blocks' updates, minimising a bound of the objective.

        With u_b a block's residual change and L0_b, L1_b its l1 norms before and after,
        convexity of |.| gives F(sum_b g_b) <= 1/2 ||r - sum_b g_b u_b||^2
        + alpha n sum_b ((1 - g_b) L0_b + g_b L1_b), a box-constrained quadratic in g solved
        by coordinate descent. g = 0 gives F(before), so the commit never raises the objective;
        independent blocks get 1, blocks that push the same way share the step.
        """
        n = self.n_samples
        sums = [u.r.sum() for u in updates]
        gram = np.array([[np.dot(a.r, b.r) + b.offset * sa + a.offset * sb + n * a.offset * b.offset
                          for b, sb in zip(updates, sums)] for a, sa in zip(updates, sums)])
        r_sum = shared.r.sum()
        linear = np.array([
            np.dot(u.r, shared.r) + shared.offset * su + u.offset * r_sum
            + n * u.offset * shared.offset - self.alpha_n * (u.l1_after - u.l1)
            for u, su in zip(updates, sums)])
        return box_quadratic(gram, -linear, sweeps=sweeps)

    def _objective_and_gap(self, shared, updates):
        """sklearn's objective and duality gap (both divided by n) at the shared state the
        pushes saw: with staleness that is older than ``shared``, so the residual norm comes
        from the pushes, like the other terms."""
        n = self.n_samples
        R_norm2 = updates[0].r_norm2
        l1 = sum(u.l1 for u in updates)
        primal = 0.5 * R_norm2 + self.alpha_n * l1
        Ry = self.y_norm2 - sum(u.coef_dot_y for u in updates)
        dual_norm = max(u.dual_norm for u in updates)
        scale = min(1.0, self.alpha_n / dual_norm) if dual_norm > 0 else 1.0
        gap = primal - (-0.5 * scale**2 * R_norm2 + scale * Ry)
        return primal / n, gap / n

    def collect(self, data, state, shared):
        coef, _ = self._committed(state, shared)
        return coef

    def retained(self, state):
        return replace(state, priority=None)  # the next push's schedule, nothing later reads

    def _committed(self, state, shared):
        """The block's coefficients with the pull's weights applied to the updates it has
        weighed, and the updates the shared residual does not include yet."""
        coef = state.coef
        weights = dict(shared.weights)
        for p in state.pending:
            weight = weights.get(p.round, {}).get(state.block, 1.0)
            if p.round <= shared.round and weight != 1.0:
                coef = coef - (1.0 - weight) * p.coef
        return coef, tuple(p for p in state.pending if p.round > shared.round)


# np.dot rather than @ for vectors: with some OpenBLAS settings @ on two vectors is a hundred
# times slower.
def _half_norm2(r, offset):
    return 0.5 * float(np.dot(r, r) + 2.0 * offset * r.sum() + offset * offset * r.shape[0])


def _cyclic_order(width, seed):
    return np.random.default_rng(seed).permutation(width)


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
