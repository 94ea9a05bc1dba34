"""The elastic-net path program: the working-set program walking down a grid of alphas in one run.

Each alpha is a *stage*. The blocks keep their coefficients from one stage to the next (a warm
start) and their data stays where it was placed for the whole path. A stage ends when the
duality gap at its alpha is at most the tolerance, or after ``stage_rounds`` rounds; the pull
then records the solution the pushes saw (every non-zero coefficient is among the features a
push sends) and moves on. Gap-safe screening starts afresh at each alpha, from the gap of its
first round: a feature proved zero at one alpha may be non-zero at a smaller one.

A *fold* (``rows``: the training rows of a cross-validation split) runs on blocks placed with
every row, which all the folds and the refit share: a block keeps its whole columns and computes
the fold's column statistics from a 0/1 row weight on its worker; its full pass reads the
fold's residual spread over all rows, zero off the fold, and the working set receives the fold's
rows of its columns only, so the solve is that of the fold's data. With sample weights (the
fold's, scaled to sum to its rows) a fold's column statistics are those weighted, and its working
set's rows are scaled by their root weights, as :class:`ElasticNetProgram` does for the whole
data.
"""
from dataclasses import dataclass, replace

import numpy as np

from ..kernels.columns import add_columns, centred_norms
from ..kernels.compilation import kernel_set
from ..kernels.weighted_columns import take_csc_rows, weighted_column_stats
from ..sizes import register_dataclasses
from .base import initial_parameters
from .elastic_net import (BlockData, ElasticNetProgram, ElasticNetReport, Shared,
                          _kernel_matrix, bounded, centred_columns)
from .working_set import Columns, WeightedColumns, scale_rows


@dataclass(frozen=True)
class PathShared(Shared):
    stage_round: int = 0  # rounds run at this stage


@dataclass(frozen=True, kw_only=True)
class PathReport(ElasticNetReport):
    """An :class:`ElasticNetReport` with the stage it was measured at; the report ending a
    stage has its solution (``path_coef``), the last one ``path_done``."""

    stage: int | None = None
    path_coef: tuple | None = None
    path_done: bool | None = None


@dataclass(frozen=True)
class FoldColumns(WeightedColumns):
    """A block's whole columns with the statistics of a fold's rows (``rows``, increasing;
    ``row_map``: each row's index among them, -1 off the fold; ``root_weights``: the fold's
    rows' root weights, empty for none)."""

    rows: np.ndarray = None
    row_map: np.ndarray = None

    def take(self, positions):
        """The fold's rows of the columns ``positions``."""
        if isinstance(self.X, np.ndarray):
            X = np.asfortranarray(self.X[np.ix_(self.rows, positions)])
        else:
            X = take_csc_rows(*self.X, np.asarray(positions, dtype=np.int64), self.row_map)
        X = scale_rows(X, self.root_weights)
        sums, means = self.centring_at(positions)
        return Columns(X, sums, means, centred_norms(X, sums, means))

    def spread(self, r):
        """The fold's vector ``r`` over all rows, zero off the fold."""
        full = np.zeros(len(self.row_map))
        full[self.rows] = r
        return full


class ElasticNetPathProgram(ElasticNetProgram):
    """:class:`ElasticNetProgram` over ``alphas`` (in the order given). A report carries the
    ``stage`` its gap was measured at; the report that ends a stage carries its solution,
    ``path_coef``: ``(feature indices, values)`` of the non-zero coefficients.

    ``rows`` (increasing): fit the fold of those rows of blocks that hold every row
    (``y_centred``: the fold's ``y``, centred on the fold)."""

    name = "lasso-path"

    def __init__(self, widths, *, y_centred, alphas, l1_ratio, positive, gap_tolerance,
                 stage_rounds, rows=None, **options):
        # the penalties of every alpha at once, arrays indexed by the stage
        super().__init__(widths, y_centred=y_centred, alpha=np.asarray(alphas, dtype=np.float64),
                         l1_ratio=l1_ratio,
                         positive=positive, gap_tolerance=gap_tolerance, **options)
        self.stage_rounds = stage_rounds
        self.stop_rule = None  # a stage ends at the gap's tolerance; the path at its last alpha
        self.starts = np.cumsum([0] + self.widths[:-1])
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        if rows is not None:
            self.kernels += (kernel_set("enet_folds", options.get("sparse"), self.values),)

    def penalties(self, shared):
        return self.l1[shared.stage], self.l2[shared.stage]

    # -- a fold of blocks that hold every row -------------------------------------------------
    def prepare_block(self, raw, block_id):
        if self.rows is None:
            return super().prepare_block(raw, block_id)
        X, rows = _kernel_matrix(raw["X"]), self.rows
        weights = np.zeros(len(raw["y"]))
        weights[rows] = self.weights if self.weighted else 1.0
        sums, norms2, _ = weighted_column_stats(X, weights, weights)  # (no use for x . v)
        columns = bounded(centred_columns(X, sums, norms2, len(rows), raw["means"]))
        row_map = np.full(len(raw["y"]), -1, dtype=np.int64)
        row_map[rows] = np.arange(len(rows))
        return BlockData(FoldColumns(**vars(columns), root_weights=self.root_weights, rows=rows,
                                     row_map=row_map), initial_parameters(raw["coef"]))

    def _product(self, columns, coef):
        if self.rows is None:
            return super()._product(columns, coef)
        return self._scaled(add_columns(columns.X, coef,
                                        np.zeros(len(columns.row_map)))[self.rows])

    def _pass_residual(self, data, shared):
        shared = super()._pass_residual(data, shared)
        if self.rows is None:
            return shared
        # the full pass reads the fold's residual over all rows
        return replace(shared, r=data.columns.spread(shared.r + shared.offset), offset=0.0)

    def initial_shared(self):
        return PathShared(**vars(super().initial_shared()))

    def pull(self, partials, shared):
        new, report = super().pull(partials, shared)
        if report.gap is None:  # the initial residual's pull
            return PathShared(**vars(new)), PathReport(**vars(report))
        stage_round = shared.stage_round + 1
        report = PathReport(**vars(report), stage=shared.stage)
        if report.gap * self.n_samples > self.tolerance and stage_round < self.stage_rounds:
            return _at(new, shared.stage, stage_round), report
        updates = [partials[b] for b in range(len(self.widths))]
        nonzero = [u.coef != 0.0 for u in updates]
        report = replace(report, path_coef=(
            np.concatenate([start + u.positions[nz]
                            for start, u, nz in zip(self.starts, updates, nonzero)]),
            np.concatenate([u.coef[nz] for u, nz in zip(updates, nonzero)])))
        if shared.stage + 1 == len(self.l1):
            return _at(new, shared.stage, stage_round), replace(report, path_done=True)
        # the next alpha starts from this solution (and the working set's last changes, when
        # the stage ran out of rounds); the gap of this alpha screens nothing at the next
        return replace(_at(new, shared.stage + 1, 0), gap=np.inf), report

    def converged(self, report):
        return bool(report.path_done)


def _at(shared, stage, stage_round):
    return PathShared(**{**vars(shared), "stage": stage, "stage_round": stage_round})


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
