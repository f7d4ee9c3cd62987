"""Agreement figures for both protocols (DESIGN.md §8, seed 003), adapted for `scoring.agreement`.

Input is long-format rating rows — one row per (protocol, item, annotator, axis) with the scope
columns tier, task_type, domain and ISO week — and spot-check rows (did the second look agree?).
Each protocol contributes rows through a source function listed in ``RATING_SOURCES`` /
``SPOT_CHECK_SOURCES``. The figures:

* Krippendorff's α per axis (nominal or ordinal per the axis' scale; missing ratings allowed) and
  Fleiss' κ over the items that carry exactly three ratings, for every scope in ``SCOPES``;
* Cohen's κ per annotator pair (linear weights on ordinal axes), overall and per tier;
* the weekly TRIAGE spot-check disagreement rate;

each with a bootstrap 95 % CI (``AGREEMENT_BOOTSTRAP_RESAMPLES`` resamples of the scope's items,
seed 8821). Results are stored as :class:`~goldset.models.AgreementSnapshot` rows keyed on the
scope and stamped with a data version (a hash of the input rows), so a recompute over unchanged
data is a no-op and dashboards never compute.
"""

import hashlib
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import pandas as pd
from django.db import transaction
from django.utils.module_loading import import_string

from goldset.conf import tunable
from goldset.models import AgreementSnapshot, Tier, WebhookEvent
from goldset.rules.axes import AXES
from goldset.rules.jobs import AGREEMENT_DEBOUNCE_KEY, AGREEMENT_OUTBOX_KIND
from goldset.selectors.agreement import list_agreement_alerts
from goldset.services import outbox, webhooks
from scoring.agreement import (
    cohen_kappa_table,
    fleiss_kappa_counts,
    krippendorff_alpha_counts,
    percent_agreement_counts,
)

SEED = 8821
RATING_COLUMNS = [
    "protocol",
    "item",
    "annotator",
    "axis",
    "value",
    "tier",
    "task_type",
    "domain",
    "week",
]
SPOT_CHECK_COLUMNS = ["protocol", "item", "week", "agree"]
FACT_COLUMNS = ["protocol", "metric", "annotator", "value", "n_items"]
# Scopes every axis is cut by (empty tuple = all data). Trend charts read the week scopes.
SCOPES: tuple[tuple[str, ...], ...] = (
    (),
    ("tier",),
    ("tier", "task_type"),
    ("tier", "domain"),
    ("tier", "week"),
    ("tier", "task_type", "week"),
)
PAIR_SCOPES: tuple[tuple[str, ...], ...] = ((), ("tier",))


# The Celery task that runs recompute_agreement_snapshots (goldset.tasks).
RECOMPUTE_TASK = "goldset.recompute_agreement"

# Protocol adapters (goldset.services.agreement_sources): callables returning iterables of tuples
# in RATING_COLUMNS / SPOT_CHECK_COLUMNS / FACT_COLUMNS order.
RATING_SOURCES = [
    "goldset.services.agreement_sources.triple_review_ratings",
    "goldset.services.agreement_sources.answer_label_ratings",
]
SPOT_CHECK_SOURCES = [
    "goldset.services.agreement_sources.triple_spot_checks",
    "goldset.services.agreement_sources.answer_spot_checks",
]
FACT_SOURCES = ["goldset.services.agreement_sources.annotator_facts"]


def bootstrap_resamples() -> int:
    return tunable("AGREEMENT_BOOTSTRAP_RESAMPLES")


# ---------------------------------------------------------------- computing (no database)


def ratings_frame(rows) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=RATING_COLUMNS)
    for column in ("tier", "task_type", "domain", "week"):
        frame[column] = frame[column].fillna("").astype(str)
    return frame


def spot_check_frame(rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=SPOT_CHECK_COLUMNS)


def facts_frame(rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=FACT_COLUMNS)


def data_version(
    ratings: pd.DataFrame, spot_checks: pd.DataFrame, facts: pd.DataFrame | None = None
) -> str:
    digest = hashlib.sha256()
    facts = facts if facts is not None else facts_frame([])
    for frame, columns in (
        (ratings, RATING_COLUMNS),
        (spot_checks, SPOT_CHECK_COLUMNS),
        (facts, FACT_COLUMNS),
    ):
        ordered = frame.astype(str).sort_values(columns, kind="stable").reset_index(drop=True)
        digest.update(pd.util.hash_pandas_object(ordered, index=False).to_numpy().tobytes())
        digest.update(b"|")
    return digest.hexdigest()


