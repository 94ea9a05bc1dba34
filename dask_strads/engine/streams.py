"""Round records streamed from a fused epoch as its hub pulls them, so that the client records,
shows and calls back on every round while the epoch runs, not when it ends.

The hub's epoch task logs each round's record as a Dask event (``Worker.log_event``, on one topic
for every fit); the client subscribes to that topic once (``Client.subscribe_topic``) and hands
each event to the :class:`RoundStream` of its run. An event is a small message (the run's id and
the pickled record), a fraction of a round graph's cost to the scheduler; the records the epoch
returns when it ends stay the reference, and fill in any round whose event did not arrive.
"""
import pickle
import threading
from collections import deque
from functools import partial

from .compat import current_worker

TOPIC = "dask-strads-rounds"

#: client id -> {run id: its stream}: a client's subscription hands events to its runs' streams.
_STREAMS: dict[str, dict[str, "RoundStream"]] = {}
#: The clients subscribed to the topic (for good: a run's events reach only its stream).
_SUBSCRIBED: set[str] = set()
_LOCK = threading.Lock()


def post_round(run_id, round_index, report):
    """From the hub's epoch task: round ``round_index``'s :class:`.tasks.RoundReport`."""
    current_worker().log_event(TOPIC, [run_id, pickle.dumps((round_index, report))])


class RoundStream:
    """The round reports of run ``run_id`` that reached ``client``, oldest first."""

    def __init__(self, client, run_id):
        self.client_id, self.run_id = client.id, run_id
        self._received: deque[tuple[int, object]] = deque()
        with _LOCK:
            _STREAMS.setdefault(client.id, {})[run_id] = self
            if client.id not in _SUBSCRIBED:
                _SUBSCRIBED.add(client.id)
                client.subscribe_topic(TOPIC, partial(_deliver, client.id))

    def take(self):
        """``[(round, RoundReport)]`` received since the last take."""
        taken = []
        while self._received:
            taken.append(self._received.popleft())
        return taken

    def close(self):
        with _LOCK:
            runs = _STREAMS.get(self.client_id, {})
            runs.pop(self.run_id, None)
            if not runs:
                _STREAMS.pop(self.client_id, None)


def _deliver(client_id, event):
    _, (run_id, payload) = event
    stream = _STREAMS.get(client_id, {}).get(run_id)
    if stream is not None:
        stream._received.append(pickle.loads(payload))
