"""The elastic net restricted to a working set: its columns gathered from the blocks, its duality
gap, and its solution by coordinate descent with Anderson extrapolation (Bertrand and Massias,
"Anderson acceleration of coordinate descent", AISTATS 2021).

Everything here works on the n-times-larger objective ``1/2 ||r + offset||^2 + l1 ||w||_1 +
l2/2 ||w||^2`` and on columns in the kernels' format (a Fortran array, or a CSC triple). With
sample weights the rows are scaled by ``root_weights`` and the residual is ``r + offset *
root_weights`` (see :mod:`dask_strads.kernels.elastic_net`); empty ``root_weights`` are ones.
"""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import nnls

from ..kernels.columns import centred_norms, index_type
from ..kernels.elastic_net import (UNWEIGHTED, dot, epochs, gradient, half_norm2, move,
                                   take_csc)
from ..sizes import register_dataclasses

#: Iterates combined by one Anderson extrapolation (skglm and celer use 5).
ANDERSON_ITERATES = 5
#: Epochs between two evaluations of the working set's duality gap.
CHECK_EVERY = 10
#: Epochs one solve may run: the next round goes on from where it stopped.
MAX_EPOCHS = 2000
#: A gap this small relative to the objective is rounding error: the solve stops there.
PRECISION = 1e-14


@dataclass(frozen=True)
class Columns:
    """Some columns of the design and what the solver needs of each. Columns that are not
    centred (no intercept) have empty ``col_sums`` and ``col_means``: their residual's offset
    stays 0, and sums would serve nothing. A block's columns keep their squared norms as
    ``(codes, table)``, a byte a column naming an upper bound (an eighth of the bytes; the
    push's screening and priorities need no more); the columns taken from them for a working
    set come with exact ones."""

    X: object
    col_sums: np.ndarray
    col_means: np.ndarray
    col_norm2: np.ndarray

    def take(self, positions):
        if len(positions) == self.width and self.exact_norms:  # sorted and distinct: all
            return self
        X = take_columns(self.X, positions)
        sums, means = self.centring_at(positions)
        norms2 = self.col_norm2[positions] if self.exact_norms else centred_norms(X, sums, means)
        return Columns(X, sums, means, norms2)

    def centring_at(self, positions):
        """``(col_sums, col_means)`` of the columns ``positions`` (empty when not centred)."""
        if not self.centred:
            return self.col_sums, self.col_means
        return self.col_sums[positions], self.col_means[positions]

    def centring(self):
        """``(col_sums, col_means)``, zeros where the columns are not centred."""
        if self.centred:
            return self.col_sums, self.col_means
        return np.zeros(self.width), np.zeros(self.width)

    @property
    def centred(self):
        return len(self.col_means) > 0

    @property
    def exact_norms(self):
        return isinstance(self.col_norm2, np.ndarray)

    @property
    def width(self):
        return self.X.shape[1] if isinstance(self.X, np.ndarray) else len(self.X[0]) - 1


@dataclass(frozen=True)
class WeightedColumns(Columns):
    """A block's columns under sample weights: stored as given, with the weighted sums, means
    and centred squared norms (``sum_i s_i x_ij``, ..., the weights scaled to sum to n); the
    columns taken from them for a working set are scaled by ``root_weights`` (``sqrt(s)``)."""

    root_weights: np.ndarray = None

    def take(self, positions):
        X = scale_rows(take_columns(self.X, positions), self.root_weights)
        sums, means = self.centring_at(positions)
        return Columns(X, sums, means, centred_norms(X, sums, means))


def scale_rows(X, factors):
    """X (kernel format) with row i times ``factors[i]``, a copy; X itself for ``factors``
    None or empty."""
    if factors is None or len(factors) == 0:
        return X
    if isinstance(X, np.ndarray):
        return np.asfortranarray(X * factors[:, None])
    indptr, indices, data = X
    return indptr, indices, data * factors[indices]


def take_columns(X, positions):
    """The columns ``positions`` of X (kernel format), in that order."""
    if isinstance(X, np.ndarray):
        return np.asfortranarray(X[:, positions])
    return take_csc(*X, np.asarray(positions, dtype=np.int64))


def join_columns(parts):
    """Columns of several blocks side by side, in order."""
    first = parts[0]
    if len(parts) == 1:
        return first
    blocks = [p.X for p in parts]
    if isinstance(first.X, np.ndarray):
        X = np.asfortranarray(np.hstack(blocks))
    else:
        shifts = np.cumsum([0] + [int(b[0][-1]) for b in blocks])
        indptr = np.concatenate([[0]] + [b[0][1:] + s for b, s in zip(blocks, shifts)])
        X = (indptr.astype(index_type(shifts[-1])), np.concatenate([b[1] for b in blocks]),
             np.concatenate([b[2] for b in blocks]))
    if any(p.centred for p in parts):
        sums, means = (np.concatenate(c) for c in zip(*(p.centring() for p in parts)))
    else:
        sums, means = first.col_sums, first.col_means
    return Columns(X, sums, means, np.concatenate([p.col_norm2 for p in parts]))


def primal(r, offset, coef, l1, l2, root_weights=UNWEIGHTED):
    return (half_norm2(r, offset, root_weights) + l1 * np.abs(coef).sum()
            + 0.5 * l2 * dot(coef, coef))


