"""Peak memory growth per worker, for each program, with 1, 2, 4 (or more) worker processes.

What a fit adds to a worker should be its share of the model plus its shard of the data: memory
that falls as 1/P. For each program and worker count P the script starts a fresh LocalCluster
(one single-threaded process per worker, no memory limit unless ``--memory-limit``), warms the
workers up (numba JIT) on a fit too small to count, resets each worker's resident high-water mark
(Linux ``VmHWM``, the kernel's exact peak, independent of Dask's accounting), fits, and reads the
high-water marks. Printed per run: the model's size, the ideal model / P, the data shard per
worker, the growth of the worker peaks over their pre-fit resident memory (median and max), and
the target ``1.3 model / P + shard`` against the largest growth; for MF also what the first
worker holds in an item round (its rows, the rows it receives and the rows it sends).

Problems (chosen so that the model dominates the data):
  mf   make_ratings users x items, ratings, rank k; model (users + items) x (k + 2) float64
       (factors, bias and the constant of the other side's bias); data 2 layouts of 16 bytes a
       rating
  implicit_mf  the mf matrix as interactions (|rating| + 1), rank k; model (users + items) x k
       float64, data as mf's
  lda  make_lda_corpus, K topics over V words; model V x K word-topic counts (int32 plus the
       nonzero-topic lists), the documents' D x K table counted with the data shard
  lasso make_sparse_regression n x p (CSC), alpha = 0.1 alpha_max, no intercept; model the p
       float64 coefficients; data the CSC arrays (values, row indices, column pointers)
  lasso_dense  make_correlated_regression n x p (a Fortran array), alpha = 0.1 alpha_max, with
       an intercept; model the p float64 coefficients; data the n x p values
  logistic  the lasso problem's X with classes y > median(y), L1 penalty, C ten times the
       smallest with a non-zero coefficient, no intercept; model and data as lasso's

Usage
  python benchmarks/memory.py                                     # small: both, P = 1, 2, 4
  python benchmarks/memory.py --programs mf --mf-users 1e6 --mf-items 2e5 --mf-ratings 4e6 \\
      --mf-rank 64 --workers 2,4 --markdown
  python benchmarks/memory.py --programs lda --lda-topics 1000 --lda-words 1e5 --lda-tokens 2e6
  python benchmarks/memory.py --programs lasso --lasso-features 1e7 --lasso-nnz 2e7 --workers 1,2
  python benchmarks/memory.py --programs lasso_dense,lasso --dtypes float64,float32 --workers 1,2

``--dtypes``: the Lasso problems are fitted on their data in each dtype, side by side (float32
data stay float32 on the workers); with several, the ratios to the first are printed. For the
Lasso problems "blocks MB" is also what the workers hold of the prepared blocks (their data,
``dask.sizeof``), summed over a worker's blocks in the fit's first round.
"""
import copy
import os
import sys

import numpy as np
from distributed import Client, LocalCluster

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from _common import arguments  # noqa: E402
from dask.sizeof import sizeof  # noqa: E402
from dask_strads import (ImplicitMatrixFactorization, Lasso,  # noqa: E402
                         LatentDirichletAllocation, LogisticRegression, MatrixFactorization)
from dask_strads.datasets import (make_correlated_regression, make_lda_corpus,  # noqa: E402
                                  make_ratings, make_sparse_regression)
from dask_strads.engine import cells  # noqa: E402
from dask_strads.kernels.lda import row_bytes  # noqa: E402
from dask_strads.partition import block_edges  # noqa: E402
from dask_strads.programs.mf import sub_rounds_for  # noqa: E402

