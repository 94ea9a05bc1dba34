"""The STRADS LDA program: collapsed Gibbs sampling with the word-rotation schedule.

Documents are split into P shards, one per worker, whose tokens, topic assignments and
document-topic counts never move. The vocabulary is split into U >= P blocks; a block's
word-topic rows are a *carried block* (see :class:`~dask_strads.programs.Program`). In sub-round
t (one engine round) shard p samples its tokens whose words are in block (floor(p U / P) + t)
mod U, then the block moves on, worker to worker. U sub-rounds make one iteration: every token
sampled once.

Topic totals n_k: each push samples against the totals of the last pull plus its own changes,
and the pull adds up the shards' changes once per sub-round (``topic_totals_every="sub_round"``).
Within a sub-round a shard does not see the other shards' changes to n_k: a staleness of at
most one sub-round in the denominators (n_k + V beta), which are large, so the effect is small.
With ``topic_totals_every="iteration"`` (the STRADS reference's choice) the pulls publish the
shards' changes once an iteration, in its last sub-round: until then each shard samples against
the published totals plus all its own changes since (``ShardState.own_change``), a staleness of
at most one iteration in the other shards' changes.

Initialisation: topics are drawn uniformly; the topic totals count every token from the start.
A block's word-topic rows start empty and each shard adds its own tokens' counts the first time
it holds the block, so during the first iteration a block's rows count only the shards that
have held it (a sequential initialisation); from the second iteration on all counts are exact.

Priors: ``shared`` carries the document-topic prior alpha (K,) and the topic-word prior beta with
the totals. With ``optimize_interval`` the last sub-round of every ``optimize_interval``-th
iteration (after ``burn_in``) updates them in its pull by Minka's fixed point
(:mod:`.lda_priors`) from histograms its pushes send: alpha from every shard's document-topic
counts, beta from the word-topic rows of the blocks held in that sub-round (all of them when
U = P, else P of the U blocks: a sample of the vocabulary).

Seeded topics: ``seeds`` (a :class:`SeedPrior`) adds a boost to beta on chosen (word, topic)
pairs, which every push's sampler takes with its block's rows of them.

Held-out documents (validation data): a shard may hold some, each split in two halves. Every
push also resamples the first halves' tokens of its block against the block's rows (without
changing them) and scores the second halves' tokens (document completion); the pull sums the
scores into the report, which makes a held-out perplexity per iteration.
"""
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from ..kernels.lda import (add_counts, count_rows, fill_nonzero, pack_rows, random_topics,
                           row_state, sample_block, topic_dtype, topic_priors, topic_totals,
                           unpack_rows)
from ..kernels.lda_alias import document_index, sample_block_alias
from ..kernels.lda_inference import sample_held_out, score_held_out
from ..partition import block_edges
from ..sizes import register_dataclasses
from .base import Instruction, Program, Report, round_seed
from .lda_priors import PriorCounts, prior_counts, updated_priors


@dataclass(frozen=True)
class Shard:
    """A shard's tokens grouped by vocabulary block: block u holds tokens
    ``starts[u]:starts[u + 1]`` (sorted by document)."""

    doc: np.ndarray
    word: np.ndarray  # index local to the token's vocabulary block
    starts: np.ndarray
    n_docs: int
    held_out: "HeldOut | None" = None


@dataclass(frozen=True)
class HeldOut:
    """A shard's held-out documents: the halves sampled and the halves scored, and the sampled
    halves' lengths."""

    sampled: Shard
    scored: Shard
    lengths: np.ndarray


@dataclass(frozen=True)
class ShardState:
    z: np.ndarray
    n_dk: np.ndarray
    doc_topics: np.ndarray
    doc_nnz: np.ndarray
    counted: np.ndarray  # per block: has this shard added its tokens to the block's rows
    held_out_z: np.ndarray | None = None
    held_out_n_dk: np.ndarray | None = None
    doc_index: tuple | None = None  # the alias sampler's (starts, positions) of each document
    own_change: np.ndarray | None = None  # totals once an iteration: unpublished own changes


@dataclass(frozen=True)
class TopicTotals:
    """The shared value: topic totals n_k (int64) and the priors every push samples with;
    ``unpublished``: with totals once an iteration, the shards' changes this iteration."""

    n_k: np.ndarray
    alpha: np.ndarray
    beta: float
    unpublished: np.ndarray | None = None


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
class SeedPrior:
    """Boosts to the topic-word prior: ``rows[u]`` = (indptr, topics, boosts) over block u's
    words (local ids), ``totals`` (K,) the boosts of each topic over every block."""

    rows: list
    totals: np.ndarray


