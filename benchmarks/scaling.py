"""What a round moves and costs, per program, for P = 1, 2, 4, 8, 16 worker processes.

For each worker count P the script starts one LocalCluster of P single-threaded worker
processes, and for each program fits a small problem once to warm up (numba JIT), then
``--repeats`` times with the round graphs recorded. Per fit it reads:

- the task stream (``distributed.get_task_stream``): every task of every round, by kind (push,
  pull, report) and its compute seconds;
- each worker's ``transfer_incoming_log``: the values workers fetched from one another through
  Dask, with the size Dask records for each (exact for numpy arrays; the engine's own classes
  through ``dask_strads.sizes``), by the kind of the task that made them; and the messages and
  carried blocks fetched over the engine's message plane, with their bytes between processes
  (the rounds' ``plane_messages`` and ``plane_bytes``);
- the scheduler's transition counter (every state change of every task is one transition);
- CPU seconds (not wall: they hardly depend on what else runs on the machine) of the
  scheduler's event-loop thread, which the client in this process shares, and of the worker
  processes (kernels, serialisation and the workers' own bookkeeping), from placement to the
  last result, divided by the rounds.

Printed per program and P (medians over the repeats): rounds, tasks and scheduler transitions
per round, bytes moved worker to worker per round and per scheduled block, the number of those
transfers and the seconds they took, the round's wall time (between the first and the last
round's reports, so placing the data is left out), its kernel work (the sum of the
push and pull tasks' compute seconds: work that P dedicated cores would share), and the
overhead: wall time minus the time the kernel work needs on this machine's cores
(``max(slowest push, kernel work / min(P, cores))``). With more processes than cores the
kernel work is shared, so the overhead column is what a round costs beyond computing.
Last, least-squares fits of the CPU per round: the scheduler's against the tasks per round
(all programs), and the workers' (summed) against P (per program): the constants of the cost
model in docs/scaling.md. A fit that fails (a cluster whose workers miss their heartbeats on a
loaded machine) is reported as failed and the script goes on.

The fits run a graph a round (``dask-strads.max-epoch-rounds`` 1, the reference path), or with
``--epoch-rounds F`` fused epochs of at most F rounds; "graphs" counts the graphs that ran
rounds and "predicted cpu s" is the cost model's scheduler CPU a round for them, (graphs x a +
their tasks x s) / rounds with a and s of docs/scaling.md, beside the measured one.

Problems (small, so that 16 processes on 2 cores stay quick):
  lasso     make_sparse_regression 2,000 x 200,000, 400k stored values, alpha = 0.1 alpha_max,
            tol 1e-12, at most 10 rounds (the working-set solver ends in 6)
  logistic  the same design, y = (Xw + noise > median), C = 1, P feature blocks, 6 rounds
  lda       make_lda_corpus 2,000 documents x 20,000 words, 200k tokens, K = 100, 2 iterations
  mf        make_ratings 20,000 x 4,000, 200k ratings, rank 16, 5 iterations (10 rounds)
  implicit_mf  the mf matrix as interactions (|rating| + 1), rank 16, 5 iterations

Usage
  python benchmarks/scaling.py --repeats 3 --markdown
  python benchmarks/scaling.py --programs mf --workers 1,2,4 --repeats 1
  python benchmarks/scaling.py --programs mf,lda --workers 2,4,8 --epoch-rounds 4 --repeats 3
"""
import os
import sys
import time
from collections import defaultdict

import dask
import numpy as np
from distributed import Client, LocalCluster, get_task_stream

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from _common import arguments, predicted_scheduler_cpu  # noqa: E402
from dask_strads import (ImplicitMatrixFactorization, Lasso,  # noqa: E402
                         LatentDirichletAllocation, LogisticRegression, MatrixFactorization)
from dask_strads.datasets import make_lda_corpus, make_ratings, make_sparse_regression  # noqa: E402

CORES = os.cpu_count()
#: Kinds of the tasks a round is made of (the third field of the engine's keys).
ROUND_KINDS = ("push", "pull", "report")
#: The tasks of the graphs that run rounds (round graphs' and fused epochs'), for the cost
#: model's prediction.
GRAPH_KINDS = [[kind] for kind in (*ROUND_KINDS, "epoch", "gate")]
KERNEL_KINDS = ("push", "pull")


def lasso_data():
    X, y, _ = make_sparse_regression(n_samples=2000, n_features=200_000, density=1e-3,
                                     n_informative=50, random_state=0)
    return X, y


def lasso_fit(data, client, warm_up, **params):
    X, y = data
    alpha = 0.1 * np.abs(X.T @ y).max() / X.shape[0]
    params.setdefault("max_iter", 2 if warm_up else 10)
    est = Lasso(alpha, fit_intercept=False, tol=1e-12,
                n_blocks=len(client.scheduler_info()["workers"]), checkpoint_interval=0,
                **params)
    est.client = client
    return est.fit(X, y)