MB = 2**20
#: Target: growth per worker at most this times model / P, plus the worker's data shard.
MODEL_FACTOR = 1.3


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak():
    """Start the process's resident high-water mark afresh (Linux: ``clear_refs`` 5); it is
    inherited over fork, so without this a worker reports its parent's peak."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    return resident_bytes()


def peak_resident_bytes():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024  # kB


class MFProblem:
    name = "mf"

    def __init__(self, args):
        self.rank = args.mf_rank
        self.width = self.rank + 2
        self.X, _, _ = make_ratings(n_users=int(args.mf_users), n_items=int(args.mf_items),
                                    n_ratings=int(args.mf_ratings), rank=5, random_state=0)
        self.iterations = args.iterations
        self.model_bytes = sum(self.X.shape) * (self.rank + 2) * 8
        self.data_bytes = self.X.nnz * 2 * 16
        self.describe = (f"MF {self.X.shape[0]:,} x {self.X.shape[1]:,}, {self.X.nnz:,} ratings, "
                         f"rank {self.rank}")

    def breakdown(self, n_workers):
        """What worker 0 holds at its first item round's peak, counted from the blocks'
        ratings as the estimator cuts them (c sub-rounds, c x P blocks a side): its rows
        (model / P), the user rows its item block's ratings touch (received) and the copies of
        its user rows that the round's item blocks' ratings touch (sent)."""
        X, Xc, row = self.X.tocsr(), self.X.tocsc(), self.width * 8
        c = self.sub_rounds(n_workers)
        users = block_edges(X.shape[0], c * n_workers, np.diff(X.indptr))
        items = block_edges(X.shape[1], c * n_workers, np.diff(Xc.indptr))
        own = X[users[0]:users[c]].tocsc()
        sent = sum(np.count_nonzero(np.diff(own[:, items[b]:items[b + 1]].tocsr().indptr))
                   for b in range(0, c * n_workers, c))
        received = len(np.unique(Xc[:, items[0]:items[1]].indices))
        held = users[c] - users[0] + items[c] - items[0]
        return (f"c = {c}; worker 0, item round: rows {held * row / MB:.0f} MB, received "
                f"{received * row / MB:.0f} MB, sent {sent * row / MB:.0f} MB")

    def sub_rounds(self, n_workers):
        return sub_rounds_for(*self.X.shape, self.X.nnz, self.width, n_workers)

    def fit(self, client, n_workers, warm_up=False):
        X = self.X[:2000, :500] if warm_up else self.X
        est = MatrixFactorization(self.rank, max_iter=1 if warm_up else self.iterations, tol=0,
                                  random_state=0, checkpoint_interval=0)
        est.client = client
        est.fit(X)


class ImplicitMFProblem(MFProblem):
    """The MF problem's matrix as interactions (every rating positive), rank k without biases,
    cut into blocks and sub-rounds as the estimator cuts it."""

    name = "implicit_mf"

    def __init__(self, args):
        super().__init__(args)
        self.X.data = np.abs(self.X.data) + 1.0
        self.width = self.rank
        self.model_bytes = sum(self.X.shape) * self.rank * 8
        self.describe = "implicit " + self.describe

    def fit(self, client, n_workers, warm_up=False):
        X = self.X[:2000, :500] if warm_up else self.X
        est = ImplicitMatrixFactorization(self.rank, max_iter=1 if warm_up else self.iterations,
                                          tol=0, random_state=0, checkpoint_interval=0)
        est.client = client
        est.fit(X)


class LDAProblem:
    name = "lda"

    def __init__(self, args):
        self.topics = args.lda_topics
        n_docs = int(args.lda_tokens) // 100
        self.X, _, _ = make_lda_corpus(n_docs=n_docs, n_words=int(args.lda_words), n_topics=100,
                                       doc_length=100, random_state=0)
        self.iterations = args.iterations
        self.model_bytes = self.X.shape[1] * row_bytes(self.topics)
        self.data_bytes = self.X.shape[0] * row_bytes(self.topics) + int(self.X.sum()) * 20
        self.blocks_per_worker = args.lda_blocks_per_worker
        self.describe = (f"LDA {self.X.shape[0]:,} docs x {self.X.shape[1]:,} words, "
                         f"{int(self.X.sum()):,} tokens, K = {self.topics}")

    def fit(self, client, n_workers, warm_up=False):
        X = self.X[:200, :2000] if warm_up else self.X
        blocks = None if self.blocks_per_worker is None else self.blocks_per_worker * n_workers
        est = LatentDirichletAllocation(self.topics, max_iter=1 if warm_up else self.iterations,
                                        random_state=0, n_vocab_blocks=blocks,
                                        checkpoint_interval=0)
        est.client = client
        est.fit(X)


def held_block_bytes(shape):
    """On a worker: the Dask size of the prepared data of the blocks it holds of a fit on a
    design of ``shape`` (not the warm-up's, which may not be released yet)."""
    return sum(sizeof(cell.data) for cell in list(cells._CELLS.values())
               if (getattr(cell.program, "n_samples", None),
                   sum(getattr(cell.program, "widths", ()))) == shape)


class LassoProblem:
    name = "lasso"
    #: the fit keeps float32 data float32 (``--dtypes``)
    keeps_float32 = True

    def __init__(self, args):
        n, p = int(args.lasso_samples), int(args.lasso_features)
        self.X, self.y, _ = make_sparse_regression(n_samples=n, n_features=p,
                                                   density=args.lasso_nnz / (n * p),
                                                   n_informative=100, random_state=0)
        self.alpha = 0.1 * np.abs(self.X.T @ self.y).max() / n
        self.model_bytes = p * 8
        self.describe = f"Lasso {n:,} x {p:,}, {self.X.nnz:,} stored values"
        self.fit_intercept = False
        self.held = None

    @property
    def data_bytes(self):
        return self.X.data.nbytes + self.X.indices.nbytes + self.X.indptr.nbytes

    @property
    def dtype(self):
        return self.X.dtype.name

    def in_dtype(self, dtype):
        """The same problem with X's values in ``dtype``."""
        problem = copy.copy(self)
        problem.X = self.X.astype(dtype, copy=False)
        return problem

    def warm_up_data(self):
        """``(X, y)`` of a fit too small to count, that compiles what the fit does."""
        return self.X[:, :20000], self.y

    def fit(self, client, n_workers, warm_up=False):
        est = Lasso(self.alpha, fit_intercept=self.fit_intercept, tol=1e-6, n_blocks=n_workers,
                    checkpoint_interval=0, callback=None if warm_up else self._watch(client))
        est.client = client
        est.fit(*(self.warm_up_data() if warm_up else (self.X, self.y)))

    def _watch(self, client):
        """A callback that records, in its first round, what each worker holds of the blocks."""
        self.held = None

        def watch(record):
            if self.held is None:
                held = client.run(held_block_bytes, self.X.shape)
                self.held = np.array(list(held.values()), dtype=float)
        return watch


class DenseLassoProblem(LassoProblem):
    """An AR(1)-correlated dense design (a Fortran array: its column blocks are views)."""

    name = "lasso_dense"

    def __init__(self, args):
        n, p = int(args.lasso_dense_samples), int(args.lasso_dense_features)
        X, self.y, _ = make_correlated_regression(n_samples=n, n_features=p,
                                                  n_informative=100, random_state=0)
        self.X = np.asfortranarray(X)
        self.alpha = 0.1 * np.abs(self.X.T @ (self.y - self.y.mean())).max() / n
        self.model_bytes = p * 8
        self.describe = f"dense Lasso {n:,} x {p:,}"
        self.fit_intercept = True
        self.held = None

    @property
    def data_bytes(self):
        return self.X.nbytes

    def warm_up_data(self):
        return self.X[:200, :2000], self.y[:200]


class LogisticProblem(LassoProblem):
    """The Lasso problem's design with the signs of its targets as classes, L1-penalised
    logistic regression (C such that about as many features enter as in the Lasso)."""

    name = "logistic"
    keeps_float32 = False

    def __init__(self, args):
        super().__init__(args)
        self.y = (self.y > np.median(self.y)).astype(int)
        # ten times the smallest C with a non-zero coefficient (no intercept: the loss's
        # gradient at w = 0 is X^T (1/2 - y))
        self.C = 10 / np.abs(self.X.T @ (self.y - 0.5)).max()
        self.describe = self.describe.replace("Lasso", "L1 logistic regression")

    def fit(self, client, n_workers, warm_up=False):
        X = self.X[:, :20000] if warm_up else self.X
        est = LogisticRegression(C=self.C, l1_ratio=1.0, fit_intercept=False, n_blocks=n_workers,
                                 checkpoint_interval=0)
        est.client = client
        est.fit(X, self.y)


PROBLEMS = {"mf": MFProblem, "implicit_mf": ImplicitMFProblem, "lda": LDAProblem,
            "lasso": LassoProblem, "lasso_dense": DenseLassoProblem,
            "logistic": LogisticProblem}


def measure(problem, n_workers, memory_limit):
    """Per-worker growth of the resident high-water mark over the pre-fit resident bytes."""
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit=memory_limit) as cluster, \
            Client(cluster) as client:
        problem.fit(client, n_workers, warm_up=True)
        before = client.run(reset_peak)
        problem.fit(client, n_workers)
        peaks = client.run(peak_resident_bytes)
    return np.array([peaks[w] - before[w] for w in sorted(peaks)], dtype=float)


