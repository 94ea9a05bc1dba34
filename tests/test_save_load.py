"""dask_strads.save / dask_strads.load: models kept in files without pickle."""
import copy
import hashlib
import io
import json
import re
import subprocess
import sys
import zipfile
import zlib

import numpy as np
import pytest
import scipy.sparse as sp

import dask_strads
from dask_strads import (ElasticNet, ImplicitMatrixFactorization, Lasso,
                         LatentDirichletAllocation, LinearSVC, LogisticRegression,
                         MatrixFactorization)
from dask_strads.persistence import ModelFileError
from bounded import fifo, within  # noqa: F401  (fifo: a fixture)

# the loading process refuses any unpickling while it loads (numba's kernel cache, used by the
# predictions afterwards, unpickles its index)
LOAD_WITHOUT_PICKLE = """
import pickle, sys
import numba.core.serialize  # numba reads cached kernels with its pickle.loads, bound at import
import numpy as np, scipy.sparse as sp
import dask_strads

def refuse(*args, **kwargs):
    raise AssertionError("pickle used while loading")

folder = sys.argv[1]
allowed = pickle.load, pickle.loads, pickle.Unpickler
pickle.load = pickle.loads = pickle.Unpickler = refuse
lasso, enet, lda, mf, logistic, als, svc = (
    dask_strads.load(f"{folder}/{name}.npz")
    for name in ("lasso", "enet", "lda", "mf", "logistic", "als", "svc"))
pickle.load, pickle.loads, pickle.Unpickler = allowed
data = np.load(folder + "/data.npz")
counts = sp.csr_matrix(data["counts"])
np.savez(folder + "/loaded.npz", lasso=lasso.predict(data["X"]), enet=enet.predict(data["X"]),
         lda=lda.transform(counts), logistic=logistic.predict_proba(data["X"]),
         mf=mf.predict_entries(data["users"], data["items"]), top=mf.recommend([0, 3], n=4),
         fold=mf.transform(sp.csr_matrix(data["ratings"])), als=als.recommend([0, 3], n=4),
         als_fold=als.transform(sp.csr_matrix(data["ratings"])),
         svc=svc.decision_function(data["X"]))
"""


def fitted_models():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 12))
    y = X[:, :3] @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=60)
    counts = sp.random(40, 25, density=0.3, random_state=1, format="csr",
                       data_rvs=lambda n: rng.integers(1, 5, n).astype(float))
    ratings = sp.random(30, 20, density=0.3, random_state=2, format="csr",
                        data_rvs=lambda n: rng.uniform(1, 5, n))
    models = {"lasso": Lasso(alpha=0.01, random_state=0).fit(X, y),
              "enet": ElasticNet(alpha=0.01, l1_ratio=0.5, random_state=0).fit(X, y),
              "lda": LatentDirichletAllocation(3, max_iter=5, random_state=0).fit(counts),
              "mf": MatrixFactorization(2, max_iter=5, random_state=0).fit(ratings),
              "logistic": LogisticRegression(C=0.5).fit(X, y > 0),
              "als": ImplicitMatrixFactorization(2, max_iter=3, random_state=0).fit(ratings),
              "svc": LinearSVC(C=0.5, random_state=0).fit(X, y > 0)}
    data = {"X": X, "counts": counts.toarray(), "ratings": ratings.toarray()[:5],
            "users": np.array([0, 1, 5]), "items": np.array([3, 0, 7])}
    return models, data


def predictions(models, data):
    counts = sp.csr_matrix(data["counts"])
    mf = models["mf"]
    return {"lasso": models["lasso"].predict(data["X"]), "lda": models["lda"].transform(counts),
            "enet": models["enet"].predict(data["X"]),
            "logistic": models["logistic"].predict_proba(data["X"]),
            "mf": mf.predict_entries(data["users"], data["items"]),
            "top": mf.recommend([0, 3], n=4), "fold": mf.transform(sp.csr_matrix(data["ratings"])),
            "als": models["als"].recommend([0, 3], n=4),
            "als_fold": models["als"].transform(sp.csr_matrix(data["ratings"])),
            "svc": models["svc"].decision_function(data["X"])}


