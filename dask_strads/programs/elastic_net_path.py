"""The elastic-net path program: the working-set program walking down a grid of alphas in one run.

Each alpha is a *stage*. The blocks keep their coefficients from one stage to the next (a warm
start) and their data stays where it was placed for the whole path. A stage ends when the
duality gap at its alpha is at most the tolerance, or after ``stage_rounds`` rounds; the pull
then records the solution the pushes saw (every non-zero coefficient is among the features a
push sends) and moves on. Gap-safe screening starts afresh at each alpha, from the gap of its
first round: a feature proved zero at one alpha may be non-zero at a smaller one.
"""
from dataclasses import dataclass, replace

import numpy as np

from .elastic_net import ElasticNetProgram, Shared


@dataclass(frozen=True)
class PathShared(Shared):
    stage_round: int = 0  # rounds run at this stage


class ElasticNetPathProgram(ElasticNetProgram):
    """:class:`ElasticNetProgram` over ``alphas`` (in the order given). A report carries the
    ``stage`` its gap was measured at; the report that ends a stage carries its solution,
    ``path_coef``: ``(feature indices, values)`` of the non-zero coefficients."""

    name = "lasso-path"

    def __init__(self, widths, y_centred, alphas, l1_ratio, positive, gap_tolerance,
                 stage_rounds, **options):
        alphas = np.asarray(alphas, dtype=np.float64)
        super().__init__(widths, y_centred, alphas[0], l1_ratio, positive, gap_tolerance,
                         **options)
        self.l1s = alphas * l1_ratio * self.n_samples
        self.l2s = alphas * (1.0 - l1_ratio) * self.n_samples
        self.stage_rounds = stage_rounds
        self.starts = np.cumsum([0] + self.widths[:-1])

    def penalties(self, shared):
        return self.l1s[shared.stage], self.l2s[shared.stage]

    def initial_shared(self):
        return PathShared(**vars(super().initial_shared()))

    def pull(self, partials, shared):
        new, report = super().pull(partials, shared)
        if not report:  # the first pull, of the initial residual
            return PathShared(**vars(new)), report
        stage_round = shared.stage_round + 1
        report["stage"] = shared.stage
        if report["gap"] * self.n_samples > self.tolerance and stage_round < self.stage_rounds:
            return _at(new, shared.stage, stage_round), report
        updates = [partials[b] for b in range(len(self.widths))]
        nonzero = [u.coef != 0.0 for u in updates]
        report["path_coef"] = (
            np.concatenate([start + u.positions[nz]
                            for start, u, nz in zip(self.starts, updates, nonzero)]),
            np.concatenate([u.coef[nz] for u, nz in zip(updates, nonzero)]))
        if shared.stage + 1 == len(self.l1s):
            report["path_done"] = True
            return _at(new, shared.stage, stage_round), report
        # the next alpha starts from this solution (and the working set's last changes, when
        # the stage ran out of rounds); the gap of this alpha screens nothing at the next
        return replace(_at(new, shared.stage + 1, 0), gap=np.inf), report

    def converged(self, report):
        return report.get("path_done", False)


def _at(shared, stage, stage_round):
    return PathShared(**{**vars(shared), "stage": stage, "stage_round": stage_round})
