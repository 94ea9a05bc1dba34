"""The STRADS LDA program: collapsed Gibbs sampling with the word-rotation schedule.

Documents are split into P shards, one per worker, whose tokens, topic assignments and
document-topic counts never move. The vocabulary is split into U >= P blocks; a block's
word-topic rows are a *carried block* (see :class:`~dask_strads.programs.Program`). In sub-round
t (one engine round) shard p samples its tokens whose words are in block (floor(p U / P) + t)
mod U, then the block moves on, worker to worker. U sub-rounds make one iteration: every token sampled once.

Topic totals n_k: each push samples against the totals of the last pull plus its own changes,
and the pull adds up the shards' changes once per sub-round, as in the paper. Within a sub-round
a shard does not see the other shards' changes to n_k: a staleness of at most one sub-round in
the denominators (n_k + V beta), which are large, so the effect is small.

Initialisation: topics are drawn uniformly; the topic totals count every token from the start.
A block's word-topic rows start empty and each shard adds its own tokens' counts the first time
it holds the block, so during the first iteration a block's rows count only the shards that
have held it (a sequential initialisation); from the second iteration on all counts are exact.
"""
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from ..kernels.lda import (add_counts, fill_nonzero, pack_rows, random_topics, row_state,
                           sample_block, topic_dtype, topic_totals, unpack_rows)
from ..partition import block_edges
from .base import Instruction, Program, Report, round_seed


@dataclass(frozen=True)
class Shard:
    """A shard's tokens grouped by vocabulary block: block u holds tokens
    ``starts[u]:starts[u + 1]`` (sorted by document)."""

    doc: np.ndarray
    word: np.ndarray  # index local to the token's vocabulary block
    starts: np.ndarray
    n_docs: int


@dataclass(frozen=True)
class ShardState:
    z: np.ndarray
    n_dk: np.ndarray
    doc_topics: np.ndarray
    doc_nnz: np.ndarray
    counted: np.ndarray  # per block: has this shard added its tokens to the block's rows


@dataclass(frozen=True)
class WordBlock:
    n_wk: np.ndarray
    word_topics: np.ndarray
    word_nnz: np.ndarray

    def __reduce__(self):
        # Between workers a block travels as its nonzero counts, O(nonzeros) instead of
        # O(rows x K); the dense rows are rebuilt in pages that only nonzero rows touch.
        return _unpacked_block, pack_rows(self.n_wk, self.word_topics, self.word_nnz) + (
            self.n_wk.shape[1],)


def _unpacked_block(indptr, ids, values, n_topics):
    return WordBlock(*unpack_rows(indptr, ids, values, n_topics))


@dataclass(frozen=True)
class SubRound(Instruction):
    """A shard's sub-round: sample its tokens of vocabulary block ``carried`` from ``seed``."""

    round: int
    seed: int


@dataclass(frozen=True, kw_only=True)
class SamplingReport(Report):
    """A sub-round's tokens sampled, their log-likelihood (``objective``: its negative per
    token, for live views) and the slowest push's sampling seconds."""

    tokens: int | None = None
    log_likelihood: float | None = None
    sampling_seconds: float | None = None


@dataclass(frozen=True)
class Sampled:
    """A push's partial: its change to the topic totals and what it sampled."""

    n_k_change: np.ndarray
    tokens: int = 0
    log_likelihood: float = 0.0
    sampling_seconds: float = 0.0


def vocabulary_blocks(word_counts, n_blocks):
    """Block of each word and its index within the block: contiguous runs of words of about
    equal token counts (empty blocks at the end when there are fewer words than blocks).
    Returns ``(block_of_word, local_index, block_sizes)``."""
    edges = block_edges(len(word_counts), n_blocks, weights=word_counts)
    edges = np.pad(edges, (0, n_blocks + 1 - len(edges)), mode="edge")  # fewer words than blocks
    words = np.arange(len(word_counts))
    block_of_word = np.searchsorted(edges, words, side="right") - 1
    return block_of_word, words - edges[block_of_word], np.diff(edges)


