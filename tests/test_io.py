"""dask_strads.io: each reader against scikit-learn's, scipy's or pandas' reading of files
written here, in this process and on worker processes."""
import gzip
import shutil

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

import dask_strads
from dask_strads import MatrixFactorization, RatingsMatrix
from dask_strads import io as dio
from bounded import fifo, within  # noqa: F401  (fifo: a fixture)


def gzipped(path):
    target = path.with_name(path.name + ".gz")
    with open(path, "rb") as source, gzip.open(target, "wb") as out:
        shutil.copyfileobj(source, out)
    return target


def as_scipy(X, client=None):
    """X in memory: a Dask collection computed on the client whose workers hold it."""
    return client.compute(X).result() if hasattr(X, "compute") else X


def assert_same_matrix(X, reference, client=None):
    X = as_scipy(X, client)
    assert X.shape == reference.shape
    assert abs(sp.csr_matrix(X) - sp.csr_matrix(reference)).max() == 0


@pytest.fixture(scope="module")
def cluster(client_factory):
    return client_factory(2)


def sparse_data(n_rows=1500, n_cols=40, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_cols, density=0.1, format="csr", random_state=seed)
    X.data = np.round(X.data * 100, 3)
    return X, np.round(rng.normal(size=n_rows), 4)


@pytest.mark.parametrize("zero_based", [False, True])
def test_svmlight_matches_scikit_learn_in_process_and_on_workers(tmp_path, cluster, zero_based):
    X, y = sparse_data()  # a ~70 kB file: one byte range per worker
    path = tmp_path / "data.svm"
    dump_svmlight_file(X, y, str(path), zero_based=zero_based)
    reference_X, reference_y = load_svmlight_file(str(path))
    for client in (None, cluster):
        for source in (path, gzipped(path)):
            got_X, got_y = dio.read_svmlight(source, client=client)
            assert_same_matrix(got_X, reference_X, client)
            np.testing.assert_array_equal(as_scipy(got_y, client), reference_y)
    got_X, _ = dio.read_svmlight(path, client=cluster)
    assert got_X.numblocks[0] == 2  # read in two byte ranges, on the workers
    wide, _ = dio.read_svmlight(path, n_features=60)
    assert wide.shape == (X.shape[0], 60)


@pytest.mark.parametrize("line, reason", [
    (b"1 3:x 5:2", "value in '3:x' is not a number"),
    (b"one 3:1", "target 'one' is not a number"),
    (b"1 3:1 2:1", "increasing and unique: 2 after 3"),
    (b"1 3", "expected index:value, got '3'"),
])
def test_svmlight_malformed_line_is_named(tmp_path, cluster, line, reason):
    lines = [b"%d 1:0.5 4:2" % (i % 2) for i in range(900)]
    lines[700] = line
    path = tmp_path / "bad.libsvm"
    path.write_bytes(b"\n".join(lines) + b"\n")
    for client in (None, cluster):
        with pytest.raises(dio.MalformedFileError, match=f"line 701: .*{reason}"):
            dio.read_svmlight(path, client=client)


@pytest.mark.parametrize("field", ["real", "integer", "pattern"])
def test_matrix_market_matches_scipy(tmp_path, cluster, field):
    X, _ = sparse_data(800, 30, seed=1)
    if field != "real":
        X.data = np.ceil(X.data)
    path = tmp_path / "m.mtx"
    scipy.io.mmwrite(path, X, field=field)
    reference = scipy.io.mmread(path).tocsr()
    for client in (None, cluster):
        for source in (path, gzipped(path)):
            assert_same_matrix(dio.read_matrix_market(source, client=client), reference, client)


def test_matrix_market_other_kinds_go_to_scipy(tmp_path, cluster):
    X = sp.random(20, 20, density=0.2, random_state=3)
    symmetric = tmp_path / "s.mtx"
    scipy.io.mmwrite(symmetric, X + X.T, symmetry="symmetric")
    dense = tmp_path / "d.mtx"
    scipy.io.mmwrite(dense, X.toarray())
    for path in (symmetric, dense):
        reference = sp.csr_matrix(scipy.io.mmread(path))
        for client in (None, cluster):
            assert_same_matrix(dio.read_matrix_market(path, client=client), reference, client)


