"""Reads of the audit log for the admins' audit page: filtered (actor, object, verb, date range),
newest first, one keyset page at a time or every matching row as a stream (CSV)."""

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet
from django.utils import timezone

from goldset.selectors.keyset import KeysetPage, keyset_page
from workbench.models import AuditEvent

# Newest first; ``id`` breaks ties, so the key is unique (keyset pagination needs it).
ORDER = ("-created_at", "-id")
CSV_FIELDS = (
    "created_at",
    "actor",
    "verb",
    "object_type",
    "object_id",
    "request_id",
    "detail",
)


@dataclass(frozen=True)
class AuditFilters:
    """What an admin filters the audit log by; empty means "any". ``actor`` is a username,
    ``date_from``/``date_to`` whole days in the installation's time zone, both included."""

    actor: str = ""
    object_type: str = ""
    object_id: str = ""
    verb: str = ""
    date_from: dt.date | None = None
    date_to: dt.date | None = None

    def as_dict(self) -> dict:
        return {
            "actor": self.actor or None,
            "object_type": self.object_type or None,
            "object_id": self.object_id or None,
            "verb": self.verb or None,
            "date_from": self.date_from.isoformat() if self.date_from else None,
            "date_to": self.date_to.isoformat() if self.date_to else None,
        }


def _start_of(day: dt.date) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(day, dt.time.min))


def filter_audit_events(filters: AuditFilters, *, project, installation: bool = False) -> QuerySet:
    """The events of ``project`` (with ``installation``, also the installation-level events:
    sign-ins, projects and members, tokens valid in every project) matching every filter given
    (each on an indexed column: the project first, the actor by id through a subquery on the
    username, the date range as bounds on ``created_at``, never a cast), with their actor
    joined."""
    scope = Q(project=project)
    if installation:
        scope |= Q(project__isnull=True)
    events = AuditEvent.objects.filter(scope).select_related("actor")
    if filters.actor:
        users = get_user_model().objects.filter(username=filters.actor).values("pk")
        events = events.filter(actor_id__in=users)
    if filters.object_type:
        events = events.filter(object_type=filters.object_type)
    if filters.object_id:
        events = events.filter(object_id=filters.object_id)
    if filters.verb:
        events = events.filter(verb=filters.verb)
    if filters.date_from:
        events = events.filter(created_at__gte=_start_of(filters.date_from))
    if filters.date_to:
        events = events.filter(created_at__lt=_start_of(filters.date_to + dt.timedelta(days=1)))
    return events


def audit_page(
    *,
    filters: AuditFilters,
    project,
    installation: bool = False,
    cursor: str | None,
    size: int,
) -> KeysetPage:
    """One page of matching events of ``project`` (and installation-level ones with
    ``installation``), newest first, after ``cursor`` (keyset: one query for the rows and their
    actors whatever the page or log size; Http404 for a malformed cursor)."""
    events = filter_audit_events(filters, project=project, installation=installation)
    page = keyset_page(events, fields=ORDER, cursor=cursor, size=size)
    for event in page.items:
        event.detail_json = detail_json(event.detail)
    return page


def detail_json(detail) -> str:
    """An event's detail as the page and the CSV show it: JSON with sorted keys."""
    return json.dumps(detail, sort_keys=True, ensure_ascii=False) if detail else ""


def iter_audit_rows(
    filters: AuditFilters, *, project, installation: bool = False, chunk_size: int = 2000
) -> Iterator[tuple]:
    """Every matching event (as :func:`filter_audit_events` scopes them) as a
    :data:`CSV_FIELDS` tuple, newest first, read in chunks (a server-side cursor on
    PostgreSQL), so memory stays flat however many rows match."""
    rows = (
        filter_audit_events(filters, project=project, installation=installation)
        .order_by(*ORDER)
        .values_list(
            "created_at", "actor__username", "verb", "object_type", "object_id",
            "request_id", "detail",
        )
    )  # fmt: skip
    yield from rows.iterator(chunk_size=chunk_size)
