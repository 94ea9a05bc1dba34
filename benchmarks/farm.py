"""The scheduler's CPU per round on a farm of P = 16, 32, 64 workers, the engine with the message
plane beside the engine before it, in one run.

A farm is three processes, started afresh for each engine and P, one farm at a time:

- the scheduler, ``python -m dask scheduler --host 127.0.0.1 --no-dashboard``, alone in its
  process so that its CPU seconds (user + system, every thread, read with psutil) are its own;
- P ``distributed.Worker`` instances (one thread each, on 127.0.0.1) on one event loop in one
  process (so the plane's fetches between them stay in that process; the scheduler does the
  same work for them as for workers on P machines);
- the client, which fits: a third process, so that neither the workers' nor the client's work
  shares a core's time slices with the scheduler's event loop more than the machine makes it.

Every process runs with ``PYTHONPATH`` the checkout measured (``--before`` for the engine before
the message plane; this one for the other). The client first measures the scheduler's idle CPU
rate (``--idle-seconds``, cluster connected and idle: heartbeats and the scheduler's periodic
callbacks), again after the last fit, and subtracts their mean times the measured span from
each fit's CPU. Per program (the problems and fits of benchmarks/scaling.py, one block per
worker; the fits' P blocks or P vocabulary blocks) a warm-up fit, then ``--repeats`` fits whose
callback reads the scheduler's CPU at each round's record: the CPU per round is the rise from
the first record to the last over the rounds between (placing the data and collecting the
model left out), idle-corrected. Per fit: rounds, tasks in a round's graph (the engine's
``history_.stats.tasks_per_round``), the scheduler's transitions per round (over the whole
fit), CPU ms per round and µs per task, the system (kernel) share of that CPU. Printed
(medians over the repeats) per program and P as each farm ends, then new / before, the rounds
an iteration takes (LDA: P; MF: 2 c); per engine the least-squares fit ``CPU per round = a +
s x tasks`` over every program and P and per program; over both engines the same with a term
``q x P x wall seconds a round`` (see pooled_fit); the two targets of docs/scaling.md. A fit or
farm that fails is reported as failed and the run goes on.

Without ``--fused`` the fits run a graph a round (``dask-strads.max-epoch-rounds`` 1), or with
``--epoch-rounds F`` fused epochs of at most F rounds, measured the same way (then "graphs" is
how many the fit ran, for the cost model's prediction of CPU per round, ``graphs x (a + s x
the tasks of a graph) / rounds``, F rounds a graph but the last). With
``--fused N`` they run in fused epochs (see docs/engine.md): the CPU per round is then the
difference between a fit
of ``N`` iterations and one of the usual length, over the difference of their rounds, so that
placing the data and collecting the model, which both do, cancel; idle-corrected alike.

Usage
  python benchmarks/farm.py --before ../before --repeats 3 --markdown
  python benchmarks/farm.py --programs mf,lda --workers 16,32 --fused 30 --repeats 1
  python benchmarks/farm.py --programs mf --workers 4,16 --epoch-rounds 4 --repeats 1
  python benchmarks/farm.py --before ../before --workers 16,32 --repeats 1 --markdown
  python benchmarks/farm.py --before ../before --programs mf --workers 64 --repeats 1
"""
import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

