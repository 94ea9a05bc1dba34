"""Implicit feedback: dask_strads.ImplicitMatrixFactorization beside the ``implicit`` library's ALS.

One process run, both on the same interactions, the same 80/20 split (each interaction held out
with probability 0.2, seed ``--seed``), the same model: ``--factors`` (64), ``--regularization``,
confidence ``1 + alpha r`` (``--alpha``) and ``--iterations`` (15) iterations of alternating least
squares with 3 conjugate-gradient steps a row (both libraries' default solver; with
``--exact``, "dask_strads exact" solves each row's system exactly instead). ``implicit``
weighs an interaction by the value it is given, so it gets the matrix of ``1 + alpha r``: the
same objective. Both are scored by one function: precision@10 of the top 10 items not seen in
training, against the held-out interactions (hits / sum over users of min(10, held-out count),
``implicit.evaluation.precision_at_k``'s definition, which is printed beside it as a check).

Data sets (nothing downloaded)
  movielens  ``dask_strads.datasets.load_movielens()`` (671 users x 9066 movies) with the
             ratings >= 4 as interactions (51 568).
  powerlaw   ``--users`` x ``--items`` (20 000 x 10 000): each user has a latent taste (one of
             20) and a number of interactions drawn from a power law (mean ~25); items are
             drawn with Zipf popularity (exponent 1), ten times likelier within the user's taste.

Per data set and library: median fit seconds over ``--repeats`` fits, the libraries taking
turns within each repeat (after one untimed
warm-up fit of each, which compiles the numba kernels), the mean precision@10 over those fits
(each from its own initial factors, seeds ``--seed``, ``--seed`` + 1, ...), and the ratio of the fit
time to implicit's (multi-threaded, its default: one thread per core) and to implicit on one
thread. dask_strads runs where it runs by default (in this process, one block, below a million
interactions).

    python benchmarks/implicit.py --repeats 5 --datasets movielens --exact
    python benchmarks/implicit.py --repeats 3 --datasets powerlaw
"""
import os
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

from _common import arguments

# this script's name would shadow the implicit package: look for it elsewhere
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]
from dask_strads import ImplicitMatrixFactorization
from dask_strads.datasets import load_movielens
from dask_strads.estimators.ranking import pattern, top_items

K = 10


def movielens():
    ratings = load_movielens().matrix
    liked = (ratings >= 4).astype(np.float64).tocsr()
    liked.eliminate_zeros()
    return liked


