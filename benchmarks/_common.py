"""What the benchmark scripts share: their command line and the load they start under, and
how the recommender benchmarks score a ranking."""
import argparse
import os
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning


#: The cost model's scheduler CPU a graph and a task (seconds; docs/scaling.md, fitted to the
#: round graphs of farms at P = 16 and 32), for the "predicted" columns.
GRAPH_CPU, TASK_CPU = 11.4e-3, 0.29e-3


def predicted_scheduler_cpu(graphs, graph_tasks, rounds):
    """The cost model's scheduler CPU a round: ``graphs`` graphs of ``graph_tasks`` tasks in
    all, over ``rounds`` rounds."""
    return (graphs * GRAPH_CPU + graph_tasks * TASK_CPU) / max(rounds, 1)


def arguments(doc, repeats, extra=()):
    """Parse ``--repeats`` and ``--markdown`` (plus ``extra``: ``(flag, options)`` pairs),
    silence ConvergenceWarning (the fits run to their own stopping rule) and print the load."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--markdown", action="store_true")
    for flag, options in extra:
        parser.add_argument(flag, **options)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    print(f"load average at start: {os.getloadavg()}")
    return args


def precision_at_k(user_rows, item_rows, seen, held_out, k=10):
    """precision@k of the scores ``user_rows @ item_rows.T``: the held-out items among each
    user's top ``k`` items not ``seen``, over the sum of min(k, held-out count)."""
    scores = user_rows @ item_rows.T
    scores[seen.nonzero()] = -np.inf
    top = np.argsort(-scores, axis=1)[:, :k]
    hits = np.take_along_axis(held_out.toarray() > 0, top, axis=1).sum()
    return float(hits / np.minimum(k, held_out.getnnz(axis=1)).sum())
