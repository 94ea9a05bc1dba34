"""The ``dask-strads`` command: end to end in subprocesses (the embedded default and a
``dask scheduler`` / ``dask worker`` cluster), and its errors and exit codes in process."""
import importlib.util
import json
import logging
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from sklearn.linear_model import Lasso as SklearnLasso

import dask_strads
from dask_strads import (ImplicitMatrixFactorization, Lasso, LatentDirichletAllocation,
                         MatrixFactorization)
from dask_strads.cli import main
from bounded import fifo, within  # noqa: F401  (fifo: a fixture)
from test_io import triplet_table, write_bag_of_words

#: The console script pip installs beside the interpreter.
CONSOLE_SCRIPT = Path(sys.executable).parent / "dask-strads"


def run(*args, script=False):
    command = ([str(CONSOLE_SCRIPT)] if script else [sys.executable, "-m", "dask_strads"])
    done = subprocess.run(command + [str(a) for a in args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def regression_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 15))
    y = X[:, :3] @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=120)
    path = tmp_path_factory.mktemp("cli") / "train.svm"
    dump_svmlight_file(X, y, str(path))
    return path


def test_fit_predict_info_on_the_embedded_default(tmp_path, capsys, regression_file):
    model_path, predictions = tmp_path / "lasso.npz", tmp_path / "predictions.csv"
    fitted = run("fit", "lasso", regression_file, "-o", model_path, "-p", "alpha=0.01",
                 "-p", "random_state=0", "-p", "fit_intercept=true")
    assert "fitting Lasso on 120x15" in fitted.stderr and "saved the model" in fitted.stderr
    run("predict", model_path, regression_file, "-o", predictions, "--quiet", script=True)
    assert main(["info", str(model_path)]) == 0
    about = capsys.readouterr().out

    X, y = load_svmlight_file(str(regression_file))
    reference = Lasso(alpha=0.01, random_state=0).fit(X, y)
    model = dask_strads.load(model_path)
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    np.testing.assert_array_equal(pd.read_csv(predictions)["prediction"], reference.predict(X))
    assert "estimator: Lasso" in about and "alpha = 0.01" in about
    assert "coef_: array (15,) float64" in about and "converged: True" in about


def test_matrix_factorization_on_a_dask_cluster_with_raw_ids(tmp_path, cli_cluster):
    table = triplet_table()
    table.to_parquet(tmp_path / "ratings.parquet")
    address = cli_cluster.scheduler.address
    scheduler_file = tmp_path / "scheduler.json"
    scheduler_file.write_text(json.dumps({"address": address}))
    model_path = tmp_path / "mf.npz"
    fitted = run("fit", "mf", tmp_path / "ratings.parquet", "-o", model_path, "-p",
                 "n_components=3", "-p", "max_iter=5", "-p", "random_state=0",
                 "--scheduler-address", address)
    assert re.search(r"fitting MatrixFactorization on a table of \(user, item, rating\) in \d+ "
                     "partitions", fitted.stderr), fitted.stderr
    users = ["u00007", "u00000", "u00031"]
    (tmp_path / "users.txt").write_text("\n".join(users) + "\n")
    # the other commands in this process (each subprocess costs seconds of imports)
    assert main(["recommend", str(model_path), "--users", str(tmp_path / "users.txt"), "-n", "4",
                 "-o", str(tmp_path / "top.csv"), "--scheduler-file", str(scheduler_file)]) == 0
    pairs = table.sample(20, random_state=1)[["user", "item"]]
    pairs.to_csv(tmp_path / "pairs.csv", index=False)
    assert main(["predict", str(model_path), str(tmp_path / "pairs.csv"), "-o",
                 str(tmp_path / "predicted.parquet"), "--scheduler-file", str(scheduler_file)]) == 0

    reference = MatrixFactorization(3, max_iter=5, random_state=0)
    reference.client = cli_cluster
    reference.fit(table)
    model = dask_strads.load(model_path)
    np.testing.assert_allclose(model.user_factors_, reference.user_factors_, atol=1e-10)
    np.testing.assert_array_equal(model.user_ids_, reference.user_ids_)
    expected = reference.recommend(users, n=4)
    top = pd.read_csv(tmp_path / "top.csv")
    for user, items in zip(users, expected):
        assert top[top.user == user].sort_values("rank")["item"].tolist() == items.tolist()
    predicted = pd.read_parquet(tmp_path / "predicted.parquet")
    assert predicted["user"].tolist() == pairs["user"].tolist()
    np.testing.assert_allclose(predicted["prediction"], reference.predict_entries(
        np.searchsorted(reference.user_ids_, pairs["user"]),
        np.searchsorted(reference.item_ids_, pairs["item"])), atol=1e-10)


