"""Cross-validated RMSE of MatrixFactorization on MovieLens 100k (user, item) pairs, by
scikit-learn's cross_val_score, beside surprise's SVD on the same folds.

The 100,004 ratings of MovieLens (``dask_strads.datasets.load_movielens``) as a table of
(user id, movie id) pairs and their ratings, rows in a random order (seed ``--seed``), then
``cross_val_score(MatrixFactorization(n_components=10), pairs, ratings, cv=5,
scoring="neg_root_mean_squared_error")``: 5 contiguous folds of the shuffled rows, the fits in
this process. surprise's SVD (rank 10, its defaults otherwise) is fitted and scored on the same
folds. Each fold's RMSE, their mean, and the whole cross-validation's wall time (median of
``--repeats``) are printed.

    python benchmarks/mf_cv.py --repeats 3
"""
import statistics
import time

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold, cross_val_score

from _common import arguments
from dask_strads import MatrixFactorization
from dask_strads.datasets import load_movielens

RANK, FOLDS = 10, 5


def movielens_pairs(seed):
    ratings = load_movielens()
    coo = ratings.matrix.tocoo()
    order = np.random.default_rng(seed).permutation(coo.nnz)
    pairs = pd.DataFrame({"user": ratings.user_ids[coo.row[order]],
                          "item": ratings.item_ids[coo.col[order]]})
    return pairs, coo.data[order]


def strads_rmse(pairs, y):
    return -cross_val_score(MatrixFactorization(n_components=RANK), pairs, y, cv=FOLDS,
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


def main():
    args = arguments(__doc__, repeats=3, extra=[("--seed", {"type": int, "default": 0})])
    pairs, y = movielens_pairs(args.seed)
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


if __name__ == "__main__":
    main()
