"""Reads of stored agreement figures, and the alerts they trigger (DESIGN.md §7, seed 003).

Thresholds are settings with the seed's defaults: gold α < ``AGREEMENT_ALPHA_TARGET`` (0.75) for a
task type; a gold annotator pair's Cohen κ < ``KAPPA_GATE`` (0.70); TRIAGE spot-check
disagreement > ``SPOT_CHECK_DISAGREEMENT_LIMIT`` (12 %) in two consecutive ISO weeks. A figure
fires only when it rests on at least ``AGREEMENT_MIN_ITEMS`` items (default 10).
"""

import datetime as dt
import re
from dataclasses import dataclass, field, replace

from django.contrib.auth import get_user_model
from django.db.models import Min
from django.utils import timezone

from goldset.charts import BarChart, LineChart, Series
from goldset.conf import tunable
from goldset.models import (
    AgreementSnapshot,
    Label,
    OutboxMessage,
    Review,
    Tier,
)
from goldset.rules.axes import AXES
from goldset.rules.calendar import week_start
from goldset.rules.display import display
from goldset.rules.jobs import AGREEMENT_OUTBOX_KIND
from goldset.selectors.alert_groups import group_alerts
from goldset.selectors.curation import (
    counter_rows,
    list_author_flag_rates,
    list_author_flag_rates_by_project,
)


@dataclass(frozen=True)
class Alert:
    kind: str
    title: str
    detail: str
    numbers: dict = field(default_factory=dict)
    # what the alert is about, for links to its pair's matrix and disagreeing items (never shown)
    scope: dict = field(default_factory=dict)  # protocol, axis, task_type
    subjects: tuple[int, ...] = ()  # the annotator(s) behind it


def list_snapshots(*, project, **filters):
    return AgreementSnapshot.objects.filter(project=project, **filters).order_by(
        "protocol", "axis", "metric", "tier", "task_type", "domain", "week", "subject"
    )


def _fmt_ci(s: AgreementSnapshot) -> str:
    return f"95 % CI [{s.ci_low:.3f}, {s.ci_high:.3f}]" if s.ci_low is not None else "no CI"


# The stored figures the alerts read (the other metrics of ``ALERT_METRICS`` reach
# ``_annotator_alerts`` only when a caller passes them as ``snapshots``).
ALERT_SNAPSHOT_METRICS = ["krippendorff_alpha", "cohen_kappa", "spot_check_disagreement"]


def list_agreement_alerts(*, project, snapshots=None) -> list[Alert]:
    """Alerts from the project's stored figures, against the project's thresholds (one query
    when ``snapshots`` is not given)."""
    rows = list(
        snapshots
        if snapshots is not None
        else AgreementSnapshot.objects.filter(project=project, metric__in=ALERT_SNAPSHOT_METRICS)
    )
    alerts = _alerts_from(rows, project=project, flag_rates=list_author_flag_rates(project=project))
    return _with_usernames(alerts)


@dataclass(frozen=True)
class AlertCount:
    """A project's open alerts as the projects home shows them: how many, and the worst kind
    among them (``goldset.selectors.alert_groups.KINDS`` order; "" when none)."""

    count: int
    worst_kind: str = ""
    worst_title: str = ""


def count_alerts_by_project(*, projects) -> dict[int, AlertCount]:
    """``{project id: AlertCount}``: the alerts :func:`list_agreement_alerts` finds in each of
    ``projects`` (each against its own thresholds), counted without names. Two queries whatever
    the number of projects and alerts (the figures of all of them, and their authors' flag
    counters); none without projects."""
    projects = list(projects)
    if not projects:
        return {}
    rows: dict[int, list[AgreementSnapshot]] = {p.pk: [] for p in projects}
    for s in AgreementSnapshot.objects.filter(
        project__in=projects, metric__in=ALERT_SNAPSHOT_METRICS
    ):
        rows[s.project_id].append(s)
    rates = list_author_flag_rates_by_project(projects=projects)
    out = {}
    for p in projects:
        groups = group_alerts(_alerts_from(rows[p.pk], project=p, flag_rates=rates[p.pk]))
        worst = groups[0] if groups else None
        out[p.pk] = AlertCount(
            count=sum(g.count for g in groups),
            worst_kind=worst.kind if worst else "",
            worst_title=worst.title if worst else "",
        )
    return out


