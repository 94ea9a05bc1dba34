"""What a round costs: the Dask floor on this machine beside the engine's per-round overhead.

One process run, on one kind of cluster at a time (two single-threaded workers: ``threads``,
the embedded default, or ``processes``):

floor, chain   a chain of no-op tasks hopping between the two workers, one graph per task:
               the latency of one dependent task.
floor, round   a two-block BSP round built as the engine builds it: one graph per round with a
               no-op push pinned to each worker and a no-op pull on the first, pipelined two
               rounds deep. A round of any program costs at least this.
engine         the engine's rounds for the toy program (block-Jacobi on 4 x 4 blocks: no work)
               (block-Jacobi on 2 blocks: no work, the floor round's shape) and for fits
               of Lasso, LDA and MF on small data: per-round overhead
               ``(wall - compute) / rounds`` from the history, where compute adds per round the
               slowest push and the pull. Also the tasks a round of each program takes.

Each figure is the median of ``--repeats`` runs; ratios are to the floor round measured in the
same run.

Usage
  python benchmarks/engine.py                       # threads and processes, 5 repeats
  python benchmarks/engine.py --clusters threads --repeats 3 --markdown
"""
import os
import statistics
import sys
import time
from collections import deque

import numpy as np
from dask._task_spec import Task, TaskRef
from distributed import Client, LocalCluster

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from benchmarks._common import arguments  # noqa: E402

from dask_strads import Lasso, LatentDirichletAllocation, MatrixFactorization  # noqa: E402
from dask_strads.datasets import (  # noqa: E402
    alpha_max, make_correlated_regression, make_lda_corpus, make_ratings)
from dask_strads.engine import DistributedExecutor, Engine  # noqa: E402
from dask_strads.programs import jacobi_blocks  # noqa: E402

CHAIN_TASKS = 200
FLOOR_ROUNDS = 200
TOY_ROUNDS = 200


def noop(*args):
    return None


def floor_chain(client, workers):
    start, previous = time.perf_counter(), None
    for i in range(CHAIN_TASKS):
        key = f"floor-chain-{i}-{time.monotonic_ns()}"
        args = () if previous is None else (previous,)
        previous = client.get({key: Task(key, noop, *args)}, [key], sync=False,
                              workers=[workers[i % 2]], allow_other_workers=False)[0]
    previous.result()
    return (time.perf_counter() - start) / CHAIN_TASKS


def floor_round(client, workers):
    executor = DistributedExecutor(client)
    pending, pushes, pulled = deque(), [None, None], None
    start = time.perf_counter()
    for t in range(FLOOR_ROUNDS):
        tag = f"{t}-{time.monotonic_ns()}"
        graph = {w: {} for w in workers}
        for b, w in enumerate(workers):
            key = f"floor-push-{b}-{tag}"
            graph[w][key] = Task(key, noop, *[h for h in (pushes[b], pulled) if h is not None])
        pull_key = f"floor-pull-{tag}"
        graph[workers[0]][pull_key] = Task(pull_key, noop,
                                           *[TaskRef(k) for k in graph[workers[0]]],
                                           *[TaskRef(k) for k in graph[workers[1]]])
        handles = executor.submit(graph)
        pushes = [handles[f"floor-push-{b}-{tag}"] for b in range(2)]
        pulled = handles[pull_key]
        pending.append(pulled)
        while len(pending) > 2:
            pending.popleft().result()
    while pending:
        pending.popleft().result()
    return (time.perf_counter() - start) / FLOOR_ROUNDS


def toy(client):
    rng = np.random.default_rng(0)
    A = rng.uniform(0, 1, (16, 16)) + 16 * np.eye(16)
    program, blocks = jacobi_blocks(A, rng.standard_normal(16), 2)  # the floor round's shape
    return Engine(program, client=client, max_rounds=TOY_ROUNDS).run(blocks).history.stats


def overhead(stats):
    return (stats.wall_seconds - stats.compute_seconds) / stats.rounds


def estimator_fits():
    X, y, _ = make_correlated_regression(1000, 4000, 40, rho=0.9, random_state=0)
    counts, _, _ = make_lda_corpus(n_docs=2000, n_words=3000, n_topics=20, doc_length=100,
                                   random_state=0)
    ratings = make_ratings(n_users=3000, n_items=1000, n_ratings=60_000, random_state=0)[0]
    return {
        "lasso": (Lasso(alpha=0.1 * alpha_max(X, y), tol=1e-6, n_blocks=2), (X, y)),
        "lda": (LatentDirichletAllocation(n_components=20, max_iter=10, random_state=0), (counts,)),
        "mf": (MatrixFactorization(n_components=10, max_iter=10, tol=0, random_state=0),
               (ratings,)),
    }


def program_fit(client, estimator, data):
    estimator.client = client
    return estimator.fit(*data).history_.stats


def measure(kind, repeats):
    processes = kind == "processes"  # threads talk over inproc://, processes over tcp
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                           dashboard_address=None, **({"host": "127.0.0.1"} if processes else {}))
    client = Client(cluster, set_as_default=False)
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    fits = estimator_fits()
    for estimator, data in fits.values():  # warm-up: compile the kernels
        program_fit(client, estimator, data)
    rows = {"floor: chain task": [], "floor: BSP round": [], "engine: toy": []}
    rows.update({f"engine: {name}": [] for name in fits})
    tasks = {}
    try:
        for _ in range(repeats):
            rows["floor: chain task"].append(floor_chain(client, workers))
            rows["floor: BSP round"].append(floor_round(client, workers))
            runs = {"toy": toy(client)}
            runs.update({name: program_fit(client, estimator, data)
                         for name, (estimator, data) in fits.items()})
            for name, stats in runs.items():
                rows[f"engine: {name}"].append(overhead(stats))
                tasks[name] = stats.tasks_per_round
    finally:
        client.close()
        cluster.close()
    return {name: statistics.median(values) for name, values in rows.items()}, tasks


def main():
    args = arguments(__doc__, 5, [("--clusters", {"default": "threads,processes"})])
    results = {kind: measure(kind, args.repeats) for kind in args.clusters.split(",")}
    kinds = list(results)
    if args.markdown:
        print("| per round (ms) | " + " | ".join(kinds) + " | " +
              " | ".join(f"/ floor round ({k})" for k in kinds) + " |")
        print("|---|" + "---:|" * (2 * len(kinds)))
    for name in results[kinds[0]][0]:
        values = [results[k][0][name] for k in kinds]
        ratios = [results[k][0][name] / results[k][0]["floor: BSP round"] for k in kinds]
        if args.markdown:
            print(f"| {name} | " + " | ".join(f"{1000 * v:.2f}" for v in values) + " | "
                  + " | ".join(f"{r:.2f}" for r in ratios) + " |")
        else:
            print(f"{name:22s} " + "  ".join(f"{k} {1000 * v:7.2f} ms ({r:.2f}x floor)"
                                            for k, v, r in zip(kinds, values, ratios)))
    print("tasks in a round: "
          + ", ".join(f"{name} {n}" for name, n in results[kinds[0]][1].items()))
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
