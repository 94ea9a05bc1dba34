"""Cross-validated RMSE of MatrixFactorization on real ratings, by scikit-learn's cross_val_score:
beside surprise's SVD on the same folds, and over a grid of penalties (how the defaults are
chosen).

A data set's ratings as a table of (user id, item id) pairs and their ratings, rows in a random
order (seed ``--seed``), then ``cross_val_score(MatrixFactorization(n_components=10), pairs,
ratings, cv=5, scoring="neg_root_mean_squared_error")``: 5 contiguous folds of the shuffled rows,
the fits in this process.

Default: MovieLens (``dask_strads.datasets.load_movielens``, 100,004 ratings) at the defaults,
and surprise's SVD (rank 10, its defaults otherwise) fitted and scored on the same folds; each
fold's RMSE, their mean, and the whole cross-validation's wall time (median of ``--repeats``).

With ``--alpha-W`` (a list) and ``--alpha-bias`` (a list, default the estimator's): the mean
RMSE over the 5 folds of every pair of penalties on each of ``--datasets`` (movielens, insteval:
``load_insteval``, 73,421 ratings of lecturers by students), and each pair's RMSE relative to the
best of its data set, averaged over the data sets (the default is the pair of lowest average).

    python benchmarks/mf_cv.py --repeats 3
    python benchmarks/mf_cv.py --datasets movielens,insteval --alpha-W 2,5,8,12,15,18,25 \\
        --alpha-bias 2,5,10
"""
import statistics
import time

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold, cross_val_score

from _common import arguments
from dask_strads import MatrixFactorization
from dask_strads.datasets import load_insteval, load_movielens

RANK, FOLDS = 10, 5
DATASETS = {"movielens": load_movielens, "insteval": load_insteval}


def shuffled_pairs(ratings, seed):
    coo = ratings.matrix.tocoo()
    order = np.random.default_rng(seed).permutation(coo.nnz)
    pairs = pd.DataFrame({"user": ratings.user_ids[coo.row[order]],
                          "item": ratings.item_ids[coo.col[order]]})
    return pairs, coo.data[order]


def strads_rmse(pairs, y, **params):
    return -cross_val_score(MatrixFactorization(n_components=RANK, **params), pairs, y, cv=FOLDS,
                            scoring="neg_root_mean_squared_error")


def surprise_rmse(pairs, y):
    import surprise

    reader = surprise.Reader(rating_scale=(y.min(), y.max()))
    frame = pairs.assign(rating=y)
    scores = []
    for train, test in KFold(FOLDS).split(pairs):  # cross_val_score's folds for cv=5
        trainset = surprise.Dataset.load_from_df(frame.iloc[train], reader).build_full_trainset()
        algo = surprise.SVD(n_factors=RANK, random_state=0).fit(trainset)
        held_out = frame.iloc[test]
        predicted = np.array([algo.predict(u, i).est for u, i in
                              zip(held_out.user, held_out.item)])
        scores.append(float(np.sqrt(np.mean((predicted - held_out.rating.to_numpy()) ** 2))))
    return np.array(scores)


def beside_surprise(args):
    pairs, y = shuffled_pairs(load_movielens(), args.seed)
    print(f"MovieLens: {len(y)} ratings, {pairs.user.nunique()} users, "
          f"{pairs.item.nunique()} items; {FOLDS} folds of the rows shuffled with seed "
          f"{args.seed}")
    rows = []
    for name, run in (("dask_strads MatrixFactorization", strads_rmse),
                      ("surprise SVD", surprise_rmse)):
        times, scores = [], None
        for _ in range(args.repeats):
            start = time.perf_counter()
            scores = run(pairs, y)
            times.append(time.perf_counter() - start)
        rows.append((name, scores, statistics.median(times)))
    strads_time = rows[0][2]
    print("| model | RMSE per fold | mean RMSE | time (median) | time / dask_strads |")
    print("|---|---|---|---|---|")
    for name, scores, seconds in rows:
        print(f"| {name} | {', '.join(f'{s:.4f}' for s in scores)} | {scores.mean():.4f} | "
              f"{seconds:.1f} s | {seconds / strads_time:.2f} |")


def penalty_grid(args):
    grid = [(float(w), float(b)) for w in args.alpha_W.split(",")
            for b in (args.alpha_bias or str(MatrixFactorization().alpha_bias)).split(",")]
    names = args.datasets.split(",")
    rmse = {}
    for name in names:
        pairs, y = shuffled_pairs(DATASETS[name](), args.seed)
        for alpha_W, alpha_bias in grid:
            rmse[name, alpha_W, alpha_bias] = strads_rmse(pairs, y, alpha_W=alpha_W,
                                                          alpha_bias=alpha_bias).mean()
    best = {name: min(rmse[name, w, b] for w, b in grid) for name in names}
    print(f"mean RMSE over {FOLDS} folds (rank {RANK}); last column: RMSE / the data set's best, "
          "averaged over the data sets")
    print(f"| alpha_W | alpha_bias | {' | '.join(names)} | relative to the best |")
    print("|---|---|" + "---|" * len(names) + "---|")
    for alpha_W, alpha_bias in grid:
        relative = np.mean([rmse[name, alpha_W, alpha_bias] / best[name] for name in names])
        print(f"| {alpha_W:g} | {alpha_bias:g} | "
              f"{' | '.join(f'{rmse[name, alpha_W, alpha_bias]:.4f}' for name in names)} | "
              f"{relative:.4f} |")


def main():
    args = arguments(__doc__, repeats=3, extra=[
        ("--seed", {"type": int, "default": 0}),
        ("--datasets", {"default": "movielens,insteval"}),
        ("--alpha-W", {"default": None}),
        ("--alpha-bias", {"default": None})])
    if args.alpha_W:
        penalty_grid(args)
    else:
        beside_surprise(args)


if __name__ == "__main__":
    main()
