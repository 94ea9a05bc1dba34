"""What the factorization estimators share to answer by ids: top items per user, the most similar
rows by cosine similarity, and the rows of a table of triplets over the fitted items."""
import uuid

import dask
import numpy as np
import scipy.sparse as sp

from ..ratings import RatingsMatrix
from .inputs import check_positive_int, is_dask_array, to_scipy_if_pydata
from .mf_pairs import ids_of, known_positions

#: Rows of scores built at a time, at most.
RANKING_ROWS = 1024
#: Users whose best items a task of a streamed ranking holds at most (see
#: :func:`user_partition_waves`): its running best is what a worker holds beyond its factors,
#: whatever users it holds.
USERS_PER_PARTITION = 25_000
#: An item block is scored a piece of at most 1 / ITEM_PIECES of its items at a time, each
#: user's scores of a piece built a few users at a time, taking at most 1 / ITEM_PIECES of the
#: block's bytes: both scale with the block...
ITEM_PIECES = 8
#: ... or take up to these bytes, where that is more: small blocks are scored whole, many users
#: at a time.
SCORE_FLOOR_BYTES = 1 << 20


def best(scores, n):
    """Columns of the ``n`` highest scores of each row, best first, ties to the lower column (as
    a stable sort of the whole row ranks them); -1 for -inf ones. ``scores`` is negated in place
    while ranked, then restored: no copy of it is made."""
    kept = min(n, scores.shape[1])
    np.negative(scores, out=scores)
    top = np.argpartition(scores, kept - 1, axis=1)[:, :kept]
    np.negative(scores, out=scores)
    top = _lowest_columns_among_ties(scores, top)
    top.sort(axis=1)
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
    top = np.take_along_axis(top, order, axis=1)
    top[np.take_along_axis(scores, top, axis=1) == -np.inf] = -1
    return top


def _lowest_columns_among_ties(scores, top):
    """``top`` (columns of each row's highest scores, as ``argpartition`` picks them) where a row
    has more columns at the lowest score kept than it picked: those above that score, then the
    lowest-numbered of those at it."""
    top = np.array(top)
    kept = np.take_along_axis(scores, top, axis=1)
    lowest = kept.min(axis=1)
    tied_in_row = np.count_nonzero(scores == lowest[:, None], axis=1)
    tied_kept = np.count_nonzero(kept == lowest[:, None], axis=1)
    for row in np.flatnonzero((tied_in_row > tied_kept) & (lowest > -np.inf)):
        above = np.flatnonzero(scores[row] > lowest[row])
        tied = np.flatnonzero(scores[row] == lowest[row])[:top.shape[1] - len(above)]
        top[row] = np.concatenate([above, tied])
    return top


def allowed_items(item_ids, filter_items=None, items=None):
    """Which items may be recommended, as a boolean mask over ``item_ids`` (None: all): those
    of ``items`` (candidate item ids; None: every item), less those of ``filter_items``. Ids
    not in the fit are refused."""
    if filter_items is None and items is None:
        return None
    allowed = np.zeros(len(item_ids), dtype=bool)
    allowed[known_positions(item_ids, items, "item") if items is not None else slice(None)] = True
    if filter_items is not None:
        allowed[known_positions(item_ids, filter_items, "item")] = False
    return allowed


def top_items(user_rows, item_rows, seen, n, exclude_seen, allowed=None):
    """``(positions, scores)`` of the ``n`` items of highest score ``user_rows @ item_rows.T``
    per user, best first, leaving out the items of ``seen`` (a boolean CSR matrix, users x
    items) when ``exclude_seen`` and those ``allowed`` (a mask, None: all) leaves out;
    position -1 and score NaN where fewer are left."""
    parts = block_best(user_rows, item_rows, seen if exclude_seen else None, 0, n, allowed)
    return merged_best([parts], n)


