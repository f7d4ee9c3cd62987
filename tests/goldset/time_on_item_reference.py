"""The time-on-item summary as it was before issue 17 (verbatim from
``goldset/selectors/time_on_item.py``): every timed label, review and adjudication aggregated
per request. Tests hold the stored figures equal to what this computes."""

import math
from collections import defaultdict
from dataclasses import dataclass

from django.db import connection
from django.db.models import Aggregate, Count, FloatField

from goldset.models import Adjudication, DecisionKind, FastDecision, Label, Review
from goldset.selectors.agreement import display_names

_SOURCES = {
    DecisionKind.LABEL: (Label, "annotator_id"),
    DecisionKind.REVIEW: (Review, "reviewer_id"),
    DecisionKind.ADJUDICATION: (Adjudication, "lead_id"),
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


def _figures(model, who: str) -> dict[int, tuple[int, float | None, float | None]]:
    """{user: (n, median ms, p90 ms)} of the active time (one query)."""
    rows = model.objects.filter(active_ms__isnull=False)
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


def get_time_on_item_summary() -> list[TimeRow]:
    """Per annotator and kind of decision: n, median and p90 active time (seconds) and the number
    of flagged fast decisions; display names. Five queries whatever the data size."""
    figures = {kind: _figures(model, who) for kind, (model, who) in _SOURCES.items()}
    fast = {
        (row["annotator_id"], row["kind"]): row["n"]
        for row in FastDecision.objects.values("annotator_id", "kind")
        .order_by()
        .annotate(n=Count("id"))
    }
    users = {u for per_kind in figures.values() for u in per_kind} | {u for u, _ in fast}
    names = display_names(users) if users else {}
    rows = []
    for kind, per_user in figures.items():
        for user_id in per_user.keys() | {u for u, k in fast if k == kind}:
            n, median, p90 = per_user.get(user_id, (0, None, None))
            rows.append(
                TimeRow(
                    user_id=user_id,
                    name=names.get(user_id, "a former annotator"),
                    kind=kind.value,
                    kind_label=kind.label,
                    n=n,
                    median_s=None if median is None else median / 1000,
                    p90_s=None if p90 is None else p90 / 1000,
                    fast=fast.get((user_id, kind.value), 0),
                )
            )
    return sorted(rows, key=lambda r: (r.kind, r.name.lower(), r.user_id))
