"""float32 data end to end for the Lasso and the elastic net: the blocks keep float32 values on
the workers, the kernels compute in float64, and the fitted attributes have scikit-learn's
dtypes.

The references are independent of the float32 code: the float64 fit of the same values (the
float32 data widened, exactly), which the float32 fit must equal to float32's rounding of its
coefficients; scikit-learn's own float32 fit, whose objective ours must reach; scikit-learn's
attributes' dtypes; the arrays' ``nbytes``."""
import gc
import time
import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from dask.sizeof import sizeof
from sklearn import linear_model
from sklearn.exceptions import ConvergenceWarning

import dask_strads
from dask_strads.engine import cells
from dask_strads.estimators.inputs import blocks_along
from dask_strads.partition import block_edges
from dask_strads.programs.elastic_net import ElasticNetProgram
from dask_strads.programs.elastic_net_path import ElasticNetPathProgram
from dask_strads.programs.lasso import LassoProgram, make_raw_block

#: A float32 fit's coefficients against the float64 fit of the same values, rounded to float32:
#: a few units in float32's last place.
ROUNDING = 4 * np.finfo(np.float32).eps
TOL = 1e-12


def well_conditioned(n=300, p=80, seed=0):
    """Independent Gaussian columns of different scales, a sparse w and noise: a problem whose
    support a float32 rounding of X does not change."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * rng.uniform(0.5, 2.0, p)
    w = np.zeros(p)
    w[rng.choice(p, 8, replace=False)] = rng.choice([-1, 1], 8) * rng.uniform(1, 3, 8)
    return X, X @ w + 0.5 * rng.standard_normal(n) + 3.0


def as_format(X, fmt):
    return {"dense": X, "csc": sp.csc_matrix(X), "csr": sp.csr_matrix(X)}[fmt]


def sparse_design(X, seed=1):
    """X with about 70% of its entries zeroed, so that a CSC block is a real sparse one."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random(X.shape) < 0.7, 0.0, X)


def enet_objective(X, y, coef, intercept, alpha, l1_ratio, weights=None):
    """scikit-learn's objective, in float64 numpy."""
    X = X.toarray() if sp.issparse(X) else X
    residual = y - X.astype(np.float64) @ np.asarray(coef, dtype=np.float64) - intercept
    weights = np.ones(len(y)) if weights is None else weights * len(y) / weights.sum()
    coef = np.asarray(coef, dtype=np.float64)
    return (0.5 * weights @ residual**2 / len(y) + alpha * l1_ratio * np.abs(coef).sum()
            + 0.5 * alpha * (1 - l1_ratio) * coef @ coef)