import dask
import numpy as np

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
HERE = os.path.dirname(BENCHMARKS)
#: Settings of every farm process: no worker dropped for heartbeats late on a loaded machine,
#: no sampling profiler in the workers (CPU the shared machine would lose for nothing), and no
#: system monitor: each worker's reads its process's open files twice a second, and with P
#: workers (and their P^2 connections) in one process that took 91% of the farm's CPU at
#: P = 64 (py-spy), so its rounds took seconds of waiting that a worker on a machine of its
#: own never sees.
FARM_ENV = {"DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": "1h",
            "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "120s",
            "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
            "DASK_DISTRIBUTED__ADMIN__TICK__LIMIT": "1h",
            "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "1h"}
SCHEDULER_START_SECONDS = 60
#: MF per round at P = 64 at most this (seconds); LDA per iteration at P = 32 at most this
#: share of the engine's before the plane.
MF_TARGET, LDA_TARGET = 0.150, 0.40


# -- the scheduler's CPU -----------------------------------------------------------------------
def scheduler_cpu(process):
    """CPU seconds (user, system) of every thread of ``process`` (a psutil.Process) and of its
    children."""
    return np.sum([p.cpu_times()[:2] for p in (process, *process.children(recursive=True))],
                  axis=0)


def idle_rate(process, seconds):
    """The scheduler's CPU seconds per second while nothing is asked of it."""
    start, began = scheduler_cpu(process).sum(), time.perf_counter()
    time.sleep(seconds)
    return (scheduler_cpu(process).sum() - start) / (time.perf_counter() - began)


class RoundClock:
    """A fit's callback: the time and the scheduler's CPU at each round's record. It only
    watches, so the fit may run fused epochs (``--epoch-rounds``)."""

    round_graphs = False

    def __init__(self, process):
        self.process = process
        self.marks = []

    def __call__(self, record):
        self.marks.append((time.perf_counter(), scheduler_cpu(self.process)))


def measure_fit(client, process, fit, data, epoch_rounds=1):
    """One fit's rounds, tasks and transitions per round, and the scheduler's CPU and the wall
    time from its first round's record to its last (not yet idle-corrected); at most
    ``epoch_rounds`` rounds a graph."""
    # imported by measure_farm, after the engine measured
    from scaling import transitions

    clock = RoundClock(process)
    before = client.run_on_scheduler(transitions)
    with dask.config.set({"dask-strads.max-epoch-rounds": epoch_rounds}):
        est = fit(data, client, warm_up=False, callback=clock)
    stats = est.history_.stats
    (first_time, first_cpu), (last_time, last_cpu) = clock.marks[0], clock.marks[-1]
    iterations = getattr(est, "n_iter_", None)
    found = {"rounds": stats.rounds, "tasks": stats.tasks_per_round,
             "transitions": (client.run_on_scheduler(transitions) - before) / stats.rounds,
             "timed rounds": len(clock.marks) - 1, "cpu": (last_cpu - first_cpu).sum(),
             "system share": (last_cpu - first_cpu)[1] / max((last_cpu - first_cpu).sum(), 1e-9),
             "wall": last_time - first_time, "graphs": stats.graphs,
             # every graph's tasks: the last graph's, which ran what the forced epochs left
             "graph tasks": stats.tasks_per_round * (
                 stats.rounds - epoch_rounds * (stats.graphs - 1)),
             "rounds / iteration": stats.rounds / iterations if np.ndim(iterations) == 0
             and iterations else 1.0}
    return {key: float(value) for key, value in found.items()}  # numpy integers: not JSON


def measure_fused(client, process, fit, data, iterations):
    """measure_fit's figures from two fits without a callback, the usual one and one of
    ``iterations``: their differences in the scheduler's CPU, wall time and transitions."""
    from scaling import transitions

    fits = []
    for params in ({}, {"max_iter": iterations}):
        cpu, wall = scheduler_cpu(process), time.perf_counter()
        before = client.run_on_scheduler(transitions)
        est = fit(data, client, warm_up=False, **params)
        fits.append((est, scheduler_cpu(process) - cpu, time.perf_counter() - wall,
                     client.run_on_scheduler(transitions) - before))
    # a fit that ends by its own test (the working-set Lasso) may be the longer of the two
    fits.sort(key=lambda f: f[0].history_.stats.rounds)
    (short, cpu_short, wall_short, moves_short), (long, cpu, wall, moves) = fits
    rounds = long.history_.stats.rounds - short.history_.stats.rounds
    spent = cpu - cpu_short
    found = {"rounds": rounds, "tasks": long.history_.stats.tasks_per_round,
             "graphs": long.history_.stats.graphs - short.history_.stats.graphs,
             "transitions": (moves - moves_short) / rounds, "timed rounds": rounds,
             "cpu": spent.sum(), "system share": spent[1] / max(spent.sum(), 1e-9),
             "wall": wall - wall_short,
             "rounds / iteration": long.history_.stats.rounds / long.n_iter_
             if np.ndim(long.n_iter_) == 0 and long.n_iter_ else 1.0}
    return {key: float(value) for key, value in found.items()}


def per_round(run, idle):
    """``run`` with its CPU per round and per task, idle-corrected, and its wall per round."""
    from _common import predicted_scheduler_cpu

    rounds = max(run["timed rounds"], 1)
    cpu = (run["cpu"] - idle * run["wall"]) / rounds
    graph_tasks = run.get("graph tasks", run["tasks"])
    predicted = predicted_scheduler_cpu(run["graphs"], run["graphs"] * graph_tasks,
                                        run["rounds"])
    return {**run, "cpu / round": cpu, "cpu / task": cpu / run["tasks"],
            "predicted cpu / round": predicted, "wall / round": run["wall"] / rounds}


# -- the processes of a farm --------------------------------------------------------------------
async def serve_workers(scheduler_file, n):
    """P one-thread workers on this event loop, until the process is killed."""
    from distributed import Worker

    workers = [Worker(scheduler_file=scheduler_file, nthreads=1, host="127.0.0.1",
                      memory_limit=0, dashboard=False) for _ in range(n)]
    await asyncio.gather(*(w.start() for w in workers))
    await asyncio.Event().wait()


def measure_farm(args):
    """The client's part: every program's fits on the farm, written to ``args.output``."""
    import cloudpickle
    import psutil
    from distributed import Client

    import dask_strads
    # the engine measured: PYTHONPATH's, imported before scaling puts this checkout first
    engine = os.path.dirname(os.path.dirname(dask_strads.__file__))
    import scaling

    cloudpickle.register_pickle_by_value(scaling)  # the scheduler cannot import it
    process = psutil.Process(args.scheduler_pid)
    results = []
    with Client(scheduler_file=args.scheduler_file) as client:
        client.wait_for_workers(args.workers_count, timeout=600)
        idle_before = idle_rate(process, args.idle_seconds)
        for name in args.programs.split(","):
            make_data, fit = scaling.PROGRAMS[name]
            try:
                data = make_data()
                fit(data, client, warm_up=True)
                runs = [measure_fused(client, process, fit, data, args.fused) if args.fused
                        else measure_fit(client, process, fit, data, args.epoch_rounds)
                        for _ in range(args.repeats)]
                results.append({"program": name, "runs": runs})
            except Exception as error:  # noqa: BLE001  a fit the farm could not finish: say so, go on
                results.append({"program": name, "failed": f"{type(error).__name__}: {error}"})
            print(f"  {name}: {'failed' if 'failed' in results[-1] else 'done'}", flush=True)
        idle = (idle_before + idle_rate(process, args.idle_seconds)) / 2
    for result in results:
        result["runs"] = [per_round(run, idle) for run in result.get("runs", [])]
    with open(args.output, "w") as out:
        json.dump({"engine": engine,
                   "idle": idle, "idle before": idle_before, "results": results}, out)


def farm_env(checkout):
    """The environment of a farm's processes; they run in a scratch directory, as ``python -m``
    puts the working directory before PYTHONPATH."""
    return {**os.environ, **FARM_ENV, "PYTHONPATH": checkout}


def start_scheduler(checkout, directory, log):
    """The scheduler process, once it has written ``directory``/scheduler.json."""
    scheduler_file = os.path.join(directory, "scheduler.json")
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
         "--no-dashboard", "--scheduler-file", scheduler_file],
        env=farm_env(checkout), stdout=log, stderr=subprocess.STDOUT, cwd=directory)
    deadline = time.monotonic() + SCHEDULER_START_SECONDS
    while not os.path.exists(scheduler_file):
        if scheduler.poll() is not None or time.monotonic() > deadline:
            scheduler.kill()
            raise RuntimeError("the scheduler did not start")
        time.sleep(0.2)
    return scheduler


