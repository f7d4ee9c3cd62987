"""Reads of the traces a project received (admins only: traces name systems and models)."""

import datetime as dt
import json
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce
from django.http import Http404

from goldset.models import ReceivedSpan, ReceivedTrace, SamplingRule, TraceStatus

RECENT_TRACES = 50


def count_traces_by_status(*, project) -> dict[str, int]:
    """Every status with its count in ``project`` (0 for none), in the statuses' order."""
    counts = dict(
        ReceivedTrace.objects.filter(project=project)
        .order_by()
        .values_list("status")
        .annotate(n=Count("id"))
    )
    return {status.value: counts.get(status.value, 0) for status in TraceStatus}


def count_spans(*, project) -> int:
    return ReceivedSpan.objects.filter(project=project).count()


def list_recent_traces(*, project, status: str = "", limit: int = RECENT_TRACES) -> list:
    """The latest traces of ``project`` (by last change), optionally of one status, with the
    public id of the record each became."""
    traces = ReceivedTrace.objects.filter(project=project)
    if status:
        traces = traces.filter(status=status)
    return list(
        traces.select_related("record")
        .only(
            "trace_id",
            "status",
            "reason",
            "span_count",
            "sampled_by",
            "convention",
            "updated_at",
            "record__public_id",
        )
        .order_by("-updated_at", "-id")[:limit]
    )


@dataclass(frozen=True)
class StoredSpan:
    span_id: str
    parent_span_id: str
    name: str
    kind: str
    duration_ms: float
    attributes: str  # pretty JSON
    events: str
    resource: str


def get_trace_for(*, project, trace_id: str) -> tuple[ReceivedTrace, list[StoredSpan]]:
    """One trace of ``project`` with its stored spans (start order), attributes as received
    (admins only); Http404 for a trace of another project or none."""
    trace = (
        ReceivedTrace.objects.select_related("record")
        .filter(project=project, trace_id=trace_id)
        .first()
    )
    if trace is None:
        raise Http404("No such trace in this project.")
    spans = []
    for span_id, parent, payload in ReceivedSpan.objects.filter(
        project=project, trace_id=trace_id
    ).values_list("span_id", "parent_span_id", "payload"):
        data = json.loads(payload)
        spans.append(
            (
                data["start_ns"],
                StoredSpan(
                    span_id=span_id,
                    parent_span_id=parent,
                    name=data["name"],
                    kind=data["kind"],
                    duration_ms=(data["end_ns"] - data["start_ns"]) / 1_000_000,
                    attributes=json.dumps(data["attributes"], indent=2, ensure_ascii=False),
                    events=json.dumps(data["events"], indent=2, ensure_ascii=False),
                    resource=json.dumps(data["resource"], indent=2, ensure_ascii=False),
                ),
            )
        )
    return trace, [span for _, span in sorted(spans, key=lambda item: (item[0], item[1].span_id))]


# ---------------------------------------------------------------------------------------------
# Sampling


def query_sampling_rules(*, project, today: dt.date) -> QuerySet:
    """``project``'s sampling rules in evaluation order, each annotated with the traces it
    sampled and capped, in all and on ``today`` (UTC) (``sampled_total``, ``capped_total``,
    ``sampled_today``, ``capped_today``): one query, which the API pages with its cursor."""
    zero = Value(0)
    return (
        SamplingRule.objects.filter(project=project)
        .annotate(
            sampled_total=Coalesce(Sum("day_counts__sampled"), zero),
            capped_total=Coalesce(Sum("day_counts__capped"), zero),
            sampled_today=Coalesce(
                Sum("day_counts__sampled", filter=Q(day_counts__day=today)), zero
            ),
            capped_today=Coalesce(Sum("day_counts__capped", filter=Q(day_counts__day=today)), zero),
        )
        .order_by("position", "id")
    )


def list_sampling_rules(*, project, today: dt.date) -> list[SamplingRule]:
    """:func:`query_sampling_rules` as a list (the pages)."""
    return list(query_sampling_rules(project=project, today=today))


def get_sampling_rule_with_counts(*, project, rule_id: int, today: dt.date) -> SamplingRule:
    """One sampling rule of ``project`` annotated as :func:`query_sampling_rules`; Http404 for
    another project's or none."""
    rule = query_sampling_rules(project=project, today=today).filter(pk=rule_id).first()
    if rule is None:
        raise Http404("No such sampling rule in this project.")
    return rule


def get_sampling_rule_for(*, project, rule_id: int) -> SamplingRule:
    """One sampling rule of ``project``; Http404 for another project's or none."""
    rule = SamplingRule.objects.filter(project=project, pk=rule_id).first()
    if rule is None:
        raise Http404("No such sampling rule in this project.")
    return rule


def count_rejection_reasons(*, project, limit: int = 10) -> list[tuple[str, int]]:
    """The most frequent reasons ``project``'s traces were rejected for, with their counts."""
    return list(
        ReceivedTrace.objects.filter(project=project, status=TraceStatus.REJECTED)
        .order_by()
        .values_list("reason")
        .annotate(n=Count("id"))
        .order_by("-n", "reason")[:limit]
    )
