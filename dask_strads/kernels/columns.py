"""Column access for dense (Fortran) and CSC blocks, chosen at compile time.

A block is either a 2-D array or a tuple ``(indptr, indices, data)`` of a CSC matrix, of
float64 or float32 values (:func:`kernel_dtype`); every kernel is written once against the
primitives below (numba picks the implementation from the argument's type when it compiles the
caller, and compiles one specialisation per value type). The primitives compute in float64
whatever the values' type: a float32 value meets float64 vectors and factors, which promote it,
and is widened explicitly where it is multiplied by itself (its square in float32 would keep
half the digits, and overflow beyond 1.8e19).
"""
import numpy as np
from numba import njit, types
from numba.extending import overload


def n_columns(X):
    raise NotImplementedError  # numba-only: the overloads below are the implementations


def column_dot(X, j, v):
    raise NotImplementedError


def column_norm2(X, j):
    raise NotImplementedError


def column_axpy(X, j, a, v):
    raise NotImplementedError


def column_scatter(X, j, work):
    raise NotImplementedError


def column_clear(X, j, work):
    raise NotImplementedError


def column_accumulate(X, j, a, v, seen, rows, n_rows):
    raise NotImplementedError


def column_moments(X, j, v):
    raise NotImplementedError


#: Columns a pass over a block handles at a time where it needs an array of them: no array of
#: the block's width.
COLUMN_CHUNK = 2**16


def column_chunks(width):
    """``(start, stop)`` of the ``COLUMN_CHUNK``-column pieces of ``range(width)``."""
    return [(start, min(start + COLUMN_CHUNK, width)) for start in range(0, width, COLUMN_CHUNK)]


def kernel_dtype(dtype):
    """The type of the values a block keeps in the kernels' format: float32 values stay float32
    (half the memory of the data), any other becomes float64."""
    return np.float32 if np.dtype(dtype) == np.float32 else np.float64


def index_type(largest):
    """The type of a CSC block's column pointers or row indices up to ``largest``: int32 where
    it fits (scipy's own type), int64 beyond."""
    return np.int32 if largest <= np.iinfo(np.int32).max else np.int64


def _is_dense(X):
    return isinstance(X, types.Array)


@overload(n_columns)
def _n_columns(X):
    if _is_dense(X):
        return lambda X: X.shape[1]
    return lambda X: X[0].shape[0] - 1


@overload(column_dot)
def _column_dot(X, j, v):
    if _is_dense(X):
        def dense(X, j, v):
            total = 0.0
            for i in range(X.shape[0]):
                total += X[i, j] * v[i]
            return total
        return dense

    def csc(X, j, v):
        indptr, indices, data = X
        total = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            total += data[p] * v[indices[p]]
        return total
    return csc


@overload(column_norm2)
def _column_norm2(X, j):
    if _is_dense(X):
        def dense(X, j):
            norm2 = 0.0
            for i in range(X.shape[0]):
                value = np.float64(X[i, j])
                norm2 += value * value
            return norm2
        return dense

    def csc(X, j):
        indptr, _, data = X
        norm2 = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            value = np.float64(data[p])
            norm2 += value * value
        return norm2
    return csc


@overload(column_axpy)
def _column_axpy(X, j, a, v):
    """v += a * X[:, j]"""
    if _is_dense(X):
        def dense(X, j, a, v):
            for i in range(X.shape[0]):
                v[i] += a * X[i, j]
        return dense

    def csc(X, j, a, v):
        indptr, indices, data = X
        for p in range(indptr[j], indptr[j + 1]):
            v[indices[p]] += a * data[p]
    return csc


@overload(column_scatter)
def _column_scatter(X, j, work):
    """work = X[:, j], for a zeroed ``work`` (only the column's entries are written)."""
    if _is_dense(X):
        def dense(X, j, work):
            for i in range(X.shape[0]):
                work[i] = X[i, j]
        return dense

    def csc(X, j, work):
        indptr, indices, data = X
        for p in range(indptr[j], indptr[j + 1]):
            work[indices[p]] = data[p]
    return csc


@overload(column_clear)
def _column_clear(X, j, work):
    """Zero again what column_scatter wrote."""
    if _is_dense(X):
        def dense(X, j, work):
            for i in range(work.shape[0]):
                work[i] = 0.0
        return dense

    def csc(X, j, work):
        indptr, indices, _ = X
        for p in range(indptr[j], indptr[j + 1]):
            work[indices[p]] = 0.0
    return csc


@overload(column_accumulate)
def _column_accumulate(X, j, a, v, seen, rows, n_rows):
    """v += a * X[:, j], listing in rows[:n_rows] (and marking in seen) the rows it touched;
    returns the new n_rows."""
    if _is_dense(X):
        def dense(X, j, a, v, seen, rows, n_rows):
            for i in range(X.shape[0]):
                v[i] += a * X[i, j]
                if not seen[i]:
                    seen[i] = True
                    rows[n_rows] = i
                    n_rows += 1
            return n_rows
        return dense

    def csc(X, j, a, v, seen, rows, n_rows):
        indptr, indices, data = X
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            v[i] += a * data[p]
            if not seen[i]:
                seen[i] = True
                rows[n_rows] = i
                n_rows += 1
        return n_rows
    return csc


