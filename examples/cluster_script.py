"""A cluster script: connect to a Dask cluster, read data files on its workers, fit, save, load
and predict.

    python examples/cluster_script.py --scheduler-file ~/scheduler.json
    python examples/cluster_script.py --scheduler-address tcp://10.0.0.1:8786
    python examples/cluster_script.py                 # a local cluster of 2 worker processes

With --data DIR it reads DIR/train.svm (Lasso), DIR/docword.NAME.txt[.gz] and its vocab.NAME.txt
(LDA), DIR/ratings.parquet or DIR/ratings.csv with user, item, rating columns (MF, and implicit
MF with the ratings as interaction strengths); without, it
writes small files of each format into a temporary folder first. The data must be readable
from the workers (a shared file system or an fsspec URL); the models are written where this
script runs.
"""
import argparse
import os
import tempfile

import numpy as np
from distributed import Client, LocalCluster

import dask_strads
from dask_strads import (ImplicitMatrixFactorization, Lasso, LatentDirichletAllocation,
                         MatrixFactorization, io)


def connect(args):
    """The cluster's client: by scheduler file, by address, or a local cluster."""
    if args.scheduler_file:
        return Client(scheduler_file=args.scheduler_file), None
    if args.scheduler_address:
        return Client(args.scheduler_address), None
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster), cluster


def write_example_files(folder, seed=0):
    """A regression problem (svmlight), a corpus (bag-of-words) and ratings (Parquet)."""
    import pandas as pd
    import scipy.sparse as sp
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(seed)
    X = sp.random(2000, 500, density=0.1, format="csr", random_state=seed)
    y = X[:, :20] @ rng.normal(size=20) + 0.01 * rng.normal(size=2000)
    dump_svmlight_file(X, y, os.path.join(folder, "train.svm"))

    counts = sp.random(300, 200, density=0.05, format="coo", random_state=seed)
    counts.data = np.ceil(counts.data * 5).astype(int)
    with open(os.path.join(folder, "docword.toy.txt"), "w") as out:
        out.write(f"{counts.shape[0]}\n{counts.shape[1]}\n{counts.nnz}\n")
        out.writelines(f"{d + 1} {w + 1} {c}\n" for d, w, c in
                       zip(counts.row, counts.col, counts.data))
    with open(os.path.join(folder, "vocab.toy.txt"), "w") as out:
        out.writelines(f"word{j}\n" for j in range(counts.shape[1]))

    users = [f"user{i:04d}" for i in rng.integers(0, 300, 6000)]
    items = [f"item{j:03d}" for j in rng.integers(0, 100, 6000)]
    ratings = pd.DataFrame({"user": users, "item": items,
                            "rating": rng.integers(1, 11, 6000) / 2})
    ratings.drop_duplicates(["user", "item"]).to_parquet(os.path.join(folder, "ratings.parquet"))


def find(folder, *names):
    for name in names:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"none of {names} in {folder}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheduler-file")
    parser.add_argument("--scheduler-address")
    parser.add_argument("--data", help="a folder of data files (default: written here)")
    parser.add_argument("--models", default=".", help="where to save the models")
    args = parser.parse_args()

    client, cluster = connect(args)
    print("cluster:", client)
    data = args.data or tempfile.mkdtemp(prefix="dask-strads-example-")
    if not args.data:
        write_example_files(data)
    try:
        # Lasso from svmlight: each worker parses its own byte range of the file
        X, y = io.read_svmlight(find(data, "train.svm", "train.libsvm"), client=client)
        lasso = Lasso(alpha=1e-3)
        lasso.client = client
        lasso.fit(X, y)
        print(f"Lasso: {np.count_nonzero(lasso.coef_)} nonzero coefficients, "
              f"{lasso.n_iter_} rounds")

        # LDA from a UCI bag-of-words file and its vocabulary
        docword = next(os.path.join(data, f) for f in sorted(os.listdir(data))
                       if f.startswith("docword."))
        counts, words = io.read_bag_of_words(docword, client=client)
        lda = LatentDirichletAllocation(n_components=5, max_iter=20, random_state=0)
        lda.client = client
        lda.fit(counts)
        lda.vocabulary_ = words
        print("LDA topic 0:", " ".join(words[np.argsort(-lda.components_[0])[:6]]))

        # MF from a (user, item, rating) table with raw ids
        table = io.read_triplets(find(data, "ratings.parquet", "ratings.csv"), client=client)
        mf = MatrixFactorization(n_components=5, max_iter=20, random_state=0)
        mf.client = client
        mf.fit(table)
        print(f"MF: {len(mf.user_ids_)} users x {len(mf.item_ids_)} items, "
              f"train RMSE {mf.history_[-1]['rmse']:.3f}")

        # implicit feedback from the same table: each rating an interaction's strength
        implicit = ImplicitMatrixFactorization(n_components=5, max_iter=10, random_state=0)
        implicit.client = client
        implicit.fit(table)

        # save, load (no pickle; no cluster needed to load), predict
        for name, model in (("lasso", lasso), ("lda", lda), ("mf", mf), ("implicit", implicit)):
            dask_strads.save(model, os.path.join(args.models, f"{name}.npz"))
        lasso2 = dask_strads.load(os.path.join(args.models, "lasso.npz"))
        lda2 = dask_strads.load(os.path.join(args.models, "lda.npz"))
        mf2 = dask_strads.load(os.path.join(args.models, "mf.npz"))
        implicit2 = dask_strads.load(os.path.join(args.models, "implicit.npz"))
        rows, targets = client.compute([X[:500], y[:500]], sync=True)
        print("Lasso predictions:", np.round(lasso2.predict(rows[:4]), 3),
              f"R^2 on 500 rows: {lasso2.score(rows, targets):.3f}")
        print("LDA topics of document 0:",
              np.round(lda2.transform(client.compute(counts[:1]).result())[0], 2))
        user = mf2.user_ids_[:1].tolist()[0]  # a plain int or str (not np.int16(3))
        print(f"MF: best items for {user}:", mf2.recommend([user], n=3)[0].tolist())
        print(f"implicit MF: best items for {user}:",
              implicit2.recommend([user], n=3)[0].tolist())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


if __name__ == "__main__":
    main()