def _alerts_from(rows: list[AgreementSnapshot], *, project, flag_rates) -> list[Alert]:
    """The alerts of ``project``'s figures ``rows`` and its authors' ``flag_rates``, against the
    project's thresholds (reads nothing; user placeholders left in)."""
    min_items = tunable("AGREEMENT_MIN_ITEMS", project=project)
    alpha_target = tunable("AGREEMENT_ALPHA_TARGET", project=project)
    kappa_target = tunable("KAPPA_GATE", project=project)
    limit = tunable("SPOT_CHECK_DISAGREEMENT_LIMIT", project=project)
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
                    f"Gold α below {alpha_target} for task type {display(s.task_type)}",
                    f"{display(s.protocol)} · {display(s.axis)}: α = {s.value:.3f} ({_fmt_ci(s)}) over {s.n_items} items, {s.n_annotators} annotators.",
                    {
                        "protocol": s.protocol,
                        "axis": s.axis,
                        "task_type": s.task_type,
                        "alpha": s.value,
                        "target": alpha_target,
                        "n_items": s.n_items,
                    },
                    scope={"protocol": s.protocol, "axis": s.axis, "task_type": s.task_type},
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
                    f"{display(s.protocol)} · {display(s.axis)}: {_pair_placeholder(s.subject)} κ = {s.value:.3f} ({_fmt_ci(s)}) over {s.n_items} shared items.",
                    {
                        "protocol": s.protocol,
                        "axis": s.axis,
                        "pair": _pair_placeholder(s.subject),
                        "kappa": s.value,
                        "target": kappa_target,
                        "n_items": s.n_items,
                    },
                    scope={"protocol": s.protocol, "axis": s.axis},
                    subjects=_subject_ids(s.subject),
                )
            )
    alerts += _spot_check_alerts([s for s in rows if s.metric == "spot_check_disagreement"], limit)
    alerts += _annotator_alerts(rows, min_items, project=project)
    alerts += _author_flag_rate_alerts(flag_rates)
    return alerts


ALERT_METRICS = [
    "krippendorff_alpha",
    "cohen_kappa",
    "spot_check_disagreement",
    "adjudication_agreement",
    "severe_rate_gap",
]


def _annotator_alerts(rows: list[AgreementSnapshot], min_items: int, *, project) -> list[Alert]:
    """An annotator whose agreement with adjudicated labels is below the median of annotators by
    more than ``AGREEMENT_OUTLIER_MARGIN`` (0.15), or whose severe-label rate differs from their
    co-annotators' on the same items by more than ``SEVERE_RATE_GAP_MARGIN`` (0.10)."""
    alerts = []
    outlier_margin = tunable("AGREEMENT_OUTLIER_MARGIN", project=project)
    gap_margin = tunable("SEVERE_RATE_GAP_MARGIN", project=project)
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
                        f"{display(s.protocol)}: annotator {{user:{s.subject}}} matches the adjudicated acceptability on {s.value:.0%} of {s.n_items} adjudicated items; the median annotator {median:.0%} (margin {outlier_margin:.0%}).",
                        {
                            "annotator": f"{{user:{s.subject}}}",
                            "rate": s.value,
                            "median": median,
                            "margin": outlier_margin,
                            "n_items": s.n_items,
                        },
                        scope={"protocol": s.protocol, "axis": "acceptability"},
                        subjects=_subject_ids(s.subject),
                    )
                )
    for s in rows:
        if s.metric == "severe_rate_gap" and s.n_items >= min_items and abs(s.value) > gap_margin:
            alerts.append(
                Alert(
                    "severe_rate_gap",
                    "Annotator's severe-safety rate differs from co-annotators'",
                    f"{display(s.protocol)}: annotator {{user:{s.subject}}} marks severe safety {s.value:+.0%} more often than co-annotators on the same {s.n_items} items (margin {gap_margin:.0%}).",
                    {
                        "annotator": f"{{user:{s.subject}}}",
                        "gap": s.value,
                        "margin": gap_margin,
                        "n_items": s.n_items,
                    },
                    scope={"protocol": s.protocol, "axis": "severe_safety"},
                    subjects=_subject_ids(s.subject),
                )
            )
    return alerts


def _author_flag_rate_alerts(flag_rates) -> list[Alert]:
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
        for r in flag_rates
        if r.calibration_needed
    ]