def test_quiet_silences_the_command_and_not_the_process_after_it(tmp_path):
    """``--quiet`` holds for the command only: a script or test that calls ``main`` still sees
    the package's notices afterwards (read by a handler on the package's logger: the levels of
    pytest's own handlers depend on the tests before)."""
    from dask_strads.log import logger

    assert main(["fit", "lasso", str(tmp_path / "missing.svm"), "-o",
                 str(tmp_path / "m.npz"), "--quiet"]) == 1
    said = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    logger.addHandler(handler)
    try:
        logger.info("a notice after the command")
    finally:
        logger.removeHandler(handler)
    assert said == ["a notice after the command"]


def fitted_from_clicks(tmp_path, kind, suffix=".csv", max_iter=4):
    """``(table, model path)``: a table of clicks written to ``tmp_path`` and a model of
    ``kind`` (4 components, ``max_iter`` iterations, seed 0) fitted on it by the command."""
    table = triplet_table()
    clicks = tmp_path / f"clicks{suffix}"
    if suffix == ".csv":
        table.to_csv(clicks, index=False)
    else:
        table.to_parquet(clicks, index=False)
    model_path = tmp_path / f"{kind}.npz"
    assert main(["fit", kind, str(clicks), "-o", str(model_path), "-p", "n_components=4",
                 "-p", f"max_iter={max_iter}", "-p", "random_state=0", "--quiet"]) == 0
    return table, model_path


def test_implicit_feedback_recommends_as_the_estimator_does(tmp_path):
    table, model_path = fitted_from_clicks(tmp_path, "implicit")
    users = ["u00003", "u00011"]
    (tmp_path / "users.txt").write_text("\n".join(users) + "\n")
    assert main(["recommend", str(model_path), "--users", str(tmp_path / "users.txt"), "-n", "5",
                 "-o", str(tmp_path / "top.csv"), "--quiet"]) == 0

    reference = ImplicitMatrixFactorization(4, max_iter=4, random_state=0).fit(table)
    top = pd.read_csv(tmp_path / "top.csv")
    for user, items in zip(users, reference.recommend(users, n=5)):
        assert top[top.user == user].sort_values("rank")["item"].tolist() == items.tolist()
    # an implicit model ranks items and predicts no values: a usage error, nothing written
    (tmp_path / "pairs.csv").write_text("user,item\nu00003,101\n")
    assert main(["predict", str(model_path), str(tmp_path / "pairs.csv"), "-o",
                 str(tmp_path / "predicted.csv")]) == 2
    assert not (tmp_path / "predicted.csv").exists()


def test_bpr_fits_and_recommends_as_the_estimator_does(tmp_path):
    table, model_path = fitted_from_clicks(tmp_path, "bpr", ".parquet", max_iter=5)
    (tmp_path / "users.txt").write_text("u00003\nu00011\n")
    assert main(["recommend", str(model_path), "--users", str(tmp_path / "users.txt"), "-n", "4",
                 "-o", str(tmp_path / "top.csv"), "--quiet"]) == 0
    reference = dask_strads.BayesianPersonalizedRanking(4, max_iter=5, random_state=0).fit(table)
    top = pd.read_csv(tmp_path / "top.csv")
    for user, items in zip(["u00003", "u00011"], reference.recommend(["u00003", "u00011"], n=4)):
        assert top[top.user == user].sort_values("rank")["item"].tolist() == items.tolist()
    (tmp_path / "pairs.csv").write_text("user,item\nu00003,101\n")
    assert main(["predict", str(model_path), str(tmp_path / "pairs.csv"), "-o",
                 str(tmp_path / "predicted.csv")]) == 2  # it ranks, predicts no values


