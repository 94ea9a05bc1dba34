"""A fold of blocks that hold every row (the cross-validation's row masks) against the fold's
rows taken by scipy: the column statistics, the working set's columns and the whole path."""
import numpy as np
import pytest
import scipy.sparse as sp

from dask_strads.estimators.paths import fit_path
from dask_strads.kernels.weighted_columns import weighted_column_stats
from dask_strads.programs.elastic_net import block_columns
from dask_strads.programs.elastic_net_path import ElasticNetPathProgram
from dask_strads.programs.lasso import make_raw_block
from test_elastic_net import sparse_problem


def fold_program_block(X, y_centred, rows, y_shift):
    program = ElasticNetPathProgram([X.shape[1]], y_centred=y_centred[rows] - y_shift,
                                    alphas=[0.1], l1_ratio=1.0, positive=False,
                                    gap_tolerance=1e-4, stage_rounds=10, rows=rows,
                                    sparse=sp.issparse(X))
    raw = make_raw_block(X, y_centred, np.zeros(X.shape[1]), None, False)
    return program.prepare_block(raw, 0).columns


@pytest.mark.parametrize("layout", ["dense", "csc"])
def test_fold_columns_are_those_of_the_folds_rows(layout):
    X, y = sparse_problem(seed=3, n=60, p=25)
    X = sp.csc_matrix(X) if layout == "csc" else np.asfortranarray(X.toarray())
    y_centred = y - y.mean()
    rows = np.flatnonzero(np.arange(60) % 4 != 1)
    y_shift = y_centred[rows].mean()
    ours = fold_program_block(X, y_centred, rows, y_shift)
    ref, _ = block_columns(X[rows], y_centred[rows] - y_shift, None)  # a copy of the rows
    for name in ("col_sums", "col_means"):
        np.testing.assert_allclose(getattr(ours, name), getattr(ref, name), atol=1e-12)
    codes, table = ours.col_norm2  # a byte a column: the code of an upper bound
    exact = ref.col_norm2
    ratio = 1 + (np.log2(exact[exact > 0].max() / exact[exact > 0].min()) + 1) / 254
    assert np.all(table[codes] >= exact * (1 - 1e-12))
    assert np.all(table[codes] <= exact * ratio * (1 + 1e-8))
    positions = np.array([0, 3, 4, 17])
    taken, expected = ours.take(positions), ref.take(positions)
    if layout == "csc":
        taken_X = sp.csc_matrix(taken.X[::-1], shape=(len(rows), 4)).toarray()
        expected_X = sp.csc_matrix(expected.X[::-1], shape=(len(rows), 4)).toarray()
    else:
        taken_X, expected_X = taken.X, expected.X
    np.testing.assert_array_equal(taken_X, expected_X)
    np.testing.assert_array_equal(ours.spread(np.ones(len(rows))), np.arange(60) % 4 != 1)


def test_weighted_stats_weigh_each_row():
    X, _ = sparse_problem(seed=4, n=30, p=12)
    A = X.toarray()
    h, v = np.linspace(0.0, 2.0, 30), np.cos(np.arange(30.0))
    sums, norms2, products = weighted_column_stats(np.asfortranarray(A), h, v)
    np.testing.assert_allclose(sums, h @ A)
    np.testing.assert_allclose(norms2, h @ A**2)
    np.testing.assert_allclose(products, (h * v) @ A)


def test_a_folds_path_equals_the_path_of_its_rows():
    """The fold program on blocks of every row, run on the engine, against fit_path on a copy of
    the fold's rows."""
    from dask_strads import LassoCV

    X, y = sparse_problem(seed=5, n=70, p=40)
    rows = np.flatnonzero(np.arange(70) % 3 != 0)
    alphas = np.geomspace(0.3, 0.003, 5)
    ref, ref_intercepts, _, _ = fit_path(X[rows], y[rows], alphas, 1.0, fit_intercept=True,
                                         tol=1e-12, max_iter=1000, positive=False)
    cv = LassoCV(alphas=alphas, cv=[(rows, np.flatnonzero(np.arange(70) % 3 == 0))],
                 tol=1e-12, n_blocks=2).fit(X, y)
    test = np.arange(70) % 3 == 0
    errors = ((X[test] @ ref + ref_intercepts - y[test][:, None]) ** 2).mean(axis=0)
    np.testing.assert_allclose(cv.mse_path_, errors, rtol=1e-8)