def make_shard(X_rows, block_of_word, local_index, n_blocks):
    """Tokens of a CSR matrix of documents (rows) as a :class:`Shard`."""
    X_rows = X_rows.tocsr()
    counts = X_rows.data.astype(np.int64)
    doc = np.repeat(np.repeat(np.arange(X_rows.shape[0]), np.diff(X_rows.indptr)), counts)
    words = np.repeat(X_rows.indices, counts)
    block = block_of_word[words]
    order = np.lexsort((doc, block))
    starts = np.searchsorted(block[order], np.arange(n_blocks + 1))
    return Shard(doc[order].astype(np.int64), local_index[words][order].astype(np.int64),
                 starts, X_rows.shape[0])


class LDAProgram(Program):
    """Collapsed Gibbs LDA with K topics, priors alpha and beta, vocabulary of ``n_vocab`` words
    cut into blocks of ``block_sizes`` words, and ``n_shards`` document shards."""

    name = "lda"
    kernels = ("lda",)

    report_lag = 0
    static_schedule = True
    updates_in_place = True  # a shard's state and a block's rows are large and have one reader

    def __init__(self, n_topics, alpha, beta, n_vocab, block_sizes, n_shards, seed=0):
        self.n_topics = n_topics
        self.alpha = alpha
        self.beta = beta
        self.n_vocab = n_vocab
        self.block_sizes = list(block_sizes)
        self.n_carried = len(self.block_sizes)
        self.n_shards = n_shards
        self.seed = seed

    def initial_shared(self):
        return np.zeros(self.n_topics, dtype=np.int64)

    def init_block(self, data, block_id):
        z = random_topics(len(data.doc), self.n_topics, self.seed * 7919 + block_id)
        n_dk, doc_topics, doc_nnz = row_state(data.doc, z, data.n_docs, self.n_topics)
        counted = np.zeros(self.n_carried, dtype=bool)
        state = ShardState(z, n_dk, doc_topics, doc_nnz, counted)
        return state, Sampled(topic_totals(z, self.n_topics))

    def init_carried(self, carried_id):
        rows = self.block_sizes[carried_id]
        return WordBlock(np.zeros((rows, self.n_topics), dtype=np.int32),
                         np.zeros((rows, self.n_topics), dtype=topic_dtype(self.n_topics)),
                         np.zeros(rows, dtype=np.int32))

    def schedule(self, round_index, history):
        # shard p starts at block p U / P: a block waits between two shards for about U / P
        # sub-rounds, parked on the shard that sampled it last, so every worker holds about
        # U / P blocks (starting at block p, the last shard would collect all the idle ones)
        return {p: SubRound(round_index, round_seed(self.seed, round_index, p),
                            carried=(p * self.n_carried // self.n_shards + round_index)
                            % self.n_carried)
                for p in range(self.n_shards)}

    def push(self, block_id, data, state, instruction, shared, inbox):
        u = instruction.carried
        tokens = slice(data.starts[u], data.starts[u + 1])
        doc, word = data.doc[tokens], data.word[tokens]
        block = inbox.carried
        if not state.counted[u]:
            add_counts(block.n_wk, word, state.z[tokens])
            fill_nonzero(block.n_wk, block.word_topics, block.word_nnz)
            state.counted[u] = True
        n_k = shared.copy()
        start = perf_counter()
        *_, log_likelihood = sample_block(
            doc, word, state.z[tokens], state.n_dk, state.doc_topics, state.doc_nnz, block.n_wk,
            block.word_topics, block.word_nnz, n_k, self.alpha, self.beta, self.n_vocab,
            instruction.seed)
        seconds = perf_counter() - start
        return state, Sampled(n_k - shared, len(doc), log_likelihood, seconds), block

    def pull(self, partials, shared):
        reports = list(partials.values())
        n_k = shared + np.sum([r.n_k_change for r in reports], axis=0)
        tokens = sum(r.tokens for r in reports)
        log_likelihood = sum(r.log_likelihood for r in reports)
        # objective: the sub-round's negative per-token log-likelihood, for live views
        return n_k, SamplingReport(
            tokens=tokens, log_likelihood=log_likelihood,
            objective=-log_likelihood / tokens if tokens else None,
            sampling_seconds=max((r.sampling_seconds for r in reports), default=0.0))

    def collect(self, data, state, shared):
        """The shard's document-topic counts (a copy: the state changes in place)."""
        return state.n_dk.copy()

    def collect_carried(self, carried, carried_id):
        """The vocabulary block's word-topic counts (not a copy: a fit collects its carried
        blocks once, after its last round, and a copy of every block at once could take more
        than a worker's memory)."""
        return carried.n_wk