def test_matrix_market_malformed_lines(tmp_path):
    header = b"%%MatrixMarket matrix coordinate real general\n% a comment\n3 4 3\n"
    cases = [(b"1 1 1.0\n2 5 1.0\n3 3 1\n", "line 5: column index 5 outside 1..4"),
             (b"1 1 1.0\n2 2\n3 3 1\n", "line 5: expected 3 fields"),
             (b"1 1 1.0\n2 2 x\n3 3 1\n", "line 5: value 'x' is not a number"),
             (b"1 1 1.0\n", "announces 3 entries, the file holds 1"),
             # Python's int() takes 1_000, the parser does not: its message is given
             (b"1 1 1.0\n2 2 1_000\n3 3 1\n",
              "line 4: the lines from this one on cannot be parsed: could not convert string "
              "'1_000' to float64"),
             (b"1 1 1.0\n\n2 2 2\r\n \t3\t3  1\n", None)]  # blank, CRLF, tabs: read
    path = tmp_path / "bad.mtx"
    for body, message in cases:
        path.write_bytes(header + body)
        if message is None:
            np.testing.assert_array_equal(dio.read_matrix_market(path).toarray(),
                                          scipy.io.mmread(path).toarray())
            continue
        with pytest.raises(dio.MalformedFileError, match=message):
            dio.read_matrix_market(path)
    path.write_bytes(b"3 4 3\n")
    with pytest.raises(dio.MalformedFileError, match="line 1: not a MatrixMarket file"):
        dio.read_matrix_market(path)


def write_bag_of_words(folder, name, counts):
    triplets = pd.DataFrame({"doc": counts.row + 1, "word": counts.col + 1, "n": counts.data.astype(int)})
    path = folder / f"docword.{name}.txt"
    with open(path, "w") as out:
        out.write(f"{counts.shape[0]}\n{counts.shape[1]}\n{counts.nnz}\n")
        triplets.to_csv(out, sep=" ", header=False, index=False)
    return path, triplets


def test_bag_of_words_matches_a_pandas_pivot_and_keeps_the_vocabulary(tmp_path, cluster):
    counts = sp.random(300, 50, density=0.1, format="coo", random_state=4)
    counts.data = np.ceil(counts.data * 9)
    path, triplets = write_bag_of_words(tmp_path, "toy", counts)
    words = [f"word{j}" for j in range(50)]
    (tmp_path / "vocab.toy.txt").write_text("\n".join(words) + "\n")
    pivot = triplets.pivot_table(index="doc", columns="word", values="n", fill_value=0)
    reference = np.zeros(counts.shape)
    reference[np.ix_(pivot.index - 1, pivot.columns - 1)] = pivot.to_numpy()
    for client in (None, cluster):
        for source in (path, gzipped(path)):
            got, vocabulary = dio.read_bag_of_words(source, client=client)
            np.testing.assert_array_equal(as_scipy(got, client).toarray(), reference)
            assert list(vocabulary) == words
    data = dio.read(gzipped(path))
    assert data.X.shape == counts.shape and list(data.vocabulary) == words


def test_bag_of_words_malformed(tmp_path):
    path = tmp_path / "docword.bad.txt"
    path.write_text("2\n3\n2\n1 1 4\n3 1 2\n")
    with pytest.raises(dio.MalformedFileError, match="line 5: row index 3 outside 1..2"):
        dio.read_bag_of_words(path)
    path.write_text("2\n3\n2\n1 1 4\n2 1 2.5\n")
    with pytest.raises(dio.MalformedFileError, match="line 5: value '2.5' is not an integer"):
        dio.read_bag_of_words(path)
    (tmp_path / "vocab.bad.txt").write_text("a\nb\n")
    path.write_text("2\n3\n1\n1 1 4\n")
    with pytest.raises(dio.MalformedFileError, match="2 words, but .* has 3"):
        dio.read_bag_of_words(path)


def triplet_table(names=("user", "item", "rating"), seed=5):
    """Ratings of 60 users with string ids and 40 items with int ids, a pair at most once."""
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({"user": [f"u{i:05d}" for i in rng.integers(0, 60, 700)],
                          "item": rng.integers(100, 140, 700),
                          "rating": rng.integers(1, 11, 700) / 2})
    table = table.drop_duplicates(["user", "item"], ignore_index=True)
    return table.rename(columns=dict(zip(("user", "item", "rating"), names)))


