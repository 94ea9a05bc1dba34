"""The watch every test runs under (tests/leaks.py) names what a test leaves running, and
nothing it stopped."""
import subprocess
import sys
import threading

import leaks


def test_a_thread_left_running_is_named_and_one_stopped_is_not(monkeypatch):
    monkeypatch.setattr(leaks, "GRACE_SECONDS", 0.2)
    watch = leaks.Watch()
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="left-behind")
    thread.start()
    try:
        assert watch.leaks() == ["thread 'left-behind'"]
    finally:
        release.set()
        thread.join()
    assert watch.leaks() == []


def test_a_process_left_running_is_named_and_one_stopped_is_not(monkeypatch):
    monkeypatch.setattr(leaks, "GRACE_SECONDS", 0.2)
    watch = leaks.Watch()
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (left,) = watch.leaks()
        assert left.startswith(f"process {process.pid} (") and "time.sleep(60)" in left
    finally:
        process.kill()
        process.wait()
    assert watch.leaks() == []
