"""Waiting on a condition, not a clock: tests poll what they expect and fail with what they
were waiting for."""

import threading
import time


def wait_until(predicate, *, timeout: float, what):
    """Return as soon as ``predicate()`` is true (checked every 50 ms); fail after ``timeout``
    seconds naming ``what`` (a string, or a callable giving one at that moment)."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what() if callable(what) else what}"
            )
        pause.wait(0.05)
