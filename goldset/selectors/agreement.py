"""Reads of stored agreement figures, and the alerts they trigger (DESIGN.md §7, seed 003).

Thresholds are settings with the seed's defaults: gold α < ``AGREEMENT_ALPHA_TARGET`` (0.75) for a
task type; a gold annotator pair's Cohen κ < ``AGREEMENT_KAPPA_TARGET`` (0.70); TRIAGE spot-check
disagreement > ``SPOT_CHECK_DISAGREEMENT_LIMIT`` (12 %) in two consecutive ISO weeks. A figure
fires only when it rests on at least ``AGREEMENT_MIN_ITEMS`` items (default 10).
"""

import datetime as dt
from dataclasses import dataclass, field

from django.conf import settings

from goldset.models import AgreementSnapshot, Tier
from goldset.services.agreement import week_start


@dataclass(frozen=True)
class Alert:
    kind: str
    title: str
    detail: str
    numbers: dict = field(default_factory=dict)


def _setting(name, default):
    return getattr(settings, name, default)


def list_snapshots(**filters):
    return AgreementSnapshot.objects.filter(**filters).order_by(
        "protocol", "axis", "metric", "tier", "task_type", "domain", "week", "subject"
    )


def _fmt_ci(s: AgreementSnapshot) -> str:
    return f"95 % CI [{s.ci_low:.3f}, {s.ci_high:.3f}]" if s.ci_low is not None else "no CI"


def list_agreement_alerts(snapshots=None) -> list[Alert]:
    """Alerts from the stored figures (one query when ``snapshots`` is not given)."""
    rows = list(
        snapshots
        if snapshots is not None
        else AgreementSnapshot.objects.filter(
            metric__in=["krippendorff_alpha", "cohen_kappa", "spot_check_disagreement"]
        )
    )
    min_items = _setting("AGREEMENT_MIN_ITEMS", 10)
    alpha_target = _setting("AGREEMENT_ALPHA_TARGET", 0.75)
    kappa_target = _setting("AGREEMENT_KAPPA_TARGET", 0.70)
    limit = _setting("SPOT_CHECK_DISAGREEMENT_LIMIT", 0.12)
    alerts: list[Alert] = []
    for s in rows:
        gold_all_time = s.tier == Tier.GOLD and not s.week and not s.domain
        if (
            s.metric == "krippendorff_alpha"
            and gold_all_time
            and s.task_type
            and s.value is not None
            and s.value < alpha_target
            and s.n_items >= min_items
        ):
            alerts.append(
                Alert(
                    "gold_alpha_low",
                    f"Gold α below {alpha_target} for task type {s.task_type}",
                    f"{s.protocol} · {s.axis}: α = {s.value:.3f} ({_fmt_ci(s)}) over {s.n_items} items, {s.n_annotators} annotators.",
                    {
                        "protocol": s.protocol,
                        "axis": s.axis,
                        "task_type": s.task_type,
                        "alpha": s.value,
                        "target": alpha_target,
                        "n_items": s.n_items,
                    },
                )
            )
        if (
            s.metric == "cohen_kappa"
            and s.tier == Tier.GOLD
            and s.value is not None
            and s.value < kappa_target
            and s.n_items >= min_items
        ):
            alerts.append(
                Alert(
                    "gold_kappa_low",
                    f"Gold Cohen κ below {kappa_target} for an annotator pair",
                    f"{s.protocol} · {s.axis}: pair {s.subject} κ = {s.value:.3f} ({_fmt_ci(s)}) over {s.n_items} shared items.",
                    {
                        "protocol": s.protocol,
                        "axis": s.axis,
                        "pair": s.subject,
                        "kappa": s.value,
                        "target": kappa_target,
                        "n_items": s.n_items,
                    },
                )
            )
    alerts += _spot_check_alerts([s for s in rows if s.metric == "spot_check_disagreement"], limit)
    alerts += _annotator_alerts(rows, min_items)
    alerts += _author_flag_rate_alerts()
    return _with_usernames(alerts)


ALERT_METRICS = [
    "krippendorff_alpha",
    "cohen_kappa",
    "spot_check_disagreement",
    "adjudication_agreement",
    "severe_rate_gap",
]


