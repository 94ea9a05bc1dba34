"""Cutting items (features, documents, words, users) into contiguous blocks."""
import numpy as np


def block_edges(n_features, n_blocks, weights=None):
    """Edges of ``n_blocks`` contiguous blocks of ``n_features`` items: of about equal size, or
    of about equal total ``weights`` (e.g. tokens per document) when given."""
    n_blocks = max(1, min(n_blocks, n_features))
    if weights is None or np.sum(weights) <= 0:
        return np.linspace(0, n_features, n_blocks + 1).astype(int)
    cumulative = np.cumsum(weights, dtype=np.float64)
    edges = [0]
    for j in range(1, n_blocks):
        target = cumulative[-1] * j / n_blocks
        last = int(np.searchsorted(cumulative, target))  # the item that reaches the target
        if last > 0 and target - cumulative[last - 1] < cumulative[last] - target:
            last -= 1  # the cut nearer the target
        # every block keeps at least one item
        edges.append(min(max(last + 1, edges[-1] + 1), n_features - (n_blocks - j)))
    return np.array(edges + [n_features])