def logistic_data():
    X, y = lasso_data()
    noisy = y + np.random.default_rng(0).standard_normal(len(y)) * y.std()
    return X, (noisy > np.median(noisy)).astype(int)


def logistic_fit(data, client, warm_up, **params):
    X, y = data
    params.setdefault("max_iter", 2 if warm_up else 6)
    est = LogisticRegression(C=1.0, l1_ratio=1.0, tol=1e-12,
                             n_blocks=len(client.scheduler_info()["workers"]),
                             checkpoint_interval=0, **params)
    est.client = client
    return est.fit(X, y)


def lda_data():
    X, _, _ = make_lda_corpus(n_docs=2000, n_words=20_000, n_topics=20, doc_length=100,
                              random_state=0)
    return X


def lda_fit(X, client, warm_up, **params):
    params.setdefault("max_iter", 1 if warm_up else 2)
    est = LatentDirichletAllocation(100, random_state=0, checkpoint_interval=0, **params)
    est.client = client
    return est.fit(X)


def mf_data():
    X, _, _ = make_ratings(n_users=20_000, n_items=4_000, n_ratings=200_000, rank=5,
                           random_state=0)
    return X


def mf_fit(X, client, warm_up, estimator=MatrixFactorization, **params):
    params.setdefault("max_iter", 1 if warm_up else 5)
    est = estimator(16, tol=0, random_state=0, checkpoint_interval=0, **params)
    est.client = client
    return est.fit(X)


def implicit_mf_data():
    X = mf_data()
    X.data = np.abs(X.data) + 1.0
    return X


def implicit_mf_fit(X, client, warm_up, **params):
    return mf_fit(X, client, warm_up, ImplicitMatrixFactorization, **params)


def lasso_priority_fit(data, client, warm_up, **params):
    """The Lasso with the STRADS schedule (dynamic priority sampling), not the working set."""
    return lasso_fit(data, client, warm_up, schedule="priority", **params)


#: name -> (make the data, fit(data, client, warm_up, **more estimator parameters)).
PROGRAMS = {"lasso": (lasso_data, lasso_fit), "lasso_priority": (lasso_data, lasso_priority_fit),
            "logistic": (logistic_data, logistic_fit),
            "lda": (lda_data, lda_fit), "mf": (mf_data, mf_fit),
            "implicit_mf": (implicit_mf_data, implicit_mf_fit)}


def round_kind(key):
    """``(kind, round)`` of a round task's key ``strads-<program>-<kind>-...-<round>-<run>``,
    else None (placement, initialisation, collection)."""
    parts = str(key).split("-")
    if len(parts) < 5 or parts[0] != "strads" or parts[2] not in ROUND_KINDS or "init" in parts:
        return None
    return parts[2], int(parts[-2])


def uses_plane(est):
    return "plane_messages" in est.history_.columns()


def clear_transfer_log(dask_worker):
    dask_worker.transfer_incoming_log.clear()


def transfer_log(dask_worker):
    return [(dict(entry["keys"]), entry["duration"]) for entry in
            dask_worker.transfer_incoming_log]


def transitions(dask_scheduler):
    return dask_scheduler.transition_counter


def loop_cpu_seconds():
    """CPU seconds of the thread this runs on: the scheduler's event loop (which the client in
    this process shares)."""
    return time.thread_time()


def process_cpu_seconds():
    return time.process_time()


def measure_fit(client, fit, data):
    """One fit's figures per round (see the module)."""
    client.run(clear_transfer_log)
    before = client.run_on_scheduler(transitions)
    loop_before = client.run_on_scheduler(loop_cpu_seconds)
    workers_before = client.run(process_cpu_seconds)
    with get_task_stream(client) as stream:
        est = fit(data, client, warm_up=False)
    loop_cpu = client.run_on_scheduler(loop_cpu_seconds) - loop_before
    workers_cpu = sum(client.run(process_cpu_seconds).values()) - sum(workers_before.values())
    moved = client.run(transfer_log)
    stats = est.history_.stats
    rounds = stats.rounds
    graph_tasks = sum(1 for r in stream.data if str(r["key"]).split("-")[2:3] in GRAPH_KINDS)
    tasks, compute, slowest = defaultdict(int), defaultdict(float), defaultdict(float)
    for record in stream.data:
        found = round_kind(record["key"])
        if found is None:
            continue
        kind, t = found
        tasks[kind] += 1
        seconds = sum(s["stop"] - s["start"] for s in record["startstops"]
                      if s["action"] == "compute")
        compute[kind] += seconds
        if kind == "push":
            slowest[t] = max(slowest[t], seconds)
    bytes_moved, transfers, transfer_seconds = 0, 0, 0.0
    for entries in moved.values():
        for keys, duration in entries:
            sizes = [n for k, n in keys.items() if round_kind(k) is not None]
            if sizes:
                bytes_moved += sum(sizes)
                transfers += 1
                transfer_seconds += duration
    plane_messages = sum(est.history_.column("plane_messages"), start=0) if uses_plane(est) else 0
    plane_bytes = sum(est.history_.column("plane_bytes"), start=0) if uses_plane(est) else 0
    bytes_moved += plane_bytes
    pushes = tasks["push"]
    kernel = sum(compute[k] for k in KERNEL_KINDS) / rounds
    workers = len(client.scheduler_info()["workers"])
    needed = max(np.mean(list(slowest.values())), kernel / min(workers, CORES))
    times = est.history_.column("time")
    wall = (times[-1] - times[0]) / (len(times) - 1)  # placement and start-up left out
    return {
        "rounds": rounds,
        "tasks": sum(tasks.values()) / rounds,
        "transitions": (client.run_on_scheduler(transitions) - before) / rounds,
        "scheduler cpu s": loop_cpu / rounds,
        "workers cpu s": workers_cpu / rounds,
        "bytes": bytes_moved / rounds,
        "bytes / block": bytes_moved / max(pushes, 1),
        "transfers": transfers / rounds,
        "plane messages": plane_messages / rounds,
        "transfer s": transfer_seconds / rounds,
        "wall s": wall,
        "kernel s": kernel,
        "overhead s": wall - needed,
        "graphs": stats.graphs,
        "predicted cpu s": predicted_scheduler_cpu(stats.graphs, graph_tasks, rounds),
    }


