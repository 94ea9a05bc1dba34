"""Early stopping of an LDA fit on the held-out perplexity its sub-rounds report."""
import numpy as np

from ..engine.callbacks import call_back


def held_out_perplexity(records):
    """exp(-log-likelihood / tokens) of the held-out tokens the records (sub-rounds) scored, or
    None when they scored none."""
    tokens = sum(r.get("held_out_tokens", 0) for r in records)
    if not tokens:
        return None
    return float(np.exp(-sum(r.get("held_out_log_likelihood", 0.0) for r in records) / tokens))


class HeldOutStopping:
    """The engine's callback of a fit with validation data: after each iteration (``n_blocks``
    sub-rounds) it computes the held-out perplexity and stops the fit when it has not improved
    on the best for ``n_iter_no_change`` iterations (marking that record ``stopped_early``);
    ``callback`` (the user's, or None) is called on every record as well."""

    def __init__(self, n_blocks, n_iter_no_change, callback=None):
        self.n_blocks = n_blocks
        self.n_iter_no_change = n_iter_no_change
        self.callback = callback
        self.iteration = []
        self.best = np.inf
        self.since_best = 0

    def __call__(self, record, running):
        stop = False
        self.iteration.append(record)
        if (record["round"] + 1) % self.n_blocks == 0:
            perplexity = held_out_perplexity(self.iteration)
            self.iteration = []
            if perplexity is not None and perplexity < self.best:
                self.best, self.since_best = perplexity, 0
            else:
                self.since_best += 1
            stop = self.since_best >= self.n_iter_no_change
            if stop:
                record["stopped_early"] = True
        if self.callback is not None and call_back(self.callback, record, running):
            stop = True
        return stop
