"""The penalties of the prox-Newton program: the elastic net with a weight per feature on its l1
term,

    l1 sum_j v_j |w_j| + l2/2 ||w||^2,

with ``v`` ones unless weights are given. The l1 and l2 penalties, the elastic net and the
weighted l1 penalty (adaptive Lasso, features left unpenalised with a weight of 0) are this one
family: what the kernels take of a penalty is an l1 strength per coordinate and one l2.

The program holds the penalty's strengths; a block holds its features' weights
(:meth:`Penalty.for_block`), which travel with its columns, so that no worker holds a weight per
feature of the model.
"""
from dataclasses import dataclass, replace

import numpy as np

from ..sizes import register_dataclasses


@dataclass(frozen=True)
class Penalty:
    """``l1 sum_j v_j |w_j| + l2/2 ||w||^2`` of one block's coefficients, ``weights`` the
    ``v_j`` of its coordinates (None: ones). Methods take coefficients with their positions in
    the block; ``free`` is the position of an unpenalised coordinate (the intercept's column),
    -1 for none."""

    l1: float = 0.0
    l2: float = 0.0
    weights: np.ndarray | None = None

    def for_block(self, weights):
        """This penalty on a block whose coordinates' l1 weights are ``weights`` (None: ones)."""
        if weights is None:
            return self
        return replace(self, weights=np.asarray(weights, dtype=np.float64))

    def l1_at(self, positions):
        """The l1 strength of each coordinate at ``positions``: one number if they are all
        alike."""
        if self.weights is None:
            return self.l1
        return self.l1 * _weights_at(self.weights, positions)

    def l1_range(self, start, stop):
        """:meth:`l1_at` of the coordinates ``start`` to ``stop``."""
        return self.l1_at(np.arange(start, stop))

    def value(self, coef, positions, free=-1):
        """The penalty of the coefficients ``coef`` at ``positions``."""
        return self._sum(self.l1_at(positions) * np.abs(coef) + 0.5 * self.l2 * coef * coef,
                         free)

    def change(self, old, new, positions, free=-1):
        """:meth:`value` at ``new`` minus at ``old``, summed coordinate by coordinate (precise
        when tiny, as a step's near the optimum)."""
        return self._sum(self.l1_at(positions) * (np.abs(new) - np.abs(old))
                         + 0.5 * self.l2 * (new - old) * (new + old), free)

    @staticmethod
    def _sum(terms, free):
        """The sum of ``terms`` but those of the coordinate ``free``."""
        return float(terms.sum() - (terms[..., free].sum() if free >= 0 else 0.0))


def checked_weights(weights, n_features):
    """``weights`` of the l1 term as float64, one per feature, finite and non-negative (a
    ValueError naming the problem otherwise)."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (n_features,):
        raise ValueError(f"penalty_weights has shape {weights.shape}, but X has {n_features} "
                         "features: one weight per feature is needed")
    if not np.isfinite(weights).all() or weights.min(initial=0.0) < 0:
        raise ValueError("penalty_weights must be finite and non-negative")
    return weights


def _weights_at(weights, positions):
    """``weights[positions]``, 0 past the weights' end (the intercept's column)."""
    inside = positions < len(weights)
    return np.where(inside, weights[np.where(inside, positions, 0)], 0.0)


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
