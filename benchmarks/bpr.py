"""BayesianPersonalizedRanking beside the ``implicit`` library's, in one process run.

MovieLens (``dask_strads.datasets.load_movielens``, ratings >= 4 as interactions; nothing
downloaded), a fifth of the interactions held out (seeded by the repeat). Both libraries at
implicit's defaults (100 factors, learning rate 0.01, regularization 0.01, 100 iterations),
seeded alike, after one untimed warm-up fit each (numba compilation, thread pools); implicit on
all cores (its default), dask_strads where a fit of this size runs by default (in this process,
one block). Scored alike: precision@10 of the top 10 items not seen in training against the
held-out interactions (hits over the sum of min(10, held-out count)). Printed: medians over
``--repeats`` of precision@10 and fit seconds, and dask_strads / implicit.

    python benchmarks/bpr.py --repeats 3 --markdown
"""
import os
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

from _common import arguments, precision_at_k as precision

# implicit.py beside this script would shadow the implicit package: look for it elsewhere
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]
from implicit.cpu.bpr import BayesianPersonalizedRanking as ImplicitBPR  # noqa: E402

from dask_strads import BayesianPersonalizedRanking  # noqa: E402
from dask_strads.datasets import load_movielens  # noqa: E402



def split(seed):
    X = (load_movielens().matrix >= 4).astype(np.float64).tocsr()
    X.eliminate_zeros()
    held = np.random.default_rng(seed).random(X.nnz) < 0.2
    coo = X.tocoo()
    return (sp.csr_matrix((coo.data[m], (coo.row[m], coo.col[m])), shape=X.shape)
            for m in (~held, held))


def ours(train, seed):
    est = BayesianPersonalizedRanking(random_state=seed).fit(train)
    return est._scoring_rows()


def implicits(train, seed):
    model = ImplicitBPR(random_state=seed)
    model.fit(train, show_progress=False)
    return model.user_factors, model.item_factors


def main():
    args = arguments(__doc__, repeats=3)
    libraries = {"dask_strads": ours, "implicit": implicits}
    train, _ = split(999)
    for fit in libraries.values():
        fit(train, 999)
    measured = {name: [] for name in libraries}
    for seed in range(args.repeats):
        train, test = split(seed)
        for name, fit in libraries.items():
            start = time.perf_counter()
            users, items = fit(train, seed)
            seconds = time.perf_counter() - start
            measured[name].append((precision(users, items, train, test), seconds))
    medians = {name: [statistics.median(c) for c in zip(*rows)] for name, rows in
               measured.items()}
    header = ["library", "precision@10", "fit s", "dask_strads / library (s)"]
    if args.markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for name, (p, s) in medians.items():
        cells = [name, f"{p:.4f}", f"{s:.3f}", f"{medians['dask_strads'][1] / s:.2f}"]
        print("| " + " | ".join(cells) + " |" if args.markdown else "  ".join(cells))


if __name__ == "__main__":
    main()