def test_every_estimator_round_trips_in_a_fresh_process_without_pickle(tmp_path):
    models, data = fitted_models()
    for name, model in models.items():
        dask_strads.save(model, tmp_path / f"{name}.npz")
    np.savez(tmp_path / "data.npz", **data)
    subprocess.run([sys.executable, "-c", LOAD_WITHOUT_PICKLE, str(tmp_path)], check=True,
                   timeout=300)
    loaded = np.load(tmp_path / "loaded.npz")
    for name, expected in predictions(models, data).items():
        np.testing.assert_array_equal(loaded[name], expected, err_msg=name)


def test_loaded_estimator_keeps_parameters_attributes_and_history(tmp_path):
    models, _ = fitted_models()
    model = models["mf"]
    dask_strads.save(model, tmp_path / "mf.npz")
    back = dask_strads.load(tmp_path / "mf.npz")
    assert type(back) is MatrixFactorization and back.get_params() == model.get_params()
    assert back.history_.column("rmse") == model.history_.column("rmse")
    assert back.n_iter_ == model.n_iter_ and back.n_features_in_ == model.n_features_in_
    assert (back._seen != model._seen).nnz == 0


def test_the_history_of_a_fused_fit_round_trips(tmp_path):
    """A fused epoch's graph runs many rounds: its tasks a round are a fraction, kept as such."""
    models, _ = fitted_models()
    model = models["mf"]
    model.history_.stats.tasks_per_round = 7 / 30
    dask_strads.save(model, tmp_path / "mf.npz")
    assert dask_strads.load(tmp_path / "mf.npz").history_.stats.tasks_per_round == 7 / 30


def test_feature_names_are_kept(tmp_path):
    import pandas as pd

    X = pd.DataFrame(np.random.default_rng(0).normal(size=(30, 3)), columns=["a", "b", "c"])
    model = Lasso(alpha=0.01).fit(X, X["a"] - X["c"])
    dask_strads.save(model, tmp_path / "m.npz")
    back = dask_strads.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.feature_names_in_, model.feature_names_in_)
    np.testing.assert_array_equal(back.predict(X), model.predict(X))


def test_keep_on_cluster_model_is_gathered_when_saved(tmp_path, client_factory):
    models, data = fitted_models()
    kept = LatentDirichletAllocation(3, max_iter=5, random_state=0, keep_on_cluster=True)
    kept.client = client_factory(2)
    kept.fit(sp.csr_matrix(data["counts"]))
    dask_strads.save(kept, tmp_path / "kept.npz")
    back = dask_strads.load(tmp_path / "kept.npz")
    assert isinstance(back.components_, np.ndarray)
    np.testing.assert_array_equal(back.components_,
                                  kept.client.compute(kept.components_).result())


def test_callback_is_not_saved(tmp_path):
    model = Lasso(alpha=0.1, callback=lambda record: False).fit(np.eye(4), np.arange(4.0))
    with pytest.warns(UserWarning, match="callback is not saved"):
        dask_strads.save(model, tmp_path / "m.npz")
    assert dask_strads.load(tmp_path / "m.npz").callback is None
    with pytest.raises(TypeError, match="dask_strads estimator"):
        dask_strads.save(object(), tmp_path / "x.npz")


def rewrite_member(path, member, change):
    """Rewrite one member of an npz archive with ``change(bytes) -> bytes``."""
    with zipfile.ZipFile(path) as archive:
        contents = {name: archive.read(name) for name in archive.namelist()}
    contents[member] = change(contents[member])
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in contents.items():
            archive.writestr(name, content)


def test_a_modified_file_is_refused(tmp_path):
    model = Lasso(alpha=0.1).fit(np.eye(5), np.arange(5.0))
    path = tmp_path / "m.npz"

    dask_strads.save(model, path)
    rewrite_member(path, "array_0.npy", lambda raw: raw[:-8] + np.float64(7.0).tobytes())
    with pytest.raises(ModelFileError, match="modified or damaged"):
        dask_strads.load(path)