def powerlaw(n_users, n_items, seed, tastes=20):
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, n_items + 1)
    taste_of_item = rng.integers(tastes, size=n_items)
    taste_of_user = rng.integers(tastes, size=n_users)
    counts = np.minimum((rng.pareto(1.5, n_users) + 1) * 8, n_items // 4).astype(int)
    rows, cols = [], []
    for taste in range(tastes):
        users = np.flatnonzero(taste_of_user == taste)
        weight = popularity * np.where(taste_of_item == taste, 10.0, 1.0)
        items = rng.choice(n_items, size=counts[users].sum(), p=weight / weight.sum())
        rows.append(np.repeat(users, counts[users]))
        cols.append(items)
    X = sp.csr_matrix((np.ones(sum(map(len, rows))), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n_users, n_items))
    X.data[:] = 1.0  # repeated draws are one interaction
    return X


def split(X, seed):
    held = np.random.default_rng(seed).random(X.nnz) < 0.2
    coo = X.tocoo()
    train, test = (sp.csr_matrix((coo.data[m], (coo.row[m], coo.col[m])), shape=X.shape)
                   for m in (~held, held))
    return train, test


def precision_at_k(user_factors, item_factors, train, test, k=K):
    users = np.flatnonzero(np.diff(test.indptr))
    seen = pattern(train.indptr, train.indices, train.shape[1])[users]
    top = top_items(user_factors[users], item_factors, seen, k, exclude_seen=True)
    hits = test[users[:, None], np.maximum(top, 0)].toarray().astype(bool) & (top >= 0)
    return float(hits.sum() / np.minimum(k, np.diff(test.indptr)[users]).sum())


def strads_fitter(cg_steps):
    def fit(train, args, seed):
        est = ImplicitMatrixFactorization(args.factors, alpha=args.alpha,
                                          regularization=args.regularization,
                                          max_iter=args.iterations, tol=0.0, cg_steps=cg_steps,
                                          random_state=seed).fit(train)
        return est.user_factors_, est.components_.T
    return fit


def implicit_fitter(threads):
    def fit(train, args, seed):
        from implicit.cpu.als import AlternatingLeastSquares

        model = AlternatingLeastSquares(factors=args.factors, regularization=args.regularization,
                                        alpha=1.0, iterations=args.iterations, use_cg=True,
                                        calculate_training_loss=False, num_threads=threads,
                                        random_state=seed)
        confidence = train.copy()
        confidence.data = 1.0 + args.alpha * confidence.data
        model.fit(confidence, show_progress=False)
        fit.model = model
        return model.user_factors, model.item_factors
    return fit


def main():
    args = arguments(__doc__, repeats=3, extra=[
        ("--seed", {"type": int, "default": 0}),
        ("--factors", {"type": int, "default": 64}),
        ("--alpha", {"type": float, "default": 2.0}),
        ("--regularization", {"type": float, "default": 1.0}),
        ("--iterations", {"type": int, "default": 15}),
        ("--users", {"type": int, "default": 20_000}),
        ("--items", {"type": int, "default": 10_000}),
        ("--datasets", {"default": "movielens,powerlaw"}),
        ("--exact", {"action": "store_true"})])
    from implicit.evaluation import precision_at_k as implicit_precision_at_k
    from threadpoolctl import threadpool_limits

    data = {"movielens": movielens, "powerlaw": lambda: powerlaw(args.users, args.items, args.seed)}
    solvers = {"dask_strads": strads_fitter(3), "implicit": implicit_fitter(0),
               "implicit 1 thread": implicit_fitter(1)}
    if args.exact:
        solvers["dask_strads exact"] = strads_fitter(0)
    print(f"k={args.factors}, alpha={args.alpha}, regularization={args.regularization}, "
          f"{args.iterations} iterations, {args.repeats} repeats")
    with threadpool_limits(1, "blas"):  # implicit's advice; our kernels use no BLAS threads
        for name in args.datasets.split(","):
            train, test = split(data[name](), args.seed)
            print(f"\n{name}: {train.shape[0]} users x {train.shape[1]} items, {train.nnz} "
                  f"training and {test.nnz} held-out interactions")
            for fit in solvers.values():
                fit(train[:200], args, 0)  # warm-up: numba compilation, thread pools
            times = {solver: [] for solver in solvers}
            precisions = {solver: [] for solver in solvers}
            for repeat in range(args.repeats):  # interleaved: a change of load hits them all
                for solver, fit in solvers.items():
                    start = time.perf_counter()
                    users, items = fit(train, args, args.seed + repeat)
                    times[solver].append(time.perf_counter() - start)
                    precisions[solver].append(precision_at_k(users, items, train, test))
            model = solvers["implicit"].model
            print(f"  implicit's own precision_at_k of its last model: "
                  f"{implicit_precision_at_k(model, train, test, K=K, show_progress=False):.4f} "
                  f"(ours of it: {precisions['implicit'][-1]:.4f})")
            ours = statistics.median(times["dask_strads"])
            print("| library | fit (median) | precision@10 (mean) | fit / dask_strads' |")
            print("|---|---|---|---|")
            for solver in solvers:
                seconds = statistics.median(times[solver])
                print(f"| {solver} | {seconds:.2f} s | {statistics.mean(precisions[solver]):.4f} "
                      f"| {seconds / ours:.2f} |")


if __name__ == "__main__":
    main()
