"""Curation constants (seed 000 / DESIGN.md §5, §7) with their defaults.

Each can be overridden in Django settings under the name ``CURATION_<NAME>``; services read them
through :func:`curation_setting` at call time, so tests change them with the ``settings`` fixture.
"""

from decimal import Decimal

from django.conf import settings

DEFAULTS = {
    # Per-author flag rate: alert when the rate is above this over at least MIN reviews.
    "FLAG_RATE_THRESHOLD": Decimal("0.25"),
    "FLAG_RATE_MIN_REVIEWS": 20,
    "FLAG_RATE_WINDOW_DAYS": 28,
    # Gold-set source balance target (percent) and the drift that raises a warning (points).
    "SOURCE_TARGETS": {"public_rfp": 40, "customer_permissioned": 30, "synthetic": 30},
    "SOURCE_DRIFT_POINTS": 10,
    # Working slice drawn per quarter.
    "WORKING_SLICE_SIZE": 120,
    # TRIAGE weekly spot-check share.
    "SPOT_CHECK_RATE": Decimal("0.10"),
    # Open (unsubmitted) review assignments a reviewer may hold; "next item" returns the oldest
    # open one instead of claiming a new one beyond this, so no reviewer hoards the queue.
    "MAX_OPEN_ASSIGNMENTS": 1,
    # A revision after a discussion is reviewed by reviewers who did not review earlier revisions.
    "FRESH_REVIEWERS_ON_REVISION": True,
}


def curation_setting(name: str):
    return getattr(settings, f"CURATION_{name}", DEFAULTS[name])