def pivot_of(table):
    pivot = table.pivot(index="userId", columns="movie", values="stars")
    return pivot, sp.csr_matrix(np.nan_to_num(pivot.to_numpy(), nan=0.0))


def test_triplets_from_parquet_and_csv_match_a_pandas_pivot(tmp_path, cluster):
    table = triplet_table(("userId", "movie", "stars"))
    table.to_parquet(tmp_path / "r.parquet")
    table.to_csv(tmp_path / "r.csv", index=False)
    pivot, reference = pivot_of(table)
    for name in ("r.parquet", "r.csv"):
        for client in (None, cluster):
            frame = dio.read_triplets(tmp_path / name, columns=["userId", "movie", "stars"],
                                      client=client)
            assert list(frame.columns) == ["user", "item", "rating"]
            ratings = dio.ratings_of_frame(frame, client)
            assert_same_matrix(ratings.matrix, reference, client)
            np.testing.assert_array_equal(ratings.user_ids, pivot.index.to_numpy())
            np.testing.assert_array_equal(ratings.item_ids, pivot.columns.to_numpy())


def test_triplet_errors(tmp_path, cluster):
    import dask.dataframe as dd

    table = triplet_table()
    repeated = pd.concat([table, table.iloc[:3]])
    with pytest.raises(ValueError, match="3 repeated"):
        dio.ratings_of_frame(dd.from_pandas(repeated, npartitions=2), cluster)
    with pytest.raises(ValueError, match="need the .* columns"):
        table.to_csv(tmp_path / "t.csv", index=False)
        dio.read_triplets(tmp_path / "t.csv", columns=["a", "b", "c"])
    (tmp_path / "bad.csv").write_text("user,item,rating\n1,2,3\n1,2,3,4\n")
    with pytest.raises(dio.MalformedFileError, match="line 3"):
        dio.read_triplets(tmp_path / "bad.csv")


def test_matrix_factorization_takes_a_table_of_triplets():
    """In this process (tests/test_cli.py fits a Dask DataFrame on a cluster)."""
    import dask.dataframe as dd

    table = triplet_table()
    ratings = RatingsMatrix.from_triplets(table.user, table.item, table.rating)
    make = lambda: MatrixFactorization(3, max_iter=4, random_state=0)  # noqa: E731
    reference = make().fit(ratings.matrix)
    for X in (table, dd.from_pandas(table, npartitions=3)):
        model = make().fit(X)
        np.testing.assert_array_equal(model.user_factors_, reference.user_factors_)
        np.testing.assert_array_equal(model.user_ids_, ratings.user_ids)
        np.testing.assert_array_equal(model.item_ids_, ratings.item_ids)
    np.testing.assert_array_equal(reference.user_ids_, np.arange(ratings.matrix.shape[0]))
    with pytest.raises(ValueError, match="needs columns named"):
        make().fit(dd.from_pandas(table.rename(columns={"user": "u"}), npartitions=2))
    with pytest.raises(ValueError, match="needs columns named"):
        make().fit(table.rename(columns={"user": "userId"}))


def test_numpy_files_match_numpy_and_scipy(tmp_path, cluster):
    X, _ = sparse_data(300, 20, seed=6)
    sp.save_npz(tmp_path / "x.npz", X)
    np.save(tmp_path / "x.npy", X.toarray())
    for client in (None, cluster):
        assert_same_matrix(dio.read_npz(tmp_path / "x.npz", client=client), X, client)
        np.testing.assert_array_equal(
            as_scipy(dio.read_npy(tmp_path / "x.npy", client=client), client), X.toarray())
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError):
        dio.read_npy(tmp_path / "objects.npy")


@pytest.mark.parametrize("name, expected", [
    ("a.svm", "svmlight"), ("a.libsvm.gz", "svmlight"), ("a.svmlight", "svmlight"),
    ("m.mtx.gz", "matrixmarket"), ("docword.kos.txt.gz", "bagofwords"),
    ("docword.nips.txt", "bagofwords"), ("r.parquet", "parquet"), ("r.csv", "csv"),
    ("x.npz", "npz"), ("x.npy", "npy")])
def test_format_of_names(name, expected):
    assert dio.format_of(name) == expected


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="cannot tell the format of .*: give it"):
        dio.format_of(tmp_path / "data.bin")
    with pytest.raises(ValueError, match="unknown format 'hdf5'"):
        dio.read(tmp_path / "data.bin", format="hdf5")