def duality_gap(primal_value, r_norm2, r_dot_y, dual_norm, gradient_norm2, l1, l2, coef_norm2):
    """scikit-learn's elastic-net duality gap (``enet_coordinate_descent``), an upper bound of
    the objective's distance to its minimum. With an l1 penalty, the residual scaled into the
    dual's feasible set; without, the ridge dual at the residual, ``||X~^T r - l2 w||^2 /
    (2 l2)`` (``gradient_norm2`` over ``2 l2``). Least squares (neither penalty) has no dual:
    see :func:`least_squares`."""
    if l1 == 0.0:
        return gradient_norm2 / (2.0 * l2)
    scale = min(1.0, l1 / dual_norm) if dual_norm > 0 else 1.0
    dual = (-0.5 * scale**2 * r_norm2 + scale * r_dot_y
            - 0.5 * l2 * scale**2 * coef_norm2)
    return primal_value - dual


def least_squares(columns, coef, r, offset, positive, root_weights=UNWEIGHTED):
    """The coefficients of ``columns`` (now ``coef``) that minimise ``||r + offset||``, the
    other features' fixed, exactly: numpy's lstsq on the centred columns, or scipy's nnls with
    ``positive``. Returns ``(those coefficients, how much lower 1/2 ||r + offset||^2 is
    there)``; the columns are copied into one dense array."""
    A = _dense_centred(columns, len(r), root_weights)
    target = _ones(r, root_weights) * offset + r + A @ coef
    best = nnls(A, target)[0] if positive else np.linalg.lstsq(A, target, rcond=None)[0]
    left = target - A @ best
    return best, max(half_norm2(r, offset, root_weights) - 0.5 * dot(left, left), 0.0)


def _ones(r, root_weights):
    """The direction the columns are centred along: ones, or the rows' root weights."""
    return np.ones(len(r)) if len(root_weights) == 0 else root_weights


def _dense_centred(columns, n_rows, root_weights):
    X = columns.X
    if not isinstance(X, np.ndarray):
        indptr, indices, data = X
        X = sp.csc_matrix((data, indices, indptr), shape=(n_rows, len(indptr) - 1)).toarray()
    if not columns.centred:
        return X
    return X - np.outer(_ones(np.empty(n_rows), root_weights), columns.col_means)


def residual_dot(y, r, offset, root_weights=UNWEIGHTED):
    """``y . (r + offset root_weights)``: with ``r + offset root_weights = y - X~ w``, the
    duality gap's ``||y||^2 - w . X~^T y``, from the residual instead of a ``x~_j . y`` kept per
    feature."""
    return dot(y, r) + offset * (y.sum() if len(root_weights) == 0 else dot(y, root_weights))


def solve(columns, coef, r, offset, l1, l2, positive, y, tol, anderson=True,
          root_weights=UNWEIGHTED):
    """Minimise the objective over the working set's coefficients ``coef`` (every non-zero
    coefficient of the model is among them), in place on ``coef`` and ``r``, until the working
    set's duality gap is at most ``tol`` (or down to rounding error). Returns
    ``(offset, epochs run)``. Without either penalty the problem is least squares, solved
    exactly (:func:`least_squares`, one "epoch")."""
    if l1 == 0.0 and l2 == 0.0:
        best, _ = least_squares(columns, coef, r, offset, positive, root_weights)
        offset = move(columns.X, best - coef, r, offset, columns.col_means)
        coef[:] = best
        return offset, 1
    X, sums, means, norm2 = columns.X, columns.col_sums, columns.col_means, columns.col_norm2
    iterates = [coef.copy()]
    g = np.empty(columns.width)
    everything = np.ones(columns.width, dtype=np.bool_)
    for epoch in range(1, MAX_EPOCHS + 1):
        offset, largest = epochs(X, coef, r, offset, sums, means, norm2, l1, l2, positive, 1,
                                 root_weights)
        if anderson:
            iterates.append(coef.copy())
            if len(iterates) == ANDERSON_ITERATES + 1:
                offset = _extrapolate(columns, iterates, coef, r, offset, l1, l2, positive,
                                      root_weights)
                iterates = [coef.copy()]
        if largest == 0.0 or epoch % CHECK_EVERY == 0:
            dual_norm, gradient_norm2, *_ = gradient(X, coef, everything, r, offset, sums, means,
                                                     norm2, l1, l2, positive, g, root_weights)
            value = primal(r, offset, coef, l1, l2, root_weights)
            gap = duality_gap(value, 2.0 * half_norm2(r, offset, root_weights),
                              residual_dot(y, r, offset, root_weights), dual_norm,
                              gradient_norm2, l1, l2, dot(coef, coef))
            if largest == 0.0 or gap <= max(tol, PRECISION * value):
                break
    return offset, epoch


def _extrapolate(columns, iterates, coef, r, offset, l1, l2, positive, root_weights):
    """Move to the Anderson extrapolation of the last iterates if it lowers the objective."""
    iterates = np.array(iterates)
    steps = np.diff(iterates, axis=0)
    try:
        weights = np.linalg.solve(steps @ steps.T, np.ones(len(steps)))
    except np.linalg.LinAlgError:
        return offset
    if not np.isfinite(weights).all() or weights.sum() == 0.0:
        return offset
    extrapolated = (weights / weights.sum()) @ iterates[1:]
    if positive and extrapolated.min() < 0.0:
        return offset
    trial_r = r.copy()
    trial_offset = move(columns.X, extrapolated - coef, trial_r, offset, columns.col_means)
    if (primal(trial_r, trial_offset, extrapolated, l1, l2, root_weights)
            < primal(r, offset, coef, l1, l2, root_weights)):
        coef[:] = extrapolated
        r[:] = trial_r
        return trial_offset
    return offset


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
