"""A stopped clock for tests that check what a page says about an age ("Last heartbeat 12 s
ago"): ``timezone.now()`` returns one instant while the test runs, so the age a page prints
is exactly the one the test set up, however long the rendering takes."""

import datetime as dt

from django.utils import timezone


def stop_the_clock(monkeypatch, at: dt.datetime | None = None) -> dt.datetime:
    """From here on (until the test ends) ``django.utils.timezone.now()`` returns ``at`` (now
    by default); returns that instant. Code reads the clock as ``timezone.now()``."""
    instant = at or timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: instant)
    return instant
