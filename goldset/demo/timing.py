"""Plausible time on item for the demo's decisions (issue 14). Seeding submits everything within
seconds of the claim, which would make every demo decision "fast"; instead each claim is dated
back by a fixed, reproducible number of seconds, and a few decisions of one annotator are kept
fast so the leads' fast-decision list has something to show."""

import datetime as dt

from django.utils import timezone

from goldset.models import LabelAssignment, ReviewAssignment
from goldset.rules.time_on_item import ItemTiming


def demo_seconds(key: int, *, fast_every: int = 0) -> int:
    """Seconds an item took: 15–104 s by a fixed rule, 2 s for every ``fast_every``-th key."""
    if fast_every and key % fast_every == 0:
        return 2
    return 15 + (key * 7919) % 90


def opened_seconds_ago(assignment: LabelAssignment | ReviewAssignment, seconds: int) -> ItemTiming:
    """Date the claim back by ``seconds`` and report 80 % of them as active time."""
    start = timezone.now() - dt.timedelta(seconds=seconds)
    field = "claimed_at" if isinstance(assignment, LabelAssignment) else "assigned_at"
    type(assignment).objects.filter(pk=assignment.pk).update(**{field: start})
    setattr(assignment, field, start)
    return ItemTiming(opened_at=start, active_ms=seconds * 800)


def adjudication_timing(seconds: int) -> ItemTiming:
    return ItemTiming(
        opened_at=timezone.now() - dt.timedelta(seconds=seconds), active_ms=seconds * 800
    )