def test_recommend_all_writes_every_users_best_items_as_parquet(tmp_path):
    table, model_path = fitted_from_clicks(tmp_path, "implicit")
    out = tmp_path / "all.parquet"
    assert main(["recommend", str(model_path), "--all", "-n", "5", "-o", str(out),
                 "--quiet"]) == 0
    reference = ImplicitMatrixFactorization(4, max_iter=4, random_state=0).fit(table)
    ids, scores = reference.recommend(reference.user_ids_, n=5, return_scores=True)
    written = pd.read_parquet(out).sort_values(["user", "rank"])
    assert written["user"].unique().tolist() == reference.user_ids_.tolist()
    for user, user_ids, user_scores in zip(reference.user_ids_, ids, scores):
        rows = written[written.user == user]
        assert rows["item"].tolist() == user_ids.tolist()
        np.testing.assert_allclose(rows["score"], user_scores)
    # a folder already written, an output that is not Parquet, or both ways of naming users:
    # usage errors, nothing written
    assert main(["recommend", str(model_path), "--all", "-o", str(out), "--quiet"]) == 1
    assert main(["recommend", str(model_path), "--all", "-o", str(tmp_path / "all.csv")]) == 2
    (tmp_path / "users.txt").write_text("u00003\n")
    assert main(["recommend", str(model_path), "--all", "--users", str(tmp_path / "users.txt"),
                 "-o", str(tmp_path / "some.parquet")]) == 2
    assert not (tmp_path / "all.csv").exists() and not (tmp_path / "some.parquet").exists()


def test_the_example_cluster_script_fits_every_model_on_a_dask_cluster(tmp_path, cli_cluster):
    script = Path(__file__).resolve().parent.parent / "examples" / "cluster_script.py"
    spec = importlib.util.spec_from_file_location("cluster_script", script)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.write_example_files(tmp_path)
    table = pd.read_parquet(tmp_path / "ratings.parquet")  # ids as numbers: printed as such
    table["user"] = table["user"].str[4:].astype(np.int16)
    table["item"] = table["item"].str[4:].astype(np.int16)
    table.to_parquet(tmp_path / "ratings.parquet")
    done = subprocess.run([sys.executable, str(script), "--data", str(tmp_path), "--models",
                           str(tmp_path), "--scheduler-address", cli_cluster.scheduler.address],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    X, y = load_svmlight_file(str(tmp_path / "train.svm"))
    lasso = dask_strads.load(tmp_path / "lasso.npz")
    reference = SklearnLasso(alpha=1e-3, tol=1e-8).fit(X.toarray(), y)
    np.testing.assert_allclose(lasso.coef_, reference.coef_, atol=1e-3)
    implicit = dask_strads.load(tmp_path / "implicit.npz")
    expected = ImplicitMatrixFactorization(5, max_iter=10, random_state=0).fit(table)
    user = int(table["user"].min())
    best = [int(item) for item in expected.recommend([user], n=3)[0]]
    assert implicit.recommend([user], n=3)[0].tolist() == best
    assert f"implicit MF: best items for {user}: {best}" in done.stdout, done.stdout
    assert "np." not in done.stdout, done.stdout


def test_topics_from_a_bag_of_words_keep_the_vocabulary(tmp_path, capsys):
    counts = sp.random(60, 30, density=0.2, format="coo", random_state=2)
    counts.data = np.ceil(counts.data * 5)
    write_bag_of_words(tmp_path, "toy", counts)
    words = [f"w{j}" for j in range(30)]
    (tmp_path / "vocab.toy.txt").write_text("\n".join(words) + "\n")
    model_path = tmp_path / "lda.npz"
    assert main(["fit", "lda", str(tmp_path / "docword.toy.txt"), "-o", str(model_path), "-p",
                 "n_components=3", "-p", "max_iter=5", "-p", "random_state=1", "--quiet"]) == 0
    assert main(["predict", str(model_path), str(tmp_path / "docword.toy.txt"), "-o",
                 str(tmp_path / "theta.npy"), "--quiet"]) == 0
    assert main(["info", str(model_path)]) == 0

    reference = LatentDirichletAllocation(3, max_iter=5, random_state=1).fit(counts.tocsr())
    model = dask_strads.load(model_path)
    np.testing.assert_array_equal(model.components_, reference.components_)
    np.testing.assert_array_equal(np.load(tmp_path / "theta.npy"),
                                  reference.transform(counts.tocsr()))
    assert list(model.vocabulary_) == words
    top = " ".join(np.array(words)[np.argsort(-reference.components_[0])[:8]])
    assert f"topic 0: {top}" in capsys.readouterr().out


def test_elastic_net(tmp_path, regression_file):
    assert main(["fit", "elasticnet", str(regression_file), "-o", str(tmp_path / "m.npz"),
                 "-p", "alpha=0.05", "-p", "l1_ratio=0.3", "--quiet"]) == 0
    X, y = load_svmlight_file(str(regression_file))
    reference = dask_strads.ElasticNet(alpha=0.05, l1_ratio=0.3).fit(X, y)
    np.testing.assert_array_equal(dask_strads.load(tmp_path / "m.npz").coef_, reference.coef_)


def test_a_sampling_schedule_from_its_fields(tmp_path, regression_file):
    assert main(["fit", "lasso", str(regression_file), "-o", str(tmp_path / "m.npz"),
                 "-p", "alpha=0.05", "-p", "schedule={'kind': 'cyclic', 'n_candidates': 4}",
                 "--quiet"]) == 0
    X, y = load_svmlight_file(str(regression_file))
    schedule = dask_strads.SamplingSchedule("cyclic", n_candidates=4)
    reference = dask_strads.Lasso(alpha=0.05, schedule=schedule).fit(X, y)
    model = dask_strads.load(tmp_path / "m.npz")
    assert model.schedule == schedule
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-10)