def test_a_file_of_a_newer_format_version_is_refused(tmp_path, monkeypatch):
    from dask_strads import persistence

    model = Lasso(alpha=0.1).fit(np.eye(5), np.arange(5.0))
    monkeypatch.setattr(persistence, "VERSION", 2)  # as a future dask_strads writes it
    dask_strads.save(model, tmp_path / "m.npz")
    monkeypatch.undo()
    with pytest.raises(ModelFileError, match="version 2 .* upgrade dask_strads"):
        dask_strads.load(tmp_path / "m.npz")


def test_files_that_are_no_model_are_refused(tmp_path):
    path = tmp_path / "m.npz"
    from dask_strads.engine import storage

    storage.save({"version": 1}, path, digest=True)
    with pytest.raises(ModelFileError, match="not a dask_strads model"):
        dask_strads.load(path)
    storage.save({"version": 1}, path)
    with pytest.raises(ModelFileError, match="no SHA-256 digest"):
        dask_strads.load(path)


def write_text(path):
    path.write_text("user,item,rating\n1,2,3.5\n")


def write_empty(path):
    path.write_bytes(b"")


def write_npy(path):
    with open(path, "wb") as file:
        np.save(file, np.arange(3.0))


def write_foreign_zip(path):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "not a model")


@pytest.mark.parametrize("write", [write_text, write_empty, write_npy, write_foreign_zip])
def test_a_file_of_another_kind_is_named_as_no_model_file(tmp_path, write):
    path = tmp_path / "m.npz"
    write(path)
    with pytest.raises(ModelFileError, match=r"m\.npz is not a dask_strads model file") as raised:
        dask_strads.load(path)
    assert "pickle" not in str(raised.value)


def test_a_fifo_or_a_folder_is_refused_before_it_is_opened(tmp_path, fifo):
    with pytest.raises(ModelFileError, match=r"model\.npz is a FIFO \(named pipe\), not a regular"):
        within(10, dask_strads.load, fifo("model.npz"))
    with pytest.raises(ModelFileError, match="is a folder, not a regular file"):
        within(10, dask_strads.load, tmp_path)


class RepeatedDeflate:
    """zlib's raw deflate, fully flushed after each write: the same input then gives the same
    bytes, so a chunk written again and again is deflated once (zipfile still counts its size
    and CRC every time)."""

    def __init__(self):
        self._deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
        self._last = self._deflated = None

    def compress(self, data):
        if data is not self._last:
            self._last = data
            self._deflated = self._deflate.compress(data) + self._deflate.flush(zlib.Z_FULL_FLUSH)
        return self._deflated

    def flush(self):
        return self._deflate.flush()


def write_zip_bomb(path, monkeypatch, declared=3 * 2**30):
    """A model file of some MB whose one array declares ``declared`` bytes of float64 zeros,
    deflated (a valid zip: sizes and CRC as zipfile writes them)."""
    document = {"dict": [[{"value": "format"}, {"value": "dask_strads-model"}],
                         [{"value": "coef_"}, {"array": 0}]]}
    structure = io.BytesIO()
    np.save(structure, np.array(json.dumps({"format": 1, "value": document,
                                            "sha256": "0" * 64})))
    header = io.BytesIO()
    np.lib.format.write_array_header_2_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (declared // 8,)})
    chunk = bytes(2**24)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("structure.npy", structure.getvalue())
        with monkeypatch.context() as patch:
            patch.setattr(zipfile, "_get_compressor", lambda *args: RepeatedDeflate())
            info = zipfile.ZipInfo("array_0.npy")
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as member:
                member.write(header.getvalue())
                for _ in range(declared // len(chunk)):
                    member.write(chunk)
    return path


# loads a file in a fresh process: the error, then the peak of the memory it allocated (numpy's
# arrays and Python's objects, as tracemalloc counts them), in MB
LOAD_MEASURED = """
import importlib, sys, tracemalloc
import dask_strads.estimators.base  # what load imports, before measuring
module, name = sys.argv[2].split(":")
load = getattr(importlib.import_module(module), name)
tracemalloc.start()
try:
    load(sys.argv[1])
    print("loaded")
except ValueError as error:
    print(error)
print(tracemalloc.get_traced_memory()[1] / 2**20)
"""


def load_measured(path, load="dask_strads:load"):
    """``(message, peak MB)`` of ``load(path)`` in a fresh process, which a regression that
    reads the declared gigabytes has killed after 120 s."""
    done = subprocess.run([sys.executable, "-c", LOAD_MEASURED, str(path), load],
                          capture_output=True, text=True, timeout=120, check=True)
    message, peak = done.stdout.strip().rsplit("\n", 1)
    return message, float(peak)


def test_a_zip_bomb_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = write_zip_bomb(tmp_path / "bomb.npz", monkeypatch)
    assert path.stat().st_size < 4 * 2**20
    message, peak = load_measured(path)
    assert re.search(r"bomb\.npz declares 3,221,22\d,\d{3} bytes of arrays in a file of "
                     r"3,\d{3},\d{3} bytes, more than .* refused before reading it", message)
    assert peak < 50, peak


def test_a_header_declaring_more_than_its_member_holds_is_refused(tmp_path):
    path = tmp_path / "m.npz"
    dask_strads.save(Lasso(alpha=0.1).fit(np.eye(5), np.arange(5.0)), path)
    header = io.BytesIO()  # 2^40 float64 values, in a member of 40 bytes
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)})
    rewrite_member(path, "array_0.npy", lambda raw: header.getvalue() + raw[-40:])
    with pytest.raises(ModelFileError, match=r"member array_0.npy declares an array "
                       r"\(1099511627776,\) of float64 \(8,796,093,022,208 bytes\) and holds 40"):
        within(10, dask_strads.load, path)


