"""Calls that must return in bounded time: a regression fails the test instead of hanging it."""
import os
import threading

import pytest


def within(seconds, call, *args, **kwargs):
    """``call(*args, **kwargs)`` run in a thread: its result (or the exception it raised, raised
    here), and a test failure if it is still running after ``seconds``."""
    outcome = {}

    def target():
        try:
            outcome["value"] = call(*args, **kwargs)
        except BaseException as error:  # noqa: B036  (SystemExit too: raised in the test)
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{getattr(call, '__name__', call)} still running after {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture
def fifo(tmp_path):
    """``make(name)``: a FIFO in tmp_path. At teardown any reader still blocked opening one is
    released (a writer opens and closes it), so a hung thread ends with the test."""
    made = []

    def make(name):
        path = tmp_path / name
        os.mkfifo(path)
        made.append(path)
        return path

    yield make
    for path in made:
        for _ in range(100):  # one open a blocked reader
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader left
                break
