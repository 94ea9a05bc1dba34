"""How fast the readers parse text files: ours against plain readings, side by side.

One process run, in this process (no cluster). Generates a 12 MB MatrixMarket file (20,000 x
5,000, 750,000 real entries) and a 12 MB UCI bag-of-words file (20,000 documents x 10,000
words, 1,000,000 entries) in a temporary folder; times ``io.read_matrix_market`` against
``scipy.io.mmread`` (then ``.tocsr()``) and ``io.read_bag_of_words`` against
``pandas.read_csv`` of its lines into a CSR matrix, interleaved, ``--repeats`` each; prints the
medians and ours / theirs. Every pair of results is checked equal.

Usage
  python benchmarks/readers.py [--repeats 3] [--markdown]
"""
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from benchmarks._common import arguments  # noqa: E402

from dask_strads import io  # noqa: E402


def write_files(folder):
    matrix = sp.random(20_000, 5_000, density=0.0075, format="coo", random_state=0)
    matrix.data = np.round(matrix.data * 10, 3)
    matrix_path = os.path.join(folder, "matrix.mtx")
    scipy.io.mmwrite(matrix_path, matrix)
    counts = sp.random(20_000, 10_000, density=0.005, format="coo", random_state=1)
    counts.data = np.ceil(counts.data * 9)
    counts_path = os.path.join(folder, "docword.bench.txt")
    order = np.lexsort((counts.col, counts.row))
    with open(counts_path, "w") as out:
        out.write(f"{counts.shape[0]}\n{counts.shape[1]}\n{counts.nnz}\n")
        np.savetxt(out, np.column_stack([counts.row[order] + 1, counts.col[order] + 1,
                                         counts.data[order]]), fmt="%d")
    return matrix_path, counts_path


def mmread(path):
    return scipy.io.mmread(path).tocsr()


def pandas_bag_of_words(path):
    with open(path) as file:
        shape = int(file.readline()), int(file.readline())
    table = pd.read_csv(path, sep=" ", skiprows=3, header=None).to_numpy()
    return sp.csr_matrix((table[:, 2].astype(np.float64), (table[:, 0] - 1, table[:, 1] - 1)),
                         shape=shape)


def medians(reads, path, repeats):
    """The median seconds of each of ``reads`` on ``path``, run in turn ``repeats`` times,
    and the last result of each."""
    seconds, results = [[] for _ in reads], [None] * len(reads)
    for _ in range(repeats):
        for i, read in enumerate(reads):
            started = time.perf_counter()
            results[i] = read(path)
            seconds[i].append(time.perf_counter() - started)
    return [statistics.median(s) for s in seconds], results


def main():
    args = arguments(__doc__, repeats=3)
    with tempfile.TemporaryDirectory(prefix="dask-strads-readers-") as folder:
        matrix_path, counts_path = write_files(folder)
        pairs = [("MatrixMarket", matrix_path, io.read_matrix_market, "scipy.io.mmread", mmread),
                 ("bag-of-words", counts_path, lambda p: io.read_bag_of_words(p)[0],
                  "pandas.read_csv", pandas_bag_of_words)]
        rows = []
        for name, path, ours, theirs_name, theirs in pairs:
            (ours_seconds, theirs_seconds), (ours_result, theirs_result) = medians(
                (ours, theirs), path, args.repeats)
            if (ours_result != theirs_result).nnz:
                raise AssertionError(f"{name}: the readers disagree")
            rows.append((name, f"{os.path.getsize(path) / 1e6:.1f} MB, {ours_result.nnz:,} "
                         "entries", ours_seconds, theirs_name, theirs_seconds))
    if args.markdown:
        print("| file | size | dask_strads (s) | reference | reference (s) | ours / reference |")
        print("|---|---|---|---|---|---|")
    for name, size, ours_seconds, theirs_name, theirs_seconds in rows:
        ratio = ours_seconds / theirs_seconds
        if args.markdown:
            print(f"| {name} | {size} | {ours_seconds:.2f} | {theirs_name} | "
                  f"{theirs_seconds:.2f} | {ratio:.1f} |")
        else:
            print(f"{name} ({size}): ours {ours_seconds:.2f} s, {theirs_name} "
                  f"{theirs_seconds:.2f} s, ours / theirs {ratio:.1f}")


if __name__ == "__main__":
    main()
