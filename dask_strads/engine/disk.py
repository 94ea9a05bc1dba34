"""Checkpoints on disk: resume a fit after the process running it died.

Layout of ``checkpoint_dir``::

    round-000019/block-0.npz ...     each block's state after the round, written by its worker
    round-000019/carried-0.npz ...   each carried block
    round-000019/shared-19.npz ...   the shared values the next rounds read
    round-000019/complete.json       written last, by the client, once all the files are there:
                                     round, fingerprint, history records

Files are written atomically and without pickle (:mod:`.storage`). A round directory without
``complete.json``, or with a file that cannot be read, is skipped. The two newest complete rounds
are kept. ``checkpoint_dir`` is a local path or an fsspec URL; on a cluster it must be reachable
by the workers and the client alike.
"""
import json
import posixpath

import fsspec

from ..log import logger
from . import storage, tasks
from .recovery import Checkpoint

KEPT = 2


def round_dir(root, t):
    return posixpath.join(root, f"round-{t:06d}")


def _filesystem(root):
    """``(fsspec filesystem, root as it names it)`` of a path or URL."""
    return fsspec.core.url_to_fs(root)


def write(path, read, *args):
    """Write ``read(*args)`` to ``path``, on the worker that holds it."""
    storage.save(read(*args), path)
    return path


def add_writes(engine, run, graph, t, items, copies=None):
    """Add the writes of round ``t``'s ``items`` (see :func:`.recovery.checkpoint_items`) to its
    graph; with ``copies`` (the in-memory checkpoint's, in the same order) the files are written
    from those, which no later push can change. Returns references to the writes (all must
    finish before the round is complete on disk)."""
    folder = round_dir(engine.checkpoint_dir, t)
    fs, local = _filesystem(folder)
    fs.makedirs(local, exist_ok=True)
    writes = []
    for i, (kind, index, worker, read, args) in enumerate(items):
        if copies is not None:
            read, args = tasks.itself, (copies[i][0],)
        writes.append(engine._task(graph, worker, run.key("write", kind, index, t, run.id),
                                   write, posixpath.join(folder, f"{kind}-{index}.npz"), read,
                                   *args))
    return writes


def complete(root, t, fingerprint, records):
    """Mark round ``t`` complete (its files are written) and drop older rounds."""
    fs, folder = _filesystem(round_dir(root, t))
    with fs.open(f"{folder}/complete.json.partial", "w") as file:
        json.dump({"round": t, "fingerprint": fingerprint, "records": records}, file,
                  default=lambda value: value.item())  # numpy scalars
    fs.mv(f"{folder}/complete.json.partial", f"{folder}/complete.json")
    for old in sorted(_rounds(root))[:-KEPT]:
        fs.rm(_filesystem(round_dir(root, old))[1], recursive=True)


def _rounds(root):
    fs, local = _filesystem(root)
    if not fs.isdir(local):
        return []
    names = [posixpath.basename(path.rstrip("/")) for path in fs.ls(local, detail=False)]
    return [int(name[6:]) for name in names if name.startswith("round-") and name[6:].isdigit()]


def latest(root, fingerprint, n_blocks, n_carried, staleness, last_round):
    """The newest complete, readable checkpoint of this fit taken after round ``last_round`` at
    the latest: ``(Checkpoint of values, history records)``, or None. ``fingerprint()`` gives
    what identifies the fit, asked for only when a complete checkpoint is found: one of another
    fit (data, hyperparameters, seed, blocks) raises a ValueError that names what differs."""
    for t in sorted(_rounds(root), reverse=True):
        folder = round_dir(root, t)
        try:
            with fsspec.open(posixpath.join(folder, "complete.json")) as file:
                meta = json.load(file)
        except (OSError, ValueError):
            continue  # never completed, or damaged: an older one may do
        expected = fingerprint()
        differs = [k for k in expected if meta["fingerprint"].get(k) != expected[k]]
        if differs:
            raise ValueError(
                f"checkpoint_dir {root!r} holds a checkpoint of another fit (different "
                f"{', '.join(differs)}): use another directory, or empty it to start afresh"
                + (" (a fit resumes only with a fixed random_state)" if "seed" in differs
                   else ""))
        if t > last_round:
            continue
        try:
            def read(name):
                return storage.load(posixpath.join(folder, name))

            checkpoint = Checkpoint(
                t, [read(f"block-{b}.npz") for b in range(n_blocks)],
                [read(f"carried-{c}.npz") for c in range(n_carried)],
                {r: read(f"shared-{r}.npz") for r in range(max(-1, t - staleness), t + 1)})
        except storage.StorageError as error:
            logger.warning("the checkpoint of round %d in %s cannot be read (%s): trying an "
                           "older one", t, root, error)
            continue
        return checkpoint, meta["records"]
    return None
