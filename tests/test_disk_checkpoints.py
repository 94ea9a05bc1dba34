"""Checkpoints on disk: a fit resumes from them and ends with the uninterrupted fit's model."""
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from dataclasses import dataclass

import dask
import numpy as np
import pytest

from dask_strads import Lasso, LatentDirichletAllocation, MatrixFactorization
from dask_strads.datasets import make_correlated_regression, make_lda_corpus, make_ratings
from dask_strads.engine import Engine, disk, storage
from dask_strads.programs import jacobi_blocks

from conftest import fit_is_refused

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

LASSO_DATA = dict(n_samples=100, n_features=300, n_informative=10, random_state=0)


def lasso_data():
    return make_correlated_regression(**LASSO_DATA)[:2]


CASES = {  # (estimator with max_iter rounds of its own, data, fitted attributes)
    "lasso": (lambda **kw: Lasso(alpha=1e-4, tol=0.0, random_state=0, **kw), 15, lasso_data,
              ["coef_", "intercept_"]),
    "lda": (lambda **kw: LatentDirichletAllocation(5, random_state=0, **kw), 12,
            lambda: (make_lda_corpus(n_docs=2000, n_words=1000, n_topics=5,
                                     random_state=0)[0],), ["components_", "doc_topic_"]),
    "mf": (lambda **kw: MatrixFactorization(4, tol=0.0, random_state=0, **kw), 10,
           lambda: (make_ratings(n_users=3000, n_items=500, n_ratings=30000,
                                 random_state=0)[0],), ["user_factors_", "components_"]),
}


def assert_same_model(ours, reference, attributes):
    for attribute in attributes:
        np.testing.assert_allclose(getattr(ours, attribute), getattr(reference, attribute),
                                   rtol=1e-12, atol=1e-14, err_msg=attribute)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_longer_fit_resumes_where_a_shorter_one_stopped(tmp_path, name):
    make, iterations, data, attributes = CASES[name]
    args = data()
    uninterrupted = make(max_iter=2 * iterations).fit(*args)
    make(max_iter=iterations, checkpoint_dir=tmp_path).fit(*args)
    resumed = make(max_iter=2 * iterations, checkpoint_dir=tmp_path).fit(*args)
    assert resumed.history_.stats.resumed_from is not None
    assert resumed.history_.stats.resumed_from > 0
    assert_same_model(resumed, uninterrupted, attributes)
    assert len(resumed.history_) == len(uninterrupted.history_)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_fit_again_after_its_last_checkpoint_gives_the_same_model(tmp_path, name):
    """A checkpoint of the last round holds the state after it, not the one its report
    measured (a round earlier for the Lasso): a fit run again resumes from an earlier one."""
    make, iterations, data, attributes = CASES[name]
    args = data()
    reference = make(max_iter=iterations).fit(*args)
    make(max_iter=iterations, checkpoint_dir=tmp_path, checkpoint_interval=1).fit(*args)
    again = make(max_iter=iterations, checkpoint_dir=tmp_path, checkpoint_interval=1).fit(*args)
    assert again.history_.stats.resumed_from is not None
    assert_same_model(again, reference, attributes)
    assert len(again.history_) == len(reference.history_)


def test_the_fingerprint_is_computed_only_when_a_checkpoint_is_written_or_found(tmp_path):
    """Hashing the data costs a pass over it: a fit that ends before its first checkpoint does
    not pay it; one that writes checkpoints, or finds one, computes it once."""
    rng = np.random.default_rng(0)
    A = rng.uniform(0, 1, (30, 30)) + 30 * np.eye(30)
    program, blocks = jacobi_blocks(A, rng.standard_normal(30), 3)
    calls = []

    def fingerprint():
        calls.append(1)
        return {"data": "A"}

    def run(rounds):
        calls.clear()
        with dask.config.set(scheduler="synchronous"):
            return Engine(program, max_rounds=rounds, checkpoint_interval=10,
                          checkpoint_dir=tmp_path, fingerprint=fingerprint).run(blocks)

    run(5)
    assert calls == [] and not list(tmp_path.iterdir())
    run(25)
    assert calls == [1] and list(tmp_path.iterdir())
    resumed = run(30)
    assert calls == [1] and resumed.history.stats.resumed_from == 20