def run_farm(checkout, n, args):
    """A fresh farm of ``n`` workers running ``checkout``'s engine: what measure_farm wrote, or
    ``{"failed": why}``."""
    with tempfile.TemporaryDirectory() as tmp:
        scheduler_file, output = os.path.join(tmp, "scheduler.json"), os.path.join(tmp, "out")
        with open(os.path.join(tmp, "log"), "w+") as log:
            processes = []
            try:
                processes.append(start_scheduler(checkout, tmp, log))
                processes.append(subprocess.Popen(
                    [sys.executable, __file__, "--role", "workers", "--scheduler-file",
                     scheduler_file, "--workers", str(n)],
                    env=farm_env(checkout), stdout=log, stderr=subprocess.STDOUT, cwd=tmp))
                subprocess.run(
                    [sys.executable, __file__, "--role", "measure", "--scheduler-file",
                     scheduler_file, "--scheduler-pid", str(processes[0].pid), "--workers",
                     str(n), "--programs", args.programs, "--repeats", str(args.repeats),
                     "--idle-seconds", str(args.idle_seconds), "--output", output,
                     "--fused", str(args.fused), "--epoch-rounds", str(args.epoch_rounds)],
                    env=farm_env(checkout), check=True, timeout=args.timeout, cwd=tmp)
                with open(output) as out:
                    found = json.load(out)
                if os.path.realpath(found["engine"]) != os.path.realpath(checkout):
                    raise RuntimeError(f"the fits imported the engine of {found['engine']}")
                return found
            except (subprocess.SubprocessError, RuntimeError, OSError) as error:
                log.seek(0)
                tail = log.read()[-1500:]
                return {"failed": f"{type(error).__name__}: {error}\n{tail}"}
            finally:
                for process in reversed(processes):
                    process.kill()
                    process.wait()


