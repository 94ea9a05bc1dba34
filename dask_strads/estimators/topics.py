"""Topic tools of a fitted :class:`~dask_strads.LatentDirichletAllocation`: its vocabulary, the top
words of each topic, their coherence on a corpus, and held-out perplexity by document completion.

Coherence follows Mimno et al. (2011, UMass) and Bouma (2009, normalised PMI) as gensim's
``CoherenceModel`` computes them, with documents as the co-occurrence windows: D(w) is the number
of documents of X that hold word w, D(w, w') of those that hold both, N the number of documents.
A Dask X is counted chunk by chunk on the cluster and the counts summed there.
"""
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.validation import _get_feature_names, check_is_fitted

from ..kernels.compilation import announce_compiling
from ..kernels.lda_inference import documents_log_likelihood, infer_documents
from ..log import logger
from .inputs import is_dask_array, to_scipy_if_pydata

#: Added to a joint probability before its log, as gensim does, so that words never seen together
#: score a large negative number instead of minus infinity.
EPSILON = 1e-12


def fitted_vocabulary(X, feature_names):
    """The vocabulary a fit keeps (an array of str, or None): ``feature_names`` if given, else the
    column names of a DataFrame X. Checked before any work: one name per column of X, and the
    same names as X's columns when X has them."""
    columns = _get_feature_names(X)
    if feature_names is None:
        return columns
    names = np.asarray(feature_names, dtype=object)
    n_columns = np.shape(X)[1]
    if names.ndim != 1 or len(names) != n_columns:
        raise ValueError(f"feature_names has {names.size} names for the {n_columns} words "
                         "(columns) of X: give one name per column")
    if columns is not None and not np.array_equal(columns, names):
        raise ValueError("feature_names differ from the column names of X: give either")
    return names.astype(str).astype(object)


def _top_word_indices(model, n):
    """(K, n) column indices of each topic's n most probable words, most probable first."""
    check_is_fitted(model)
    if n > model.n_features_in_:
        raise ValueError(f"asked for {n} words per topic, but the vocabulary has "
                         f"{model.n_features_in_}")
    components = model._in_memory(model.components_)
    # stable sort: ties keep the vocabulary's order, as gensim's show_topic does
    return np.argsort(-components, axis=1, kind="stable")[:, :n]


@validate_params({"model": "no_validation", "n": [Interval(Integral, 1, None, closed="left")],
                  "feature_names": ["array-like", None]}, prefer_skip_nested_validation=True)
def top_words(model, n=10, feature_names=None):
    """Each topic's ``n`` most probable words (one list per topic, most probable first): names
    from ``feature_names``, else the model's ``vocabulary_``, else column indices."""
    indices = _top_word_indices(model, n)
    names = feature_names if feature_names is not None else model.vocabulary_
    if names is None:
        return indices.tolist()
    names = np.asarray(names, dtype=object)
    if len(names) != model.n_features_in_:
        raise ValueError(f"feature_names has {len(names)} names, but the model has "
                         f"{model.n_features_in_} words")
    return [list(names[row]) for row in indices]


@validate_params({"model": "no_validation", "X": "no_validation",
                  "measure": [StrOptions({"u_mass", "c_npmi"})],
                  "n_words": [Interval(Integral, 2, None, closed="left")]},
                 prefer_skip_nested_validation=True)
def coherence(model, X, measure="u_mass", n_words=10):
    """Each topic's coherence (array of K) over its ``n_words`` top words on the documents X:
    the mean over word pairs of

    - ``u_mass``: log((D(w_i, w_j) / N + EPSILON) / (D(w_j) / N)) for w_j ranked above w_i;
    - ``c_npmi``: log((D(w_i, w_j) / N + EPSILON) / (D(w_i) D(w_j) / N^2)) divided by
      -log(D(w_i, w_j) / N + EPSILON), over all pairs.

    A pair whose denominator is 0 (a word that no document of X holds) scores 0, as in gensim's
    u_mass."""
    top = _top_word_indices(model, n_words)
    X, _, _, executor = model._check_counts(X, reset=False)
    columns = np.unique(top)
    counts = document_cooccurrence(X, columns, executor)
    positions = np.searchsorted(columns, top)
    return _pair_scores(counts / X.shape[0], positions, measure)