def test_a_killed_fit_resumes_and_ends_with_the_uninterrupted_model(tmp_path):
    """A fitting process SIGKILLed after a checkpoint; the same fit run again resumes."""
    folder = tmp_path / "checkpoints"
    script = tmp_path / "fit.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        from dask_strads import Lasso
        from dask_strads.datasets import make_correlated_regression
        X, y, _ = make_correlated_regression(**{LASSO_DATA!r})
        Lasso(alpha=1e-4, tol=0.0, random_state=0, max_iter=40, checkpoint_dir=sys.argv[1],
              callback=lambda record: time.sleep(0.2)).fit(X, y)
        print("finished")
    """))
    proc = subprocess.Popen([sys.executable, str(script), str(folder)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (folder / "round-000009" / "complete.json").exists():
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "finished" not in proc.stdout.read()
    X, y = lasso_data()
    resumed = Lasso(alpha=1e-4, tol=0.0, random_state=0, max_iter=40,
                    checkpoint_dir=folder).fit(X, y)
    assert resumed.history_.stats.resumed_from in (10, 20, 30)
    uninterrupted = Lasso(alpha=1e-4, tol=0.0, random_state=0, max_iter=40).fit(X, y)
    assert_same_model(resumed, uninterrupted, ["coef_", "intercept_"])


def test_damaged_or_half_written_checkpoints_are_skipped(tmp_path):
    X, y = lasso_data()
    make = CASES["lasso"][0]
    make(max_iter=30, checkpoint_dir=tmp_path).fit(X, y)  # checkpoints after rounds 9, 19, 29
    newest, older = sorted(tmp_path.iterdir())[-1], sorted(tmp_path.iterdir())[-2]
    (newest / "block-0.npz").write_bytes(b"not a checkpoint")
    half = tmp_path / "round-000039"  # written in part: no complete.json
    half.mkdir()
    (half / "block-0.npz").write_bytes(b"")
    resumed = make(max_iter=40, checkpoint_dir=tmp_path).fit(X, y)
    assert resumed.history_.stats.resumed_from == int(older.name[6:]) + 1
    assert_same_model(resumed, make(max_iter=40).fit(X, y), ["coef_"])


def test_a_checkpoint_file_with_a_flipped_byte_is_skipped_with_a_warning_naming_it(
        tmp_path, monkeypatch):
    """One bit of a block's array changed in the newest checkpoint: the file is refused (the
    zip member's CRC-32 no longer matches), a warning names it, and the fit resumes from the
    checkpoint before it with the uninterrupted fit's model."""
    X, y = lasso_data()
    make = CASES["lasso"][0]
    make(max_iter=30, checkpoint_dir=tmp_path).fit(X, y)  # rounds 19 and 29 are kept
    damaged = tmp_path / "round-000029" / "block-0.npz"
    raw = bytearray(damaged.read_bytes())
    with zipfile.ZipFile(damaged) as archive:
        member = archive.getinfo("array_0.npy")
    data_start = member.header_offset + 30 + len(member.filename) + len(member.extra)
    raw[data_start + member.file_size - 3] ^= 0x10  # a byte of the array's last value
    damaged.write_bytes(raw)
    said = []
    monkeypatch.setattr(disk.logger, "warning", lambda message, *args: said.append(
        message % args))
    resumed = make(max_iter=40, checkpoint_dir=tmp_path).fit(X, y)
    assert resumed.history_.stats.resumed_from == 20
    assert len(said) == 1 and str(damaged) in said[0] and "round 29" in said[0]
    assert_same_model(resumed, make(max_iter=40).fit(X, y), ["coef_"])


def full_disk_after(n_files, monkeypatch):
    """Writes of checkpoint files fail from the ``n_files + 1``-th on as on a full disk: some
    bytes written to the file, then ``OSError(ENOSPC)`` (numpy's savez, which storage writes
    with, patched)."""
    calls = []
    savez = np.savez

    def write(file, *args, **arrays):
        calls.append(1)
        if len(calls) <= n_files:
            return savez(file, *args, **arrays)
        file.write(b"PK\x03\x04 half of a file")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(np, "savez", write)


