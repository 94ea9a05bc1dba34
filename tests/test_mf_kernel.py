"""The row-wise coordinate-descent kernel against plain numpy: one sweep, and the ridge solution."""
import numpy as np
import pytest
import scipy.sparse as sp

from dask_strads.kernels.mf import _update_rows, update_rows
from dask_strads.kernels.row_pieces import RowsOf


def problem(n_rows=30, n_cols=20, d=5, density=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_cols, density=density, format="csr", random_state=seed,
                  data_rvs=rng.standard_normal)
    X.data[X.indptr[3]:X.indptr[4]] = 0.0
    X.eliminate_zeros()  # row 3 has no entry
    F = rng.standard_normal((n_rows, d))
    G = rng.standard_normal((n_cols, d))
    return X, F, G


def kernel(X, F, G, coords, lam, sweeps, tol=0.0, pieces=None):
    F = F.copy()
    loss = update_rows(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, F,
                       G if pieces is None else pieces,
                       np.asarray(coords, dtype=np.int64), np.asarray(lam, dtype=np.float64),
                       sweeps, tol)
    return F, loss


def numpy_sweeps(X, F, G, coords, lam, sweeps):
    """The same coordinate updates written directly from the formula, row by row."""
    F = F.copy()
    for i in range(X.shape[0]):
        cols, values = X.indices[X.indptr[i]:X.indptr[i + 1]], X.data[X.indptr[i]:X.indptr[i + 1]]
        Gi = G[cols]
        for _ in range(sweeps):
            for c in coords:
                others = values - Gi @ F[i] + Gi[:, c] * F[i, c]
                denominator = Gi[:, c] @ Gi[:, c] + lam[c]
                F[i, c] = others @ Gi[:, c] / denominator if denominator > 0 else 0.0
    return F


def squared_error(X, F, G):
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    return float(np.sum((X.data - np.einsum("ij,ij->i", F[rows], G[X.indices])) ** 2))


