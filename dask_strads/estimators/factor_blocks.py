"""How the factorization estimators cut a users x items matrix into their programs' blocks, and
read a run's history back as iterations."""
from ..engine.history import plane_totals
from ..partition import block_edges
from ..programs.mf import ITEMS, USERS, make_raw_block, sub_rounds_for
from .inputs import blocks_along


def block_layout(per_user, per_item, width, n_workers):
    """``(sub_rounds, user_edges, item_edges)``: ``c`` (:func:`~dask_strads.programs.mf.
    sub_rounds_for`) and ``c`` blocks a side a worker, of about equal numbers of ratings (a push
    costs O(ratings x k)), from the ratings per user and per item and the width of a row."""
    n_users, n_items = len(per_user), len(per_item)
    c = sub_rounds_for(n_users, n_items, int(per_user.sum()), width, n_workers)
    return (c, block_edges(n_users, c * n_workers, per_user),
            block_edges(n_items, c * n_workers, per_item))


def user_item_blocks(X, user_edges, item_edges):
    """``(raw blocks, slots)``: X's user blocks (rows) then item blocks (columns), and the slots
    that put user block ``b`` and item block ``b`` on one worker (``c`` blocks of a side a worker,
    in runs)."""
    raw = (blocks_along(X, user_edges, _block_maker(USERS), axis=0)
           + blocks_along(X, item_edges, _block_maker(ITEMS), axis=1))
    return raw, list(range(len(user_edges) - 1)) + list(range(len(item_edges) - 1))


def _block_maker(side):
    def make_block(part, lo, hi):
        return make_raw_block(part, side, int(lo))
    return make_block


def per_iteration(history, sub_rounds):
    """One record per iteration, from its closing round (the users' last sub-round; not the
    rounds submitted behind a stop, which change nothing), with the messages of all its
    rounds."""
    rounds = {}
    for r in history.records:
        rounds.setdefault(r["round"] // (2 * sub_rounds), []).append(r)
    history.records[:] = [
        {"round": r["round"], "iteration": r["round"] // (2 * sub_rounds), "time": r["time"],
         "objective": r["objective"], "rmse": r["rmse"],
         "relative_decrease": r["relative_decrease"],
         **plane_totals(rounds[r["round"] // (2 * sub_rounds)])}
        for r in history.records if r.get("side") == USERS and "objective" in r]
    return history