@pytest.mark.parametrize("name, read", [
    ("pipe.svm", dio.read_svmlight), ("pipe.mtx", dio.read_matrix_market),
    ("docword.pipe.txt", dio.read_bag_of_words), ("pipe.csv", dio.read_triplets),
    ("pipe.parquet", dio.read_triplets), ("pipe.npy", dio.read_npy), ("pipe.npz", dio.read_npz),
    ("pipe.svm", dio.read), ("pipe.txt", dio.read_vocabulary)])
def test_a_fifo_is_refused_before_it_is_opened(fifo, name, read):
    with pytest.raises(ValueError, match=r"pipe\.\w+ is a FIFO \(named pipe\), not a regular"):
        within(10, read, fifo(name))


def test_devices_and_folders_are_refused_where_a_file_is_read(tmp_path):
    with pytest.raises(ValueError, match="/dev/null is a character device, not a regular file"):
        within(10, dio.read_svmlight, "/dev/null")
    (tmp_path / "data.svm").mkdir()
    with pytest.raises(ValueError, match=r"data\.svm is a folder, not a regular file"):
        within(10, dio.read_svmlight, tmp_path / "data.svm")


def test_a_csv_without_header_keeps_its_first_row(tmp_path, cluster):
    table = triplet_table()
    table.to_csv(tmp_path / "bare.csv", index=False, header=False)  # "u00012,117,3.5" first
    table.to_csv(tmp_path / "named.csv", index=False)
    table.iloc[:, 1:].to_csv(tmp_path / "numbers.csv", index=False, header=False)
    for client in (None, cluster):
        for name in ("bare.csv", "named.csv"):
            frame = as_scipy(dio.read_triplets(tmp_path / name, client=client), client)
            assert list(frame.columns) == list(table.columns)
            assert frame.to_numpy().tolist() == table.to_numpy().tolist()
        pairs = as_scipy(dio.read_table(tmp_path / "numbers.csv", ("item", "rating"),
                                        client=client), client)
        np.testing.assert_array_equal(pairs.to_numpy(), table.iloc[:, 1:].to_numpy())
    with pytest.raises(ValueError, match=r"bare\.csv has no header \(its first line is data\): "
                       r"give columns by position"):
        dio.read_triplets(tmp_path / "bare.csv", columns=["userId", "movie", "stars"])


# -- every estimator takes what the readers return, on a cluster ---------------------------------
def svmlight_problem(tmp_path, classes):
    """A sparse problem written with scikit-learn's writer and read back by its reader:
    ``(path, X, y)``."""
    rng = np.random.default_rng(7)
    X = sp.random(240, 30, density=0.3, format="csr", random_state=7)
    X.data = np.round(X.data * 10, 3)
    y = X @ rng.normal(size=30) + 0.1 * rng.normal(size=240)
    y = np.where(y > np.median(y), 1.0, -1.0) if classes else np.round(y, 6)
    path = tmp_path / "problem.svm"
    dump_svmlight_file(X, y, str(path))
    X, y = load_svmlight_file(path, n_features=30)
    return path, X, y


def cv(make):
    return lambda: make(cv=3, alphas=8, tol=1e-10, n_blocks=2, random_state=0)


SVMLIGHT_ESTIMATORS = {
    "Lasso": (lambda: dask_strads.Lasso(alpha=0.01, tol=1e-12, n_blocks=2), False),
    "ElasticNet": (lambda: dask_strads.ElasticNet(alpha=0.01, tol=1e-12, n_blocks=2), False),
    "LassoCV": (cv(dask_strads.LassoCV), False),
    "ElasticNetCV": (cv(dask_strads.ElasticNetCV), False),
    "LogisticRegression": (lambda: logistic(C=0.5), True),
}