def test_the_digest_is_checked_without_a_second_copy_of_the_arrays(tmp_path):
    from dask_strads.engine import storage

    storage.save({"big": np.ones(2**23)}, tmp_path / "big.npz", digest=True)  # 64 MB
    message, peak = load_measured(tmp_path / "big.npz", "dask_strads.engine.storage:load")
    assert message == "loaded" and peak < 64 * 1.25, peak


def test_arrays_of_every_layout_are_read_back_and_their_digest_checked(tmp_path):
    from dask_strads.engine import storage

    rng = np.random.default_rng(0)
    values = [np.asfortranarray(rng.normal(size=(300, 700))),  # > one chunk, in column order
              rng.normal(size=(3, 4))[:, ::2], np.arange(6, dtype=">i4"), np.array(2.5),
              np.zeros((0, 3)), np.array(["a", "bc"]), np.array([True, False])]
    storage.save(values, tmp_path / "v.npz", digest=True)
    back = storage.load(tmp_path / "v.npz", require_digest=True)
    for got, expected in zip(back, values):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    rewrite_member(tmp_path / "v.npz", "array_0.npy",  # one value of the column-order array
                   lambda raw: raw[:-8] + np.float64(7.0).tobytes())
    with pytest.raises(storage.StorageError, match="modified or damaged"):
        storage.load(tmp_path / "v.npz")


def rewrite_document(path, change):
    """Rewrite a model file's JSON document (and its list of arrays) with
    ``change(document, arrays)`` and give it the digest of its new content, computed as
    docs/formats.md says (a digest proves no authorship: anyone can recompute it)."""
    with np.load(path) as stored:
        members = dict(stored)
    described = json.loads(str(members.pop("structure")))
    arrays = [members[f"array_{i}"] for i in range(len(members))]
    change(described["value"], arrays)
    digest = hashlib.sha256(json.dumps(described["value"], sort_keys=True).encode())
    for array in arrays:
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    described["sha256"] = digest.hexdigest()
    np.savez(path, structure=np.array(json.dumps(described)),
             **{f"array_{i}": a for i, a in enumerate(arrays)})


def entry(document, *keys):
    """The node of ``document[keys[0]][keys[1]]...`` (dict nodes), to read or replace."""
    node = document
    for key in keys:
        node = next(pair for pair in node["dict"] if pair[0] == {"value": key})
        parent, node = node, node[1]
    return parent


def replace_entry(*keys, node=None, array=None):
    """A change that replaces an entry by ``node``, or by a node of the new ``array``."""
    def change(document, arrays):
        if array is not None:
            arrays.append(array)
        entry(document, *keys)[1] = node if array is None else {"array": len(arrays) - 1}
    return change