@pytest.mark.parametrize("sweeps", [1, 3])
def test_sweeps_match_numpy_and_loss_is_the_squared_error(sweeps):
    X, F, G = problem()
    coords, lam = [0, 1, 2, 4], np.array([0.5, 0.5, 0.5, 0.0, 2.0])
    ours, loss = kernel(X, F, G, coords, lam, sweeps)
    np.testing.assert_allclose(ours, numpy_sweeps(X, F, G, coords, lam, sweeps), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_array_equal(ours[:, 3], F[:, 3])  # not in coords: untouched
    assert loss == pytest.approx(squared_error(X, ours, G), rel=1e-12)


def test_many_sweeps_reach_each_rows_ridge_solution():
    X, F, G = problem(d=4)
    coords, lam = [0, 1, 2], np.array([0.3, 1.0, 0.0, 0.0])  # coordinate 3 held fixed
    ours, _ = kernel(X, F, G, coords, lam, sweeps=500, tol=1e-14)
    for i in range(X.shape[0]):
        cols, values = X.indices[X.indptr[i]:X.indptr[i + 1]], X.data[X.indptr[i]:X.indptr[i + 1]]
        A = G[cols][:, coords]
        target = values - G[cols, 3] * F[i, 3]
        solution = np.linalg.lstsq(np.vstack([A, np.diag(np.sqrt(lam[coords]))]),
                                   np.concatenate([target, np.zeros(len(coords))]), rcond=None)[0]
        if len(cols) == 0:
            solution = np.zeros(len(coords))  # lam[2] = 0: the kernel's choice among minimisers
        np.testing.assert_allclose(ours[i, coords], solution, atol=1e-9)


def test_every_update_lowers_the_objective():
    X, F, G = problem(seed=3)
    coords, lam = [0, 1, 2, 3, 4], np.full(5, 0.7)

    def objective(F):
        return squared_error(X, F, G) + float(np.sum(F**2 * lam))

    values = [objective(F)]
    for _ in range(5):
        F, _ = kernel(X, F, G, coords, lam, sweeps=1)
        values.append(objective(F))
    assert np.all(np.diff(values) < 0)


def test_tolerance_stops_a_row_after_the_sweep_that_moved_little():
    X, F, G = problem()
    coords, lam = [0, 1, 2, 3, 4], np.full(5, 0.5)
    one_sweep, _ = kernel(X, F, G, coords, lam, sweeps=1)
    stopped, _ = kernel(X, F, G, coords, lam, sweeps=50, tol=np.inf)
    np.testing.assert_array_equal(stopped, one_sweep)


def test_a_row_without_entries_gets_zero_even_without_penalty():
    X, F, G = problem()
    ours, _ = kernel(X, F, G, [0, 1, 2, 3, 4], np.zeros(5), sweeps=1)
    np.testing.assert_array_equal(ours[3], 0.0)


@pytest.mark.parametrize("cuts", [[7], [1, 2, 11, 19], list(range(1, 20))],
                         ids=["2 pieces", "5 uneven pieces", "20 pieces of a row"])
def test_pieces_give_the_one_array_result(cuts):
    """``G`` cut into pieces (as messages arrive): the same rows, the same loss, bit for bit;
    the kernel compiles once for any number of pieces."""
    X, F, G = problem()
    coords, lam = [0, 1, 2, 3, 4], np.full(5, 0.5)
    whole, whole_loss = kernel(X, F, G, coords, lam, 2)
    compiled = len(_update_rows.signatures)
    pieced, pieced_loss = kernel(X, F, G, coords, lam, 2, pieces=np.split(G, cuts))
    np.testing.assert_array_equal(pieced, whole)
    assert pieced_loss == whole_loss
    assert len(_update_rows.signatures) == compiled


def held_elsewhere(rows, rng):
    """``rows`` as a RowsOf: scattered among other rows of a larger array, as a block's rows
    sit in its factor."""
    holder = rng.standard_normal((3 * len(rows) + 2, rows.shape[1]))
    where = rng.choice(len(holder), size=len(rows), replace=False).astype(np.int32)
    holder[where] = rows
    return RowsOf(holder, where)


@pytest.mark.parametrize("cuts", [[], [7], [1, 2, 11, 19]],
                         ids=["one piece", "2 pieces", "5 uneven pieces"])
def test_rows_read_where_they_are_give_the_one_array_result(cuts):
    """Pieces given as rows of a larger array (messages that stay on their worker), alone or
    beside plain arrays (messages that came from another one): the same rows, the same loss,
    bit for bit, one compiled specialisation."""
    X, F, G = problem()
    coords, lam = [0, 1, 2, 3, 4], np.full(5, 0.5)
    whole, whole_loss = kernel(X, F, G, coords, lam, 2)
    compiled = len(_update_rows.signatures)
    rng = np.random.default_rng(1)
    pieces = [held_elsewhere(piece, rng) if k % 2 == 0 else piece
              for k, piece in enumerate(np.split(G, cuts))]
    mapped, mapped_loss = kernel(X, F, G, coords, lam, 2, pieces=pieces)
    np.testing.assert_array_equal(mapped, whole)
    assert mapped_loss == whole_loss
    assert len(_update_rows.signatures) == compiled


def test_rows_of_an_array_leave_their_process_as_those_rows():
    """Pickled (as Dask moves a message to another worker), a RowsOf is the array of its rows,
    gathered then, and Dask counts it at that size."""
    import pickle

    from dask.sizeof import sizeof
    rng = np.random.default_rng(2)
    G = rng.standard_normal((40, 6))
    message = held_elsewhere(G[:9], rng)
    moved = pickle.loads(pickle.dumps(message, protocol=5))
    assert type(moved) is np.ndarray
    np.testing.assert_array_equal(moved, G[:9])
    assert sizeof(message) >= G[:9].nbytes
    assert sizeof(message) < message.array.nbytes
