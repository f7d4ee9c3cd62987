"""Time on item (issue 14): the stored timing of a label, review or adjudication and the
fast-decision flag, in one place for the three services that record decisions.

Rules (what is trusted, caps, thresholds) are in :mod:`goldset.rules.time_on_item`; this module
only applies them when a decision is stored, inside the caller's transaction, and stores the
dashboard's per-person figures when the agreement recompute runs."""

import datetime as dt

from django.db import transaction
from django.utils import timezone

from goldset.models import DecisionKind, FastDecision, TimeOnItemFigure
from goldset.rules.time_on_item import (
    NO_TIMING,
    ItemTiming,
    decision_ms,
    fast_threshold_ms,
    is_fast,
    measure,
    start_of,
)
from goldset.selectors.time_on_item import stale_time_figures, timed_figures


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


def flag_if_fast(*, project, decision, kind: DecisionKind, annotator_id: int, tier: str):
    """Record a FastDecision of the project when ``decision`` (a stored Label, Review or
    Adjudication of the project) was faster than its tier's threshold (the project's setting);
    returns it, or None."""
    if not is_fast(
        tier=tier, server_ms=decision.server_ms, active_ms=decision.active_ms, project=project
    ):
        return None
    return FastDecision.objects.create(
        project=project,
        kind=kind,
        **{kind.value: decision},
        annotator_id=annotator_id,
        tier=tier,
        decision_ms=decision_ms(decision.server_ms, decision.active_ms),
        threshold_ms=fast_threshold_ms(tier, project=project),
    )


def refresh_time_on_item_figures() -> int:
    """Recompute and store the time-on-item figures of every (project, kind, person) whose
    ``time_changes`` counter moved since they were stored (the agreement recompute calls this;
    idempotent: nothing stale, nothing read). Each figure comes from that person's timed
    decisions in that project only, so a label recomputes one row, never every decision. The
    counter is read before the decisions: a decision committed in between may be counted in the
    figures and still leave them marked stale, never the other way round. Returns the rows
    refreshed."""
    stale = stale_time_figures()
    if not stale:
        return 0
    wanted: dict[tuple[int, str], set[int]] = {}
    for project_id, kind, user in stale:
        wanted.setdefault((project_id, kind), set()).add(user)
    computed = {
        (project_id, kind, user): figures
        for (project_id, kind), users in wanted.items()
        for user, figures in timed_figures(DecisionKind(kind), users, project=project_id).items()
    }
    with transaction.atomic():
        for (project_id, kind, user), changes in stale.items():
            n, median, p90 = computed.get((project_id, kind, user), (0, None, None))
            TimeOnItemFigure.objects.update_or_create(
                project_id=project_id,
                kind=kind,
                user_id=user,
                defaults={"n": n, "median_ms": median, "p90_ms": p90, "changes_seen": changes},
            )
    return len(stale)