def _annotator_alerts(rows: list[AgreementSnapshot], min_items: int) -> list[Alert]:
    """An annotator whose agreement with adjudicated labels is below the median of annotators by
    more than ``AGREEMENT_OUTLIER_MARGIN`` (0.15), or whose severe-label rate differs from their
    co-annotators' on the same items by more than ``SEVERE_RATE_GAP_MARGIN`` (0.10)."""
    alerts = []
    outlier_margin = _setting("AGREEMENT_OUTLIER_MARGIN", 0.15)
    gap_margin = _setting("SEVERE_RATE_GAP_MARGIN", 0.10)
    agreement = [s for s in rows if s.metric == "adjudication_agreement" and s.n_items >= min_items]
    if len(agreement) >= 3:
        values = sorted(s.value for s in agreement)
        median = (
            values[len(values) // 2]
            if len(values) % 2
            else (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2
        )
        for s in agreement:
            if s.value < median - outlier_margin:
                alerts.append(
                    Alert(
                        "annotator_outlier",
                        "Annotator agrees with adjudicated labels far less than peers",
                        f"{s.protocol}: annotator {{user:{s.subject}}} matches the adjudicated acceptability on {s.value:.0%} of {s.n_items} adjudicated items; the median annotator {median:.0%} (margin {outlier_margin:.0%}).",
                        {
                            "annotator": s.subject,
                            "rate": s.value,
                            "median": median,
                            "margin": outlier_margin,
                            "n_items": s.n_items,
                        },
                    )
                )
    for s in rows:
        if s.metric == "severe_rate_gap" and s.n_items >= min_items and abs(s.value) > gap_margin:
            alerts.append(
                Alert(
                    "severe_rate_gap",
                    "Annotator's severe-safety rate differs from co-annotators'",
                    f"{s.protocol}: annotator {{user:{s.subject}}} marks severe safety {s.value:+.0%} more often than co-annotators on the same {s.n_items} items (margin {gap_margin:.0%}).",
                    {
                        "annotator": s.subject,
                        "gap": s.value,
                        "margin": gap_margin,
                        "n_items": s.n_items,
                    },
                )
            )
    return alerts


def _author_flag_rate_alerts() -> list[Alert]:
    from goldset.selectors.curation import list_author_flag_rates

    return [
        Alert(
            "author_flag_rate",
            "Calibration session needed for an author",
            f"{r.username}: {r.flags} flags in {r.reviews} reviews received ({r.rate:.0%}); last 4 weeks {r.recent_flags}/{r.recent_reviews}.",
            {
                "author": r.username,
                "flags": r.flags,
                "reviews": r.reviews,
                "recent_flags": r.recent_flags,
                "recent_reviews": r.recent_reviews,
            },
        )
        for r in list_author_flag_rates()
        if r.calibration_needed
    ]


def _with_usernames(alerts: list[Alert]) -> list[Alert]:
    """Replace ``{user:ID}`` placeholders with usernames (one query)."""
    import re

    from django.contrib.auth import get_user_model

    ids = {int(m) for a in alerts for m in re.findall(r"\{user:(\d+)\}", a.detail)}
    if not ids:
        return alerts
    names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    return [
        Alert(
            a.kind,
            a.title,
            re.sub(
                r"\{user:(\d+)\}", lambda m: names.get(int(m.group(1)), f"#{m.group(1)}"), a.detail
            ),
            a.numbers,
        )
        for a in alerts
    ]


def _spot_check_alerts(rows: list[AgreementSnapshot], limit: float) -> list[Alert]:
    alerts = []
    by_protocol: dict[str, list[AgreementSnapshot]] = {}
    for s in rows:
        by_protocol.setdefault(s.protocol, []).append(s)
    for protocol, weeks in by_protocol.items():
        weeks.sort(key=lambda s: week_start(s.week))
        for previous, current in zip(weeks, weeks[1:], strict=False):
            consecutive = week_start(current.week) - week_start(previous.week) == dt.timedelta(
                days=7
            )
            if consecutive and previous.value > limit and current.value > limit:
                alerts.append(
                    Alert(
                        "spot_check_disagreement",
                        f"TRIAGE spot-check disagreement above {limit:.0%} for two consecutive weeks",
                        f"{protocol}: {previous.week} {previous.value:.1%} ({previous.subject}/{previous.n_items}), "
                        f"{current.week} {current.value:.1%} ({current.subject}/{current.n_items}).",
                        {
                            "protocol": protocol,
                            "weeks": [previous.week, current.week],
                            "rates": [previous.value, current.value],
                            "limit": limit,
                        },
                    )
                )
    return alerts


PROTOCOL_LABELS = {"triple_review": "Triple reviews", "answer_label": "Answer labels"}
CSV_FIELDS = [
    "protocol",
    "axis",
    "metric",
    "tier",
    "task_type",
    "domain",
    "week",
    "subject",
    "value",
    "ci_low",
    "ci_high",
    "n_items",
    "n_annotators",
    "reason",
    "data_version",
]


@dataclass
class AgreementView:
    protocol: str
    axis: str
    choices: list[tuple[str, str]]  # (protocol, axis) pairs with figures
    alpha_by_week: object  # LineChart
    fleiss_by_week: object
    alpha_rows: list[AgreementSnapshot]
    fleiss_rows: list[AgreementSnapshot]
    by_task_type: list[AgreementSnapshot]
    by_domain: list[AgreementSnapshot]
    pairs: list[AgreementSnapshot]
    data_version: str
    computed_at: object


def get_agreement_view(*, protocol: str = "", axis: str = "") -> AgreementView:
    """Everything the agreement dashboard shows for one protocol × axis, from stored snapshots
    (two queries whatever the data size)."""
    from goldset.charts import LineChart, Series

    choices = list(
        AgreementSnapshot.objects.filter(metric="krippendorff_alpha")
        .values_list("protocol", "axis")
        .distinct()
        .order_by("protocol", "axis")
    )
    if (protocol, axis) not in choices:
        protocol, axis = choices[0] if choices else ("", "")
    rows = list(
        AgreementSnapshot.objects.filter(protocol=protocol, axis=axis).order_by(
            "week", "task_type", "domain", "subject"
        )
    )
    gold = Tier.GOLD.value
    weekly_alpha = [
        r
        for r in rows
        if r.metric == "krippendorff_alpha" and r.tier == gold and r.week and not r.domain
    ]
    weeks = sorted({r.week for r in weekly_alpha}, key=week_start)
    series: dict[str, list] = {}
    for r in weekly_alpha:
        series.setdefault(r.task_type or "all task types", []).append(
            (r.week, r.value, r.ci_low, r.ci_high)
        )
    alpha_target = _setting("AGREEMENT_ALPHA_TARGET", 0.75)
    kappa_target = _setting("AGREEMENT_KAPPA_TARGET", 0.70)
    fleiss = [
        r
        for r in rows
        if r.metric == "fleiss_kappa"
        and r.tier == gold
        and r.week
        and not r.task_type
        and not r.domain
    ]
    return AgreementView(
        protocol=protocol,
        axis=axis,
        choices=choices,
        alpha_by_week=LineChart(
            f"Gold Krippendorff α by ISO week — {axis}",
            weeks,
            [Series(k, v) for k, v in sorted(series.items())],
            targets=[("target", alpha_target)],
        ),
        fleiss_by_week=LineChart(
            f"Gold Fleiss κ (three-label items) by ISO week — {axis}",
            [r.week for r in fleiss],
            [Series("Fleiss κ", [(r.week, r.value, r.ci_low, r.ci_high) for r in fleiss])],
            targets=[("target", kappa_target)],
        ),
        alpha_rows=weekly_alpha,
        fleiss_rows=fleiss,
        by_task_type=[
            r for r in rows if r.metric == "krippendorff_alpha" and r.task_type and not r.week
        ],
        by_domain=[r for r in rows if r.metric == "krippendorff_alpha" and r.domain],
        pairs=[r for r in rows if r.metric == "cohen_kappa" and r.tier == gold],
        data_version=rows[0].data_version if rows else "",
        computed_at=rows[0].computed_at if rows else None,
    )