@dataclass
class Figure:
    protocol: str
    axis: str
    metric: str
    value: float | None
    reason: str
    n_items: int
    n_annotators: int
    ci: tuple[float, float] | None = None
    scope: dict = field(default_factory=dict)
    subject: str = ""

    def as_snapshot(self, version: str) -> AgreementSnapshot:
        low, high = self.ci if self.ci else (None, None)
        return AgreementSnapshot(
            protocol=self.protocol,
            axis=self.axis,
            metric=self.metric,
            subject=self.subject,
            tier=self.scope.get("tier", ""),
            task_type=self.scope.get("task_type", ""),
            domain=self.scope.get("domain", ""),
            week=self.scope.get("week", ""),
            value=self.value,
            reason=(self.reason or "")[:200],
            ci_low=low,
            ci_high=high,
            n_items=self.n_items,
            n_annotators=self.n_annotators,
            data_version=version,
        )


def _groups(frame: pd.DataFrame, dims: tuple[str, ...]):
    if not dims:
        yield {}, frame
        return
    for key, sub in frame.groupby(list(dims), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        yield dict(zip(dims, key, strict=True)), sub


def _count_table(sub: pd.DataFrame, n_categories: int) -> np.ndarray:
    items = pd.factorize(sub["item"])[0]
    flat = np.bincount(
        items * n_categories + sub["code"].to_numpy(), minlength=(items.max() + 1) * n_categories
    )
    return flat.reshape(-1, n_categories)


def compute_figures(
    ratings: pd.DataFrame,
    spot_checks: pd.DataFrame,
    facts: pd.DataFrame | None = None,
    *,
    n_resamples: int,
    seed: int = SEED,
) -> list[Figure]:
    """Every figure for the given rows (pure: no database)."""
    figures: list[Figure] = []
    if facts is not None:
        figures += [
            Figure(p, "annotator", m, float(v), "", int(n), 1, None, {}, subject=str(a))
            for p, m, a, v, n in facts.itertuples(index=False)
        ]
    for (protocol, axis), rows in ratings.groupby(["protocol", "axis"], sort=True):
        scale = AXES[axis]
        rows = _coded(protocol, axis, rows)
        figures += _scope_figures(protocol, axis, scale, rows, n_resamples, seed)
        figures += _pair_figures(protocol, axis, scale, rows, n_resamples, seed)
        if axis == "severe_safety":
            figures += _severe_rate_gaps(protocol, rows)
    figures += _spot_check_figures(spot_checks)
    return figures


def _coded(protocol: str, axis: str, rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with ``code``, each value's position on the axis' scale (ValueError when a value
    is not on it)."""
    scale = AXES[axis]
    on_scale = rows["value"].isin(scale.categories)
    if not on_scale.all():
        unknown = sorted(set(rows["value"][~on_scale].astype(str)))
        raise ValueError(
            f"{protocol}/{axis}: values {unknown} are not on the scale {scale.categories}"
        )
    codes = pd.Categorical(rows["value"], categories=scale.categories).codes
    return rows.assign(code=codes.astype(np.int64))


def _result(result) -> dict:
    return {
        "value": result.value,
        "ci": list(result.ci) if result.ci else None,
        "reason": result.reason or "",
        "n_items": result.n_items,
    }


def summary_figures(
    ratings: pd.DataFrame, *, n_resamples: int | None = None, seed: int = SEED
) -> dict:
    """Overall (unscoped) agreement of these rating rows per protocol and axis — Krippendorff's
    α at the axis' level of measurement and percent agreement (share of agreeing rating pairs
    per item), each with a percentile bootstrap 95 % CI resampling items (``seed``, 8821) — as a
    JSON-ready dict ``{protocol: {axis: {...}}}``. Pure; ``scoring.agreement`` computes."""
    n = n_resamples or bootstrap_resamples()
    out: dict = {}
    for (protocol, axis), rows in ratings.groupby(["protocol", "axis"], sort=True):
        scale = AXES[axis]
        rows = _coded(protocol, axis, rows)
        counts = _count_table(rows, len(scale.categories))
        n_annotators = int(rows["annotator"].nunique())
        options = {"ci": True, "n_resamples": n, "seed": seed, "n_annotators": n_annotators}
        alpha = krippendorff_alpha_counts(
            counts, categories=scale.categories, level=scale.level, **options
        )
        percent = percent_agreement_counts(counts, **options)
        values = counts.sum(axis=0)
        out.setdefault(protocol, {})[axis] = {
            "ratings": len(rows),
            "items": len(counts),
            "annotators": n_annotators,
            "values": {c: int(v) for c, v in zip(scale.categories, values, strict=True) if v},
            "krippendorff_alpha": {"level": scale.level, **_result(alpha)},
            "percent_agreement": _result(percent),
        }
    return out


def _scope_figures(protocol, axis, scale, rows, n_resamples, seed):
    out = []
    for dims in SCOPES:
        for scope, sub in _groups(rows, dims):
            counts = _count_table(sub, len(scale.categories))
            n_annotators = int(sub["annotator"].nunique())
            alpha = krippendorff_alpha_counts(
                counts,
                categories=scale.categories,
                level=scale.level,
                ci=True,
                n_resamples=n_resamples,
                seed=seed,
                n_annotators=n_annotators,
            )
            out.append(
                Figure(
                    protocol,
                    axis,
                    "krippendorff_alpha",
                    alpha.value,
                    alpha.reason or "",
                    alpha.n_items,
                    n_annotators,
                    alpha.ci,
                    scope,
                )
            )
            three = counts[counts.sum(axis=1) == 3]
            if len(three):
                fleiss = fleiss_kappa_counts(
                    three, ci=True, n_resamples=n_resamples, seed=seed, n_annotators=n_annotators
                )
                out.append(
                    Figure(
                        protocol,
                        axis,
                        "fleiss_kappa",
                        fleiss.value,
                        fleiss.reason or "",
                        fleiss.n_items,
                        n_annotators,
                        fleiss.ci,
                        scope,
                    )
                )
    return out


def _pair_figures(protocol, axis, scale, rows, n_resamples, seed):
    """Cohen's κ for every annotator pair: one confusion table per pair, counted at once."""
    out = []
    v = len(scale.categories)
    for dims in PAIR_SCOPES:
        for scope, sub in _groups(rows, dims):
            codes, names = pd.factorize(sub["annotator"], sort=True)
            slim = pd.DataFrame(
                {"item": sub["item"].to_numpy(), "who": codes, "code": sub["code"].to_numpy()}
            )
            pairs = slim.merge(slim, on="item", suffixes=("_a", "_b"))
            pairs = pairs[pairs["who_a"] < pairs["who_b"]]
            pair_index, pair_keys = pd.factorize(
                pairs["who_a"].to_numpy() * len(names) + pairs["who_b"].to_numpy(), sort=True
            )
            cells = pair_index * v * v + pairs["code_a"].to_numpy() * v + pairs["code_b"].to_numpy()
            tables = np.bincount(cells, minlength=len(pair_keys) * v * v).reshape(-1, v, v)
            for key, table in zip(pair_keys, tables, strict=True):
                a, b = names[key // len(names)], names[key % len(names)]
                kappa = cohen_kappa_table(
                    table, weights=scale.pair_weights, ci=True, n_resamples=n_resamples, seed=seed
                )
                out.append(
                    Figure(
                        protocol,
                        axis,
                        "cohen_kappa",
                        kappa.value,
                        kappa.reason or "",
                        kappa.n_items,
                        2,
                        kappa.ci,
                        scope,
                        subject=f"{a}|{b}",
                    )
                )
    return out


def _severe_rate_gaps(protocol, rows) -> list[Figure]:
    """Each annotator's severe-label rate minus their co-annotators' rate on the same items."""
    marks = rows.assign(yes=(rows["value"] == "yes").astype(float))
    per_item = marks.groupby("item")["yes"].agg(["sum", "size"])
    marks = marks.join(per_item, on="item")
    marks = marks[marks["size"] >= 2]
    marks = marks.assign(co=(marks["sum"] - marks["yes"]) / (marks["size"] - 1))
    out = []
    for annotator, own in marks.groupby("annotator", sort=True):
        gap = float(own["yes"].mean() - own["co"].mean())
        out.append(
            Figure(
                protocol,
                "annotator",
                "severe_rate_gap",
                gap,
                "",
                len(own),
                1,
                None,
                {},
                subject=str(annotator),
            )
        )
    return out


def _spot_check_figures(spot_checks: pd.DataFrame) -> list[Figure]:
    out = []
    for (protocol, week), rows in spot_checks.groupby(["protocol", "week"], sort=True):
        n = len(rows)
        disagreements = int((~rows["agree"].astype(bool)).sum())
        out.append(
            Figure(
                protocol,
                "spot_check",
                "spot_check_disagreement",
                disagreements / n,
                "",
                n,
                0,
                None,
                {"tier": Tier.TRIAGE.value, "week": week},
                subject=str(disagreements),
            )
        )
    return out


# ---------------------------------------------------------------- storing


def collect_rows() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    def gather(paths):
        return chain.from_iterable(import_string(path)() for path in paths)

    return (
        ratings_frame(gather(RATING_SOURCES)),
        spot_check_frame(gather(SPOT_CHECK_SOURCES)),
        facts_frame(gather(FACT_SOURCES)),
    )


def store_agreement_snapshots(
    *,
    ratings: pd.DataFrame,
    spot_checks: pd.DataFrame,
    facts: pd.DataFrame | None = None,
    n_resamples: int | None = None,
) -> tuple[str, int]:
    """Replace the stored figures with those of these rows; a no-op when the data version is the
    one already stored. Returns (data version, number of snapshot rows)."""
    version = data_version(ratings, spot_checks, facts)
    existing = AgreementSnapshot.objects.values_list("data_version", flat=True).first()
    if existing == version:
        return version, AgreementSnapshot.objects.count()
    figures = compute_figures(
        ratings, spot_checks, facts, n_resamples=n_resamples or bootstrap_resamples()
    )
    watch_alerts = webhooks.wants(WebhookEvent.ALERT_RAISED)
    with transaction.atomic():
        before = _alerts_by_key() if watch_alerts else {}
        AgreementSnapshot.objects.all().delete()
        AgreementSnapshot.objects.bulk_create(
            (f.as_snapshot(version) for f in figures), batch_size=2000
        )
        if watch_alerts:
            _emit_raised_alerts(before)
    return version, len(figures)


def _alerts_by_key() -> dict:
    return {
        webhooks.alert_key(kind=a.kind, title=a.title, numbers=a.numbers): a
        for a in list_agreement_alerts()
    }


def _emit_raised_alerts(before: dict) -> None:
    """An ``alert.raised`` webhook event for each alert the new figures raise that the old
    ones did not (an alert still raised is not announced again)."""
    for key, alert in _alerts_by_key().items():
        if key not in before:
            webhooks.emit(
                WebhookEvent.ALERT_RAISED,
                webhooks.alert_data(
                    kind=alert.kind, title=alert.title, key=key, numbers=alert.numbers
                ),
            )


def recompute_agreement_snapshots() -> tuple[str, int]:
    """Collect rows from every protocol and store fresh figures (idempotent). Called by the task."""
    ratings, spot, facts = collect_rows()
    return store_agreement_snapshots(ratings=ratings, spot_checks=spot, facts=facts)


def schedule_agreement_recompute(*, now: bool = False) -> bool:
    """Ask for a recompute, recorded in the outbox inside the caller's transaction (no cache,
    no broker: a label or review commits when Redis is down, and the recompute is published when
    it returns). Changes within the debounce window (``AGREEMENT_DEBOUNCE_SECONDS``, 30 s) share
    one request, which runs when the window ends and so sees all of them; ``now=True`` (a lead's
    button) skips the window. Returns True when a new request was recorded. In the embedded
    mode the task runs in-process at commit."""
    if now:
        return outbox.enqueue(kind=AGREEMENT_OUTBOX_KIND) is not None
    delay = tunable("AGREEMENT_DEBOUNCE_SECONDS")
    return (
        outbox.enqueue(kind=AGREEMENT_OUTBOX_KIND, dedupe_key=AGREEMENT_DEBOUNCE_KEY, delay=delay)
        is not None
    )