def block_best(user_rows, item_rows, seen, first, k, allowed=None):
    """``(positions, scores)`` of each user's ``k`` best items of one item block whose first
    item is at ``first`` (positions among all items), the items of ``seen`` (boolean CSR, users
    x all items; None: none) and those ``allowed`` (a mask over all items; None: all) leaves
    out; -1 and -inf where the block has fewer."""
    block = slice(first, first + len(item_rows))
    return merge_block_best(no_best(user_rows, k), user_rows, item_rows,
                            None if seen is None else seen[:, block],
                            None if allowed is None else ~allowed[block], first)


def no_best(user_rows, k):
    """The ``(positions, scores)`` of the users of ``user_rows`` before any item is ranked: -1
    and -inf, ``k`` a user."""
    return (np.full((len(user_rows), k), -1, dtype=np.int64),
            np.full((len(user_rows), k), -np.inf))


def merge_block_best(running, user_rows, item_rows, seen, refused, first):
    """``running`` (``(positions, scores)`` of each user's best items so far, best first, -1
    and -inf where none yet) updated in place with the items of one more item block, whose
    first item is at ``first`` and follows every item merged so far: ties go to the lower
    position, so blocks merged one at a time rank as one block does. The items of ``seen``
    (boolean CSR, users x the block's items; None: none) and those ``refused`` (a mask over
    the block's items; None: none) are left out."""
    top, kept = running
    k = top.shape[1]
    item_rows = np.asarray(item_rows)
    budget = max(item_rows.nbytes // ITEM_PIECES, SCORE_FLOOR_BYTES)
    for items, piece in _aligned_pieces(item_rows):
        piece_seen = None if seen is None else seen[:, items]
        piece_refused = None if refused is None else refused[items]
        step = users_at_a_time(budget, len(piece))
        for lo in range(0, len(user_rows), step):
            users = slice(lo, lo + step)
            found = piece_best(user_rows[users], piece,
                               None if piece_seen is None else piece_seen[users], piece_refused,
                               first + items.start, k)
            top[users], kept[users] = ranked_first([(top[users], kept[users]), found], k)
    return running


def item_blocks(item_rows):
    """``(rows, first item, items)`` per block of item rows, the rows Delayed: the chunks of
    Dask rows, else all of them as one block."""
    if not is_dask_array(item_rows):
        return [(dask.delayed(item_rows), 0, len(item_rows))]
    sizes = item_rows.chunks[0]
    starts = np.cumsum((0,) + sizes[:-1]).tolist()
    return list(zip(item_rows.rechunk({1: -1}).to_delayed().ravel(), starts, sizes))


def user_partition_waves(user_rows):
    """The partitions of at most ``USERS_PER_PARTITION`` users of ``user_rows`` as waves, a list
    of ``(index, rows, users, block)`` per wave: wave k holds the k-th partition of every block
    of Dask rows (in memory, every partition is in the one wave). ``index`` numbers the
    partitions in the order of the users, ``rows`` is Delayed (a block of Dask rows, else the
    partition's own), ``users`` the partition's slice of ``rows`` and ``block`` its slice of all
    the users. Computed a wave at a time, a worker works on one partition of its block at a
    time, and the cluster forgets a wave's tasks, with what they were sent, before the next."""
    if is_dask_array(user_rows):
        chunks = user_rows.rechunk({1: -1}).to_delayed().ravel()
        sizes = list(user_rows.chunks[0])
    else:
        starts = range(0, len(user_rows), USERS_PER_PARTITION)
        sizes = [min(USERS_PER_PARTITION, len(user_rows) - lo) for lo in starts]
        chunks = [dask.delayed(user_rows[lo:lo + size]) for lo, size in zip(starts, sizes)]
    waves: dict[int, list] = {}
    index = first = 0
    for rows, size in zip(chunks, sizes):
        for lo in range(0, size, USERS_PER_PARTITION):
            hi = min(size, lo + USERS_PER_PARTITION)
            waves.setdefault(lo, []).append(
                (index, rows, slice(lo, hi), slice(first + lo, first + hi)))
            index += 1
        first += size
    return list(waves.values())


def streamed_best(user_rows, blocks, seen, n, allowed, chain, users, data):
    """Delayed ``(positions, scores)`` of the ``n`` best items of each user ``users`` of a block
    (Delayed ``user_rows``; ``seen``: their seen items, None: none left out; ``allowed``: as
    :func:`.ranking.allowed_items`), -1 and -inf past the last: a chain of tasks, one per item
    block in their order, each merging its block's best into the running best in place (a
    running best is the next task's input alone), so that a task holds the users' block, one
    item block and the running best.

    The keys are the chain's own (``chain`` names it, with a token of this call, so that calls
    running at once on one client share no key): ``(best-of-<chain>, j)``, the best of the
    first ``j`` item blocks, the first made from the users' block alone so that the chain runs
    where that block is; ``(item-block-for-<chain>, j)``, item block ``j`` handed over as is,
    which the worker of the step copies and lets go of when the step is done (a block's shared
    key would stay copied there until the scheduler's memory manager drops it). A group of
    tasks per chain, not one of every chain's: the scheduler places a group of many tasks with
    few dependencies anywhere, as root tasks, and these must run where their inputs are.
    ``users``: the slice of ``user_rows`` ranked; ``data`` (a :class:`.engine.blocks.DataLayer`)
    takes each step's seen and allowed items into its layer, so that a cluster gets them
    scattered rather than inside the graph."""
    chain = f"{chain}-{uuid.uuid4().hex[:8]}"
    best = dask.delayed(_no_best_of)(user_rows, users, n, dask_key_name=(f"best-of-{chain}", 0))
    for j, (rows, first, size) in enumerate(blocks, start=1):
        block = slice(first, first + size)
        handed = dask.delayed(_handed_over)(rows, dask_key_name=(f"item-block-for-{chain}", j))
        best = dask.delayed(_merged_into)(
            best, user_rows, users, handed, None if seen is None else data(seen[:, block]),
            None if allowed is None else data(~allowed[block]), first,
            dask_key_name=(f"best-of-{chain}", j))
    return best


def _no_best_of(user_rows, users, k):
    """:func:`no_best` of the users ``users`` of ``user_rows``."""
    return no_best(user_rows[users], k)


def _merged_into(running, user_rows, users, item_rows, seen, refused, first):
    """:func:`merge_block_best` for the users ``users`` of ``user_rows``."""
    return merge_block_best(running, user_rows[users], item_rows, seen, refused, first)


def _handed_over(item_rows):
    """``item_rows`` under a key of their own (see :func:`streamed_best`)."""
    return item_rows


def piece_best(user_rows, item_rows, seen, refused, first, k):
    """``(positions, scores)`` of each user's ``min(k, len(item_rows))`` best items among
    ``item_rows``, the first at ``first`` (positions among all items), best first, leaving out
    the items of ``seen`` (boolean CSR, users x these items; None: none) and those ``refused``
    (a mask over these items; None: none); -1 and -inf where fewer are left."""
    scores = np.asarray(user_rows, dtype=np.float64) @ item_rows.T
    if seen is not None:
        rated = seen.tocoo()
        scores[rated.row, rated.col] = -np.inf
    if refused is not None:
        scores[:, refused] = -np.inf
    top = best(scores, k)
    found = top >= 0
    return (np.where(found, top + first, -1),
            np.where(found, np.take_along_axis(scores, np.maximum(top, 0), axis=1), -np.inf))


def _aligned_pieces(item_rows):
    """``(items, rows)`` per piece of ``item_rows`` (``items`` a slice of them), at most
    ``ITEM_PIECES`` of them (fewer for blocks of a few ``SCORE_FLOOR_BYTES``), each aligned: a
    block another worker sent may start where numpy finds its floats misaligned, and would then
    be copied whole for every product; a piece is copied once, when misaligned."""
    pieces = min(ITEM_PIECES, -(-item_rows.nbytes // SCORE_FLOOR_BYTES))
    size = max(1, -(-len(item_rows) // max(1, pieces)))
    for lo in range(0, len(item_rows), size):
        items = slice(lo, lo + size)
        yield items, np.require(item_rows[items], requirements="A")


def users_at_a_time(budget, n_items):
    """How many users' scores of ``n_items`` items to build at once: ``RANKING_ROWS``, fewer
    when they would take more than ``budget`` bytes (at least one user's)."""
    return max(1, min(RANKING_ROWS, budget // (8 * max(1, n_items))))


def ranked_first(parts, k):
    """``(positions, scores)``: the ``k`` best of the ``(positions, scores)`` of item blocks
    given in the order of the blocks (ties go to the earlier block), best first; -1 and -inf
    past the last."""
    positions = np.hstack([p for p, _ in parts])
    scores = np.hstack([s for _, s in parts])
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    top = np.take_along_axis(positions, order, axis=1)
    kept = np.take_along_axis(scores, order, axis=1)
    top[kept == -np.inf] = -1
    return top, kept


def merged_best(parts, k):
    """``(positions, scores)``: the ``k`` best of the ``(positions, scores)`` of every item
    block, best first; -1 and NaN past the last."""
    top, kept = ranked_first(parts, k)
    return top, np.where(kept == -np.inf, np.nan, kept)


def most_similar(vectors, at, n):
    """Rows of ``vectors`` of highest cosine similarity with each row ``at``, itself left out
    (n columns, -1 beyond the rows there are)."""
    norms = np.linalg.norm(vectors, axis=1)
    unit = vectors / np.where(norms > 0, norms, 1.0)[:, None]
    top = np.full((len(at), n), -1, dtype=np.int64)
    step = users_at_a_time(max(unit.nbytes // ITEM_PIECES, SCORE_FLOOR_BYTES),
                           len(unit))
    for lo in range(0, len(at), step):
        chunk = at[lo:lo + step]
        scores = unit[chunk] @ unit.T
        scores[np.arange(len(chunk)), chunk] = -np.inf
        top[lo:lo + len(chunk), :min(n, len(vectors))] = best(scores, n)
    return top


def similar_ids(known_ids, vectors, ids, n, kind):
    """The ``n`` ids (of ``known_ids``, whose rows are ``vectors``) most similar to each of
    ``ids``, most similar first, the id itself left out; -1 (None for ids that are not numbers)
    where fewer are left."""
    check_positive_int(n, "n")
    return ids_of(known_ids, most_similar(vectors, known_positions(known_ids, ids, kind), n))


def pattern(indptr, indices, n_columns):
    """The stored entries of a CSR layout as a boolean CSR matrix."""
    return sp.csr_matrix((np.ones(len(indices), dtype=bool), indices, indptr),
                         shape=(len(indptr) - 1, n_columns))


def triplet_rows(triplets, item_ids, rows="user", columns="item"):
    """``(user_ids, matrix)``: the users of a table of ``user``, ``item``, ``rating`` triplets
    (sorted) and their ratings as a CSR matrix over the fitted items ``item_ids``; ratings of
    unknown items are refused. With ``rows="item", columns="user"``, the same for the items
    of the triplets over fitted users ``item_ids``."""
    known = known_positions(item_ids, triplets[columns].to_numpy(), columns)
    ratings = RatingsMatrix.from_triplets(triplets[rows].to_numpy(), item_ids[known],
                                          triplets["rating"].to_numpy())
    matrix = sp.csr_matrix((ratings.matrix.data, item_ids.searchsorted(
        ratings.item_ids)[ratings.matrix.indices], ratings.matrix.indptr),
        shape=(len(ratings.user_ids), len(item_ids)))
    return ratings.user_ids, matrix


def seen_pattern(X, entries, executor):
    """The entries of X that ``entries(chunk)`` picks (``(indptr, indices)`` of a CSR layout of
    a chunk in scipy or numpy form) as a boolean CSR matrix; for a dask X, computed chunk row by
    chunk row on ``executor``."""
    if not is_dask_array(X):
        return pattern(*entries(X), X.shape[1])
    rows = X.rechunk({1: -1}).to_delayed(optimize_graph=False).ravel()
    return sp.vstack(executor.compute(*[dask.delayed(_chunk_pattern)(r, entries) for r in rows]),
                     format="csr")


def _chunk_pattern(chunk, entries):
    chunk = to_scipy_if_pydata(chunk)
    return pattern(*entries(chunk), chunk.shape[1])