def test_a_full_disk_stops_the_writes_names_the_directory_and_the_fit_goes_on(
        tmp_path, monkeypatch):
    """The disk fills up while round 19's checkpoint is written (round 9's two files are
    written): a warning names the directory and the error, the half-written files are removed,
    no later checkpoint is written, and the fit ends with the model of a fit without
    checkpoints. The complete checkpoint of round 9 is kept, and a later fit resumes from it."""
    X, y = lasso_data()
    make = CASES["lasso"][0]
    folder = tmp_path / "checkpoints"
    said = []
    monkeypatch.setattr(disk.logger, "warning", lambda message, *args: said.append(
        message % args))
    full_disk_after(2, monkeypatch)
    fitted = make(max_iter=30, checkpoint_dir=folder).fit(X, y)
    reference = make(max_iter=30).fit(X, y)
    assert_same_model(fitted, reference, ["coef_", "intercept_"])
    assert len(said) == 1 and str(folder) in said[0] and "No space left on device" in said[0]
    assert not [path for path in tmp_path.rglob("*") if ".partial" in path.name]
    assert sorted(p.name for p in folder.iterdir()) == ["round-000009"]
    monkeypatch.undo()
    resumed = make(max_iter=30, checkpoint_dir=folder).fit(X, y)
    assert resumed.history_.stats.resumed_from == 10
    assert_same_model(resumed, reference, ["coef_", "intercept_"])


def test_a_checkpoint_dir_that_cannot_be_written_is_refused_before_any_cluster_work(
        tmp_path, client_factory):
    """A directory no one can create, even root (a path under a regular file: root ignores a
    read-only mode, not that), is refused with a ValueError naming it before any block is
    placed (it failed at the first checkpoint, after 9 rounds), and the estimator keeps its
    model."""
    X, y = lasso_data()
    (tmp_path / "file").write_text("not a directory")
    unwritable = tmp_path / "file" / "checkpoints"
    est = CASES["lasso"][0](max_iter=15)
    est.client = client_factory(2)
    est.fit(X, y)
    coef = est.coef_
    est.set_params(checkpoint_dir=unwritable)
    fit_is_refused(est, est.client, (X, y), ValueError,
                   f"checkpoint_dir {str(unwritable)!r} cannot be written to")
    assert est.coef_ is coef


@pytest.mark.parametrize("change, differs", [({"alpha": 0.02}, "hyperparameters"),
                                             ({"random_state": 1}, "seed")])
def test_another_fits_checkpoint_is_a_clear_error_and_the_fit_is_kept(tmp_path, change,
                                                                      differs):
    X, y = lasso_data()
    make = CASES["lasso"][0]
    make(max_iter=10, checkpoint_dir=tmp_path).fit(X, y)
    fitted = make(max_iter=10).fit(X, y)
    coef = fitted.coef_
    fitted.set_params(checkpoint_dir=tmp_path, **change)
    with pytest.raises(ValueError, match=f"another fit .*{differs}"):
        fitted.fit(X, y)
    assert fitted.coef_ is coef
    with pytest.raises(ValueError, match="another fit .*data"):
        make(max_iter=10, checkpoint_dir=tmp_path).fit(X[:, :-1], y)


def test_checkpoints_on_a_cluster_are_written_by_the_workers(tmp_path, client_factory):
    X, y = lasso_data()
    make = CASES["lasso"][0]
    first = make(max_iter=15, checkpoint_dir=tmp_path)
    first.client = client_factory(2)
    first.fit(X, y)
    meta = json.loads((tmp_path / "round-000009" / "complete.json").read_text())
    assert meta["round"] == 9 and len(meta["records"]) == 10
    resumed = make(max_iter=30, checkpoint_dir=tmp_path)
    resumed.client = client_factory(2)
    resumed.fit(X, y)
    assert resumed.history_.stats.resumed_from == 10
    assert_same_model(resumed, make(max_iter=30).fit(X, y), ["coef_"])