def test_logistic_regression_from_labels(tmp_path, regression_file):
    X, y = load_svmlight_file(str(regression_file))
    dump_svmlight_file(X, (y > 0).astype(int), str(tmp_path / "labels.svm"))
    assert main(["fit", "logistic", str(tmp_path / "labels.svm"), "-o", str(tmp_path / "m.npz"),
                 "-p", "C=0.5", "--quiet"]) == 0
    assert main(["predict", str(tmp_path / "m.npz"), str(tmp_path / "labels.svm"), "-o",
                 str(tmp_path / "classes.npy"), "--quiet"]) == 0
    reference = dask_strads.LogisticRegression(C=0.5).fit(X, (y > 0).astype(int))
    np.testing.assert_array_equal(dask_strads.load(tmp_path / "m.npz").coef_, reference.coef_)
    np.testing.assert_array_equal(np.load(tmp_path / "classes.npy"), reference.predict(X))


def test_linear_svc_from_labels(tmp_path, regression_file):
    X, y = load_svmlight_file(str(regression_file))
    dump_svmlight_file(X, (y > 0).astype(int), str(tmp_path / "labels.svm"))
    assert main(["fit", "linear_svc", str(tmp_path / "labels.svm"), "-o",
                 str(tmp_path / "m.npz"), "-p", "loss=hinge", "-p", "random_state=0",
                 "--quiet"]) == 0
    assert main(["predict", str(tmp_path / "m.npz"), str(tmp_path / "labels.svm"), "-o",
                 str(tmp_path / "classes.npy"), "--quiet"]) == 0
    reference = dask_strads.LinearSVC(loss="hinge", random_state=0).fit(X, (y > 0).astype(int))
    np.testing.assert_array_equal(dask_strads.load(tmp_path / "m.npz").coef_, reference.coef_)
    np.testing.assert_array_equal(np.load(tmp_path / "classes.npy"), reference.predict(X))


