"""A fit's callback, as the engine and the estimators call it: ``callback(record)``, or
``callback(record, running)`` when it takes the running fit as well; a true result stops the
fit after the record's round."""
import inspect
from typing import Any, Callable

from ..programs.base import Program


def takes_the_fit(callback: Callable[..., Any] | None) -> bool:
    """Whether ``callback`` is called with the running fit as well as the record
    (``callback(record, run)``)."""
    if callback is None:
        return False
    try:
        inspect.signature(callback).bind(None, None)
    except (TypeError, ValueError):
        return False
    return True


def needs_round_graphs(callback: Callable[..., Any] | None, program: Program) -> bool:
    """Whether a fit of ``program`` watched by ``callback`` needs a graph a round.

    A callback's stop reaches a fused epoch rounds late: a program with carried blocks would
    then find them where a later round left them, not where the epoch's plan (which the engine
    follows) has them at the stop, and a program keeping earlier states may have dropped the
    stop's own. For other programs the callback says so (``round_graphs``), else it needs them
    when it takes the running fit, from which it may read the parameters between rounds."""
    if callback is None:
        return False
    if program.n_carried or not program.updates_in_place:
        return True
    declared = getattr(callback, "round_graphs", None)
    return takes_the_fit(callback) if declared is None else declared


def call_back(callback: Callable[..., Any], record: dict, running: Any) -> Any:
    """``callback``'s answer to ``record`` (given ``running`` too if it takes the fit)."""
    return callback(record, running) if takes_the_fit(callback) else callback(record)