def test_a_checkpoint_still_written_after_the_last_round_is_completed(tmp_path, client_factory,
                                                                       monkeypatch):
    """Writes slower than the rounds (a fused epoch runs its rounds past its checkpoint's
    writes): the fit waits for them and marks its last checkpoint complete, as it resumes."""
    write = disk.write
    monkeypatch.setattr(disk, "write", lambda *args: time.sleep(0.5) or write(*args))
    X, y = lasso_data()
    make = CASES["lasso"][0]
    first = make(max_iter=15, checkpoint_dir=tmp_path)
    first.client = client_factory(2, processes=False)  # the slow write runs on its workers
    first.fit(X, y)
    meta = json.loads((tmp_path / "round-000009" / "complete.json").read_text())
    assert meta["round"] == 9 and len(meta["records"]) == 10


@dataclass
class Foreign:
    x: int


def test_storage_reads_back_values_and_refuses_foreign_or_damaged_files(tmp_path):
    from dask_strads.engine.tasks import Pulled

    value = Pulled((np.arange(3.0), {1: 0.5}, None, np.int64(4)), {"objective": float("inf")}, True)
    storage.save(value, tmp_path / "value.npz")
    back = storage.load(tmp_path / "value.npz")
    np.testing.assert_array_equal(back.shared[0], value.shared[0])
    assert back.shared[1:] == value.shared[1:] and back.record == value.record and back.stopped
    with pytest.raises(TypeError, match="cannot store a .*Foreign: .* dask_strads classes"):
        storage.save(Foreign(1), tmp_path / "foreign.npz")
    with np.load(tmp_path / "value.npz") as stored:  # a file naming a class of elsewhere
        members = dict(stored)
    members["structure"] = np.array(str(members["structure"]).replace(
        "dask_strads.engine.tasks:Pulled", f"{__name__}:Foreign"))
    np.savez(tmp_path / "foreign.npz", **members)
    with pytest.raises(storage.StorageError, match="not a dask_strads class"):
        storage.load(tmp_path / "foreign.npz")
    np.savez(tmp_path / "objects.npz", structure=np.array([{"a": 1}], dtype=object))
    with pytest.raises(storage.StorageError):  # object arrays would need pickle
        storage.load(tmp_path / "objects.npz")
    assert disk.latest(tmp_path / "empty", {}, 1, 0, 0, 10) is None


def test_checkpoint_dir_may_be_an_fsspec_url():
    """fsspec's in-memory filesystem, as a stand-in for any remote one."""
    import fsspec

    X, y = lasso_data()
    make = CASES["lasso"][0]
    url = "memory://dask-strads-checkpoints"
    try:
        make(max_iter=15, checkpoint_dir=url).fit(X, y)
        assert fsspec.filesystem("memory").exists("/dask-strads-checkpoints/round-000009/"
                                                  "complete.json")
        resumed = make(max_iter=30, checkpoint_dir=url).fit(X, y)
        assert resumed.history_.stats.resumed_from == 10
        assert_same_model(resumed, make(max_iter=30).fit(X, y), ["coef_"])
    finally:
        fsspec.filesystem("memory").rm("/dask-strads-checkpoints", recursive=True)


def test_an_estimators_checkpoint_interval_counts_its_iterations(tmp_path):
    """``checkpoint_interval`` counts ``max_iter``'s unit: for LDA, an iteration's rounds (one
    per vocabulary block); a checkpoint every 2 iterations of 3 is one, after round 2U - 1."""
    X, _, _ = make_lda_corpus(n_docs=60, n_words=80, n_topics=3, doc_length=30, random_state=0)
    est = LatentDirichletAllocation(3, max_iter=3, n_vocab_blocks=3, checkpoint_interval=2,
                                    checkpoint_dir=tmp_path, random_state=0).fit(X)
    per_iteration = est.history_.stats.rounds // 3
    assert per_iteration == 3
    written = sorted(int(p.name[len("round-"):]) for p in tmp_path.glob("round-*"))
    assert written == [2 * per_iteration - 1]