@pytest.mark.parametrize("argv, code, message", [
    (["fit", "lasso", "{data}", "-o", "m.npz", "-p", "alpa=1"], 2,
     "Lasso has no parameter 'alpa'; valid names: alpha, checkpoint_interval"),
    (["fit", "lasso", "{data}", "-o", "m.npz", "-p", "alpha=-1"], 2,
     "bad value '-1': The 'alpha' parameter of Lasso must be a float in the range"),
    (["fit", "mf", "{data}", "-o", "m.npz", "-p", "biases=maybe"], 2, "'biases' parameter"),
    (["fit", "lasso", "{data}", "-o", "m.npz", "-p", "alpha"], 2, "-p takes NAME=VALUE"),
    (["fit", "lasso", "{data}", "-o", "m.npz", "-p", "schedule={{'n_cand': 3}}"], 2,
     "bad value .*SamplingSchedule.* unexpected keyword argument 'n_cand'"),
    (["fit", "lasso", "{data}", "-o", "m.npz", "-p", "checkpoint_dir=ck"], 2,
     "-p cannot set checkpoint_dir: give it as --checkpoint-dir DIR"),
    (["fit", "lasso", "{data}", "-o", "m.npz", "-p", "alpha=0.1", "-p", "alpha=0.2"], 2,
     "-p alpha is given twice"),
    (["fit", "lasso", "{data}", "-o", "{folder}", "-p", "alpha=0.1"], 2,
     "is a folder: give the path of the model file to write, e.g. .*model.npz"),
    (["fit", "svm", "{data}", "-o", "m.npz"], 2, "invalid choice: 'svm'"),
    (["fit", "lasso", "{folder}/data.bin", "-o", "m.npz"], 2, "cannot tell the format"),
    (["fit", "lasso", "{folder}/bad.svm", "-o", "m.npz"], 1,
     "failed: MalformedFileError: .*bad.svm, line 2: target 'x' is not a number"),
    (["fit", "lasso", "{folder}/missing.svm", "-o", "m.npz"], 1, "failed: FileNotFoundError"),
    (["info", "{data}"], 1, "failed: ModelFileError"),
    (["predict", "m.npz", "{data}", "-o", "out.txt"], 2, "output format of out.txt"),
    (["fit", "lda", "{folder}/ratings.parquet", "-o", "m.npz"], 2,
     "LatentDirichletAllocation needs a document x word count matrix: give a bag-of-words"),
    (["fit", "lda", "{folder}/ratings.csv", "-o", "m.npz"], 2,
     r"not a csv table \(read as \(user, item, rating\) rows, for mf and implicit\)"),
    (["predict", "{folder}/lda.npz", "{folder}/ratings.csv", "-o", "out.csv"], 2,
     "LatentDirichletAllocation needs a document x word count matrix"),
    (["recommend", "{folder}/lda.npz", "--all", "-o", "{folder}/all.parquet"], 2,
     "recommend needs a recommender's model .*holds a LatentDirichletAllocation"),
])
def test_errors_give_one_line_and_an_exit_code(tmp_path, capsys, regression_file, argv, code,
                                               message):
    (tmp_path / "bad.svm").write_text("1 1:2\nx 1:3\n")
    (tmp_path / "data.bin").write_text("")
    ratings = triplet_table().assign(user=lambda t: t.user.str[1:].astype(int),  # all whole
                                     rating=lambda t: (2 * t.rating).astype(int))  # numbers
    ratings.to_parquet(tmp_path / "ratings.parquet")
    ratings.to_csv(tmp_path / "ratings.csv", index=False)
    dask_strads.save(LatentDirichletAllocation(2), tmp_path / "lda.npz")
    argv = [a.format(data=regression_file, folder=tmp_path) for a in argv]
    assert main(argv + ["--quiet"]) == code
    err = capsys.readouterr().err  # argparse's own errors follow its usage lines
    assert "Traceback" not in err and re.search(message, err.strip().splitlines()[-1]), err


def test_debug_shows_the_traceback(tmp_path):
    (tmp_path / "bad.svm").write_text("1 1:2\nx 1:3\n")
    with pytest.raises(dask_strads.io.MalformedFileError):
        main(["fit", "lasso", str(tmp_path / "bad.svm"), "-o", str(tmp_path / "m.npz"),
              "--debug", "--quiet"])