def document_cooccurrence(X, columns, executor=None):
    """Square int64 matrix over ``columns``: entry (i, j) the number of documents (rows of X)
    holding both columns[i] and columns[j], the diagonal those holding columns[i]."""
    if not is_dask_array(X):
        return _block_cooccurrence(X, columns)[0]
    m = len(columns)
    per_chunk = X.rechunk({1: -1}).map_blocks(_block_cooccurrence, columns, new_axis=2,
                                              chunks=(1, m, m), dtype=np.int64)
    return executor.compute(per_chunk.sum(axis=0))[0]


def _block_cooccurrence(block, columns):
    present = (sp.csr_matrix(to_scipy_if_pydata(block))[:, columns] > 0).astype(np.int64)
    return (present.T @ present).toarray()[None]


def _pair_scores(probability, positions, measure):
    """Mean pair score per topic from the document probabilities (diagonal: single words) of the
    top words at ``positions`` (K, n) in ``probability``."""
    n = positions.shape[1]
    if measure == "u_mass":
        later, earlier = np.tril_indices(n, -1)
    else:
        later, earlier = np.nonzero(~np.eye(n, dtype=bool))
    first, second = positions[:, later], positions[:, earlier]
    single = np.diag(probability)
    joint = probability[first, second] + EPSILON
    # u_mass's ratio needs only the higher-ranked word's count, NPMI both words'
    seen = (single[second] > 0) & ((single[first] > 0) | (measure == "u_mass"))
    with np.errstate(divide="ignore", invalid="ignore"):
        if measure == "u_mass":
            scores = np.log(joint / single[second])
        else:
            scores = np.log(joint / (single[first] * single[second])) / -np.log(joint)
    return np.where(seen, scores, 0.0).mean(axis=1)


def completion_perplexity(model, X):
    """Held-out perplexity by document completion: each document's tokens are shuffled (with
    the model's ``random_state``) and split in two; its topic mixture is inferred from the first
    half (``floor(n_d / 2)`` tokens, by :meth:`transform`'s Gibbs sampler) and the second half
    is scored: exp(-sum of log sum_k theta_dk phi_kw over second-half tokens / their number).
    A Dask X is split and scored chunk by chunk on the cluster."""
    check_is_fitted(model)
    X, _, _, executor = model._check_counts(X, reset=False)
    announce_compiling("lda_inference", emit=logger.info)
    arguments = (model._phi_by_word(), model.alpha_, model.transform_iter,
                 model._inference_seed())
    if is_dask_array(X):
        per_chunk = X.rechunk({1: -1}).map_blocks(_completion_block, *arguments,
                                                  chunks=(1, 2), dtype=np.float64)
        log_likelihood, tokens = executor.compute(per_chunk.sum(axis=0))[0]
    else:
        log_likelihood, tokens = _completion_block(X, *arguments)[0]
    return float(np.exp(-log_likelihood / max(tokens, 1)))


def _completion_block(block, phi_by_word, alpha, n_sweeps, seed, block_id=(0, 0)):
    """[[log-likelihood of the second halves, their tokens]] of a chunk of documents."""
    rng = np.random.default_rng([seed, block_id[0]])
    observed, held_out = split_documents(sp.csr_matrix(to_scipy_if_pydata(block),
                                                       dtype=np.int64), rng)
    theta = infer_documents(observed.indptr.astype(np.int64), observed.indices.astype(np.int64),
                            observed.data, phi_by_word, alpha, n_sweeps, n_sweeps // 2,
                            int(rng.integers(2**31 - 1)))
    log_likelihood = documents_log_likelihood(held_out.indptr.astype(np.int64),
                                              held_out.indices.astype(np.int64), held_out.data,
                                              theta, phi_by_word)
    return np.array([[log_likelihood, held_out.sum()]], dtype=np.float64)


def split_documents(X, rng):
    """Two CSR count matrices summing to X: each row's tokens in random order, the first
    ``floor(n_d / 2)`` in the first matrix, the rest in the second."""
    X = X.copy()
    X.eliminate_zeros()
    lengths = np.diff(X.indptr)
    word = np.repeat(X.indices, X.data)
    document = np.repeat(np.repeat(np.arange(X.shape[0]), lengths), X.data)
    order = np.lexsort((rng.random(len(word)), document))
    tokens = np.asarray(X.sum(axis=1)).ravel()
    rank = np.arange(len(word)) - np.repeat(np.cumsum(tokens) - tokens, tokens)
    first = rank < np.repeat(tokens // 2, tokens)
    word, document = word[order], document[order]

    def counts(keep):
        ones = np.ones(np.count_nonzero(keep), dtype=np.int64)
        return sp.csr_matrix((ones, (document[keep], word[keep])), shape=X.shape)

    return counts(first), counts(~first)
