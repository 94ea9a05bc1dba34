"""Implicit feedback: dask_strads.ImplicitMatrixFactorization beside the ``implicit`` library's ALS.

One process run, both libraries on the same interactions and the same splits: ``--splits``
80/20 splits of the interactions (each held out with probability 0.2, split ``s`` seeded
``--seed + s``), and on each ``--seeds`` fits of every library from its own initial factors
(seeds ``--seed``, ``--seed + 1``, ...), ``--factors`` (64) factors and ``--iterations`` (15)
iterations each, the libraries taking turns within each (split, seed) after one untimed warm-up
fit of each (numba compilation, thread pools).

Each library runs as its users get it: dask_strads at its defaults (``--alpha`` and
``--regularization`` override them), ``implicit`` at its defaults given the interaction matrix
(its confidence is ``alpha x`` with ``alpha = 1``, an unseen pair weighs 1), on all cores (its
default) and on one thread. ``--same-objective`` adds "implicit, same objective": implicit given
the confidences ``1 + alpha x`` and dask_strads' regularization, so that both minimise the same
objective. dask_strads runs where it runs by default (in this process, one block, below a
million interactions); with ``--threads``, "dask_strads, threads" runs it under
``dask.config.set(scheduler="threads")``: in this process, as many blocks as cores, their
kernels on threads at once (the same model). With ``--exact``, "dask_strads exact" solves each
row's system exactly instead of by conjugate gradient.

Every model is scored by one function: precision@10 of the top 10 items not seen in training
against the held-out interactions (hits over the sum over users of min(10, held-out count),
``implicit.evaluation.precision_at_k``'s definition, printed beside it for implicit's last model
as a check). Per library: the median precision@10 over the splits x seeds fits (with the lowest
and highest), the median fit time, and the median over the fits of the ratio of its fit time to
dask_strads' on the same (split, seed).

With ``--alphas`` and ``--regularizations`` (lists), instead: dask_strads alone on the grid of
both, each pair fitted on ``--splits`` splits (seeds ``--seed + s``, one fit each); the mean
precision@10 over the splits on each of ``--datasets``, and the mean over the data sets of each
pair's precision relative to its data set's best (how the defaults are chosen).

Data sets (nothing downloaded)
  movielens  ``dask_strads.datasets.load_movielens()`` (671 users x 9066 movies) with the
             ratings >= 4 as interactions (51 568).
  insteval   ``dask_strads.datasets.load_insteval()`` (2972 students x 1128 lecturers) with the
             ratings >= 4 as interactions (32 675).
  powerlaw   ``--users`` x ``--items`` (20 000 x 10 000): each user has a latent taste (one of
             20) and a number of interactions drawn from a power law (mean ~25); items are
             drawn with Zipf popularity (exponent 1), ten times likelier within the user's taste.

    python benchmarks/implicit.py --datasets movielens --seeds 5 --splits 3 --same-objective
    python benchmarks/implicit.py --datasets powerlaw --seeds 1 --splits 3
    python benchmarks/implicit.py --datasets movielens,insteval --splits 2 --seed 100 \\
        --alphas 0.5,1,2,3,5 --regularizations 3,5,8,12,16,20
"""
import os
import statistics
import sys
import time

import dask
import numpy as np
import scipy.sparse as sp

from _common import arguments

# this script's name would shadow the implicit package: look for it elsewhere
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]
from dask_strads import ImplicitMatrixFactorization  # noqa: E402
from dask_strads.datasets import load_insteval, load_movielens  # noqa: E402
from dask_strads.estimators.ranking import pattern, top_items  # noqa: E402

K = 10


def liked(load):
    """The ratings >= 4 of a loader's data set, as interactions of strength 1."""
    ratings = load().matrix
    interactions = (ratings >= 4).astype(np.float64).tocsr()
    interactions.eliminate_zeros()
    return interactions


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
    top, _ = top_items(user_factors[users], item_factors, seen, k, exclude_seen=True)
    hits = test[users[:, None], np.maximum(top, 0)].toarray().astype(bool) & (top >= 0)
    return float(hits.sum() / np.minimum(k, np.diff(test.indptr)[users]).sum())


def strads_fitter(cg_steps=3, scheduler=None):
    def fit(train, args, seed):
        est = ImplicitMatrixFactorization(args.factors, alpha=args.alpha,
                                          regularization=args.regularization,
                                          max_iter=args.iterations, tol=0.0, cg_steps=cg_steps,
                                          random_state=seed)
        with dask.config.set(scheduler=scheduler):
            est.fit(train)
        return est.user_factors_, est.components_.T
    return fit


def implicit_fitter(threads, same_objective=False):
    def fit(train, args, seed):
        from implicit.cpu.als import AlternatingLeastSquares

        params = {}
        if same_objective:
            train = train.copy()
            train.data = 1.0 + args.alpha * train.data
            params["regularization"] = args.regularization
        model = AlternatingLeastSquares(factors=args.factors, iterations=args.iterations,
                                        calculate_training_loss=False, num_threads=threads,
                                        random_state=seed, **params)
        model.fit(train, show_progress=False)
        fit.model = model
        return model.user_factors, model.item_factors
    return fit


