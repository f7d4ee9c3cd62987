"""Reads of time on item (issue 14): per-annotator active-time figures for the lead's dashboard
and the list of suspiciously fast decisions.

The dashboard never aggregates decisions per request (issue 17): the agreement recompute stores
each person's figures (:func:`timed_figures`, via ``services.time_on_item``) and the page reads
those rows and the maintained counters."""

import math
from collections import defaultdict
from dataclasses import dataclass

from django.db import connection
from django.db.models import Aggregate, Count, FloatField
from django.urls import reverse

from goldset.models import (
    Adjudication,
    DecisionKind,
    FastDecision,
    Label,
    PairJudgment,
    Project,
    ProjectMembership,
    Review,
    TimeOnItemFigure,
)
from goldset.rules.labeling import LEAD_VISIBLE
from goldset.selectors.agreement import display_names
from goldset.selectors.curation import counter_rows
from goldset.selectors.keyset import KeysetPage, keyset_page

# Each kind of decision: its model, the field naming who decided, and the path to its project.
_SOURCES = {
    DecisionKind.LABEL: (Label, "annotator_id", "record__project"),
    DecisionKind.REVIEW: (Review, "reviewer_id", "revision__triple__project"),
    DecisionKind.ADJUDICATION: (Adjudication, "lead_id", "record__project"),
    DecisionKind.PAIR_JUDGMENT: (PairJudgment, "reviewer_id", "pair__project"),
}


class _PercentileCont(Aggregate):
    """PostgreSQL's ``percentile_cont(p) WITHIN GROUP (ORDER BY x)``."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(%(percentile)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def percentile(values: list[int], p: float) -> float | None:
    """Linear-interpolation percentile of sorted ``values`` (what percentile_cont computes)."""
    if not values:
        return None
    rank = p * (len(values) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return values[low] + (values[high] - values[low]) * (rank - low)


@dataclass(frozen=True)
class TimeRow:
    user_id: int
    name: str
    kind: str
    kind_label: str
    n: int  # decisions with an active time
    median_s: float | None
    p90_s: float | None
    fast: int  # flagged fast decisions
    stale: bool = False  # the stored figures miss a change (the next recompute brings it)


def timed_figures(
    kind: DecisionKind, users, *, project
) -> dict[int, tuple[int, float | None, float | None]]:
    """{user: (n, median ms, p90 ms)} of the active time of ``kind`` decisions by ``users`` in
    ``project`` (a project or its id; one query over those people's decisions, by the index on
    who decided). Nobody in ``users`` without a timed decision there is left out."""
    model, who, in_project = _SOURCES[kind]
    rows = model.objects.filter(
        active_ms__isnull=False,
        **{f"{who}__in": list(users), f"{in_project}_id": getattr(project, "pk", project)},
    )
    if connection.vendor == "postgresql":
        return {
            row[who]: (row["n"], row["median"], row["p90"])
            for row in rows.values(who)
            .order_by()
            .annotate(
                n=Count("id"),
                median=_PercentileCont("active_ms", percentile=0.5),
                p90=_PercentileCont("active_ms", percentile=0.9),
            )
        }
    values = defaultdict(list)
    for user_id, ms in rows.order_by(who, "active_ms").values_list(who, "active_ms"):
        values[user_id].append(ms)
    return {
        user_id: (len(ms), percentile(ms, 0.5), percentile(ms, 0.9))
        for user_id, ms in values.items()
    }


def _counter_pairs(name: str, *, project) -> dict[tuple[str, int], int]:
    """A project's ``kind|user`` (``time_changes``) or ``user|kind`` (``fast``) counter as
    {(kind, user): n}, zero rows left out."""
    out = {}
    for key, n in counter_rows(name, project=project)[name]:
        first, _, second = key.partition("|")
        kind, user = (first, second) if name == "time_changes" else (second, first)
        out[(kind, int(user))] = n
    return out


def stale_time_figures() -> dict[tuple[int, str, int], int]:
    """{(project id, kind, user): changes counter} of every stored figure, in any project, that
    misses a change (or was never computed): three reads, bounded by projects × people × kinds,
    never by decisions."""
    projects = set(Project.objects.values_list("pk", flat=True))  # a deleted one's keys stay
    changes = {}
    for key, n in counter_rows("time_changes", project=None)["time_changes"]:
        project_id, kind, user = key.split("|")
        if int(project_id) in projects:
            changes[(int(project_id), kind, int(user))] = n
    seen = {
        (project_id, kind, user): n
        for project_id, kind, user, n in TimeOnItemFigure.objects.values_list(
            "project_id", "kind", "user_id", "changes_seen"
        )
    }
    return {triple: n for triple, n in changes.items() if seen.get(triple) != n}


def get_time_on_item_summary(*, project) -> list[TimeRow]:
    """Per member of the project and kind of decision: n, median and p90 active time (seconds)
    as the agreement recompute last stored them (a person's figures, over their decisions in
    the project), the
    number of flagged fast decisions in the project (a maintained counter), display names, and
    whether the stored figures miss a change (``stale``). Five queries whatever the data
    size."""
    members = set(
        ProjectMembership.objects.filter(project=project).values_list("user_id", flat=True)
    )
    changes = _counter_pairs("time_changes", project=project)
    stored = {
        (f.kind, f.user_id): f
        for f in TimeOnItemFigure.objects.filter(project=project).only(
            "kind", "user_id", "n", "median_ms", "p90_ms", "changes_seen"
        )
    }
    fast = _counter_pairs("fast", project=project)
    shown = {pair for pair, f in stored.items() if f.n} | set(fast)
    shown |= {pair for pair, n in changes.items() if pair not in stored}
    shown = {pair for pair in shown if pair[1] in members or pair in fast}
    names = display_names({user for _, user in shown}) if shown else {}
    rows = []
    for kind, user_id in shown:
        figure = stored.get((kind, user_id))
        n, median, p90 = (figure.n, figure.median_ms, figure.p90_ms) if figure else (0, None, None)
        rows.append(
            TimeRow(
                user_id=user_id,
                name=names.get(user_id, "a former annotator"),
                kind=kind,
                kind_label=DecisionKind(kind).label,
                n=n,
                median_s=None if median is None else median / 1000,
                p90_s=None if p90 is None else p90 / 1000,
                fast=fast.get((kind, user_id), 0),
                stale=changes.get((kind, user_id), 0) != (figure.changes_seen if figure else 0),
            )
        )
    return sorted(rows, key=lambda r: (r.kind, r.name.lower(), r.user_id))


def time_on_item_rows(*, project) -> tuple[list, list]:
    """The dashboard's time-on-item table for CSV/JSON: display names and figures in seconds."""
    header = ["annotator", "decisions", "n", "median_active_s", "p90_active_s", "flagged_fast"]
    rows = [
        [
            r.name,
            r.kind,
            r.n,
            None if r.median_s is None else round(r.median_s, 3),
            None if r.p90_s is None else round(r.p90_s, 3),
            r.fast,
        ]
        for r in get_time_on_item_summary(project=project)
    ]
    return header, rows


