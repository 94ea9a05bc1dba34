"""``dask_strads.LatentDirichletAllocation``: collapsed Gibbs LDA with the STRADS word rotation."""
import os
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
import psutil
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ..engine.blocks import worker_info
from ..engine.history import plane_totals
from ..kernels.compilation import announce_compiling
from ..kernels.lda import row_bytes
from ..kernels.lda_inference import documents_log_likelihood, infer_documents
from ..programs.lda import LDAProgram, make_shard, seed_prior, vocabulary_blocks
from .base import SHARED_CONSTRAINTS, DaskEstimatorMixin, NumberInterval
from ..log import logger
from ..partition import block_edges
from .inputs import (DaskArray, blocks_along, check_dask_matrix, is_dask_array, stored_values,
                     to_scipy_if_pydata)
from .lda_stopping import HeldOutStopping, held_out_perplexity
from . import topics


#: LDA's word-topic and document-topic count tables are int32: no word, no document, and so no
#: single count, may have more tokens.
MAX_COUNT = np.iinfo(np.int32).max
#: Memory a token takes while its shard is built (document, word and topic ids, and the sort).
BYTES_PER_TOKEN = 48
#: Vocabulary blocks per shard at most: an iteration is one round per block, so more blocks
#: add rounds (their latency) without spreading the work better.
MAX_VOCAB_BLOCKS_PER_SHARD = 8
#: Share of a worker's memory limit that one vocabulary block's word-topic rows may take. A worker
#: holds the block it samples and, for a while, the one it has handed on and the one it receives
#: next: three blocks, 30% of its memory, which leaves its shard and Dask's own use under Dask's
#: 60% spilling target.
BLOCK_MEMORY_SHARE = 0.1
#: The default vocabulary blocks: beyond its share of the table (model / P) and its shard, a
#: worker holds one block in flight, the one it receives while the one it handed on waits for its
#: next worker. Blocks of at most this share of model / P keep that within 1.3 model / P + shard
#: (U = 4P) ...
IN_FLIGHT_SHARE = 0.25
#: ... where model / P takes more than this share of a worker's memory; below it the block in
#: flight costs little and one block a shard has the fewest rounds (on a cluster U = 4P made
#: each iteration's rounds four times as many: 0.63 of the throughput at K = 1000).
SMALL_SHARE = 1 / 16
#: The sampler of ``sampler="auto"``: the faster one at every K measured (SparseLDA, against the
#: alias sampler at K = 1000, 5000 and 10,000 on NewsArticles, docs/lda.md).
AUTO_SAMPLER = "sparse"
#: The seed of ``transform`` (and of the held-out split) when ``random_state`` is None, so that
#: two calls give equal results.
INFERENCE_SEED = 0