def seed_prior(topics, words, boosts, block_of_word, local_index, block_sizes, n_topics):
    """:class:`SeedPrior` of the seeded pairs (``topics[i]``, ``words[i]``) with ``boosts[i]``
    (global word ids)."""
    topics, words = np.asarray(topics, dtype=np.int64), np.asarray(words, dtype=np.int64)
    boosts = np.asarray(boosts, dtype=np.float64)
    rows = []
    for u, size in enumerate(block_sizes):
        mine = np.flatnonzero(block_of_word[words] == u)
        local = local_index[words[mine]]
        order = np.argsort(local, kind="stable")
        indptr = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.bincount(local, minlength=size), out=indptr[1:])
        rows.append((indptr, topics[mine][order], boosts[mine][order]))
    return SeedPrior(rows, np.bincount(topics, weights=boosts, minlength=n_topics))


@dataclass(frozen=True)
class SubRound(Instruction):
    """A shard's sub-round: sample its tokens of vocabulary block ``carried`` from ``seed``;
    ``update_priors``: and send what the pull needs to update the priors; ``publishes``: its
    pull publishes the topic totals (every sub-round unless they are once an iteration)."""

    round: int
    seed: int
    update_priors: bool = False
    publishes: bool = True


@dataclass(frozen=True, kw_only=True)
class SamplingReport(Report):
    """A sub-round's tokens sampled, their log-likelihood (``objective``: its negative per
    token, for live views) and the slowest push's sampling seconds."""

    tokens: int | None = None
    log_likelihood: float | None = None
    sampling_seconds: float | None = None
    held_out_tokens: int | None = None  # with validation data: the held-out chain's score
    held_out_log_likelihood: float | None = None
    alpha: list | None = None  # the priors, in a sub-round that updates them
    beta: float | None = None


@dataclass(frozen=True)
class Sampled:
    """A push's partial: its change to the topic totals and what it sampled."""

    n_k_change: np.ndarray
    tokens: int = 0
    log_likelihood: float = 0.0
    sampling_seconds: float = 0.0
    held_out_tokens: int = 0
    held_out_log_likelihood: float = 0.0
    prior_counts: object = None  # a PriorCounts in a sub-round that updates the priors
    publishes: bool = True  # the pull publishes the topic totals


def vocabulary_blocks(word_counts, n_blocks):
    """Block of each word and its index within the block: contiguous runs of words of about
    equal token counts (empty blocks at the end when there are fewer words than blocks).
    Returns ``(block_of_word, local_index, block_sizes)``."""
    edges = block_edges(len(word_counts), n_blocks, weights=word_counts)
    edges = np.pad(edges, (0, n_blocks + 1 - len(edges)), mode="edge")  # fewer words than blocks
    words = np.arange(len(word_counts))
    block_of_word = np.searchsorted(edges, words, side="right") - 1
    return block_of_word, words - edges[block_of_word], np.diff(edges)


def make_shard(X_rows, block_of_word, local_index, n_blocks, held_out=None):
    """Tokens of a CSR matrix of documents (rows) as a :class:`Shard`; ``held_out``: the two
    halves (sampled, scored) of held-out documents, as two CSR matrices of equal shape."""
    X_rows = X_rows.tocsr()
    if held_out is not None:
        sampled, scored = (make_shard(h, block_of_word, local_index, n_blocks) for h in held_out)
        held_out = HeldOut(sampled, scored, np.asarray(held_out[0].sum(axis=1)).ravel())
    # the stored entries grouped by block, documents in order within a block (a stable sort of
    # small integers is a radix sort), then each entry repeated into its tokens
    block = block_of_word[X_rows.indices]
    order = np.argsort(block.astype(np.min_scalar_type(n_blocks)), kind="stable")
    counts = X_rows.data[order].astype(np.int64)
    docs = np.repeat(np.arange(X_rows.shape[0]), np.diff(X_rows.indptr))[order]
    entry_starts = np.searchsorted(block[order], np.arange(n_blocks + 1))
    starts = np.concatenate([[0], np.cumsum(counts)])[entry_starts]
    return Shard(np.repeat(docs, counts).astype(np.int64, copy=False),
                 np.repeat(local_index[X_rows.indices[order]], counts).astype(np.int64, copy=False),
                 starts, X_rows.shape[0], held_out)