def row(name, n_workers, problem, growth):
    """A line of the table: sizes in MB, the growth per worker against the target."""
    share, shard = problem.model_bytes / n_workers, problem.data_bytes / n_workers
    target = MODEL_FACTOR * share + shard
    held = getattr(problem, "held", None)
    blocks = "" if held is None else f"{np.median(held) / MB:.1f} ({held.max() / MB:.1f})"
    return (name, n_workers, getattr(problem, "dtype", ""), f"{problem.model_bytes / MB:.0f}",
            f"{share / MB:.0f}", f"{shard / MB:.1f}", blocks,
            f"{np.median(growth) / MB:.0f} ({growth.max() / MB:.0f})",
            f"{growth.max() / share:.2f}", f"{target / MB:.0f}",
            "yes" if growth.max() <= target else "no")


def dtype_ratios(name, n_workers, measured):
    """Each variant's figures over the first variant's (``measured``: ``(problem, growth)``
    pairs of one problem in several dtypes): the data shard, the blocks held, the growth."""
    (first, first_growth), lines = measured[0], []
    for problem, growth in measured[1:]:
        lines.append({"program": name, "P": n_workers,
                      "dtypes": f"{problem.dtype} / {first.dtype}",
                      "shard": f"{problem.data_bytes / first.data_bytes:.3f}",
                      "blocks (max)": f"{problem.held.max() / first.held.max():.3f}",
                      "growth (max)": f"{growth.max() / first_growth.max():.3f}"})
    return lines