class LatentDirichletAllocation(DaskEstimatorMixin, ClassNamePrefixFeaturesOutMixin,
                                TransformerMixin, BaseEstimator):
    """LDA by model-parallel collapsed Gibbs sampling (STRADS word rotation).

    Documents are split into one shard per worker; the vocabulary into ``n_vocab_blocks`` blocks
    (default: one per worker) balanced by token count, whose word-topic rows rotate among the
    workers (see :mod:`dask_strads.programs.lda`). ``max_iter`` iterations sample every token
    ``max_iter`` times.

    Parameters
    ----------
    n_components : int
        Number of topics K.
    doc_topic_prior, topic_word_prior : float or None
        alpha and beta (their initial values when they are learned, see
        ``optimize_interval``); None gives 1 / n_components (scikit-learn's default).
    max_iter : int
        Gibbs iterations (each samples every token once).
    optimize_interval : int
        Learn the priors every this many iterations (tomotopy's ``optim_interval``, Mallet's
        ``--optimize-interval``): an asymmetric alpha (one value per topic) and a symmetric beta,
        by Minka's fixed point from the sampler's counts (see docs/lda.md). 0 keeps them fixed.
    burn_in : int
        Iterations before the first update of the priors (tomotopy's ``burn_in``).
    validation_data : array-like or sparse matrix of counts, or None
        Held-out documents (with X's columns) for early stopping: their document-completion
        perplexity is measured every iteration (each document's tokens split in two with the
        inference seed, one half sampled beside the training tokens, the other scored) and kept
        in ``history_``; the fit stops when it has not improved for ``n_iter_no_change``
        iterations.
    n_iter_no_change : int
        Iterations without a better held-out perplexity before the fit stops (with
        ``validation_data``).
    seed_topics : dict or None
        Seeded topics, ``{topic: [word column indices]}``: the topic-word prior of each such
        (word, topic) pair is ``beta + seed_strength`` instead of ``beta`` (as tomotopy's
        ``set_word_prior``), which draws the seed words' tokens to their topics.
    seed_strength : float
        The boost of the seeded pairs' prior, in pseudo-counts of the word in the topic.
    sampler : {"auto", "sparse", "alias"}
        How tokens are drawn: "sparse" is SparseLDA's exact collapsed Gibbs draw, O(K_d + K_w)
        a token (nonzero topics of its document and word); "alias" a short Metropolis-Hastings
        chain with alias-table proposals (LightLDA), O(1) draws a token, whose word proposals
        are stale by at most the sub-round; "auto" is ``AUTO_SAMPLER``, the faster of the two
        at every K measured (SparseLDA up to K = 10,000 on a 1M-token corpus, docs/lda.md).
    n_vocab_blocks : int or None
        Vocabulary blocks U >= number of workers; None: one per worker, or four per worker when
        a worker's share of the word-topic table (about V x K x 6 bytes / P) exceeds 1/16 of its
        memory (``SMALL_SHARE``; its memory limit, or this machine's memory in process), so
        that the block a worker receives while sampling is at most a quarter of its share (its
        peak is then about 1.25 x table / P + its shard, see docs/lda.md). Capped at the number
        of words that occur in X and at ``MAX_VOCAB_BLOCKS_PER_SHARD`` (8) per shard: each
        iteration is U rounds, so blocks beyond these only add round latency. Raised, whatever
        is asked, until no block's word-topic rows take more than ``BLOCK_MEMORY_SHARE`` (10%)
        of a worker's memory limit (of this machine's memory in process), so that a table
        larger than a worker trains. The number used is ``n_vocab_blocks_``.
    staleness : int
        Sub-rounds a shard may run ahead of the reconciled topic totals (0: synchronous).
    topic_totals_every : {"sub_round", "iteration"}
        How often the shards' changes to the topic totals n_k are added up and shared: every
        sub-round (a shard sees the others' changes one sub-round late), or once an iteration,
        as the STRADS reference does (a shard sees its own changes at once and the others' up to
        an iteration late). See docs/lda.md for the effect on quality.
    transform_iter : int
        Gibbs sweeps per document in ``transform`` (half of them burn-in).
    random_state : int, RandomState or None
        Seeds the fit, and ``transform``, ``score`` and the held-out estimates: with None the
        fit is random but these use the fixed seed ``INFERENCE_SEED``, so that two calls on the
        same documents give equal results.
    keep_on_cluster, checkpoint_interval, checkpoint_dir, progress, callback
        As in :class:`dask_strads.Lasso` (LDA's rounds are sub-rounds: ``n_vocab_blocks_`` an
        iteration).

    Attributes
    ----------
    components_ : ndarray (K, V)
        Word-topic counts plus ``beta_``: rows proportional to the topics. With
        ``keep_on_cluster=True`` a Dask array whose chunks along V are the vocabulary blocks.
    doc_topic_ : ndarray (n_documents, K)
        The training documents' topic distributions from the final sampler state,
        (n_dk + alpha_k) / (n_d + sum_k alpha_k); rows sum to 1.
    alpha_ : ndarray (K,)
        The document-topic prior the fit ended with: learned (asymmetric) with
        ``optimize_interval``, else ``doc_topic_prior`` for every topic.
    beta_ : float
        The topic-word prior the fit ended with (learned with ``optimize_interval``).
    n_vocab_blocks_ : int
        Vocabulary blocks used (see ``n_vocab_blocks``).
    vocabulary_ : ndarray of str (V,) or None
        The words of the columns: fit's ``feature_names``, else the column names of a DataFrame
        X (``feature_names_in_``), else None. Used by :meth:`top_words`.
    n_iter_, history_
        Iterations run; per-iteration records (iteration, time, log_likelihood per token,
        tokens_per_second). ``log_likelihood`` is the mean over the iteration's tokens of the log
        leave-one-out predictive probability log p(w_i | all other tokens), summed by the sampler
        as it draws each token (free; a little below the plug-in log sum_k theta_dk phi_kw).
        With ``validation_data`` also ``held_out_perplexity`` (and ``stopped_early`` on the
        iteration after which it stopped the fit). The engine's totals are in
        ``history_.stats``.
    """

    _parameter_constraints = {
        **SHARED_CONSTRAINTS,
        "n_components": [NumberInterval(Integral, 1, None, closed="left")],
        "doc_topic_prior": [NumberInterval(Real, 0, None, closed="neither"), None],
        "topic_word_prior": [NumberInterval(Real, 0, None, closed="neither"), None],
        "n_vocab_blocks": [NumberInterval(Integral, 1, None, closed="left"), None],
        "staleness": [NumberInterval(Integral, 0, None, closed="left")],
        "transform_iter": [NumberInterval(Integral, 2, None, closed="left")],
        "optimize_interval": [NumberInterval(Integral, 0, None, closed="left")],
        "burn_in": [NumberInterval(Integral, 0, None, closed="left")],
        "validation_data": ["array-like", "sparse matrix", None],
        "n_iter_no_change": [NumberInterval(Integral, 1, None, closed="left")],
        "seed_topics": [dict, None],
        "seed_strength": [NumberInterval(Real, 0, None, closed="neither")],
        "sampler": [StrOptions({"auto", "sparse", "alias"})],
        "topic_totals_every": [StrOptions({"sub_round", "iteration"})],
    }

    def __init__(self, n_components: int = 10, *, doc_topic_prior: float | None = None,
                 topic_word_prior: float | None = None, max_iter: int = 100,
                 optimize_interval: int = 10, burn_in: int = 0, validation_data: Any = None,
                 n_iter_no_change: int = 10, seed_topics: dict[int, ArrayLike] | None = None,
                 seed_strength: float = 50.0,
                 sampler: Literal["auto", "sparse", "alias"] = "auto",
                 n_vocab_blocks: int | None = None, staleness: int = 0,
                 topic_totals_every: Literal["sub_round", "iteration"] = "sub_round",
                 transform_iter: int = 50,
                 random_state: int | np.random.RandomState | None = None,
                 keep_on_cluster: bool = False, checkpoint_interval: int = 10,
                 checkpoint_dir: str | os.PathLike | None = None,
                 progress: bool | Literal["plot"] = False,
                 callback: Callable[..., Any] | None = None) -> None:
        self.n_components = n_components
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.max_iter = max_iter
        self.optimize_interval = optimize_interval
        self.burn_in = burn_in
        self.validation_data = validation_data
        self.n_iter_no_change = n_iter_no_change
        self.seed_topics = seed_topics
        self.seed_strength = seed_strength
        self.sampler = sampler
        self.n_vocab_blocks = n_vocab_blocks
        self.staleness = staleness
        self.topic_totals_every = topic_totals_every
        self.transform_iter = transform_iter
        self.random_state = random_state
        self.keep_on_cluster = keep_on_cluster
        self.checkpoint_interval = checkpoint_interval
        self.checkpoint_dir = checkpoint_dir
        self.progress = progress
        self.callback = callback

    # -- parameters and input ---------------------------------------------------------------
    def _priors(self):
        alpha = self.doc_topic_prior if self.doc_topic_prior is not None else 1 / self.n_components
        beta = self.topic_word_prior if self.topic_word_prior is not None else 1 / self.n_components
        return float(alpha), float(beta)

    def _inference_seed(self):
        """The seed of transform and the held-out estimates: fixed when random_state is None."""
        return INFERENCE_SEED if self.random_state is None else self._seed()

    def _check_counts(self, X, reset):
        """X as CSR int64 counts (or a dask array, checked chunk by chunk), and the executor a
        dask X was checked on (None for X in memory). With ``reset`` (a fit) also its column sums
        (tokens per word) and row sums (tokens per document), else None for both. Leaves the
        estimator as it was."""
        executor = None
        if is_dask_array(X):
            X = check_dask_matrix(X, self, None if reset else self.n_features_in_)
            flags = X.map_blocks(_count_flags, chunks=(1, 1, 4), new_axis=2, dtype=bool)
            sums = (X.sum(axis=0), X.sum(axis=1)) if reset else ()
            executor = (self._fit_executor if reset else self._data_executor)(X.size)
            ok, *sums = executor.compute(flags.all(axis=(0, 1)), *sums)
            _raise_unless_counts(*ok)
        else:
            X = to_scipy_if_pydata(X)
            X = sp.csr_matrix(check_array(X, accept_sparse="csr", dtype=np.float64) if reset else
                              validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                                            reset=False))
            _raise_unless_counts(*_count_flags(X).ravel())
            X = X.astype(np.int64)
            X.eliminate_zeros()
            sums = (X.sum(axis=0), X.sum(axis=1)) if reset else ()
        word_counts, doc_lengths = map(_dense_vector, sums) if reset else (None, None)
        return X, word_counts, doc_lengths, executor

    # -- fitting ------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None,
            feature_names: ArrayLike | None = None) -> "LatentDirichletAllocation":
        """Fit the topics to a document-term count matrix (documents x words).

        ``feature_names`` (one word per column, e.g. the vocabulary of
        :func:`dask_strads.io.read_bag_of_words` or a ``CountVectorizer``'s
        ``get_feature_names_out()``) is kept as ``vocabulary_``; a DataFrame X's column names
        are kept without it.

        The training documents' topic distributions from the final sampler state are kept in
        ``doc_topic_``. ``fit_transform(X)`` is ``fit(X).transform(X)``, as in scikit-learn: with a
        fixed ``random_state`` it equals ``transform(X)`` of the fitted model, which the final
        sampler state (one Gibbs sample) cannot.

        Refused (ValueError, before any work): a corpus without tokens, a count, word or
        document of more than ``MAX_COUNT`` tokens (the int32 count tables), and more tokens
        than a shard's memory holds at ``BYTES_PER_TOKEN`` bytes a token.
        """
        self._check_params()
        self._fit_topics(X, feature_names)
        return self

    def _fit_topics(self, X, feature_names, labels=None):
        """The fit of :meth:`fit` (parameters checked) with the program of :meth:`_program`;
        ``labels``: one row per document of X, each shard's rows handed to
        :meth:`_labelled_shard` (a supervised model's). Returns the engine's records, before
        they are grouped by iteration."""
        vocabulary = topics.fitted_vocabulary(X, feature_names)
        given = X
        X, word_counts, doc_lengths, executor = self._check_counts(X, reset=True)
        held_out = self._held_out_halves(X.shape[1])
        seeded = self._seeded_pairs(X.shape[1])
        executor = executor or self._fit_executor(int(word_counts.sum()))  # a shard stores tokens
        n_shards = max(1, min(len(executor.workers), X.shape[0]))
        edges = block_edges(X.shape[0], n_shards, weights=doc_lengths)  # tokens balanced
        # shards of X in memory, or on a local scheduler, are all built in this process
        _check_tokens(word_counts, doc_lengths, edges, not is_dask_array(X) or executor.local,
                      executor)
        alpha, beta = self._priors()
        occurring = int(np.count_nonzero(word_counts))
        memory = psutil.virtual_memory().total if executor.local else _worker_memory(executor)
        asked = self.n_vocab_blocks or default_vocab_blocks(
            len(word_counts) * row_bytes(self.n_components), n_shards, memory)
        n_blocks = max(n_shards, min(asked, occurring, MAX_VOCAB_BLOCKS_PER_SHARD * n_shards))
        block_of_word, local_index, sizes = _blocks_within_memory(
            word_counts, n_blocks, self.n_components, memory)
        n_blocks = len(sizes)

        held_out_edges = None if held_out is None else block_edges(
            held_out[0].shape[0], n_shards, weights=np.asarray(held_out[0].sum(axis=1)).ravel())

        def shard(rows, lo, hi):
            halves = None
            if held_out is not None:
                p = int(np.searchsorted(edges, lo))
                halves = [h[held_out_edges[p]:held_out_edges[p + 1]] for h in held_out]
            made = make_shard(sp.csr_matrix(rows), block_of_word, local_index, n_blocks, halves)
            return made if labels is None else labelled(made, labels[lo:hi])

        seeds = None if seeded is None else seed_prior(
            *seeded, np.full(len(seeded[0]), float(self.seed_strength)), block_of_word,
            local_index, sizes, self.n_components)
        labelled = self._labelled_shard  # a plain function: the shards may be built on workers
        program = self._program(alpha, beta, len(word_counts), sizes, n_shards, seeds, labels)
        stopping = None if held_out is None else (
            lambda callback: HeldOutStopping(n_blocks, self.n_iter_no_change, callback))
        result = self._run_engine(program, blocks_along(X, edges, shard, axis=0), executor,
                                  self.max_iter * n_blocks, (X,), staleness=self.staleness,
                                  stopping=stopping)
        n_dk = self._parameters(result)
        learned = [r for r in result.history.records if "alpha" in r]
        self.alpha_ = np.array(learned[-1]["alpha"] if learned else program.alpha)
        self.beta_ = float(learned[-1]["beta"] if learned else beta)
        self._reset_features(given)
        self.vocabulary_ = vocabulary
        self.components_ = _with_boosts(
            (result.carried_parameters() if self.keep_on_cluster else
             _gathered_by_turns(result)).T + self.beta_, seeded, float(self.seed_strength))
        self.doc_topic_ = (n_dk + self.alpha_) / (n_dk.sum(axis=1, keepdims=True)
                                                  + self.alpha_.sum())
        self.n_iter_ = result.history.stats.rounds // n_blocks
        records = list(result.history.records)
        self.history_ = _per_iteration(result.history, n_blocks)
        self.n_vocab_blocks_ = n_blocks
        self._executor = executor
        return records

    def _program(self, alpha, beta, n_vocab, block_sizes, n_shards, seeds, labels):
        """The fit's program, given its priors and layout (``labels`` unused: LDA has none)."""
        sampler = AUTO_SAMPLER if self.sampler == "auto" else self.sampler
        return LDAProgram(self.n_components, alpha=alpha, beta=beta, n_vocab=n_vocab,
                          block_sizes=block_sizes, n_shards=n_shards,
                          seed=self._seed(), optimize_interval=self.optimize_interval,
                          burn_in=self.burn_in, seeds=seeds, sampler=sampler,
                          topic_totals_every=self.topic_totals_every)

    @staticmethod
    def _labelled_shard(shard, labels):
        """A shard with its documents' labels: LDA has none (a supervised model's does)."""
        return shard

    # -- inference ----------------------------------------------------------------------------
    def _phi_by_word(self):
        components = self._in_memory(self.components_)
        return np.ascontiguousarray((components / components.sum(axis=1, keepdims=True)).T)

    def _held_out_halves(self, n_words):
        """The two halves (sampled, scored) of every ``validation_data`` document, or None;
        checked against the X of ``n_words`` columns."""
        if self.validation_data is None:
            return None
        try:
            held_out = sp.csr_matrix(check_array(to_scipy_if_pydata(self.validation_data),
                                                 accept_sparse="csr", dtype=np.float64))
            _raise_unless_counts(*_count_flags(held_out).ravel())
        except ValueError as error:
            raise ValueError(f"validation_data: {error}") from None
        if held_out.shape[1] != n_words:
            raise ValueError(f"validation_data has {held_out.shape[1]} columns, X has "
                             f"{n_words}: give held-out documents of the same words")
        halves = topics.split_documents(held_out.astype(np.int64),
                                        np.random.default_rng(self._inference_seed()))
        if halves[1].sum() == 0:
            raise ValueError("validation_data has no document of two tokens or more: there is "
                             "nothing to score")
        return halves

    def _seeded_pairs(self, n_words):
        """(topics, words) of the ``seed_topics`` pairs, checked against K and the X of
        ``n_words`` columns, or None."""
        if not self.seed_topics:
            return None
        topics, words = [], []
        for topic, seed_words in self.seed_topics.items():
            if not (isinstance(topic, Integral) and 0 <= topic < self.n_components):
                raise ValueError(f"seed_topics has topic {topic!r}: topics are integers in "
                                 f"[0, {self.n_components})")
            seed_words = np.unique(np.asarray(seed_words).ravel())
            if seed_words.size and not (np.issubdtype(seed_words.dtype, np.integer)
                                        and 0 <= seed_words.min() and seed_words.max() < n_words):
                raise ValueError(f"seed_topics[{topic}] holds {seed_words.tolist()[:5]}...: seed "
                                 f"words are column indices of X, integers in [0, {n_words})")
            topics += [int(topic)] * len(seed_words)
            words += seed_words.tolist()
        return np.array(topics, dtype=np.int64), np.array(words, dtype=np.int64)

    def transform(self, X: Any, normalize: bool = True) -> np.ndarray | DaskArray:
        """Topic distributions of documents, by Gibbs sampling with the topics fixed: the mean
        over the sweeps after burn-in of (n_dk + alpha_k) / (n_d + sum_k alpha_k). With
        ``normalize=False`` the unnormalised document-topic weights n_dk + alpha_k (the same
        rows times n_d + sum_k alpha_k), as scikit-learn's, whose variational parameters also
        sum to n_d + sum_k alpha_k. Deterministic: seeded by ``random_state``, or by
        ``INFERENCE_SEED`` when it is None."""
        check_is_fitted(self)
        announce_compiling("lda_inference", emit=logger.info)
        return self._transform_counts(self._check_counts(X, reset=False)[0], normalize)

    def _transform_counts(self, X, normalize=True):
        """:meth:`transform` of checked counts."""
        if is_dask_array(X):
            return X.rechunk({1: -1}).map_blocks(self._transform_in_memory, normalize,
                                                 dtype=np.float64,
                                                 chunks=(X.chunks[0], (self.n_components,)))
        return self._transform_in_memory(X, normalize)

    def _transform_in_memory(self, X, normalize=True):
        X = sp.csr_matrix(to_scipy_if_pydata(X), dtype=np.int64)
        theta = infer_documents(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data,
                                self._phi_by_word(), self.alpha_, self.transform_iter,
                                self.transform_iter // 2, self._inference_seed())
        if normalize:
            return theta
        return theta * (np.asarray(X.sum(axis=1)) + self.alpha_.sum())

    def score(self, X: Any, y: Any = None) -> float:
        """Log-likelihood of X: sum over tokens of log sum_k theta_dk phi_kw, with theta from
        :meth:`transform`."""
        return self._log_likelihood(X)[0]

    def perplexity(self, X: Any) -> float:
        """exp(-score / number of tokens)."""
        log_likelihood, tokens = self._log_likelihood(X)
        return float(np.exp(-log_likelihood / max(tokens, 1)))

    def _log_likelihood(self, X):
        """:meth:`score` of X, and its number of tokens."""
        check_is_fitted(self)
        X, _, _, executor = self._check_counts(X, reset=False)
        announce_compiling("lda_inference", emit=logger.info)
        theta = self._transform_counts(X)
        if is_dask_array(X):
            X, theta = executor.compute(X, theta)
        X = sp.csr_matrix(to_scipy_if_pydata(X), dtype=np.int64)
        return float(documents_log_likelihood(X.indptr.astype(np.int64),
                                              X.indices.astype(np.int64), X.data,
                                              np.asarray(theta), self._phi_by_word())), int(X.sum())

    def top_words(self, n: int = 10,
                  feature_names: ArrayLike | None = None) -> list[list[str]] | list[list[int]]:
        """Each topic's ``n`` most probable words, most probable first: one list per topic, of
        names from ``feature_names``, else ``vocabulary_``, else of column indices."""
        return topics.top_words(self, n, feature_names)

    def coherence(self, X: Any, measure: Literal["u_mass", "c_npmi"] = "u_mass",
                  n_words: int = 10) -> np.ndarray:
        """Each topic's coherence (array of ``n_components``) over its ``n_words`` top words,
        from the document co-occurrence counts of those words in X: ``"u_mass"`` (Mimno et al.
        2011) or ``"c_npmi"`` (normalised PMI), as gensim's ``CoherenceModel`` computes them
        with each document as one window. Higher is more coherent. A Dask X is counted chunk by
        chunk on the cluster."""
        return topics.coherence(self, X, measure, n_words)

    def completion_perplexity(self, X: Any) -> float:
        """Held-out perplexity by document completion (Wallach et al. 2009): each document's
        tokens are shuffled (``random_state``) and halved; the topic mixture inferred from the
        first half (as by :meth:`transform`) scores the second. Unlike :meth:`perplexity`, no
        token is scored by a mixture estimated from itself."""
        return topics.completion_perplexity(self, X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        # Word counts are integers. scikit-learn's checks draw integer data only for estimators
        # tagged categorical (as CategoricalNB), and non-integer counts are refused here.
        tags.input_tags.categorical = True
        tags.requires_fit = True
        return tags

    @property
    def _n_features_out(self):
        return self.n_components


def _dense_vector(sums):
    """A matrix's row or column sums (numpy matrix, pydata sparse or array) as a 1-D array."""
    return np.asarray(getattr(sums, "todense", lambda: sums)()).ravel()


def _count_flags(block):
    """[finite, non-negative, integer, at most MAX_COUNT] of one chunk, shaped (1, 1, 4)."""
    values = stored_values(block)
    finite = bool(np.all(np.isfinite(values)))
    flags = [finite, bool(np.all(values >= 0)),
             finite and bool(np.all(values == np.round(values))),
             bool(np.all(values <= MAX_COUNT))]
    return np.array(flags).reshape(1, 1, 4)


def _raise_unless_counts(finite, non_negative, integer, bounded):
    if not finite:
        raise ValueError("Input X contains NaN or infinity: LDA needs word counts.")
    if not non_negative:
        raise ValueError("Negative values in data passed to LatentDirichletAllocation: it needs "
                         "non-negative word counts.")
    if not integer:
        raise ValueError("Input X contains non-integer values: LDA needs integer word counts.")
    if not bounded:
        raise ValueError(f"Input X holds counts above {MAX_COUNT}, the int32 range of LDA's "
                         "count tables.")


def _check_tokens(word_counts, doc_lengths, edges, built_here, executor):
    """Refuse a corpus without tokens, a word or a document with more tokens than the int32
    count tables hold, and tokens that would not fit in the memory where their shards are
    built: this process's for all of them when ``built_here``, else a worker's for each."""
    if word_counts.sum() == 0:
        raise ValueError("X holds no tokens: every count is zero, there is nothing to fit.")
    for name, totals in (("word", word_counts), ("document", doc_lengths)):
        if totals.max() > MAX_COUNT:
            raise ValueError(f"A {name} of X has {int(totals.max())} tokens, above {MAX_COUNT}, "
                             "the int32 range of LDA's count tables.")
    per_shard = np.add.reduceat(doc_lengths, edges[:-1])
    tokens = int(per_shard.sum() if built_here else per_shard.max())
    memory = psutil.virtual_memory().total if built_here else _worker_memory(executor)
    if tokens > memory // BYTES_PER_TOKEN:
        raise ValueError(
            f"X has {tokens} tokens to expand {'in this process' if built_here else 'in a shard'},"
            f" more than the {memory // BYTES_PER_TOKEN} that {memory / 2**30:.1f} GiB of memory "
            f"holds at {BYTES_PER_TOKEN} bytes a token.")


def default_vocab_blocks(table_bytes, n_shards, memory):
    """U when ``n_vocab_blocks`` is None: one block a shard while a shard's share of the
    word-topic table is at most ``SMALL_SHARE`` of ``memory`` (a worker's), else
    ``1 / IN_FLIGHT_SHARE`` (4) a shard."""
    if table_bytes / n_shards <= SMALL_SHARE * memory:
        return n_shards
    return int(np.ceil(n_shards / IN_FLIGHT_SHARE))


def _blocks_within_memory(word_counts, n_blocks, n_topics, memory):
    """:func:`vocabulary_blocks` of ``n_blocks`` blocks, or of more when the largest block's
    word-topic rows would take over ``BLOCK_MEMORY_SHARE`` of ``memory``: then the blocks are cut
    by tokens and rows alike, as many as it takes for each to fit."""
    layout = vocabulary_blocks(word_counts, n_blocks)
    row = row_bytes(n_topics)
    budget = BLOCK_MEMORY_SHARE * memory
    if layout[2].max() * row <= budget:
        return layout
    n_words = len(word_counts)
    weights = word_counts / word_counts.sum() + 1.0 / n_words
    n_blocks = max(n_blocks, int(np.ceil(n_words * row / budget)))
    while True:
        layout = vocabulary_blocks(weights, min(n_blocks, n_words))
        if layout[2].max() * row <= budget or n_blocks >= n_words:
            logger.info("the vocabulary's word-topic table (%.0f MiB) is cut into %d blocks so "
                        "that each takes at most %.0f%% of a worker's memory (%.0f MiB)",
                        n_words * row / 2**20, len(layout[2]), 100 * BLOCK_MEMORY_SHARE,
                        memory / 2**20)
            return layout
        n_blocks = int(np.ceil(n_blocks * 1.1))


def _gathered_by_turns(result):
    """The carried blocks' word-topic counts in this process, stacked, gathered one block per
    worker at a time: a worker serves the blocks one gather asks of it at once, each read back
    from disk if Dask spilled it, and its whole share of a table larger than its memory limit
    would not fit in it."""
    workers = result.carried_workers
    queues = {w: [c for c, owner in enumerate(workers) if owner == w] for w in set(workers)}
    blocks = [None] * len(workers)
    while any(queues.values()):
        turn = [queue.pop(0) for queue in queues.values() if queue]
        values = result.executor.gather([result.carried[c] for c in turn],
                                        [workers[c] for c in turn])
        for c, value in zip(turn, values):
            blocks[c] = value
    return np.concatenate(blocks)


def _worker_memory(executor):
    """The smallest worker memory limit of a cluster, or this machine's memory if none is set."""
    limits = [w.get("memory_limit") or 0 for w in worker_info(executor.client).values()]
    return min([m for m in limits if m > 0] or [psutil.virtual_memory().total])


def _with_boosts(components, seeded, strength):
    """``components`` (K x V, in memory or a Dask array chunked along V) plus ``strength`` at
    the seeded (topic, word) pairs."""
    if seeded is None:
        return components
    if is_dask_array(components):
        return components.map_blocks(_boosted_chunk, *seeded, strength, dtype=components.dtype)
    _boosted_chunk(components, *seeded, strength, copy=False)
    return components


def _boosted_chunk(chunk, topics, words, strength, copy=True, block_info=None):
    """A chunk of columns of the components (from ``block_info``'s offset, or all), boosted."""
    lo, hi = block_info[0]["array-location"][1] if block_info else (0, chunk.shape[1])
    mine = (words >= lo) & (words < hi)
    chunk = chunk.copy() if copy else chunk
    np.add.at(chunk, (topics[mine], words[mine] - lo), strength)
    return chunk


def _per_iteration(history, n_blocks):
    """One record per iteration (n_blocks sub-rounds): per-token log-likelihood (its negative is
    the objective) and speed."""
    records = []
    for start in range(0, len(history.records) - n_blocks + 1, n_blocks):
        group = history.records[start:start + n_blocks]
        tokens = sum(r["tokens"] for r in group)
        previous_time = history.records[start - 1]["time"] if start else 0.0
        seconds = group[-1]["time"] - previous_time
        log_likelihood = sum(r["log_likelihood"] for r in group) / tokens
        perplexity = held_out_perplexity(group)
        records.append({"round": group[-1]["round"], "iteration": start // n_blocks,
                        "time": group[-1]["time"], "objective": -log_likelihood,
                        "log_likelihood": log_likelihood,
                        "tokens_per_second": tokens / seconds if seconds > 0 else float("inf"),
                        **({} if perplexity is None else {"held_out_perplexity": perplexity}),
                        **({"stopped_early": True} if any(r.get("stopped_early") for r in group)
                           else {}),
                        **plane_totals(group)})
    history.records[:] = records
    return history