@overload(column_moments)
def _column_moments(X, j, v):
    """``(sum, squared norm, dot with v, rows strictly increasing)`` of column j, in one pass:
    a CSC column whose row indices do not increase may repeat one (then its norm is wrong)."""
    if _is_dense(X):
        def dense(X, j, v):
            total, norm2, product = 0.0, 0.0, 0.0
            for i in range(X.shape[0]):
                value = np.float64(X[i, j])
                total += value
                norm2 += value * value
                product += value * v[i]
            return total, norm2, product, True
        return dense

    def csc(X, j, v):
        indptr, indices, data = X
        total, norm2, product = 0.0, 0.0, 0.0
        increasing = True
        previous = -1
        for p in range(indptr[j], indptr[j + 1]):
            value = np.float64(data[p])
            total += value
            norm2 += value * value
            product += value * v[indices[p]]
            increasing &= indices[p] > previous
            previous = indices[p]
        return total, norm2, product, increasing
    return csc


@njit(cache=True, nogil=True, fastmath=True)
def column_stats(X, v):
    """Every column's sum, squared norm and dot product with ``v``, from one pass over X, and
    whether each column's row indices increase strictly (no repeated entry in a CSC block)."""
    p = n_columns(X)
    sums, norms2, products = np.empty(p), np.empty(p), np.empty(p)
    canonical = True
    for j in range(p):
        sums[j], norms2[j], products[j], increasing = column_moments(X, j, v)
        canonical &= increasing
    return sums, norms2, products, canonical


@njit(cache=True, nogil=True, fastmath=True)
def column_norms(X, zeros, with_sums):
    """Every column's squared norm, and its sum when ``with_sums`` (else an empty array), from
    one pass over X, and whether each column's row indices increase strictly: what the working
    set keeps of a block, without the arrays :func:`column_stats` would add for a moment.
    ``zeros``: a zero vector of X's rows."""
    p = n_columns(X)
    sums, norms2 = np.empty(p if with_sums else 0), np.empty(p)
    canonical = True
    for j in range(p):
        total, norms2[j], _, increasing = column_moments(X, j, zeros)
        if with_sums:
            sums[j] = total
        canonical &= increasing
    return sums, norms2, canonical


def all_bits(n):
    """A mask of ``n`` features, all set: bit ``j % 8`` of byte ``j // 8`` (numpy's
    ``bitorder="little"``), the bits past ``n`` set too (nothing reads them)."""
    return np.full((n + 7) // 8, 0xFF, dtype=np.uint8)


def unpacked_bits(bits, n):
    """A bit mask of ``n`` features as bools."""
    return np.unpackbits(bits, count=n, bitorder="little").astype(np.bool_)


@njit(cache=True, nogil=True, inline="always")
def bit_is_set(bits, j):
    return (bits[j >> 3] >> (j & 7)) & 1 == 1


@njit(cache=True, nogil=True, inline="always")
def clear_bit(bits, j):
    bits[j >> 3] &= np.uint8(0xFF ^ (1 << (j & 7)))


@njit(cache=True, nogil=True)
def count_bits(bits, n):
    """The set bits among the first ``n`` of a mask, counted without unpacking it."""
    count = 0
    full = n >> 3
    for i in range(full):
        byte = int(bits[i])
        while byte:
            byte &= byte - 1
            count += 1
    for j in range(8 * full, n):
        count += bit_is_set(bits, j)
    return count


#: The bounds are raised by this fraction: the norms they bound are sums rounded in some order.
ROUNDING_MARGIN = 1e-9
#: Bounds a byte can name: code 0 for 0, codes 1 .. 255 for bounds from the least positive
#: value to the largest.
BOUND_CODES = 256


@njit(cache=True, nogil=True)
def upper_bound_codes(values):
    """``(codes, table)`` of non-negative float64 ``values``: a byte a value with
    ``table[codes[j]] >= values[j]`` (what a safe test against an upper bound needs), 0 only
    for 0. The bit patterns of positive floats grow with their values, about as their
    logarithms: the table's bounds are patterns evenly spaced from the least positive value's
    to past the largest's, and a value's code the first at or above its own, found with integer
    arithmetic only. A bound exceeds its value by a factor of at most ``1 + (log2(largest /
    least) + 1) / 254`` (1.06 for values that span 10⁴), and by ``ROUNDING_MARGIN``."""
    patterns = values.view(np.int64)
    least, largest = np.iinfo(np.int64).max, 0
    for j in range(values.shape[0]):
        if values[j] > 0.0:
            least = min(least, patterns[j])
            largest = max(largest, patterns[j])
    codes = np.zeros(values.shape[0], dtype=np.uint8)
    table = np.zeros(BOUND_CODES)
    if largest == 0:
        return codes, table
    step = max(1, -(-(largest - least) // (BOUND_CODES - 2)))  # codes 1 .. 255 reach largest
    bounds = table.view(np.int64)
    for k in range(1, BOUND_CODES):
        bounds[k] = least + (k - 1) * step
    for j in range(values.shape[0]):
        if values[j] > 0.0:
            codes[j] = 1 + (patterns[j] - least + step - 1) // step
    table *= 1.0 + ROUNDING_MARGIN
    return codes, table


@njit(cache=True, nogil=True, fastmath=True)
def centred_norms(X, col_sums, col_means):
    """Every column's squared norm, centred by ``col_means`` (``col_sums``: the raw sums, the
    means' times the rows) where these are not empty."""
    centred = col_means.shape[0] > 0
    norms2 = np.empty(n_columns(X))
    for j in range(norms2.shape[0]):
        norms2[j] = column_norm2(X, j)
        if centred:
            norms2[j] = max(norms2[j] - col_sums[j] * col_means[j], 0.0)
    return norms2


@njit(cache=True, nogil=True)
def add_columns(X, coef, out):
    """out += X @ coef, skipping zero coefficients."""
    for j in range(n_columns(X)):
        if coef[j] != 0.0:
            column_axpy(X, j, coef[j], out)
    return out