def _subject_ids(subject: str) -> tuple[int, ...]:
    """A snapshot subject's user ids ("4|5" or "4")."""
    return tuple(int(x) for x in subject.split("|") if x.isdigit())


def _pair_placeholder(subject: str) -> str:
    first, _, second = subject.partition("|")
    return f"{{user:{first}}} & {{user:{second}}}"


def display_names(user_ids) -> dict[int, str]:
    """``{user_id: full name or username}`` (one query): what leads see for annotators where the
    protocol lets them see who is who (this dashboard, its alerts and tables)."""
    users = get_user_model().objects.filter(pk__in={int(u) for u in user_ids})
    return {
        pk: f"{first} {last}".strip() or username
        for pk, username, first, last in users.values_list(
            "pk", "username", "first_name", "last_name"
        )
    }


_PLACEHOLDER = re.compile(r"\{user:(\d+)\}")


def _with_usernames(alerts: list[Alert]) -> list[Alert]:
    """Replace ``{user:ID}`` placeholders in details and numbers with display names (one query)."""
    texts = [a.detail for a in alerts] + [
        v for a in alerts for v in a.numbers.values() if isinstance(v, str)
    ]
    ids = {int(m) for t in texts for m in _PLACEHOLDER.findall(t)}
    if not ids:
        return alerts
    names = display_names(ids)

    def sub(text):
        return _PLACEHOLDER.sub(lambda m: names.get(int(m.group(1)), "a former annotator"), text)

    return [
        replace(
            a,
            detail=sub(a.detail),
            numbers={k: sub(v) if isinstance(v, str) else v for k, v in a.numbers.items()},
        )
        for a in alerts
    ]


def subject_display(row_metric: str, row_axis: str, subject: str, names: dict[int, str]) -> str:
    """A snapshot's subject as people read it: pairs and annotators by display name."""
    if row_metric == "cohen_kappa" and "|" in subject:
        first, _, second = subject.partition("|")
        return f"{names.get(int(first), '?')} & {names.get(int(second), '?')}"
    if row_axis == "annotator" and subject.isdigit():
        return names.get(int(subject), "?")
    return subject


def _subject_user_ids(rows) -> set[int]:
    ids = set()
    for metric, axis, subject in rows:
        if metric == "cohen_kappa" and "|" in subject:
            ids.update(int(x) for x in subject.split("|") if x.isdigit())
        elif axis == "annotator" and subject.isdigit():
            ids.add(int(subject))
    return ids


def subject_names(snapshots) -> dict[int, str]:
    """Display names for the people named in these snapshots' subjects (one query): what the
    dashboard shows instead of user keys."""
    return display_names(_subject_user_ids((s.metric, s.axis, s.subject) for s in snapshots))


def iter_snapshot_rows(*, project, **filters) -> list[tuple]:
    """Snapshot rows in ``CSV_FIELDS`` order for downloads, subjects as display names, never
    user keys (two queries)."""
    rows = list(list_snapshots(project=project, **filters).values_list(*CSV_FIELDS))
    at = {name: i for i, name in enumerate(CSV_FIELDS)}
    names = display_names(
        _subject_user_ids((r[at["metric"]], r[at["axis"]], r[at["subject"]]) for r in rows)
    )
    out = []
    for r in rows:
        r = list(r)
        r[at["subject"]] = subject_display(r[at["metric"]], r[at["axis"]], r[at["subject"]], names)
        out.append(tuple(r))
    return out


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
                        f"{display(protocol)}: {previous.week} {previous.value:.1%} ({previous.subject}/{previous.n_items}), "
                        f"{current.week} {current.value:.1%} ({current.subject}/{current.n_items}).",
                        {
                            "protocol": protocol,
                            "weeks": [previous.week, current.week],
                            "rates": [previous.value, current.value],
                            "limit": limit,
                        },
                        scope={"protocol": protocol},
                    )
                )
    return alerts


PROTOCOL_LABELS = {"triple_review": "Triple reviews", "answer_label": "Answer labels"}
BAR_PROTOCOL = {"triple_review": "reviews", "answer_label": "labels"}
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