def fitted(estimator, X, y, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return estimator.fit(X, y, **fit_params)


ESTIMATORS = {
    "lasso": lambda **kw: dask_strads.Lasso(alpha=0.05, tol=TOL, **kw),
    "enet": lambda **kw: dask_strads.ElasticNet(alpha=0.05, l1_ratio=0.6, tol=TOL, **kw),
    "lasso-priority": lambda **kw: dask_strads.Lasso(alpha=0.05, tol=1e-8, schedule="priority",
                                                     max_iter=5000, **kw),
}


# sample weights need the working-set schedule: the priority schedule refuses them
WEIGHTINGS = [pytest.param(name, weighted, id=f"{name}-{'weighted' if weighted else 'unweighted'}")
              for name in ESTIMATORS for weighted in (False, True)
              if not (weighted and name == "lasso-priority")]


@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("fmt", ["dense", "csc"])
@pytest.mark.parametrize("name, weighted", WEIGHTINGS)
def test_float32_fit_is_the_float64_fit_of_the_same_values(name, weighted, fmt, fit_intercept):
    """The kernels read float32 values and compute in float64: the fit is the float64 fit of
    the same (widened) values, to float32's rounding of the result; on a well-conditioned
    problem, the support of the float64 data's own fit too."""
    X, y = well_conditioned()
    X = sparse_design(X) if fmt == "csc" else X
    narrow = X.astype(np.float32)
    weights = {"sample_weight": np.arange(len(y)) % 3 + 0.5} if weighted else {}
    make = ESTIMATORS[name]
    ours = fitted(make(fit_intercept=fit_intercept, n_blocks=2), as_format(narrow, fmt), y,
                  **weights)
    same_values = fitted(make(fit_intercept=fit_intercept, n_blocks=2),
                         as_format(narrow.astype(np.float64), fmt), y, **weights)
    original = fitted(make(fit_intercept=fit_intercept, n_blocks=2), as_format(X, fmt), y,
                      **weights)
    assert ours.coef_.dtype == np.float32
    scale = np.abs(same_values.coef_).max()
    np.testing.assert_allclose(ours.coef_, same_values.coef_, rtol=ROUNDING,
                               atol=ROUNDING * scale)
    np.testing.assert_allclose(ours.intercept_, same_values.intercept_, rtol=ROUNDING,
                               atol=ROUNDING * scale)
    np.testing.assert_array_equal(ours.coef_ != 0, original.coef_ != 0)
    np.testing.assert_allclose(ours.coef_, original.coef_, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("fmt", ["dense", "csc"])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_objective_reaches_sklearns_float32_fit(fmt, l1_ratio):
    """scikit-learn's float32 fit (its solver in float32), measured in float64 on the same
    float32 data: ours is as low, to float32's rounding of the coefficients."""
    X, y = well_conditioned(seed=3)
    X = as_format((sparse_design(X) if fmt == "csc" else X).astype(np.float32), fmt)
    y = y.astype(np.float32)
    alpha = 0.05
    ours = fitted(dask_strads.ElasticNet(alpha=alpha, l1_ratio=l1_ratio, tol=TOL), X, y)
    theirs = linear_model.ElasticNet(alpha=alpha, l1_ratio=l1_ratio, tol=1e-8,
                                     max_iter=100_000).fit(X, y)
    assert ours.coef_.dtype == theirs.coef_.dtype == np.float32
    y64 = y.astype(np.float64)
    mine = enet_objective(X, y64, ours.coef_, ours.intercept_, alpha, l1_ratio)
    reference = enet_objective(X, y64, theirs.coef_, theirs.intercept_, alpha, l1_ratio)
    assert mine <= reference * (1 + 1e-6), (mine, reference)
    np.testing.assert_array_equal(ours.coef_ != 0, theirs.coef_ != 0)


def test_float32_values_beyond_float32_squares():
    """Values whose squares overflow float32 (1e25: squares 1e50) are widened before they are
    multiplied: the fit of X * 1e25 at alpha * 1e25 is the fit of X at alpha, its coefficients
    scaled by 1e-25."""
    X, y = well_conditioned(n=120, p=30, seed=4)
    narrow = X.astype(np.float32)
    small = fitted(dask_strads.Lasso(alpha=0.05, tol=TOL), narrow, y)
    large = fitted(dask_strads.Lasso(alpha=0.05 * 1e25, tol=TOL), narrow * np.float32(1e25), y)
    assert np.isfinite(large.coef_).all()
    np.testing.assert_allclose(large.coef_.astype(np.float64) * 1e25, small.coef_,
                               rtol=1e-5, atol=1e-5 * np.abs(small.coef_).max())


# -- the fitted attributes' dtypes, against scikit-learn's ---------------------------------------

def attribute_types(estimator, X):
    """The types scikit-learn's float32 handling decides: coef_, intercept_, dual_gap_ and the
    predictions'."""
    return (np.asarray(estimator.coef_).dtype, type(estimator.intercept_),
            np.asarray(estimator.dual_gap_).dtype, np.asarray(estimator.predict(X)).dtype)


PAIRS = {
    "Lasso": (lambda: dask_strads.Lasso(alpha=0.1),
              lambda: linear_model.Lasso(alpha=0.1)),
    "ElasticNet": (lambda: dask_strads.ElasticNet(alpha=0.1),
                   lambda: linear_model.ElasticNet(alpha=0.1)),
    "Lasso no intercept": (lambda: dask_strads.Lasso(alpha=0.1, fit_intercept=False),
                           lambda: linear_model.Lasso(alpha=0.1, fit_intercept=False)),
    "LassoCV": (lambda: dask_strads.LassoCV(alphas=4, cv=3),
                lambda: linear_model.LassoCV(alphas=4, cv=3)),
    "ElasticNetCV": (lambda: dask_strads.ElasticNetCV(alphas=4, cv=3, l1_ratio=[0.5, 1.0]),
                     lambda: linear_model.ElasticNetCV(alphas=4, cv=3, l1_ratio=[0.5, 1.0])),
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("y_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("X_dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("fmt", ["dense", "csr", "csc"])
@pytest.mark.parametrize("pair", list(PAIRS))
def test_fitted_dtypes_are_sklearns(pair, fmt, X_dtype, y_dtype):
    X, y = well_conditioned(n=90, p=12, seed=5)
    X = as_format((X * 4).astype(X_dtype), fmt)
    y = y.astype(y_dtype)
    ours, theirs = (make() for make in PAIRS[pair])
    expected = attribute_types(theirs.fit(X, y), X)
    assert attribute_types(ours.fit(X, y), X) == expected
    assert attribute_types(ours, X) == expected


def test_paths_coefs_dtype_is_sklearns():
    X, y = well_conditioned(n=90, p=12, seed=6)
    for given in (X.astype(np.float32), sp.csc_matrix(X.astype(np.float32)), X):
        for path, reference in ((dask_strads.lasso_path, linear_model.lasso_path),
                                (dask_strads.enet_path, linear_model.enet_path)):
            ours = path(given, y, alphas=4)
            theirs = reference(given, y, alphas=4)
            assert [a.dtype for a in ours] == [a.dtype for a in theirs]


def test_several_targets_and_dask_input_keep_float32():
    X, y = well_conditioned(n=90, p=12, seed=7)
    narrow = X.astype(np.float32)
    Y = np.column_stack([y, -y])
    both = dask_strads.Lasso(alpha=0.1).fit(narrow, Y)
    assert both.coef_.dtype == linear_model.Lasso(alpha=0.1).fit(narrow, Y).coef_.dtype
    lazy = dask_strads.Lasso(alpha=0.1, tol=TOL).fit(da.from_array(narrow, chunks=(30, 6)), y)
    eager = dask_strads.Lasso(alpha=0.1, tol=TOL).fit(narrow, y)
    assert lazy.coef_.dtype == np.float32 and isinstance(lazy.intercept_, np.float32)
    np.testing.assert_allclose(lazy.coef_, eager.coef_, rtol=ROUNDING, atol=1e-6)
    predicted = lazy.predict(da.from_array(narrow, chunks=(30, 12)))
    assert predicted.dtype == predicted.compute().dtype == np.float32


# -- the blocks the programs prepare -------------------------------------------------------------

def prepared_blocks(program, X, y_centred, means=None, centre_dense=False):
    edges = block_edges(X.shape[1], 2)
    raw = blocks_along(X, edges, lambda part, lo, hi: make_raw_block(
        part, y_centred, np.zeros(hi - lo), None if means is None else means[lo:hi],
        centre_dense), axis=1)
    return [program.prepare_block(block, b) for b, block in enumerate(raw)]


def block_values(data):
    """The array of a prepared block's values: its dense array, or its CSC data."""
    X = data.columns.X if hasattr(data, "columns") else data.X
    return X if isinstance(X, np.ndarray) else X[2]


@pytest.mark.parametrize("fmt", ["dense", "csc"])
def test_prepared_blocks_hold_float32_values(fmt):
    """Each program's blocks (the working set's, weighted or not, a fold's, the sampling
    schedules', centred or not) keep float32 values, and the columns a push sends too; their
    size is about half the float64 blocks'."""
    X, y = well_conditioned(n=400, p=60, seed=8)
    X = sparse_design(X) if fmt == "csc" else X
    y_centred = y - y.mean()
    widths = block_edges(X.shape[1], 2)
    widths = np.diff(widths)
    weights = np.arange(len(y)) % 3 + 1.0
    rows = np.arange(0, len(y), 2)

    def programs(dtype):
        sparse = fmt == "csc"
        return [
            (ElasticNetProgram(widths, y_centred=y_centred, alpha=0.1, l1_ratio=1.0,
                               positive=False, gap_tolerance=0.0, sparse=sparse,
                               dtype=dtype), None, False),
            (ElasticNetProgram(widths, y_centred=y_centred, alpha=0.1, l1_ratio=1.0,
                               positive=False, gap_tolerance=0.0, sparse=sparse,
                               sample_weight=weights, dtype=dtype), None, False),
            (ElasticNetPathProgram(widths, y_centred=y_centred[rows], alphas=[0.1], l1_ratio=1.0,
                                   positive=False, gap_tolerance=0.0, stage_rounds=10,
                                   rows=rows, sparse=sparse, dtype=dtype), None, False),
            (LassoProgram(widths, y_centred=y_centred, alpha=0.1, positive=False,
                          gap_tolerance=0.0, sparse=sparse, dtype=dtype),
             X.mean(axis=0), True),
        ]

    for (wide, means, centre), (narrow, _, _) in zip(programs(np.float64),
                                                     programs(np.float32)):
        assert any(name.endswith("_float32") for name in narrow.kernels)
        assert not any(name.endswith("_float32") for name in wide.kernels)
        blocks = {dtype: prepared_blocks(program, as_format(X.astype(dtype), fmt), y_centred,
                                         means, centre)
                  for dtype, program in ((np.float64, wide), (np.float32, narrow))}
        for block64, block32 in zip(blocks[np.float64], blocks[np.float32]):
            assert block_values(block64).dtype == np.float64
            assert block_values(block32).dtype == np.float32
            ratio = sizeof(block32) / sizeof(block64)
            assert 0.45 < ratio < (0.55 if fmt == "dense" else 0.75), ratio
            if hasattr(block32, "columns") and type(block32.columns).__name__ == "Columns":
                assert block_values(block32.columns.take([0, 2])).dtype == np.float32


def held_blocks(n_features):
    """On a worker: the dtype and Dask size of the values of every prepared block of a fit of
    ``n_features`` features it holds."""
    found = []
    for cell in list(cells._CELLS.values()):
        if sum(getattr(cell.program, "widths", [])) == n_features:
            found.append((str(block_values(cell.data).dtype), sizeof(cell.data)))
    return found


def released(client, n_features, timeout=30.0):
    """Wait until no worker holds a block of a fit of ``n_features`` features."""
    deadline = time.monotonic() + timeout
    while any(client.run(held_blocks, n_features).values()):
        assert time.monotonic() < deadline, "the blocks of an earlier fit are still held"
        time.sleep(0.1)


@pytest.mark.cluster
@pytest.mark.parametrize("schedule", ["working_set", "priority"])
def test_blocks_on_the_workers_hold_float32(client_factory, schedule):
    """Two worker processes: during the fit, each holds its block with float32 values, half the
    bytes of the float64 fit's block; the two fits give the same support."""
    client = client_factory(2)
    X, y = well_conditioned(n=2000, p=301, seed=9)
    seen = {}
    coefs = {}

    def watching(dtype):
        def watch(record):  # (one argument: a callback of two is also given the running fit)
            if dtype not in seen:
                seen[dtype] = client.run(held_blocks, X.shape[1])
        return watch

    for dtype in (np.float64, np.float32):
        est = dask_strads.Lasso(alpha=0.05, n_blocks=2, schedule=schedule, tol=1e-8,
                                max_iter=2000, callback=watching(dtype))
        est.client = client
        coefs[dtype] = fitted(est, X.astype(dtype), y).coef_
        del est  # a fitted estimator keeps its blocks on the workers (through a cycle)
        gc.collect()
        released(client, X.shape[1])
    for dtype, name in ((np.float64, "float64"), (np.float32, "float32")):
        held = [block for blocks in seen[dtype].values() for block in blocks]
        assert len(seen[dtype]) == 2 and len(held) == 2, seen[dtype]
        assert all(block[0] == name for block in held), held
    wide = sum(size for blocks in seen[np.float64].values() for _, size in blocks)
    narrow = sum(size for blocks in seen[np.float32].values() for _, size in blocks)
    assert 0.48 < narrow / wide < 0.52, (narrow, wide)
    np.testing.assert_array_equal(coefs[np.float32] != 0, coefs[np.float64] != 0)