@dataclass(frozen=True)
class FastRow:
    """One flagged decision as the lead's list shows it: plain values, the item by its public id
    or external id, never the system or run behind it."""

    kind_label: str
    tier: str
    who: str
    item: str
    url: str
    decision_s: float
    threshold_s: float
    created_at: object


def _item_of(decision: FastDecision) -> tuple[str, str]:
    if decision.kind == DecisionKind.REVIEW:
        triple = decision.review.revision.triple
        return triple.external_id, reverse("curation:triple", args=[triple.pk])
    record = (
        decision.label.record
        if decision.kind == DecisionKind.LABEL
        else decision.adjudication.record
    )
    if record.is_calibration:
        url = reverse("answers:calibration_reference", args=[record.domain.slug, record.public_id])
    elif record.status in LEAD_VISIBLE:
        url = reverse("answers:adjudicate", args=[record.public_id])
    else:
        url = reverse("promotion:record", args=[record.public_id])
    return record.public_id, url


def list_fast_decisions(*, project, cursor: str | None, size: int) -> KeysetPage:
    """One keyset page of the project's flagged decisions, newest first, as :class:`FastRow`.
    Two queries whatever the page or data size; Http404 for a bad cursor."""
    rows = (
        FastDecision.objects.filter(project=project)
        .select_related(
            "label__record__domain",
            "adjudication__record__domain",
            "review__revision__triple",
        )
        .defer(
            *(
                f"{path}__{field}"
                for path in ("label__record", "adjudication__record")
                for field in ("model", "extra", "latency_ms", "cost_usd", "answer")
            )
        )
    )
    page = keyset_page(rows, fields=("-created_at", "-id"), cursor=cursor, size=size)
    names = display_names({d.annotator_id for d in page.items}) if page.items else {}
    items = []
    for decision in page.items:
        item, url = _item_of(decision)
        items.append(
            FastRow(
                kind_label=decision.get_kind_display(),
                tier=decision.get_tier_display(),
                who=names.get(decision.annotator_id, "a former annotator"),
                item=item,
                url=url,
                decision_s=decision.decision_ms / 1000,
                threshold_s=decision.threshold_ms / 1000,
                created_at=decision.created_at,
            )
        )
    return KeysetPage(items=items, next_cursor=page.next_cursor, first=page.first)