# -- the report --------------------------------------------------------------------------------
COLUMNS = (("rounds", "{:.0f}"), ("rounds / iteration", "{:.0f}"), ("tasks", "{:.1f}"),
           ("graphs", "{:.0f}"), ("transitions", "{:.0f}"), ("cpu / round", "{:.4f}"),
           ("predicted cpu / round", "{:.4f}"), ("cpu / task", "{:.6f}"),
           ("system share", "{:.2f}"), ("wall / round", "{:.3f}"))


def medians(result):
    return {c: float(np.median([run[c] for run in result["runs"]])) for c, _ in COLUMNS}


def cost_fit(rows):
    """``(a, s)``: least squares of the CPU per round against the tasks per round."""
    tasks = np.array([row["tasks"] for row in rows])
    cpu = np.array([row["cpu / round"] for row in rows])
    (s, a), *_ = np.linalg.lstsq(np.column_stack([tasks, np.ones_like(tasks)]), cpu, rcond=None)
    return a, s


def pooled_fit(table):
    """Least squares over every row of both engines (the scheduler does not know which made a
    task) of ``a + s x tasks + q x P x wall``: the last term is what grows with the workers and
    the round's time (busy workers' heartbeats, the engine's liveness checks while it waits),
    which the idle rate, taken with the workers idle, leaves in."""
    rows = [(n, row) for (_, n), e in table.items() for row in e.values() if isinstance(row, dict)]
    if len(rows) < 4:
        return
    design = np.array([[row["tasks"], n * row["wall / round"], 1.0] for n, row in rows])
    cpu = np.array([row["cpu / round"] for _, row in rows])
    (s, q, a), *_ = np.linalg.lstsq(design, cpu, rcond=None)
    error = np.abs(design @ [s, q, a] - cpu) / cpu
    print(f"both engines: scheduler CPU per round = {a * 1e3:.1f} ms + {s * 1e3:.3f} ms x tasks "
          f"+ {q * 1e3:.3f} ms x P x wall seconds (median error {np.median(error):.0%}, "
          f"{np.sum(error <= 0.15)} of {len(rows)} rows within 15%)")


def per_iteration(row):
    return row["cpu / round"] * row["rounds / iteration"]


def print_fits(table, label):
    """The cost model's constants from ``label``'s rows: over every program, then per program
    (its P values: a per graph, s per task)."""
    rows = {key: e[label] for key, e in table.items() if isinstance(e.get(label), dict)}
    groups = [("every program", list(rows.values()))] + [
        (name, [row for (other, _), row in rows.items() if other == name])
        for name in dict.fromkeys(name for name, _ in rows)]
    for name, group in groups:
        if len({row["tasks"] for row in group}) > 1:
            a, s = cost_fit(group)
            print(f"{label}, {name}: scheduler CPU per round = {a * 1e3:.2f} ms + "
                  f"{s * 1e3:.3f} ms x tasks")


def print_row(name, n, label, row):
    text = row if isinstance(row, str) else ", ".join(
        f"{c} {f.format(row[c])}" for c, f in COLUMNS)
    print(f"{name} P={n} {label}: {text}", flush=True)


