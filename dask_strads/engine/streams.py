"""Round records streamed from a fused epoch as its hub pulls them, so that the client records,
shows and calls back on every round while the epoch runs, not when it ends.

The hub's epoch task logs the rounds' records as Dask events (``Worker.log_event``, on one topic
for every fit): the rounds pulled since its last event, at most one event every
:data:`EVENT_SECONDS`, since every event costs the scheduler a message in and one out whatever
it holds (some 3-6 ms of its CPU on a farm of 64 workers), which short rounds would otherwise
pay each; at once for a stop, the epoch's last round and a checkpoint taken inside the epoch
(a fit that loses a worker goes on from a checkpoint whose record the client has: sent later,
it would be lost with the hub). The client subscribes to the topic
once (``Client.subscribe_topic``) and hands each event to the :class:`RoundStream` of its run.
The records the epoch returns when it ends stay the reference, and fill in any round whose event
did not arrive.
"""
import pickle
import threading
from collections import deque
from functools import partial
from time import perf_counter

from .compat import current_worker

TOPIC = "dask-strads-rounds"

#: client id -> {run id: its stream}: a client's subscription hands events to its runs' streams.
_STREAMS: dict[str, dict[str, "RoundStream"]] = {}
#: The clients subscribed to the topic (for good: a run's events reach only its stream).
_SUBSCRIBED: set[str] = set()
_LOCK = threading.Lock()


#: The hub's epoch task sends the rounds it pulled at most this often (but see :class:`Outbox`).
EVENT_SECONDS = 0.05


class Outbox:
    """The hub's rounds not yet sent to the client, for one epoch."""

    def __init__(self, run_id):
        self.run_id, self.rounds, self.sent = run_id, [], perf_counter()

    def add(self, round_index, report, now=False):
        """Round ``round_index``'s :class:`.tasks.RoundReport`, sent with those before it once
        :data:`EVENT_SECONDS` have passed since the last event, or ``now``."""
        self.rounds.append((round_index, report))
        if now or perf_counter() - self.sent >= EVENT_SECONDS:
            current_worker().log_event(TOPIC, [self.run_id, pickle.dumps(self.rounds)])
            self.rounds, self.sent = [], perf_counter()


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
        stream._received.extend(pickle.loads(payload))
