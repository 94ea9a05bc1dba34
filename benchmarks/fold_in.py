"""New users folded in (``partial_fit_users``) against a full refit, beside the ``implicit``
library's ``partial_fit_users``, in one process run.

MovieLens (``dask_strads.datasets.load_movielens``, ratings >= 4 as interactions; nothing
downloaded). For each of ``--repeats`` seeds: a tenth of the users (drawn with the seed) are new,
and a fifth of every user's interactions are held out. Each library then

- refits on the training interactions of every user ("full refit"), and
- fits on those of the other users, then folds the new users in from their training
  interactions ("fold-in"), the items left as the fit made them,

with 64 factors and 15 iterations, dask_strads at its defaults, implicit at its own (64
factors, 15 iterations). Scored alike: precision@10 of the new users' top 10 items not seen in
training against their held-out interactions (hits over the sum of min(10, held-out count)).
Printed: medians over the seeds of each precision, fold-in / full refit, and the seconds of
the refit and of the fold-in (after one untimed warm-up of each library).

    python benchmarks/fold_in.py --repeats 3 --markdown
"""
import os
import statistics
import sys
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp

from _common import arguments, precision_at_k as precision

# implicit.py beside this script would shadow the implicit package: look for it elsewhere
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]
from implicit.cpu.als import AlternatingLeastSquares  # noqa: E402

from dask_strads import ImplicitMatrixFactorization  # noqa: E402
from dask_strads.datasets import load_movielens  # noqa: E402

FACTORS, ITERATIONS = 64, 15


def interactions():
    X = (load_movielens().matrix >= 4).astype(np.float64).tocsr()
    X.eliminate_zeros()
    return X[X.getnnz(axis=1) > 0]


def split(X, seed):
    """``(old users' training rows, new users' training rows, new users' held-out rows)``."""
    rng = np.random.default_rng(seed)
    new = rng.random(X.shape[0]) < 0.1
    held = rng.random(X.nnz) < 0.2
    coo = X.tocoo()
    train, test = (sp.csr_matrix((coo.data[m], (coo.row[m], coo.col[m])), shape=X.shape)
                   for m in (~held, held))
    return train[~new], train[new], test[new]


def triplets(X, first_id):
    coo = X.tocoo()
    return pd.DataFrame({"user": coo.row + first_id, "item": coo.col, "rating": coo.data})


def ours(old, new, seed):
    start = time.perf_counter()
    full = ImplicitMatrixFactorization(FACTORS, max_iter=ITERATIONS, random_state=seed).fit(
        sp.vstack([old, new], format="csr"))
    refit = time.perf_counter() - start
    est = ImplicitMatrixFactorization(FACTORS, max_iter=ITERATIONS, random_state=seed).fit(old)
    start = time.perf_counter()
    est.partial_fit_users(triplets(new, old.shape[0]))
    folded = time.perf_counter() - start
    items = est.components_.T
    return (full.user_factors_[old.shape[0]:], full.components_.T,
            est.user_factors_[old.shape[0]:], items, refit, folded)


def implicits(old, new, seed):
    def model():
        return AlternatingLeastSquares(factors=FACTORS, iterations=ITERATIONS,
                                       random_state=seed)

    start = time.perf_counter()
    full = model()
    full.fit(sp.vstack([old, new], format="csr"), show_progress=False)
    refit = time.perf_counter() - start
    est = model()
    est.fit(old, show_progress=False)
    start = time.perf_counter()
    est.partial_fit_users(np.arange(old.shape[0], old.shape[0] + new.shape[0]), new)
    folded = time.perf_counter() - start
    return (full.user_factors[old.shape[0]:], full.item_factors,
            est.user_factors[old.shape[0]:], est.item_factors, refit, folded)


def main():
    args = arguments(__doc__, repeats=3)
    X = interactions()
    libraries = {"dask_strads": ours, "implicit": implicits}
    for run in libraries.values():  # warm-up: numba, thread pools
        run(*split(X, 999)[:2], 999)
    rows = {name: [] for name in libraries}
    for seed in range(args.repeats):
        old, new, held_out = split(X, seed)
        for name, run in libraries.items():
            full_users, full_items, users, items, refit, folded = run(old, new, seed)
            rows[name].append((precision(full_users, full_items, new, held_out),
                               precision(users, items, new, held_out), refit, folded))
    header = ["library", "precision@10 full refit", "precision@10 fold-in", "fold-in / refit",
              "refit s", "fold-in s"]
    if args.markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for name, measured in rows.items():
        full, fold, refit, folded = (statistics.median(column) for column in zip(*measured))
        cells = [name, f"{full:.4f}", f"{fold:.4f}", f"{fold / full:.3f}", f"{refit:.3f}",
                 f"{folded:.4f}"]
        print("| " + " | ".join(cells) + " |" if args.markdown else "  ".join(cells))


if __name__ == "__main__":
    main()
