"""Two checkouts of dask_strads side by side on the problems of benchmarks/lasso.py (Lasso),
benchmarks/logistic.py (L1 logistic regression at C = 1), or a matrix factorization or LDA fit
of their own (``mf``: ``make_ratings`` 20,000 x 4,000, 400k ratings, rank 32, 10 iterations;
``lda``: ``make_lda_corpus`` 4,000 documents x 20,000 words, 400k tokens, K = 100, 10
iterations, priors kept fixed; the problem argument is ignored): one fit at a time, each in a process of its own
whose ``PYTHONPATH`` is the checkout, the versions alternated, so that the machine's load falls
on both alike.

Each process loads the problem (a Lasso problem generated once, saved under ``--cache``), fits
it once (numba's cache, placing the data) and times ``--repeats`` more fits: CPU seconds of the
process (its threads included; the default executor runs a fit of this size in the process) and
wall seconds. Printed per problem: the rounds and a summary of each version's model (non-zero
coefficients, or the sum of the fitted parameters: they should agree), the median CPU and wall
seconds and new / old, and the load average.

Usage (a checkout made with ``git worktree add /tmp/old <commit>``):

    python benchmarks/versions.py /tmp/old . --problems c,e,a --alternations 3 --repeats 2
    python benchmarks/versions.py /tmp/old . --estimator logistic --problems a,b --repeats 3
    python benchmarks/versions.py /tmp/old . --estimator mf --problems - --repeats 3
"""
import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))


def saved_problem(key, cache):
    """The problem ``key`` of benchmarks/lasso.py, generated once into ``cache``."""
    path = os.path.join(cache, f"lasso_problem_{key}.npz")
    if not os.path.exists(path):
        sys.path.insert(0, HERE)
        from lasso import PROBLEMS
        X, y, frac, _, fit_intercept = PROBLEMS[key]()
        if sp.issparse(X):
            X = sp.csc_matrix(X)
            np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=X.shape, y=y,
                     frac=frac, fit_intercept=fit_intercept)
        else:
            np.savez(path, X=X, y=y, frac=frac, fit_intercept=fit_intercept)
    return path


def lasso_fit(key, cache):
    """A fitting function and its data for the Lasso problem ``key``."""
    import dask_strads
    saved = np.load(saved_problem(key, cache))
    X = saved["X"] if "X" in saved else sp.csc_matrix(
        (saved["data"], saved["indices"], saved["indptr"]), shape=tuple(saved["shape"]))
    y, fit_intercept = saved["y"], bool(saved["fit_intercept"])
    y_centred = y - y.mean() if fit_intercept else y
    X_dot_y = np.asarray(X.T @ y_centred).ravel()
    if fit_intercept:
        X_dot_y -= np.asarray(X.mean(axis=0)).ravel() * y_centred.sum()
    alpha = float(saved["frac"]) * np.abs(X_dot_y).max() / len(y)
    return dask_strads.Lasso(alpha=alpha, fit_intercept=fit_intercept, tol=1e-6), X, y


def logistic_fit(key, cache):
    """A fitting function and its data for the logistic-regression problem ``key``."""
    import dask_strads
    sys.path.insert(0, HERE)
    from logistic import problem
    X, y = problem(key)
    return dask_strads.LogisticRegression(C=1.0, l1_ratio=1.0), X, y


def mf_fit(key, cache):
    import dask_strads
    from dask_strads.datasets import make_ratings
    R = make_ratings(n_users=20_000, n_items=4_000, n_ratings=400_000, rank=32,
                     random_state=0)[0]
    return dask_strads.MatrixFactorization(32, max_iter=10, tol=0.0, random_state=0), R, None


def lda_fit(key, cache):
    import dask_strads
    from dask_strads.datasets import make_lda_corpus
    X = make_lda_corpus(n_docs=4_000, n_words=20_000, n_topics=100, doc_length=100,
                        random_state=0)[0]
    fixed = {"optimize_interval": 0}  # a version that learns the priors keeps them fixed
    if "optimize_interval" not in dask_strads.LatentDirichletAllocation().get_params():
        fixed = {}
    return (dask_strads.LatentDirichletAllocation(100, max_iter=10, random_state=0, **fixed), X,
            None)


ESTIMATORS = {"lasso": lasso_fit, "logistic": logistic_fit, "mf": mf_fit, "lda": lda_fit}


def model_summary(est):
    """What two versions' models should agree on: the non-zero coefficients of a linear model,
    the sum of the fitted parameters of a factorization or topic model."""
    if hasattr(est, "coef_"):
        return int(np.count_nonzero(est.coef_))
    return round(float(np.abs(est.components_).sum()), 6)


def time_fits(estimator, key, cache, repeats):
    """In the checkout's process: the fits' seconds, rounds and non-zeros, as JSON."""
    est, X, y = ESTIMATORS[estimator](key, cache)
    warnings.simplefilter("ignore")
    est.fit(X, y)
    fits = []
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        est.fit(X, y)
        fits.append({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                     "rounds": int(np.ravel(est.n_iter_)[0]), "model": model_summary(est)})
    print(json.dumps(fits))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--estimator", choices=sorted(ESTIMATORS), default="lasso")
    parser.add_argument("--problems", default="c,e,a")
    parser.add_argument("--alternations", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cache", default="/tmp")
    args = parser.parse_args(argv)
    checkouts = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    for key in args.problems.split(","):
        if args.estimator == "lasso":
            saved_problem(key, args.cache)  # generated once, before the versions take turns
        fits = {"old": [], "new": []}
        for _ in range(args.alternations):
            for name, checkout in checkouts.items():
                done = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--fit", args.estimator, key,
                     args.cache, str(args.repeats)],
                    env={**os.environ, "PYTHONPATH": checkout}, cwd=checkout,
                    capture_output=True, text=True, check=True)
                fits[name] += json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{args.estimator} {key}: {len(fits['old'])} fits a version; rounds "
              f"{fits['old'][0]['rounds']} / {fits['new'][0]['rounds']}, model "
              f"{fits['old'][0]['model']} / {fits['new'][0]['model']} (old / new)")
        for measure in ("cpu", "wall"):
            old, new = (np.median([f[measure] for f in fits[n]]) for n in ("old", "new"))
            print(f"  {measure}: old {old:.3f} s, new {new:.3f} s, new / old {new / old:.3f}")
        print(f"  load average: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--fit"]:
        time_fits(*sys.argv[2:5], int(sys.argv[5]))
    else:
        main()
