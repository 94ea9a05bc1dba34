"""Checkpoints on disk: resume a fit after the process running it died.

Layout of ``checkpoint_dir``::

    round-000019/block-0.npz ...     each block's state after the round, written by its worker
    round-000019/carried-0.npz ...   each carried block
    round-000019/shared-19.npz ...   the shared values the next rounds read
    round-000019/complete.json       written last, by the client, once all the files are there:
                                     round, fingerprint, history records

Files are written atomically and without pickle (:mod:`.storage`). A round directory without
``complete.json``, or with a file that cannot be read (a changed byte fails the zip members'
CRC-32), is skipped. The two newest complete rounds are kept. ``checkpoint_dir`` is a local path
or an fsspec URL; on a cluster it must be reachable by the workers and the client alike. A fit
checks that it can write there before it starts (:func:`check_writable`); a write that fails
later (a full disk) removes that round's files and stops the fit's writes, with a warning: the
fit goes on (on a cluster, with its checkpoints in memory).
"""
import json
import os
import posixpath
import uuid

from ..log import logger
from . import storage, tasks
from .recovery import Checkpoint

KEPT = 2


def round_dir(root, t):
    return posixpath.join(root, f"round-{t:06d}")


def _filesystem(root):
    """``(fsspec filesystem, root as it names it)`` of a path or URL."""
    import fsspec  # here: a fit without checkpoints on disk does without it

    return fsspec.core.url_to_fs(root)


def check_writable(root):
    """Raise a ValueError naming ``root`` unless a file can be written in it and removed (a
    fit would otherwise find out at its first checkpoint)."""
    root = os.fspath(root)
    fs, local = _filesystem(root)
    probe = posixpath.join(local, f".write-probe-{uuid.uuid4().hex[:8]}")
    try:
        fs.makedirs(local, exist_ok=True)
        with fs.open(probe, "wb") as file:
            file.write(b"probe")
        fs.rm(probe)
    except OSError as error:
        raise ValueError(f"checkpoint_dir {root!r} cannot be written to ({error}): give a "
                         "directory this process (and on a cluster, every worker) can write "
                         "to, or checkpoint_dir=None") from error


def write(path, read, *args):
    """Write ``read(*args)`` to ``path``, on the worker that holds it: None, or the OSError
    that stopped it (a full disk), for the client to say and clean up after."""
    try:
        fs, local = _filesystem(path)
        fs.makedirs(posixpath.dirname(local), exist_ok=True)
        storage.save(read(*args), path)
    except OSError as error:
        return error
    return None


def add_writes(graph, run, root, t, items, copies=None):
    """Add the writes of round ``t``'s ``items`` (see :func:`.recovery.checkpoint_items`) under
    ``root`` to its :class:`~.graph.RoundGraph`; with ``copies`` (the in-memory checkpoint's,
    in the same order) the files are written from those, which no later push can change.
    Returns references to the writes (all must finish before the round is complete on
    disk)."""
    folder = round_dir(root, t)
    writes = []
    for i, (kind, index, worker, read, args) in enumerate(items):
        if copies is not None:
            read, args = tasks.itself, (copies[i][0],)
        writes.append(graph.add(worker, run.key("write", kind, index, t, run.id), write,
                                posixpath.join(folder, f"{kind}-{index}.npz"), read, *args))
    return writes


def complete(root, t, fingerprint, records, failures=()):
    """Mark round ``t`` complete and drop older rounds: True. ``failures``: the errors of the
    round's writes (see :func:`write`); with one, or if this fails, the round's files are
    removed with a warning: False, and the fit writes no more checkpoints."""
    error = failures[0] if failures else None
    if error is None:
        try:
            _mark_complete(root, t, fingerprint, records)
            return True
        except OSError as raised:
            error = raised
    abandon(root, t)
    logger.warning("writing the checkpoint of round %d to checkpoint_dir %s failed (%s): its "
                   "files are removed, and this fit goes on without writing checkpoints (%s "
                   "kept there)", t, root, error,
                   ", ".join(f"round {r}" for r in sorted(_rounds(root))) or "none")
    return False


def _mark_complete(root, t, fingerprint, records):
    fs, folder = _filesystem(round_dir(root, t))
    with fs.open(f"{folder}/complete.json.partial", "w") as file:
        json.dump({"round": t, "fingerprint": fingerprint, "records": records}, file,
                  default=lambda value: value.item())  # numpy scalars
    fs.mv(f"{folder}/complete.json.partial", f"{folder}/complete.json")
    for old in sorted(_rounds(root))[:-KEPT]:
        fs.rm(_filesystem(round_dir(root, old))[1], recursive=True)


def abandon(root, t):
    """Remove what was written of round ``t``, if anything."""
    fs, folder = _filesystem(round_dir(root, t))
    if fs.exists(folder):
        fs.rm(folder, recursive=True)


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
        fs, local = _filesystem(folder)
        try:
            with fs.open(posixpath.join(local, "complete.json")) as file:
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