def test_a_fifo_given_for_a_file_is_refused_at_once(tmp_path, capsys, fifo, regression_file):
    model, recommender = tmp_path / "m.npz", tmp_path / "mf.npz"
    dask_strads.save(Lasso(alpha=0.1).fit(np.eye(15), np.arange(15.0)), model)
    dask_strads.save(MatrixFactorization(2, max_iter=2).fit(np.eye(4) + 1), recommender)
    for argv in (["info", fifo("model.npz")],
                 ["fit", "lasso", fifo("train.svm"), "-o", tmp_path / "out.npz"],
                 ["predict", model, fifo("test.svm"), "-o", tmp_path / "out.csv"],
                 ["predict", fifo("other.npz"), regression_file, "-o", tmp_path / "out.csv"],
                 ["recommend", recommender, "--users", fifo("users.txt"), "-o",
                  tmp_path / "top.csv"]):
        assert within(20, main, [str(a) for a in argv] + ["--quiet"]) == 1
        assert "is a FIFO (named pipe), not a regular file" in capsys.readouterr().err


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("where, code, message, in_a_process", [
    (["--scheduler-file", "{folder}/missing.json"], 1,
     r"failed: FileNotFoundError: the scheduler file .*missing\.json does not exist", False),
    (["--scheduler-file", "{folder}/notes.json"], 1,
     r"failed: ValueError: .*notes\.json is no scheduler file", False),
    (["--scheduler-address", "tcp://127.0.0.1:{port}"], 1,
     r"failed: ConnectionError: nothing listens at tcp://127\.0\.0\.1:\d+ \(connection refused\)",
     True),
    (["--scheduler-address", "tcp://10.255.255.1:8786"], 1,
     r"failed: ConnectionError: (no answer from tcp://10\.255\.255\.1:8786|cannot reach tcp://"
     r"10\.255\.255\.1:8786|tcp://10\.255\.255\.1:8786 answers, but not as a Dask scheduler)",
     False),
    (["--scheduler-address", "nonsense://x"], 2,
     r"error: unknown kind of address 'nonsense://x': give one such as tcp://HOST:8786", False),
    (["--scheduler-address", "tcp://localhost"], 2,
     r"error: cannot connect to 'tcp://localhost': missing port number", False),
])
def test_a_scheduler_that_cannot_be_reached_is_one_line_within_seconds(tmp_path, capsys, where,
                                                                       code, message,
                                                                       in_a_process):
    """One case end to end in a ``python -m dask_strads`` process (its exit code, within seconds
    with the imports); the others through ``main`` in this process, as the other errors."""
    model = tmp_path / "m.npz"
    dask_strads.save(Lasso(alpha=0.1), model)
    (tmp_path / "notes.json").write_text("not json")
    where = [w.format(folder=tmp_path, port=free_port()) for w in where]
    if in_a_process:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "dask_strads", "info", str(model), *where],
                              capture_output=True, text=True, timeout=120)
        seconds = time.perf_counter() - started  # with the imports, seconds of a loaded machine
        returncode, err = done.returncode, done.stderr
        assert seconds < 25, seconds
    else:
        returncode = within(25, main, ["info", str(model), *where])
        err = capsys.readouterr().err
    assert returncode == code and "Traceback" not in err, err
    assert re.search(message, err.strip().splitlines()[-1]), err


def test_a_server_that_is_no_dask_scheduler_is_named_so(tmp_path, capsys, cli_cluster):
    class Refusing(socketserver.BaseRequestHandler):
        def handle(self):
            self.request.recv(1024)
            self.request.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")

    model = tmp_path / "m.npz"
    dask_strads.save(Lasso(alpha=0.1), model)
    worker = next(iter(cli_cluster.scheduler_info()["workers"]))
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Refusing) as web:
        threading.Thread(target=web.serve_forever, daemon=True).start()
        web_address = "tcp://127.0.0.1:%d" % web.server_address[1]
        for address, message in ((web_address, f"{web_address} answers, but not as a Dask "
                                  "scheduler does"),
                                 (worker, f"{worker} is a Dask Worker, not the scheduler")):
            assert within(30, main, ["info", str(model), "--scheduler-address", address]) == 1
            assert f"failed: ConnectionError: {message}" in capsys.readouterr().err
        web.shutdown()


def fitted_mf(tmp_path, user_dtype=None):
    """The ratings table and the path of an MF model the CLI fitted to it."""
    table = triplet_table()
    if user_dtype is not None:
        table["user"] = table["user"].str[1:].astype(user_dtype)
    table.to_parquet(tmp_path / "ratings.parquet")  # keeps the ids' dtype
    model_path = tmp_path / "mf.npz"
    assert main(["fit", "mf", str(tmp_path / "ratings.parquet"), "-o", str(model_path), "-p",
                 "n_components=3", "-p", "max_iter=6", "-p", "random_state=0", "--quiet"]) == 0
    return table, model_path


def test_mf_predicts_pairs_of_unknown_ids_from_the_mean_and_the_known_bias(tmp_path, capsys):
    table, model_path = fitted_mf(tmp_path)
    model = dask_strads.load(model_path)
    pairs = pd.DataFrame({"user": ["u00007", "nobody", "u00000", "nobody"],
                          "item": [101, 101, 9999, 9999]})
    pairs.to_csv(tmp_path / "pairs.csv", index=False)
    done = run("predict", model_path, tmp_path / "pairs.csv", "-o", tmp_path / "predicted.csv",
               "--quiet")  # a warning: said even so
    assert "3 of 4 pairs of" in done.stderr and "('nobody', 101)" in done.stderr, done.stderr

    user = np.searchsorted(model.user_ids_, ["u00007", "u00000"])
    item = np.searchsorted(model.item_ids_, 101)
    expected = [model.predict_entries(user[:1], [item])[0],
                model.intercept_ + model.item_bias_[item],
                model.intercept_ + model.user_bias_[user[1]],
                model.intercept_]
    np.testing.assert_allclose(pd.read_csv(tmp_path / "predicted.csv")["prediction"], expected,
                               rtol=1e-12)
    assert main(["predict", str(model_path), str(tmp_path / "pairs.csv"), "-o",
                 str(tmp_path / "strict.csv"), "--unknown", "error", "--quiet"]) == 1
    assert "3 of 4 pairs" in capsys.readouterr().err
    assert not (tmp_path / "strict.csv").exists()