def report(table, engines, markdown):
    """Print the medians per program, P and engine, new / before, the fits and the targets."""
    for (name, n), by_engine in table.items():
        for label in engines:
            print_row(name, n, label, by_engine.get(label))
        new, old = by_engine.get("new"), by_engine.get("before")
        if isinstance(new, dict) and isinstance(old, dict):
            print(f"{name} P={n} new / before: CPU per round "
                  f"{new['cpu / round'] / old['cpu / round']:.3f}, per iteration "
                  f"{per_iteration(new) / per_iteration(old):.3f}")
    for label in engines:
        print_fits(table, label)
    pooled_fit(table)
    mf, lda = table.get(("mf", 64), {}), table.get(("lda", 32), {})
    if isinstance(mf.get("new"), dict):
        cpu = mf["new"]["cpu / round"]
        print(f"target: MF at P = 64, {cpu * 1e3:.0f} ms a round (<= {MF_TARGET * 1e3:.0f} ms): "
              f"{'met' if cpu <= MF_TARGET else 'missed'}")
    if isinstance(lda.get("new"), dict) and isinstance(lda.get("before"), dict):
        share = per_iteration(lda["new"]) / per_iteration(lda["before"])
        print(f"target: LDA at P = 32, {share:.0%} of before an iteration (<= {LDA_TARGET:.0%}): "
              f"{'met' if share <= LDA_TARGET else 'missed'}")
    if markdown:
        print("| program | P | engine | " + " | ".join(c for c, _ in COLUMNS) + " |")
        print("|---|---:|---|" + "---:|" * len(COLUMNS))
        for (name, n), by_engine in table.items():
            for label, row in by_engine.items():
                cells = (["failed"] * len(COLUMNS) if isinstance(row, str)
                         else [f.format(row[c]) for c, f in COLUMNS])
                print(f"| {name} | {n} | {label} | " + " | ".join(cells) + " |")


def main():
    extra = [("--programs", {"default": "mf,implicit_mf,lda,lasso,logistic"}),
             ("--workers", {"default": "16,32,64"}),
             ("--before", {"help": "a checkout of the engine before the message plane"}),
             ("--idle-seconds", {"type": float, "default": 5.0}),
             ("--fused", {"type": int, "default": 0,
                          "help": "iterations of the longer fit (0: round graphs)"}),
             ("--epoch-rounds", {"type": int, "default": 1,
                                 "help": "without --fused: at most this many rounds a graph"}),
             ("--timeout", {"type": float, "default": 3600.0,
                            "help": "seconds a farm's fits may take"}),
             ("--role", {"default": "run", "help": argparse.SUPPRESS}),
             ("--scheduler-file", {"help": argparse.SUPPRESS}),
             ("--scheduler-pid", {"type": int, "help": argparse.SUPPRESS}),
             ("--output", {"help": argparse.SUPPRESS})]
    from _common import arguments

    args = arguments(__doc__, 3, extra)
    if args.role == "workers":
        asyncio.run(serve_workers(args.scheduler_file, int(args.workers)))
        return
    if args.role == "measure":
        args.workers_count = int(args.workers)
        measure_farm(args)
        return
    engines = {"before": os.path.abspath(args.before)} if args.before else {}
    engines["new"] = HERE
    table = {}
    for n in (int(w) for w in args.workers.split(",")):
        for label, checkout in engines.items():
            print(f"P={n} {label}: a farm running {checkout}", flush=True)
            found = run_farm(checkout, n, args)
            if "failed" in found:
                print(f"P={n} {label}: the farm failed: {found['failed']}", flush=True)
            else:
                print(f"P={n} {label}: engine {found['engine']}, scheduler idle "
                      f"{found['idle'] * 1e3:.1f} ms/s", flush=True)
            for name in args.programs.split(","):
                result = next((r for r in found.get("results", []) if r["program"] == name),
                              {"failed": "the farm failed"})
                table.setdefault((name, n), {})[label] = (
                    f"failed: {result['failed']}" if "failed" in result else medians(result))
                print_row(name, n, label, table[name, n][label])  # as they come: a run is long
    report(table, list(engines), args.markdown)


if __name__ == "__main__":
    main()