def grid(args, data):
    pairs = [(float(a), float(r)) for a in args.alphas.split(",")
             for r in args.regularizations.split(",")]
    names = args.datasets.split(",")
    precision = {}
    for name in names:
        interactions = data[name]()
        splits = [split(interactions, args.seed + s) for s in range(args.splits)]
        for args.alpha, args.regularization in pairs:
            precision[name, args.alpha, args.regularization] = statistics.mean(
                precision_at_k(*strads_fitter()(train, args, args.seed), train, test)
                for train, test in splits)
    best = {name: max(precision[name, a, r] for a, r in pairs) for name in names}
    print(f"precision@10, mean over {args.splits} splits (k={args.factors}, {args.iterations} "
          "iterations); last column: precision / the data set's best, averaged over the sets")
    print(f"| alpha | regularization | {' | '.join(names)} | relative to the best |")
    print("|---|---|" + "---|" * len(names) + "---|")
    for a, r in sorted(pairs, key=lambda p: -statistics.mean(
            precision[name, p[0], p[1]] / best[name] for name in names)):
        relative = statistics.mean(precision[name, a, r] / best[name] for name in names)
        print(f"| {a:g} | {r:g} | {' | '.join(f'{precision[n, a, r]:.4f}' for n in names)} | "
              f"{relative:.4f} |")


def main():
    args = arguments(__doc__, repeats=1, extra=[
        ("--seed", {"type": int, "default": 0}),
        ("--seeds", {"type": int, "default": 5}),
        ("--splits", {"type": int, "default": 3}),
        ("--factors", {"type": int, "default": 64}),
        ("--alpha", {"type": float, "default": None}),
        ("--regularization", {"type": float, "default": None}),
        ("--iterations", {"type": int, "default": 15}),
        ("--users", {"type": int, "default": 20_000}),
        ("--items", {"type": int, "default": 10_000}),
        ("--datasets", {"default": "movielens,powerlaw"}),
        ("--same-objective", {"action": "store_true"}),
        ("--threads", {"action": "store_true"}),
        ("--alphas", {"default": None}),
        ("--regularizations", {"default": None}),
        ("--exact", {"action": "store_true"})])
    from implicit.evaluation import precision_at_k as implicit_precision_at_k
    from threadpoolctl import threadpool_limits

    defaults = ImplicitMatrixFactorization().get_params()
    for name in ("alpha", "regularization"):
        if getattr(args, name) is None:
            setattr(args, name, defaults[name])

    data = {"movielens": lambda: liked(load_movielens), "insteval": lambda: liked(load_insteval),
            "powerlaw": lambda: powerlaw(args.users, args.items, args.seed)}
    if args.alphas:
        return grid(args, data)
    solvers = {"dask_strads": strads_fitter(), "implicit": implicit_fitter(0),
               "implicit, 1 thread": implicit_fitter(1)}
    if args.threads:
        solvers["dask_strads, threads"] = strads_fitter(scheduler="threads")
    if args.same_objective:
        solvers["implicit, same objective"] = implicit_fitter(0, same_objective=True)
    if args.exact:
        solvers["dask_strads exact"] = strads_fitter(cg_steps=0)
    print(f"k={args.factors}, {args.iterations} iterations, {args.splits} splits x {args.seeds} "
          f"seeds; dask_strads alpha={args.alpha}, regularization={args.regularization}")
    with threadpool_limits(1, "blas"):  # implicit's advice; our kernels use no BLAS threads
        for name in args.datasets.split(","):
            interactions = data[name]()
            print(f"\n{name}: {interactions.shape[0]} users x {interactions.shape[1]} items, "
                  f"{interactions.nnz} interactions")
            for fit in solvers.values():
                fit(interactions[:200], args, 0)  # warm-up: numba compilation, thread pools
            times = {solver: [] for solver in solvers}
            precisions = {solver: [] for solver in solvers}
            for s in range(args.splits):
                train, test = split(interactions, args.seed + s)
                for seed in range(args.seed, args.seed + args.seeds):
                    for solver, fit in solvers.items():  # interleaved: load hits them all
                        start = time.perf_counter()
                        users, items = fit(train, args, seed)
                        times[solver].append(time.perf_counter() - start)
                        precisions[solver].append(precision_at_k(users, items, train, test))
                model = solvers["implicit"].model
                print(f"  split {s}: implicit's own precision_at_k of its last model "
                      f"{implicit_precision_at_k(model, train, test, K=K, show_progress=False):.4f}"
                      f" (ours of it: {precisions['implicit'][-1]:.4f}); load "
                      f"{os.getloadavg()[0]:.1f}")
            ours = times["dask_strads"]
            print("| library | precision@10, median (lowest-highest) | fit (median) | "
                  "fit / dask_strads' (median) |")
            print("|---|---|---|---|")
            for solver in solvers:
                p = precisions[solver]
                ratio = statistics.median(t / o for t, o in zip(times[solver], ours))
                print(f"| {solver} | {statistics.median(p):.4f} ({min(p):.4f}-{max(p):.4f}) | "
                      f"{statistics.median(times[solver]):.2f} s | {ratio:.2f} |")


if __name__ == "__main__":
    main()