def test_recommend_names_user_ids_the_model_does_not_know(tmp_path, capsys):
    table, model_path = fitted_mf(tmp_path, user_dtype=np.int16)
    assert dask_strads.load(model_path).user_ids_.dtype == np.int16
    (tmp_path / "users.txt").write_text(f"{table['user'].iloc[0]}\n40000\n")
    assert main(["recommend", str(model_path), "--users", str(tmp_path / "users.txt"), "-o",
                 str(tmp_path / "top.csv"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "failed: ValueError: 1 of 2 user ids of" in err and "[40000]" in err, err


def test_svmlight_predictions_take_the_models_width(tmp_path, regression_file):
    model_path = tmp_path / "lasso.npz"
    assert main(["fit", "lasso", str(regression_file), "-o", str(model_path), "-p", "alpha=0.01",
                 "--quiet"]) == 0
    X, y = load_svmlight_file(str(regression_file))
    narrow = X[:, :10]  # its largest index is 10, the model's 15
    dump_svmlight_file(narrow, y, str(tmp_path / "narrow.svm"))
    assert main(["predict", str(model_path), str(tmp_path / "narrow.svm"), "-o",
                 str(tmp_path / "p.npy"), "--quiet"]) == 0
    padded = sp.hstack([narrow, sp.csr_matrix((narrow.shape[0], 5))]).tocsr()
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"),
                                  dask_strads.load(model_path).predict(padded))


def test_relative_paths_are_resolved_where_the_command_runs(tmp_path, monkeypatch,
                                                            cli_cluster, regression_file):
    monkeypatch.chdir(tmp_path)  # not the workers' working directory
    (tmp_path / "train.svm").write_bytes(regression_file.read_bytes())
    assert main(["fit", "lasso", "train.svm", "-o", "m.npz", "-p", "alpha=0.01", "--quiet",
                 "--scheduler-address", cli_cluster.scheduler.address]) == 0
    X, y = load_svmlight_file(str(regression_file))
    np.testing.assert_allclose(dask_strads.load(tmp_path / "m.npz").coef_,
                               Lasso(alpha=0.01).fit(X, y).coef_, atol=1e-6)


def test_save_refuses_an_existing_folder(tmp_path):
    (tmp_path / "adir.npz").mkdir()
    with pytest.raises(IsADirectoryError, match="adir.npz is a folder"):
        dask_strads.save(Lasso(alpha=0.1), tmp_path / "adir.npz")
    assert list((tmp_path / "adir.npz").iterdir()) == []


def test_help_lists_parameters_and_models(capsys):
    assert main(["fit", "--help"]) == 0
    out = capsys.readouterr().out
    for name, cls in (("lasso", Lasso), ("mf", MatrixFactorization)):
        defaults = cls().get_params()
        assert f"{name} ({cls.__name__}):" in out
        assert f"n_components={defaults['n_components']!r}" in out if name == "mf" else (
            f"alpha={defaults['alpha']!r}" in out)
    assert main(["predict", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for name in ("Lasso", "ElasticNet", "LogisticRegression", "LinearSVC",
                 "LatentDirichletAllocation",
                 "MatrixFactorization", "ImplicitMatrixFactorization"):
        assert name in out
    assert main(["recommend", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "MatrixFactorization or ImplicitMatrixFactorization" in out


def test_info_says_why_records_and_rounds_differ(tmp_path, capsys):
    _, model_path = fitted_mf(tmp_path)
    history = dask_strads.load(model_path).history_
    rounds = [record["round"] for record in history.records]
    assert main(["info", str(model_path)]) == 0
    out = capsys.readouterr().out
    assert rounds == list(range(1, 2 * len(rounds), 2))  # MF: users, then items
    assert f"history: {len(rounds)} records, {history.stats.rounds} rounds (a record every 2 " \
           "rounds: one per iteration" in out, out