# The project's settings in force the agreement downloads add to each row (after
# ``CSV_FIELDS``): the thresholds its alerts judge figures against, the items a figure needs
# and the bootstrap behind each CI.
AGREEMENT_SETTINGS = (
    "AGREEMENT_ALPHA_TARGET",
    "KAPPA_GATE",
    "SPOT_CHECK_DISAGREEMENT_LIMIT",
    "AGREEMENT_MIN_ITEMS",
    "AGREEMENT_BOOTSTRAP_SEED",
    "AGREEMENT_BOOTSTRAP_RESAMPLES",
)


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


def get_agreement_view(*, project, protocol: str = "", axis: str = "") -> AgreementView:
    """Everything the agreement dashboard shows for one protocol × axis, from stored snapshots
    (two queries whatever the data size)."""
    choices = list(
        AgreementSnapshot.objects.filter(project=project, metric="krippendorff_alpha")
        .values_list("protocol", "axis")
        .distinct()
        .order_by("protocol", "axis")
    )
    if (protocol, axis) not in choices:
        protocol, axis = choices[0] if choices else ("", "")
    rows = list(
        AgreementSnapshot.objects.filter(project=project, protocol=protocol, axis=axis).order_by(
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
        series.setdefault(display(r.task_type) if r.task_type else "all task types", []).append(
            (r.week, r.value, r.ci_low, r.ci_high)
        )
    alpha_target = tunable("AGREEMENT_ALPHA_TARGET", project=project)
    kappa_target = tunable("KAPPA_GATE", project=project)
    fleiss = [
        r
        for r in rows
        if r.metric == "fleiss_kappa"
        and r.tier == gold
        and r.week
        and not r.task_type
        and not r.domain
    ]
    pairs = [r for r in rows if r.metric == "cohen_kappa" and r.tier == gold]
    names = display_names(_subject_user_ids((r.metric, r.axis, r.subject) for r in pairs))
    for r in pairs:
        r.display = subject_display(r.metric, r.axis, r.subject, names)
    return AgreementView(
        protocol=protocol,
        axis=axis,
        choices=choices,
        alpha_by_week=LineChart(
            f"Gold Krippendorff α by ISO week — {display(axis)}",
            weeks,
            [Series(k, v) for k, v in sorted(series.items())],
            targets=[("target", alpha_target)],
        ),
        fleiss_by_week=LineChart(
            f"Gold Fleiss κ (three-label items) by ISO week — {display(axis)}",
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
        pairs=pairs,
        data_version=rows[0].data_version if rows else "",
        computed_at=rows[0].computed_at if rows else None,
    )


ANNOTATOR_METRICS = {
    "volume": "Volume (items)",
    "flag_rate": "Flag rate given (reviews)",
    "adjudication_agreement": "Agreement with adjudicated label",
    "rationale_coverage": "Rationale coverage (labels)",
    "severe_rate_gap": "Severe-label rate minus co-annotators'",
}


@dataclass
class AnnotatorRow:
    user_id: int
    username: str
    protocol: str
    figures: dict  # metric -> (value, n_items)

    @property
    def cells(self) -> list:
        """The figures in ANNOTATOR_METRICS order (None where absent), for tables."""
        return [self.figures.get(metric) for metric in ANNOTATOR_METRICS]

    @property
    def named_cells(self) -> list:
        """``(metric, figure or None)`` in ANNOTATOR_METRICS order: counts print as counts."""
        return [(metric, self.figures.get(metric)) for metric in ANNOTATOR_METRICS]


def list_annotator_figures(*, project) -> list[AnnotatorRow]:
    """Per-annotator figures from the project's snapshots, with display names (two queries)."""
    rows = list(
        AgreementSnapshot.objects.filter(project=project, axis="annotator").values_list(
            "protocol", "subject", "metric", "value", "n_items"
        )
    )
    names = display_names({int(r[1]) for r in rows})
    grouped: dict[tuple[str, str], dict] = {}
    for protocol, subject, metric, value, n in rows:
        grouped.setdefault((protocol, subject), {})[metric] = (value, n)
    return sorted(
        (AnnotatorRow(int(s), names.get(int(s), f"#{s}"), p, f) for (p, s), f in grouped.items()),
        key=lambda r: (r.protocol, r.username),
    )


@dataclass
class Workload:
    tiers: list[dict]  # {"kind", "tier", "cases"}
    gold_cases: int
    triage_cases: int
    cost_gold: float
    cost_triage: float
    throughput: list[tuple[str, int, int]]  # (day, reviews, labels)

    @property
    def estimated_cost(self) -> float:
        return self.gold_cases * self.cost_gold + self.triage_cases * self.cost_triage


def get_workload(*, project, days: int = 14) -> Workload:
    """Cases per tier in both protocols, the labeling-cost estimate (GOLD $0.40/case, TRIAGE
    $0.16/case by default: ``LABELING_COST_GOLD`` / ``LABELING_COST_TRIAGE``) and reviews and
    labels per UTC day over the last ``days`` days — all from the maintained dashboard counters
    (one query, whatever the number of items)."""
    rows = counter_rows("triple", "record", "reviews_day", "labels_day", project=project)
    triples: dict[str, int] = {}
    for key, n in rows["triple"]:
        tier = key.split("|")[1]
        triples[tier] = triples.get(tier, 0) + n
    tiers = [{"kind": "triples", "tier": t, "cases": n} for t, n in triples.items()]
    tiers += [{"kind": "answer records", "tier": t, "cases": n} for t, n in rows["record"]]
    since = (timezone.now() - dt.timedelta(days=days)).astimezone(dt.UTC).date().isoformat()
    reviews = {d: n for d, n in rows["reviews_day"] if d >= since}
    labels = {d: n for d, n in rows["labels_day"] if d >= since}
    day_list = sorted(set(reviews) | set(labels))
    return Workload(
        tiers=sorted(tiers, key=lambda t: (t["kind"], t["tier"])),
        gold_cases=sum(t["cases"] for t in tiers if t["tier"] == Tier.GOLD),
        triage_cases=sum(t["cases"] for t in tiers if t["tier"] == Tier.TRIAGE),
        cost_gold=float(tunable("LABELING_COST_GOLD", project=project)),
        cost_triage=float(tunable("LABELING_COST_TRIAGE", project=project)),
        throughput=[(d, reviews.get(d, 0), labels.get(d, 0)) for d in day_list],
    )


def confusion_matrix(*, project, protocol: str, axis: str, first: int, second: int) -> dict:
    """Counts of (first annotator's value, second's value) over the project's items both rated
    on ``axis``. One query; values in scale order."""
    scale = AXES.get(axis)
    if scale is None or protocol not in PROTOCOL_LABELS:
        return {"categories": [], "rows": [], "n": 0}
    if protocol == "triple_review":
        rows = Review.objects.filter(
            revision__triple__project=project, reviewer_id__in=[first, second]
        ).values_list("revision_id", "reviewer_id", "verdict")
    else:
        field_name = {"severe_safety": "severe_safety"}.get(axis, axis)
        rows = Label.objects.filter(
            record__project=project,
            annotator_id__in=[first, second],
            record__is_calibration=False,
            assignment__is_calibration=False,
        ).values_list("record_id", "annotator_id", field_name)
    values: dict[int, dict[int, str]] = {}
    for item, who, value in rows:
        if axis == "severe_safety":
            value = "yes" if value else "no"
        values.setdefault(item, {})[who] = value
    index = {c: i for i, c in enumerate(scale.categories)}
    cells = [[0] * len(index) for _ in index]
    n = 0
    for by in values.values():
        if first in by and second in by:
            cells[index[by[first]]][index[by[second]]] += 1
            n += 1
    top = max((c for row in cells for c in row), default=0)
    rows_out = [
        (label, [(c, min(4, 1 + (4 * c) // (top + 1)) if c else 0) for c in row])
        for label, row in zip(scale.categories, cells, strict=True)
    ]
    return {"categories": list(scale.categories), "rows": rows_out, "n": n}


def _user_ids_by_username(*usernames: str) -> list[int | None]:
    """Pair choices travel as usernames (never keys); one query."""
    wanted = [u for u in usernames if u]
    found = (
        dict(get_user_model().objects.filter(username__in=wanted).values_list("username", "pk"))
        if wanted
        else {}
    )
    return [found.get(u) for u in usernames]


def get_agreement_stale_since(*, project):
    """When the oldest change not yet reflected in the stored snapshots was made (None when
    they are up to date): the creation time of the oldest unfinished recompute request in the
    outbox (requests wait there while the broker or the workers are down)."""
    return OutboxMessage.objects.filter(
        kind=AGREEMENT_OUTBOX_KIND, done_at__isnull=True, payload__project_id=project.pk
    ).aggregate(since=Min("created_at"))["since"]


def get_dashboard(
    *, project, protocol: str, axis: str, first: str, second: str, partial: bool = False
) -> dict:
    """The agreement dashboard's context, all from stored snapshots plus aggregate counts; with
    ``partial`` only what the confusion-matrix fragment needs. ``first``/``second`` name the
    annotator pair of the confusion matrix by username."""
    view = get_agreement_view(project=project, protocol=protocol, axis=axis)
    first_id, second_id = _user_ids_by_username(first, second)
    pair_error = ""
    if first and first == second:
        # the same annotator twice is no pair: refused here whatever the form sent
        pair_error, first_id = "Choose two different annotators.", None
    elif (first or second) and not (first_id and second_id):
        pair_error = "Choose two annotators from the lists."
    confusion = (
        confusion_matrix(
            project=project,
            protocol=view.protocol,
            axis=view.axis,
            first=first_id,
            second=second_id,
        )
        if first_id and second_id
        else None
    )
    context = {
        "v": view,
        "confusion": confusion,
        "pair_error": pair_error,
        "a": first,
        "b": second,
        "protocol_labels": PROTOCOL_LABELS,
    }
    if partial:
        return context
    annotators = list_annotator_figures(project=project)

    def bar_chart(metric, label):
        values = [
            (f"{r.username} · {BAR_PROTOCOL[r.protocol]}", *r.figures[metric])
            for r in annotators
            if metric in r.figures
        ]
        return BarChart(
            label, values, x_max=max([v for _, v, _ in values] + [1]), percent=metric != "volume"
        )

    names = {r.user_id: r.username for r in annotators if r.protocol == view.protocol}
    pair_choices = sorted(
        (
            (login, names[pk])
            for pk, login in get_user_model()
            .objects.filter(pk__in=names)
            .values_list("pk", "username")
        ),
        key=lambda c: c[1],
    )
    if not first and not second and len(pair_choices) >= 2:
        # the matrix form opens on two different annotators, never on one twice
        context["a"], context["b"] = pair_choices[0][0], pair_choices[1][0]
    return context | {
        "stale_since": get_agreement_stale_since(project=project),
        "alerts": list_agreement_alerts(project=project),
        "annotators": annotators,
        "annotator_metrics": ANNOTATOR_METRICS,
        "bars": {
            m: bar_chart(m, label)
            for m, label in ANNOTATOR_METRICS.items()
            if m != "severe_rate_gap"
        },
        "pair_choices": pair_choices,
        "workload": get_workload(project=project),
    }


def confusion_rows(
    *, project, protocol: str, axis: str, first: str, second: str
) -> tuple[list, list]:
    """The confusion matrix as long rows (first's value, second's value, count) for downloads;
    the pair named by username."""
    first, second = _user_ids_by_username(first, second)
    matrix = (
        confusion_matrix(project=project, protocol=protocol, axis=axis, first=first, second=second)
        if first and second
        else {"categories": [], "rows": []}
    )
    rows = [
        (a, b, count)
        for a, cells in matrix["rows"]
        for b, (count, _) in zip(matrix["categories"], cells, strict=True)
    ]
    return ["first", "second", "count"], rows


def workload_rows(*, project) -> tuple[list, list]:
    """Cases per tier, the cost estimate and the cost per case in force behind it
    (``LABELING_COST_GOLD`` / ``LABELING_COST_TRIAGE`` of the project), and daily throughput as
    rows for downloads."""
    w = get_workload(project=project)
    rows = [("cases", t["kind"], t["tier"], t["cases"]) for t in w.tiers]
    rows.append(("estimated_cost_usd", "all", "", round(w.estimated_cost, 2)))
    rows.append(("cost_per_case_usd", "LABELING_COST_GOLD", Tier.GOLD.value, w.cost_gold))
    rows.append(("cost_per_case_usd", "LABELING_COST_TRIAGE", Tier.TRIAGE.value, w.cost_triage))
    rows += [("reviews_per_day", day, "", r) for day, r, _ in w.throughput]
    rows += [("labels_per_day", day, "", n) for day, _, n in w.throughput]
    return ["figure", "what", "tier", "value"], rows
