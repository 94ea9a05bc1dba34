"""What surviving a lost worker costs: in-memory checkpoints, and a fit with a worker killed.

One process run on a cluster of real processes started here: ``dask scheduler`` and three
``dask worker --no-nanny --nthreads 1`` on 127.0.0.1. For Lasso, LDA and MF, each on a problem
that takes a few seconds there:

- clean fits without checkpoints (``checkpoint_interval=0``) and with the default interval:
  the checkpoints' share of the fit time;
- a fit whose worker holding block 0 is SIGKILLed once 40% of the clean fit's rounds are read:
  its time over the clean fit's, and whether it ends with the clean fit's model.

Medians over ``--repeats``; a killed worker is replaced by a new one before the next fit.

Usage
  python benchmarks/recovery.py [--repeats 3] [--markdown]
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from distributed import Client

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from benchmarks._common import arguments  # noqa: E402

from dask_strads import Lasso, LatentDirichletAllocation, MatrixFactorization  # noqa: E402
from dask_strads.datasets import (  # noqa: E402
    alpha_max, make_correlated_regression, make_lda_corpus, make_ratings)

WORKERS = 3


def problems():
    X, y, _ = make_correlated_regression(2000, 6000, 50, random_state=0)
    counts = make_lda_corpus(n_docs=10_000, n_words=5000, n_topics=50, doc_length=100,
                             random_state=0)[0]
    ratings = make_ratings(n_users=50_000, n_items=5000, n_ratings=1_000_000,
                           random_state=0)[0]
    return {
        "lasso": (lambda **kw: Lasso(alpha=0.05 * alpha_max(X, y), tol=1e-8, n_blocks=WORKERS,
                                     random_state=0, **kw), (X, y), ["coef_"]),
        "lda": (lambda **kw: LatentDirichletAllocation(50, max_iter=20, random_state=0, **kw),
                (counts,), ["components_"]),
        "mf": (lambda **kw: MatrixFactorization(10, max_iter=20, tol=0.0, random_state=0, **kw),
               (ratings,), ["user_factors_", "components_"]),
    }


class Cluster:
    def __init__(self, folder):
        self.folder = Path(folder)
        self.file = self.folder / "scheduler.json"
        self.processes = [self._start("scheduler", "--host", "127.0.0.1", "--port", "0",
                                      "--no-dashboard", "--scheduler-file", str(self.file))]
        while not self.file.exists():
            time.sleep(0.1)
        time.sleep(0.5)
        self.client = Client(scheduler_file=str(self.file), set_as_default=False, timeout=60)
        self.fill()

    def _start(self, *args):
        return subprocess.Popen([sys.executable, "-m", "dask", *args], cwd=self.folder,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    def fill(self):
        """Start workers until there are WORKERS."""
        missing = WORKERS - len(self.client.scheduler_info(n_workers=-1)["workers"])
        for _ in range(missing):
            self.processes.append(self._start(
                "worker", "--scheduler-file", str(self.file), "--nthreads", "1", "--no-nanny",
                "--no-dashboard", "--death-timeout", "30"))
        self.client.wait_for_workers(WORKERS, timeout=60)

    def close(self):
        self.client.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):  # what a polite stop leaves, killed
            for proc in self.processes:
                if proc.poll() is None:
                    os.killpg(proc.pid, sig)
            for proc in self.processes:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass


def killer(client, after_round):
    pids = client.run(os.getpid)
    state = {}

    def callback(record):
        if record.get("round", -1) >= after_round and "killed" not in state:
            key = next(k for k in client.who_has() if "-block-0-" in str(k)
                       and "checkpoint" not in str(k) and "replica" not in str(k))
            address = client.who_has()[key][0]
            os.kill(pids[address], signal.SIGKILL)
            state["killed"] = address
        return False

    return callback, state


def timed_fit(cluster, make, data, **params):
    model = make(**params)
    model.client = cluster.client
    start = time.perf_counter()
    model.fit(*data)
    return time.perf_counter() - start, model


def main():
    args = arguments(__doc__, 3)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cluster = Cluster(folder)
        try:
            for name, (make, data, attributes) in problems().items():
                timed_fit(cluster, make, data)  # warm-up: compile on the workers
                bare = [timed_fit(cluster, make, data, checkpoint_interval=0)[0]
                        for _ in range(args.repeats)]
                runs = [timed_fit(cluster, make, data) for _ in range(args.repeats)]
                clean_seconds = statistics.median(seconds for seconds, _ in runs)
                clean = runs[0][1]
                rounds = clean.history_.stats.rounds
                killed = []
                for _ in range(args.repeats):
                    callback, state = killer(cluster.client, int(0.4 * rounds))
                    seconds, model = timed_fit(cluster, make, data, callback=callback)
                    same = all(np.allclose(getattr(model, a), getattr(clean, a), rtol=1e-8,
                                           atol=1e-10) for a in attributes)
                    (recovery,) = model.history_.stats.recoveries
                    killed.append((seconds, same, recovery))
                    cluster.fill()
                rows.append({
                    "program": name, "rounds": rounds,
                    "no checkpoints s": statistics.median(bare), "checkpoints s": clean_seconds,
                    "killed s": statistics.median(s for s, _, _ in killed),
                    "same model": all(same for _, same, _ in killed),
                    "recovery": killed[0][2]})
                print(json.dumps(rows[-1], default=str), flush=True)
        finally:
            cluster.close()
    if args.markdown:
        print("| program | rounds | no checkpoints s | checkpoints every 10 rounds s | "
              "checkpoint share | worker killed at 40% s | killed / clean | same model | "
              "resumed from round |\n|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for row in rows:
        share = row["checkpoints s"] / row["no checkpoints s"] - 1
        ratio = row["killed s"] / row["checkpoints s"]
        if args.markdown:
            print(f"| {row['program']} | {row['rounds']} | {row['no checkpoints s']:.2f} | "
                  f"{row['checkpoints s']:.2f} | {100 * share:+.0f}% | {row['killed s']:.2f} | "
                  f"{ratio:.2f} | {row['same model']} | {row['recovery']['round']} |")
        else:
            print(f"{row['program']:6s} checkpoints {100 * share:+.0f}%, killed at 40%: "
                  f"{ratio:.2f}x the clean fit, same model: {row['same model']}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