def logistic(**params):
    return dask_strads.LogisticRegression(tol=1e-7, max_iter=1000, n_blocks=2, **params)


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", list(SVMLIGHT_ESTIMATORS))
def test_estimators_take_the_svmlight_readers_arrays_on_a_cluster(tmp_path, cluster, name):
    """The reader's Dask arrays, held by the cluster's workers (a client that is not the
    default one), fit the model that scikit-learn's reading of the file fits."""
    make, classes = SVMLIGHT_ESTIMATORS[name]
    path, X, y = svmlight_problem(tmp_path, classes)
    X_dask, y_dask = dio.read_svmlight(path, client=cluster)
    assert isinstance(X_dask, da.Array) and isinstance(y_dask, da.Array)
    fitted, reference = make(), make()
    fitted.client = reference.client = cluster
    fitted.fit(X_dask, y_dask)
    reference.fit(X, y)
    np.testing.assert_allclose(fitted.coef_, reference.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(fitted.intercept_, reference.intercept_, rtol=1e-6, atol=1e-8)
    if hasattr(reference, "alpha_"):
        assert fitted.alpha_ == reference.alpha_


def test_paths_take_the_svmlight_readers_arrays_on_a_cluster(tmp_path, cluster):
    path, X, y = svmlight_problem(tmp_path, classes=False)
    X_dask, y_dask = dio.read_svmlight(path, client=cluster)
    for path_of in (dask_strads.lasso_path, dask_strads.enet_path):
        alphas, coefs, _ = path_of(X_dask, y_dask, alphas=5, tol=1e-10, client=cluster)
        ref_alphas, ref_coefs, _ = path_of(X, y, alphas=5, tol=1e-10, client=cluster)
        np.testing.assert_allclose(alphas, ref_alphas, rtol=1e-12)
        np.testing.assert_allclose(coefs, ref_coefs, rtol=1e-6, atol=1e-8)


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
def test_logistic_regression_takes_the_readers_arrays_on_dask_worker_processes(tmp_path,
                                                                                cli_cluster):
    """On a cluster of ``dask scheduler`` / ``dask worker`` processes, as the CLI's
    ``--scheduler-address`` gives."""
    path, X, y = svmlight_problem(tmp_path, classes=True)
    X_dask, y_dask = dio.read_svmlight(path, client=cli_cluster)
    fitted, reference = logistic(), logistic()
    fitted.client = cli_cluster
    fitted.fit(X_dask, y_dask)
    np.testing.assert_allclose(fitted.coef_, reference.fit(X, y).coef_, rtol=1e-6, atol=1e-8)


def test_factorisations_take_the_triplet_and_matrix_readers_output_on_a_cluster(tmp_path,
                                                                                 cluster):
    table = triplet_table()
    table.to_parquet(tmp_path / "r.parquet")
    frame = dio.read_triplets(tmp_path / "r.parquet", client=cluster)
    assert hasattr(frame, "to_delayed")  # a Dask DataFrame on the workers
    for make in (lambda: MatrixFactorization(3, max_iter=4, random_state=0),
                 lambda: dask_strads.ImplicitMatrixFactorization(3, max_iter=4,
                                                                 random_state=0)):
        fitted, reference = make(), make()
        fitted.client = reference.client = cluster
        fitted.fit(frame)
        reference.fit(table)
        np.testing.assert_allclose(fitted.user_factors_, reference.user_factors_, atol=1e-10)
        np.testing.assert_array_equal(fitted.item_ids_, reference.item_ids_)
    ratings = RatingsMatrix.from_triplets(table.user, table.item, table.rating).matrix
    scipy.io.mmwrite(tmp_path / "r.mtx", ratings)
    fitted = MatrixFactorization(3, max_iter=4, random_state=0)
    fitted.client = cluster
    fitted.fit(dio.read_matrix_market(tmp_path / "r.mtx", client=cluster))
    reference = MatrixFactorization(3, max_iter=4, random_state=0).fit(
        scipy.io.mmread(tmp_path / "r.mtx"))
    np.testing.assert_allclose(fitted.user_factors_, reference.user_factors_, atol=1e-10)


def test_lda_takes_the_bag_of_words_readers_output_on_a_cluster(tmp_path, cluster):
    counts = sp.random(200, 40, density=0.15, format="coo", random_state=8)
    counts.data = np.ceil(counts.data * 6)
    path, _ = write_bag_of_words(tmp_path, "lda", counts)
    X, _ = dio.read_bag_of_words(path, client=cluster)
    fitted = dask_strads.LatentDirichletAllocation(4, max_iter=5, random_state=0)
    reference = dask_strads.LatentDirichletAllocation(4, max_iter=5, random_state=0)
    fitted.client = reference.client = cluster
    np.testing.assert_array_equal(fitted.fit(X).components_,
                                  reference.fit(counts.tocsr()).components_)