def main():
    args = arguments(__doc__, 1, [
        ("--programs", {"default": "mf,lda"}),
        ("--workers", {"default": "1,2,4"}),
        ("--iterations", {"type": int, "default": 2}),
        ("--memory-limit", {"default": "0", "help": "per worker, e.g. 1GiB (0: none)"}),
        ("--mf-users", {"type": float, "default": 2e5}),
        ("--mf-items", {"type": float, "default": 4e4}),
        ("--mf-ratings", {"type": float, "default": 8e5}),
        ("--mf-rank", {"type": int, "default": 64}),
        ("--lda-topics", {"type": int, "default": 1000}),
        ("--lda-words", {"type": float, "default": 5e4}),
        ("--lda-tokens", {"type": float, "default": 5e5}),
        ("--lda-blocks-per-worker", {"type": int, "default": None}),
        ("--lasso-samples", {"type": float, "default": 1e4}),
        ("--lasso-features", {"type": float, "default": 1e6}),
        ("--lasso-nnz", {"type": float, "default": 2e6}),
        ("--lasso-dense-samples", {"type": float, "default": 4000}),
        ("--lasso-dense-features", {"type": float, "default": 1e4}),
        ("--dtypes", {"default": "float64",
                      "help": "the Lasso problems' data dtypes, e.g. float64,float32"}),
    ])
    header = ("program", "P", "dtype", "model MB", "model / P MB", "shard MB",
              "blocks / worker MB (max)", "growth / worker MB (max)", "growth / (model / P)",
              f"target {MODEL_FACTOR} model / P + shard MB", "met")
    rows, ratios = [], []
    for name in args.programs.split(","):
        problem = PROBLEMS[name](args)
        print(problem.describe, flush=True)
        variants = ([problem.in_dtype(dtype) for dtype in args.dtypes.split(",")]
                    if getattr(problem, "keeps_float32", False) else [problem])
        for n in (int(w) for w in args.workers.split(",")):
            measured = []
            for variant in variants:
                growth = measure(variant, n, args.memory_limit)
                measured.append((variant, growth))
                rows.append(row(name, n, variant, growth))
                print("  ".join(f"{h}: {v}" for h, v in zip(header, rows[-1])), flush=True)
                if hasattr(variant, "breakdown"):
                    print("  " + variant.breakdown(n), flush=True)
            ratios.extend(dtype_ratios(name, n, measured))
    for line in ratios:
        print("  ".join(f"{h}: {v}" for h, v in line.items()), flush=True)
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|" + "---:|" * (len(header) - 2) + "---|")
        for line in rows:
            print("| " + " | ".join(map(str, line)) + " |")
        if ratios:
            print()
            print("| " + " | ".join(ratios[0]) + " |")
            print("|---|---:|---|" + "---:|" * (len(ratios[0]) - 3))
            for line in ratios:
                print("| " + " | ".join(map(str, line.values())) + " |")


if __name__ == "__main__":
    main()
