"""Time on item (issue 14): the stored timing of a label, review or adjudication and the
fast-decision flag, in one place for the three services that record decisions.

Rules (what is trusted, caps, thresholds) are in :mod:`goldset.rules.time_on_item`; this module
only applies them when a decision is stored, inside the caller's transaction."""

import datetime as dt

from django.utils import timezone

from goldset.models import DecisionKind, FastDecision
from goldset.rules.time_on_item import (
    NO_TIMING,
    ItemTiming,
    decision_ms,
    fast_threshold_ms,
    is_fast,
    measure,
    start_of,
)


def timing_fields(*, claimed_at: dt.datetime | None, timing: ItemTiming | None) -> dict:
    """``{"server_ms", "active_ms"}`` for a decision submitted now, whose item was claimed at
    ``claimed_at`` (None: not claimed, e.g. adjudication) and opened as ``timing`` says."""
    timing = timing or NO_TIMING
    server_ms, active_ms = measure(
        started_at=start_of(claimed_at, timing.opened_at),
        now=timezone.now(),
        active_ms=timing.active_ms,
    )
    return {"server_ms": server_ms, "active_ms": active_ms}


def flag_if_fast(*, decision, kind: DecisionKind, annotator_id: int, tier: str):
    """Record a FastDecision when ``decision`` (a stored Label, Review or Adjudication) was
    faster than its tier's threshold; returns it, or None."""
    if not is_fast(tier=tier, server_ms=decision.server_ms, active_ms=decision.active_ms):
        return None
    return FastDecision.objects.create(
        kind=kind,
        **{kind.value: decision},
        annotator_id=annotator_id,
        tier=tier,
        decision_ms=decision_ms(decision.server_ms, decision.active_ms),
        threshold_ms=fast_threshold_ms(tier),
    )