class LDAProgram(Program):
    """Collapsed Gibbs LDA with K topics, priors alpha (one value or K) and beta, vocabulary of
    ``n_vocab`` words cut into blocks of ``block_sizes`` words, and ``n_shards`` document shards;
    the priors learned every ``optimize_interval`` iterations after ``burn_in`` (0: fixed);
    ``seeds`` a :class:`SeedPrior` or None; ``sampler`` "sparse" (SparseLDA, exact) or "alias"
    (alias tables and Metropolis-Hastings, :mod:`~dask_strads.kernels.lda_alias`);
    ``topic_totals_every`` "sub_round" or "iteration": how often the pulls publish the topic totals
    (see the module's docstring)."""

    name = "lda"

    report_lag = 0
    static_schedule = True
    updates_in_place = True  # a shard's state and a block's rows are large and have one reader

    def __init__(self, n_topics, *, alpha, beta, n_vocab, block_sizes, n_shards, seed=0,
                 optimize_interval=0, burn_in=0, seeds=None, sampler="sparse",
                 topic_totals_every="sub_round"):
        self.n_topics = n_topics
        self.alpha = topic_priors(alpha, n_topics)
        self.beta = beta
        self.n_vocab = n_vocab
        self.block_sizes = list(block_sizes)
        self.n_carried = len(self.block_sizes)
        self.n_shards = n_shards
        self.seed = seed
        self.optimize_interval = optimize_interval
        self.burn_in = burn_in
        self.seeds = seeds
        self.sampler = sampler
        self.topic_totals_every = topic_totals_every
        self.kernels = ("lda_alias",) if sampler == "alias" else ("lda",)

    def initial_shared(self):
        zeros = np.zeros(self.n_topics, dtype=np.int64)
        return TopicTotals(zeros, self.alpha, float(self.beta),
                           zeros.copy() if self.topic_totals_every == "iteration" else None)

    def init_block(self, data, block_id):
        z = random_topics(len(data.doc), self.n_topics, self.seed * 7919 + block_id)
        n_dk, doc_topics, doc_nnz = row_state(data.doc, z, data.n_docs, self.n_topics)
        counted = np.zeros(self.n_carried, dtype=bool)
        optional = {}
        if data.held_out is not None:
            sampled = data.held_out.sampled
            z_held_out = random_topics(len(sampled.doc), self.n_topics,
                                       self.seed * 7919 + self.n_shards + block_id)
            optional = {"held_out_z": z_held_out, "held_out_n_dk": count_rows(
                sampled.doc, z_held_out, sampled.n_docs, self.n_topics)}
        if self.sampler == "alias":
            optional["doc_index"] = document_index(data.doc, data.n_docs)
        if self.topic_totals_every == "iteration":
            optional["own_change"] = np.zeros(self.n_topics, dtype=np.int64)
        state = ShardState(z, n_dk, doc_topics, doc_nnz, counted, **optional)
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
        publishes = self.topic_totals_every == "sub_round" or self.ends_iteration(round_index)
        return {p: SubRound(round_index, round_seed(self.seed, round_index, p),
                            self.updates_priors(round_index), publishes,
                            carried=(p * self.n_carried // self.n_shards + round_index)
                            % self.n_carried)
                for p in range(self.n_shards)}

    def updates_priors(self, round_index):
        """Whether the pull of this sub-round updates the priors: the last sub-round of every
        ``optimize_interval``-th iteration after the first ``burn_in``."""
        if not self.optimize_interval or not self.ends_iteration(round_index):
            return False
        iterations = (round_index + 1) // self.n_carried - self.burn_in
        return iterations > 0 and iterations % self.optimize_interval == 0

    def ends_iteration(self, round_index):
        return (round_index + 1) % self.n_carried == 0

    def push(self, block_id, data, state, instruction, shared, inbox):
        u = instruction.carried
        tokens = slice(data.starts[u], data.starts[u + 1])
        doc, word = data.doc[tokens], data.word[tokens]
        block = inbox.carried
        if not state.counted[u]:
            add_counts(block.n_wk, word, state.z[tokens])
            fill_nonzero(block.n_wk, block.word_topics, block.word_nnz)
            state.counted[u] = True
        seen = shared.n_k if state.own_change is None else shared.n_k + state.own_change
        n_k = seen.copy()
        start = perf_counter()
        rows = (state.n_dk, state.doc_topics, state.doc_nnz, block.n_wk, block.word_topics,
                block.word_nnz, n_k, shared.alpha, shared.beta, self.n_vocab, instruction.seed,
                *self._seeds(u))
        log_likelihood = self._draw(data, state, tokens, rows, shared)
        seconds = perf_counter() - start
        held_out = self._held_out(data, state, u, block, seen, shared, instruction.seed)
        counts = prior_counts(state.n_dk, block.n_wk) if instruction.update_priors else None
        change = n_k - seen
        if state.own_change is not None:  # published by this pull, or not yet
            state.own_change[:] = 0 if instruction.publishes else state.own_change + change
        report = Sampled(change, len(doc), log_likelihood, seconds, *held_out, counts,
                         instruction.publishes)
        return state, report, block

    def _draw(self, data, state, tokens, rows, shared):
        """Resample the shard's ``tokens`` (a slice of one block's) given the kernels' ``rows``
        (counts, lists, totals, priors, seed, seeded pairs), in place; returns their summed
        log-likelihood. A supervised program draws them with its own kernel."""
        if self.sampler == "alias":  # the document proposal reads the shard's other blocks
            *_, log_likelihood = sample_block_alias(data.doc, data.word, state.z, tokens.start,
                                                    tokens.stop, state.doc_index, *rows)
        else:
            *_, log_likelihood = sample_block(data.doc[tokens], data.word[tokens],
                                              state.z[tokens], *rows)
        return log_likelihood

    def _seeds(self, u):
        """The seeded pairs of block u and every topic's boosts, as the kernels take them."""
        return () if self.seeds is None else (self.seeds.rows[u], self.seeds.totals)

    def _held_out(self, data, state, u, block, n_k, shared, seed):
        """(tokens scored, their log-likelihood) of the shard's held-out documents in block u,
        after resampling their other halves' tokens there, against the topic totals ``n_k``."""
        if data.held_out is None:
            return 0, 0.0
        sampled, scored = data.held_out.sampled, data.held_out.scored
        tokens = slice(sampled.starts[u], sampled.starts[u + 1])
        sample_held_out(sampled.doc[tokens], sampled.word[tokens], state.held_out_z[tokens],
                        state.held_out_n_dk, block.n_wk, n_k, shared.alpha, shared.beta,
                        self.n_vocab, seed, *self._seeds(u))
        tokens = slice(scored.starts[u], scored.starts[u + 1])
        return tokens.stop - tokens.start, score_held_out(
            scored.doc[tokens], scored.word[tokens], state.held_out_n_dk, data.held_out.lengths,
            block.n_wk, n_k, shared.alpha, shared.beta, self.n_vocab, *self._seeds(u))

    def combine(self, partials):
        counts = [p.prior_counts for p in partials if p.prior_counts is not None]
        return Sampled(
            np.sum([p.n_k_change for p in partials], axis=0),
            tokens=sum(p.tokens for p in partials),
            log_likelihood=sum(p.log_likelihood for p in partials),
            sampling_seconds=max((p.sampling_seconds for p in partials), default=0.0),
            held_out_tokens=sum(p.held_out_tokens for p in partials),
            held_out_log_likelihood=sum(p.held_out_log_likelihood for p in partials),
            prior_counts=PriorCounts.merged(counts) if counts else None,
            publishes=all(p.publishes for p in partials))

    def pull(self, partials, shared):
        total = self.combine(list(partials.values()))
        n_k, unpublished, change = shared.n_k, shared.unpublished, total.n_k_change
        if unpublished is not None:
            unpublished = unpublished + change
            change = unpublished
        if total.publishes:
            n_k = n_k + change
            unpublished = None if unpublished is None else np.zeros_like(unpublished)
        counts = total.prior_counts
        alpha, beta = (shared.alpha, shared.beta) if counts is None else updated_priors(
            shared.alpha, shared.beta, [counts])
        # objective: the sub-round's negative per-token log-likelihood, for live views
        held_out = total.held_out_tokens  # 0 without validation data
        return TopicTotals(n_k, alpha, beta, unpublished), SamplingReport(
            tokens=total.tokens, log_likelihood=total.log_likelihood,
            objective=-total.log_likelihood / total.tokens if total.tokens else None,
            sampling_seconds=total.sampling_seconds, held_out_tokens=held_out or None,
            held_out_log_likelihood=total.held_out_log_likelihood if held_out else None,
            alpha=None if counts is None else alpha.tolist(),
            beta=None if counts is None else beta)

    def collect(self, data, state, shared):
        """The shard's document-topic counts (a copy: the state changes in place)."""
        return state.n_dk.copy()

    def collect_carried(self, carried, carried_id):
        """The vocabulary block's word-topic counts (not a copy: a fit collects its carried
        blocks once, after its last round, and a copy of every block at once could take more
        than a worker's memory)."""
        return carried.n_wk


register_dataclasses(__name__)  # Dask's memory accounting (dask_strads.sizes)
