"""Graphs per round: how many Dask graphs a fit on a cluster submits for its rounds, fused
epochs against round graphs (the reference path), and whether the models are the same.

For each program, one LocalCluster of P single-threaded worker processes fits the scaling
problems of benchmarks/scaling.py with the estimators' defaults (checkpoints every 10 rounds
included), twice: as a fit runs by default (fused epochs, F chosen by the engine) and with
``dask-strads.max-epoch-rounds`` 1 (a graph a round). Printed per program: the rounds, the
graphs submitted for them (``history_.stats.graphs``, rounds behind the stop included: placing the data and collecting the
model left out), graphs per round, and the largest difference between the two fits' models
(coefficients, factors or topic-word counts), relative to the largest value. Counts, not
times: they do not depend on the machine's load (F does only through the rule that makes an
epoch at most as long as keeps a graph's measured cost under 5% of its compute, which these
short rounds never bind).

Usage
  python benchmarks/graphs_per_round.py --workers 4
  python benchmarks/graphs_per_round.py --workers 2,4 --programs lasso,mf --markdown
"""
import os
import sys

import dask
import numpy as np
from distributed import Client, LocalCluster

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from _common import arguments  # noqa: E402
from scaling import lasso_data, lda_data, logistic_data, mf_data  # noqa: E402
from dask_strads import (BayesianPersonalizedRanking, ImplicitMatrixFactorization,  # noqa: E402
                         Lasso, LatentDirichletAllocation, LogisticRegression,
                         MatrixFactorization)


def lasso(data, P, **params):
    X, y = data
    alpha = 0.1 * np.abs(X.T @ y).max() / X.shape[0]
    est = Lasso(alpha, fit_intercept=False, n_blocks=P, **params).fit(X, y)
    return est, est.coef_


def lasso_priority(data, P):
    return lasso(data, P, schedule="priority", max_iter=40, random_state=0)


def logistic(data, P):
    X, y = data
    est = LogisticRegression(C=1.0, l1_ratio=1.0, n_blocks=P).fit(X, y)
    return est, est.coef_


def lda(X, P):
    est = LatentDirichletAllocation(100, max_iter=5, random_state=0).fit(X)
    return est, est.components_


def mf(X, P, estimator=MatrixFactorization, **params):
    est = estimator(16, max_iter=20, random_state=0, **params).fit(X)
    return est, np.vstack([est.user_factors_, est.components_.T])


def implicit_mf(X, P):
    X = X.copy()
    X.data = np.abs(X.data) + 1.0
    return mf(X, P, ImplicitMatrixFactorization)


def bpr(X, P):
    X = X.copy()
    X.data = np.ones_like(X.data)
    est = BayesianPersonalizedRanking(16, max_iter=10, random_state=0).fit(X)
    return est, np.vstack([est.user_factors_, est.components_.T])


#: name -> (make the data, fit(data, P) -> (estimator, its model as one array)).
PROGRAMS = {"lasso": (lasso_data, lasso), "lasso_priority": (lasso_data, lasso_priority),
            "logistic": (logistic_data, logistic), "lda": (lda_data, lda), "mf": (mf_data, mf),
            "implicit_mf": (mf_data, implicit_mf), "bpr": (mf_data, bpr)}


def measure(name, P):
    make, fit = PROGRAMS[name]
    data = make()
    rows = {}
    for label, rounds in (("fused", None), ("round graphs", 1)):
        settings = {} if rounds is None else {"dask-strads.max-epoch-rounds": rounds}
        with dask.config.set(settings):
            est, model = fit(data, P)
        history = est.history_
        # to the stop: an in-place program's stats count the rounds submitted behind it too
        rows[label] = (history.records[-1]["round"] + 1, history.stats.graphs, model)
    fused, reference = rows["fused"][2], rows["round graphs"][2]
    difference = np.abs(fused - reference).max() / max(np.abs(reference).max(), 1e-300)
    return rows, difference


def main():
    args = arguments(__doc__, 1, [
        ("--workers", dict(default="4")),
        ("--programs", dict(default=",".join(PROGRAMS)))])
    header = ("program", "P", "rounds", "graphs fused", "graphs / round fused",
              "graphs round graphs", "graphs / round, round graphs", "model difference")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|" + "---:|" * (len(header) - 1))
    else:
        print("  ".join(header))
    for P in map(int, args.workers.split(",")):
        with LocalCluster(n_workers=P, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            for name in args.programs.split(","):
                rows, difference = measure(name, P)
                (rounds, graphs, _), (_, reference_graphs, _) = (rows["fused"],
                                                                  rows["round graphs"])
                cells = (name, P, rounds, graphs, f"{graphs / rounds:.3f}", reference_graphs,
                         f"{reference_graphs / rounds:.3f}", f"{difference:.1e}")
                print(("| " + " | ".join(map(str, cells)) + " |") if args.markdown
                      else "  ".join(map(str, cells)), flush=True)


if __name__ == "__main__":
    main()