COLUMNS = (("rounds", "{:.0f}"), ("tasks", "{:.1f}"), ("transitions", "{:.0f}"),
           ("scheduler cpu s", "{:.4f}"), ("workers cpu s", "{:.4f}"),
           ("bytes", "{:,.0f}"), ("bytes / block", "{:,.0f}"), ("transfers", "{:.1f}"),
           ("plane messages", "{:.1f}"),
           ("transfer s", "{:.4f}"), ("wall s", "{:.4f}"), ("kernel s", "{:.4f}"),
           ("overhead s", "{:.4f}"), ("graphs", "{:.0f}"), ("predicted cpu s", "{:.4f}"))


def fit_costs(rows):
    """Least-squares fits of the CPU a round costs: the scheduler's, ``a + s * tasks`` over every
    program and P; the workers' (all of them together), ``W + u * P`` per program, so that ``W``
    is the round's work and ``u`` what each worker adds to a round (its share of the tasks,
    transfers, serialisation and event loop)."""
    tasks = np.array([row["tasks"] for _, _, row in rows])
    scheduler = np.array([row["scheduler cpu s"] for _, _, row in rows])
    (s, a), *_ = np.linalg.lstsq(np.column_stack([tasks, np.ones_like(tasks)]), scheduler,
                                 rcond=None)
    print(f"scheduler CPU per round = {a * 1e3:.2f} ms + {s * 1e3:.3f} ms x tasks")
    for name in dict.fromkeys(name for name, _, _ in rows):
        workers = np.array([n for other, n, _ in rows if other == name], dtype=float)
        cpu = np.array([row["workers cpu s"] for other, _, row in rows if other == name])
        (u, w), *_ = np.linalg.lstsq(np.column_stack([workers, np.ones_like(workers)]), cpu,
                                     rcond=None)
        print(f"{name}: workers' CPU per round = {w * 1e3:.1f} ms + {u * 1e3:.2f} ms x P")


def main():
    args = arguments(__doc__, 3, [
        ("--programs", {"default": "lasso,logistic,lda,mf,implicit_mf"}),
        ("--workers", {"default": "1,2,4,8,16"}),
        ("--epoch-rounds", {"type": int, "default": 1}),
    ])
    dask.config.set({"dask-strads.max-epoch-rounds": args.epoch_rounds})
    names = args.programs.split(",")
    data = {name: PROGRAMS[name][0]() for name in names}
    rows = []
    for n in (int(w) for w in args.workers.split(",")):
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                          dashboard_address=None, memory_limit=0) as cluster, \
                Client(cluster) as client:
            for name in names:
                fit = PROGRAMS[name][1]
                try:
                    fit(data[name], client, warm_up=True)
                    runs = [measure_fit(client, fit, data[name]) for _ in range(args.repeats)]
                except Exception as error:  # a cluster overwhelmed by the load: say so, go on
                    print(f"{name} P={n}: failed: {type(error).__name__}: {error}", flush=True)
                    continue
                row = {c: float(np.median([r[c] for r in runs])) for c, _ in COLUMNS}
                rows.append((name, n, row))
                print(f"{name} P={n}: " + ", ".join(f"{c} {f.format(row[c])}"
                                                    for c, f in COLUMNS), flush=True)
    fit_costs(rows)
    if args.markdown:
        print("| program | P | " + " | ".join(c for c, _ in COLUMNS) + " |")
        print("|---|---:|" + "---:|" * len(COLUMNS))
        for name, n, row in rows:
            print(f"| {name} | {n} | " + " | ".join(f.format(row[c]) for c, f in COLUMNS) + " |")


if __name__ == "__main__":
    main()