CALLS_MAIN = {"object": "dask_strads.__main__:main", "attributes": {}}
# loads each crafted file, then tells whether the command line module was imported
LOAD_CRAFTED = """
import sys
import dask_strads
from dask_strads.persistence import ModelFileError
for path in sys.argv[1:]:
    try:
        dask_strads.load(path)
        print("loaded", path)
    except ModelFileError as error:
        print("refused:", error)
print("imported:", [m for m in sys.modules if m.startswith(("dask_strads.__main__",
                                                           "dask_strads.cli"))])
"""


def test_classes_outside_the_estimators_state_are_refused_without_import(tmp_path):
    models, _ = fitted_models()
    crafted = {
        "main_attribute": ("lasso", replace_entry("attributes", "coef_", node=CALLS_MAIN)),
        "main_estimator": ("lasso", replace_entry("estimator", node={
            "value": "dask_strads.__main__:main"})),
        "main_in_history": ("lasso", replace_entry("attributes", "history_", node={
            "dataclass": "dask_strads.engine.history:History",
            "fields": {"records": {"list": []}, "stats": CALLS_MAIN}})),
        "history_as_coef": ("lasso", replace_entry("attributes", "coef_", node={
            "dataclass": "dask_strads.engine.history:FitStats", "fields": {}})),
        "implicit_program_in_mf": ("mf", add_attribute("_program", {
            "object": "dask_strads.programs.implicit_mf:ImplicitMFProgram",
            "attributes": {}})),
        "mixin_estimator": ("lasso", replace_entry("estimator", node={
            "value": "dask_strads.estimators.base:DaskEstimatorMixin"})),
        "private_estimator": ("lasso", replace_entry("estimator", node={
            "value": "dask_strads.estimators.paths:_PathFit"})),
    }
    paths = []
    for name, (model, change) in crafted.items():
        paths.append(tmp_path / f"{name}.npz")
        dask_strads.save(models[model], paths[-1])
        rewrite_document(paths[-1], change)
    done = subprocess.run([sys.executable, "-c", LOAD_CRAFTED, *map(str, paths)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "imported: []", done.stdout
    refused = dict(zip(crafted, lines[:-1]))
    for name in ("main_attribute", "main_in_history", "history_as_coef",
                 "implicit_program_in_mf"):
        assert re.search(r"refused: .*: \w+\.\w+ cannot be read: refusing to build "
                         r"dask_strads\.[\w.]+:\w+: not a dask_strads class this file may hold",
                         refused[name]), refused[name]
    for name in ("main_estimator", "mixin_estimator", "private_estimator"):
        assert re.search(r"refused: .* names the estimator '[\w.:]+', which is not one of "
                         "dask_strads' estimators", refused[name]), refused[name]


def crafted(tmp_path, model, change):
    path = tmp_path / "crafted.npz"
    dask_strads.save(model, path)
    rewrite_document(path, change)
    return path


@pytest.mark.parametrize("version", [-5, 0, 1.5, "1", True, None])
def test_versions_that_no_dask_strads_writes_are_refused(tmp_path, version):
    model = Lasso(alpha=0.1).fit(np.eye(5), np.arange(5.0))
    path = crafted(tmp_path, model, replace_entry("version", node={"value": version}))
    declared = re.escape(repr(version))
    with pytest.raises(ModelFileError, match=f"declares model format version {declared}: "
                       "versions are integers from 1"):
        dask_strads.load(path)


def add_arrays(arrays, *new):
    arrays.extend(new)
    return [{"array": len(arrays) - len(new) + i} for i in range(len(new))]


def seen_of_a_quadrillion_items(document, arrays):
    """MF's _seen as a consistent CSR matrix of shape (1, 10**15)."""
    data, indices, indptr = add_arrays(arrays, np.ones(2, dtype=bool),
                                       np.array([0, 10**15 - 1]), np.array([0, 2]))
    entry(document, "attributes", "_seen")[1] = {"sparse": "csr", "shape": [1, 10**15],
                                                 "parts": [data, indices, indptr]}


def coordinates_past_the_rows(document, arrays):
    """MF's program updating coordinates 0 and 99 of rows of 4 columns."""
    sides = entry(document, "attributes", "_program")[1]["attributes"]["sides"]
    users = next(value for key, value in sides["dict"] if key == {"value": "users"})
    users["fields"]["coords"] = add_arrays(arrays, np.array([0, 99]))[0]


def as_saved_before(model):
    """A fitted MF model as earlier versions saved it: with its program (``_program``)."""
    model = copy.deepcopy(model)
    model._program = model._fitted_program()
    return model


def test_an_older_file_holding_the_program_loads_without_it(tmp_path):
    models, data = fitted_models()
    expected = predictions(models, data)
    for name in ("mf", "als"):
        dask_strads.save(as_saved_before(models[name]), tmp_path / f"{name}.npz")
        models[name] = dask_strads.load(tmp_path / f"{name}.npz")
        assert not hasattr(models[name], "_program")
    dask_strads.save(models["mf"], tmp_path / "now.npz")
    with np.load(tmp_path / "now.npz") as stored:
        document = json.loads(str(stored["structure"]))["value"]
    assert {"value": "_program"} not in [
        key for key, _ in entry(document, "attributes")[1]["dict"]]
    for key, value in predictions(models, data).items():
        np.testing.assert_array_equal(value, expected[key])


def both(*changes):
    def change(document, arrays):
        for each in changes:
            each(document, arrays)
    return change


def drop_attribute(name):
    def change(document, arrays):
        attributes = entry(document, "attributes")[1]["dict"]
        attributes.remove(entry(document, "attributes", name))
    return change


def add_attribute(name, node):
    def change(document, arrays):
        entry(document, "attributes")[1]["dict"].append([{"value": name}, node])
    return change


@pytest.mark.parametrize("model, change, message", [
    ("lasso", replace_entry("attributes", "coef_", array=np.zeros(11)),
     r"Lasso\.coef_ has shape \(11,\), expected \(n_features_in_=12,\)"),
    ("lasso", replace_entry("attributes", "coef_", array=np.array(["1"] * 12)),
     r"Lasso\.coef_ has dtype <U1, expected float"),
    ("lasso", replace_entry("attributes", "n_features_in_", node={"value": -3}),
     r"Lasso\.n_features_in_ is -3, expected at least 1"),
    ("lasso", replace_entry("attributes", "intercept_", node={"value": "0"}),
     r"Lasso\.intercept_ is a str, expected a number"),
    ("lasso", replace_entry("attributes", "l1_ratio", node={"value": 0.5}),
     r"Lasso\.l1_ratio is 0\.5, expected 1\.0"),
    ("lasso", add_attribute("predict", {"value": 1}), r"Lasso has no attribute 'predict'"),
    ("lasso", drop_attribute("coef_"), r"Lasso\.coef_ is missing"),
    ("logistic", both(replace_entry("attributes", "coef_", array=np.zeros((2, 12))),
                      replace_entry("attributes", "intercept_", array=np.zeros(2))),
     r"LogisticRegression: 2 classes_ and 2 rows of coef_ \(expected 1 for 2 classes"),
    ("mf", seen_of_a_quadrillion_items, r"MatrixFactorization\._seen has shape "
     r"\(1, 1000000000000000\), expected \(users=30, n_features_in_=20\)"),
    ("mf", replace_entry("attributes", "user_bias_", array=np.zeros(29)),
     r"MatrixFactorization\.user_bias_ has shape \(29,\), expected \(users=30,\)"),
    ("mf_as_before", coordinates_past_the_rows, r"MatrixFactorization\._program\.sides\['users'\]\."
     r"coords holds values in \[0, 99\], expected them in \[0, width = 4\)"),
    ("lda", replace_entry("attributes", "components_", array=np.zeros((4, 25))),
     r"LatentDirichletAllocation\.components_ has shape \(4, 25\), expected "
     r"\(n_components=3, n_features_in_=25\)"),
])
def test_fitted_attributes_are_checked_against_the_estimator(tmp_path, model, change,
                                                             message):
    models = fitted_models()[0]
    models["mf_as_before"] = as_saved_before(models["mf"])
    path = crafted(tmp_path, models[model], change)
    with pytest.raises(ModelFileError, match=r"crafted\.npz: " + message):
        dask_strads.load(path)


def test_every_estimator_and_variant_of_its_state_loads_back(tmp_path):
    import pandas as pd
    from sklearn.exceptions import NotFittedError

    from dask_strads import ElasticNetCV, LassoCV

    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 5))
    y = X @ rng.normal(size=5)
    table = pd.DataFrame({"user": ["a", "b", "c", "a"], "item": ["x", "y", "x", "z"],
                          "rating": [1.0, 2.0, 3.0, 4.0]})
    counts = sp.csr_matrix(rng.integers(0, 3, (10, 6)).astype(float))
    lda = LatentDirichletAllocation(2, max_iter=2, random_state=0).fit(counts)
    lda.vocabulary_ = np.array(list("abcdef"), dtype=object)
    use = {
        "names": (Lasso(alpha=0.01).fit(pd.DataFrame(X, columns=list("abcde")), y),
                  lambda m: m.predict(pd.DataFrame(X, columns=list("abcde")))),
        "lasso_cv": (LassoCV(alphas=[0.1, 0.01], cv=3).fit(X, y), lambda m: m.predict(X)),
        "enet_cv_grids": (ElasticNetCV(alphas=4, l1_ratio=[0.2, 1.0], cv=3).fit(X, y),
                          lambda m: (m.predict(X), m.alphas_, m.mse_path_)),
        "enet_cv_grid": (ElasticNetCV(alphas=[0.1, 0.01], l1_ratio=[0.2, 1.0], cv=3).fit(X, y),
                         lambda m: (m.predict(X), m.mse_path_)),
        "three_classes": (LogisticRegression().fit(X, rng.integers(0, 3, 40)),
                          lambda m: m.predict_proba(X)),
        "named_classes": (LogisticRegression().fit(X, np.where(X[:, 0] > 0, "yes", "no")),
                          lambda m: m.predict(X)),
        "svc_three_classes": (LinearSVC(loss="hinge", random_state=0).fit(
            sp.csr_matrix(X), rng.integers(0, 3, 40)), lambda m: m.decision_function(X)),
        "svc_no_intercept": (LinearSVC("l1", fit_intercept=False).fit(X, X[:, 0] > 0),
                             lambda m: (m.predict(X), m.intercept_)),
        "string_ids": (MatrixFactorization(2, max_iter=2, random_state=0).fit(table),
                       lambda m: m.recommend(["a", "c"], n=2)),
        "no_biases": (MatrixFactorization(2, max_iter=2, biases=False, random_state=0)
                      .fit(table), lambda m: m.recommend(["a"], n=3)),
        "pairs": (MatrixFactorization(2, max_iter=2, random_state=0)
                  .fit(table[["user", "item"]], table["rating"]),
                  lambda m: m.predict(table[["user", "item"]])),
        "implicit_ids": (ImplicitMatrixFactorization(2, max_iter=2, random_state=0).fit(table),
                         lambda m: m.recommend(["b"], n=2)),
        "vocabulary": (lda, lambda m: (m.transform(counts), m.vocabulary_)),
    }
    for name, (model, used) in use.items():
        dask_strads.save(model, tmp_path / f"{name}.npz")
        loaded = dask_strads.load(tmp_path / f"{name}.npz")
        got, expected = (value if isinstance(value, tuple) else (value,)
                         for value in (used(loaded), used(model)))
        for got_one, expected_one in zip(got, expected):
            np.testing.assert_array_equal(got_one, expected_one, err_msg=name)
    for unfitted, method in ((Lasso(alpha=0.3), "predict"), (MatrixFactorization(4), "transform"),
                             (LassoCV(cv=4), "predict")):
        dask_strads.save(unfitted, tmp_path / "unfitted.npz")
        back = dask_strads.load(tmp_path / "unfitted.npz")
        assert type(back) is type(unfitted) and back.get_params() == unfitted.get_params()
        with pytest.raises(NotFittedError):
            getattr(back, method)(X)
