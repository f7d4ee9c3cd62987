"""Freezing gold versions.

:func:`store_frozen_version` is the low-level, atomic writer: it takes any iterable of gold row
dicts (DESIGN §9 gold JSONL shape), stores canonical rows in batches, renders every file, and
seals the version with its manifest. :func:`freeze_gold_version` selects the rows from the
curated gold set with the admin's filters and calls it.
"""

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import GoldsetError
from goldset.models import (
    ExportFormat,
    GoldVersion,
    GoldVersionRow,
    WebhookEvent,
    WorkingSlice,
)
from goldset.rules.exports import SNIPPET_FORMATS, SNIPPET_PERMISSION
from goldset.selectors.curation import (
    iter_gold_rows,
    list_gold_triples,
    superseded_pin_q,
    with_pin_status,
)
from goldset.services import exports, webhooks
from goldset.services.agreement import ratings_frame, summary_figures
from goldset.services.agreement_sources import (
    ANSWERS,
    TRIPLES,
    answer_label_frame,
    answer_label_ratings,
    triple_review_frame,
    triple_review_ratings,
)
from goldset.services.pairwise_exports import render_pairwise_gold
from goldset.services.probe_exports import render_adjudication_export
from goldset.services.project_settings import settings_in_force
from goldset.services.scoring_jobs import DEFAULT_SEED
from workbench.services.audit import record_event

ROW_BATCH = 5000
FREEZE_LOCK_KEY = 7_202_611  # pg_advisory_xact_lock key serialising freezes
REQUIRED_BLOCK_KEYS = ("block_id", "document_id", "version", "sha256")

# The project's protocol numbers a version's manifest records (``settings_in_force``): those
# that decided how its triples were reviewed and its answer records labeled, sampled and
# settled, and how its agreement figures were computed and judged.
MANIFEST_SETTINGS = (
    "KAPPA_GATE",
    "AGREEMENT_ALPHA_TARGET",
    "AGREEMENT_MIN_ITEMS",
    "AGREEMENT_BOOTSTRAP_SEED",
    "AGREEMENT_BOOTSTRAP_RESAMPLES",
    "CURATION_SPOT_CHECK_RATE",
    "ANSWER_SPOT_CHECK_RATE",
    "ANSWER_SPOT_CHECK_SEED",
    "AUDIT_SAMPLE_RATE",
    "AUDIT_SAMPLE_SEED",
    "QUEUE_SHUFFLE_SEED",
    "GOLD_REVIEWS_PER_TRIPLE",
    "TRIAGE_REVIEWS_PER_TRIPLE",
    "GOLD_LABELS_PER_ITEM",
    "TRIAGE_LABELS_PER_ITEM",
    "LABELING_COST_GOLD",
    "LABELING_COST_TRIAGE",
    "FAST_DECISION_SECONDS_GOLD",
    "FAST_DECISION_SECONDS_TRIAGE",
    "PCS_CALIBRATION",
)


@dataclass
class RowStats:
    count: int = 0
    by_domain: Counter = field(default_factory=Counter)
    by_tier: Counter = field(default_factory=Counter)
    by_source: Counter = field(default_factory=Counter)
    by_task_type: Counter = field(default_factory=Counter)


@dataclass(frozen=True)
class VersionDiff:
    added: list[str]
    removed: list[str]
    changed: list[str]

    def as_dict(self) -> dict:
        return {"added": self.added, "removed": self.removed, "changed": self.changed}


def _check_row(row, index: int) -> tuple[str, dict]:
    where = f"row {index + 1}"
    if not isinstance(row, dict):
        raise GoldsetError(f"{where}: expected a gold row object")
    triple_id = row.get("id")
    if not isinstance(triple_id, str) or not triple_id:
        raise GoldsetError(f"{where}: id: missing (expected the triple id)")
    block = row.get("expected_block")
    if not isinstance(block, dict) or any(block.get(k) in (None, "") for k in REQUIRED_BLOCK_KEYS):
        raise GoldsetError(
            f"{where} ({triple_id}): expected_block needs {', '.join(REQUIRED_BLOCK_KEYS)}"
        )
    if not isinstance(row.get("question"), str) or not row["question"]:
        raise GoldsetError(f"{where} ({triple_id}): question: missing")
    return triple_id, row.get("metadata") or {}


ROW_COLUMNS = (
    "version_id",
    "position",
    "triple_id",
    "line",
    "sha256",
    "domain",
    "tier",
    "source",
    "task_type",
    "block_id",
)


def _insert_rows(batch: list[tuple]) -> None:
    """Insert row tuples (ROW_COLUMNS order): COPY on PostgreSQL, bulk INSERT elsewhere."""
    if not batch:
        return
    if connection.vendor == "postgresql":
        table = GoldVersionRow._meta.db_table
        with connection.cursor() as cursor:
            # The table and column names are constants, never input.
            with cursor.cursor.copy(f"COPY {table} ({', '.join(ROW_COLUMNS)}) FROM STDIN") as copy:
                for values in batch:
                    copy.write_row(values)
        return
    GoldVersionRow.objects.bulk_create(
        GoldVersionRow(**dict(zip(ROW_COLUMNS, values, strict=True))) for values in batch
    )


def _lock_freezes(project) -> None:
    """Serialise the freezes of one project (version numbers are per project; two projects
    freeze at once)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [FREEZE_LOCK_KEY, project.pk])


def latest_version(*, project) -> GoldVersion | None:
    """The project's newest sealed version (None before its first freeze)."""
    return GoldVersion.objects.filter(project=project, sealed=True).order_by("-number").first()


def diff_against(parent: GoldVersion | None, current: dict[str, str]) -> VersionDiff:
    """Diff row checksums ``{triple_id: sha256}`` against a stored version."""
    before = dict(parent.rows.values_list("triple_id", "sha256")) if parent else {}
    return VersionDiff(
        added=sorted(set(current) - set(before)),
        removed=sorted(set(before) - set(current)),
        changed=sorted(t for t, sha in current.items() if t in before and before[t] != sha),
    )


class NothingToFreeze(GoldsetError):
    """The selection equals the latest version row for row (same triples, same checksums):
    nothing was created. A double-clicked freeze ends here (freezes are serialised)."""

    def __init__(self, latest: GoldVersion):
        self.latest = latest
        super().__init__(
            f"nothing to freeze: the selection is identical to {latest.label} "
            f"({latest.row_count} triples, same checksums); no version was created"
        )


@transaction.atomic
def store_frozen_version(
    *,
    project,
    rows: Iterable[dict],
    actor,
    filters: dict | None = None,
    seeds: dict | None = None,
    agreement: dict | None = None,
    superseded: dict | None = None,
    note: str = "",
    extra_files: dict[str, Callable] | None = None,
    now: dt.datetime | None = None,
) -> GoldVersion:
    """Store a new sealed gold version of ``project`` from ``rows`` (streamed, inserted in
    batches), numbered after the project's latest (v1 is each project's first).

    Atomic: rows, files and manifest are all stored or none. A project's freezes are serialised
    with a PostgreSQL advisory lock, so its version numbers are consecutive under concurrency. Rows keep
    the iterable's order; the same rows in the same order always give byte-identical data files
    (version numbers and times live only in the manifest and file names). ``superseded`` (the
    curated freeze's :func:`superseded_manifest`) is recorded as ``superseded_pins``. Raises
    GoldsetError
    for a malformed or duplicate row, or a pinned block version missing from the corpus.
    ``extra_files`` maps an ExportFormat to ``fn(version) -> iterable of bytes`` for exports
    other areas provide (e.g. the adjudication export). The manifest records the project's
    settings in force at the freeze (``settings_in_force``: ``MANIFEST_SETTINGS``)."""
    _lock_freezes(project)
    parent = latest_version(project=project)
    now = now or timezone.now()
    version = GoldVersion.objects.create(
        project=project,
        number=(parent.number + 1) if parent else 1,
        parent=parent,
        filters=filters or {},
        seeds=seeds or {},
        note=note,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    stats = RowStats()
    checksums: dict[str, str] = {}
    gold_file = exports.FileSpool()  # the gold JSONL file is the rows, written as they come
    qrels_file = exports.FileSpool()  # and the TREC qrels, one judgement per row
    description = "Goldset Workbench gold set" + (
        f" ({exports.canonical_json(filters)})" if filters else ""
    )
    # and the Unrag, packet and question files, batch by batch of the same rows (issue 26)
    snippets = exports.SnippetFiles(version, description=description)
    pending: list[dict] = []
    batch: list[tuple] = []
    for index, row in enumerate(rows):
        triple_id, meta = _check_row(row, index)
        if triple_id in checksums:
            raise GoldsetError(f"row {index + 1}: triple {triple_id} appears twice")
        line = exports.canonical_json(row)
        encoded = line.encode("utf-8")
        sha = exports.sha256_bytes(encoded)
        gold_file.write(encoded + b"\n")
        qrels_file.write(exports.qrels_line(row))
        checksums[triple_id] = sha
        stats.count += 1
        for counter, key in (
            (stats.by_domain, "domain"),
            (stats.by_tier, "tier"),
            (stats.by_source, "source"),
            (stats.by_task_type, "task_type"),
        ):
            counter[str(meta.get(key) or "")] += 1
        batch.append(
            (
                version.pk,
                index,
                triple_id,
                line,
                sha,
                str(meta.get("domain") or ""),
                str(meta.get("tier") or ""),
                str(meta.get("source") or ""),
                str(meta.get("task_type") or ""),
                row["expected_block"]["block_id"],
            )
        )
        if len(batch) >= ROW_BATCH:
            _insert_rows(batch)
            batch = []
        pending.append(row)
        if len(pending) >= exports.PIN_BATCH:
            snippets.add(pending)
            pending = []
    _insert_rows(batch)
    snippets.add(pending)
    del pending
    if not stats.count:
        raise GoldsetError("nothing to freeze: no gold triples match these filters")
    diff = diff_against(parent, checksums)
    del checksums
    if parent is not None and not (diff.added or diff.removed or diff.changed):
        raise NothingToFreeze(parent)

    rows_sha256 = gold_file.digest.hexdigest()
    files = [
        exports.store_spool(
            version=version, fmt=ExportFormat.GOLD_JSONL, redacted=False, spool=gold_file
        ),
        exports.store_spool(
            version=version, fmt=ExportFormat.TREC_QRELS, redacted=False, spool=qrels_file
        ),
    ]
    spools = snippets.finish()
    for (fmt, redacted), spool in spools.items():
        files.append(exports.store_spool(version=version, fmt=fmt, redacted=redacted, spool=spool))
    for fmt, render in (extra_files or {}).items():
        files.append(
            exports.store_file(version=version, fmt=fmt, redacted=False, content=render(version))
        )

    manifest = {
        "gold_version": version.number,
        "label": version.label,
        "project": project.slug,
        "parent_version": parent.number if parent else None,
        "created_by": getattr(actor, "username", None) or "system",
        "created_at": now.isoformat(),
        "note": note,
        "filters": filters or {},
        "seeds": seeds or {},
        "agreement": agreement or {},
        "settings_in_force": settings_in_force(project=project, names=MANIFEST_SETTINGS),
        **({"superseded_pins": superseded} if superseded is not None else {}),
        "counts": {
            "triples": stats.count,
            "by_domain": dict(sorted(stats.by_domain.items())),
            "by_tier": dict(sorted(stats.by_tier.items())),
            "by_source": dict(sorted(stats.by_source.items())),
            "by_task_type": dict(sorted(stats.by_task_type.items())),
        },
        "diff": {
            "against": parent.number if parent else None,
            **diff.as_dict(),
        },
        "rows_sha256": rows_sha256,
        "canonical_json": "sort_keys, separators (',', ':'), UTF-8, one row per line",
        "files": [
            {
                "format": f.format,
                "redacted": f.redacted,
                "filename": f.filename,
                "sha256": f.sha256,
                "size": f.size,
            }
            for f in files
        ],
        "redaction": {
            "permission": SNIPPET_PERMISSION,
            "formats_with_snippets": [str(f) for f in SNIPPET_FORMATS],
            "policy": (
                "Users without the permission receive the redacted variant: Unrag documents "
                "carry a loaderRef instead of content, evidence passages carry no text "
                "(text_redacted: true). Checksums of both variants are listed above."
            ),
        },
    }
    manifest_file = exports.store_file(
        version=version,
        fmt=ExportFormat.MANIFEST,
        redacted=False,
        content=[exports.canonical_bytes(manifest) + b"\n"],
    )
    version.manifest = manifest
    version.row_count = stats.count
    version.rows_sha256 = rows_sha256
    version.manifest_sha256 = manifest_file.sha256
    version.sealed = True
    version.save(
        update_fields=["manifest", "row_count", "rows_sha256", "manifest_sha256", "sealed"]
    )
    record_event(
        actor=actor,
        verb="gold_version_frozen",
        obj=version,
        detail={
            "number": version.number,
            "triples": stats.count,
            "rows_sha256": rows_sha256,
            "added": len(diff.added),
            "removed": len(diff.removed),
            "changed": len(diff.changed),
            "filters": filters or {},
        },
    )
    # Its links load the whole URL conf (SAML, the API schema: about 2 s of CPU in a fresh
    # process), so the payload is only built when an endpoint subscribes.
    if webhooks.wants(WebhookEvent.GOLD_VERSION_FROZEN, project=version.project):
        webhooks.emit(
            WebhookEvent.GOLD_VERSION_FROZEN,
            webhooks.gold_version_data(version),
            project=version.project,
            now=now,
        )
    return version


# ---------------------------------------------------------------- freezing the curated gold set


@dataclass(frozen=True)
class FreezeFilters:
    """What an admin chose on the freeze page. ``working_slice`` is a quarter ("2026Q1")."""

    domain: str = ""
    tier: str = ""
    source: str = ""
    public_only: bool = False
    working_slice: str = ""
    include_superseded: bool = False

    def as_dict(self) -> dict:
        return {
            "domain": self.domain or None,
            "tier": self.tier or None,
            "source": self.source or None,
            "public_only": self.public_only,
            "working_slice": self.working_slice or None,
            "include_superseded": self.include_superseded,
        }


def _filtered_gold(filters: FreezeFilters, *, project):
    """The project's gold triples the filters select, superseded pins or not, annotated with
    ``newest_version`` / ``superseded_pin`` (the domain and working slice are the project's)."""
    triples = with_pin_status(
        list_gold_triples(
            domain=filters.domain or None,
            tier=filters.tier or None,
            source=filters.source or None,
            public_only=filters.public_only,
        ).filter(project=project)
    )
    if filters.working_slice:
        chosen = WorkingSlice.objects.filter(project=project, quarter=filters.working_slice).first()
        if chosen is None:
            raise GoldsetError(f"there is no working slice {filters.working_slice}")
        triples = triples.filter(pk__in=chosen.triple_ids)
    return triples


def selected_triples(filters: FreezeFilters, *, project):
    """The project's gold triples the filters select (curation's selector: state gold, never a revoked
    customer's triple), restricted to a working slice when one is named. Triples pinned to a
    superseded block version (issue 12) are left out unless ``include_superseded``: an admin
    confirms them after seeing them listed in the preview."""
    triples = _filtered_gold(filters, project=project)
    if not filters.include_superseded:
        triples = triples.exclude(superseded_pin_q())
    return triples


@dataclass(frozen=True)
class SupersededPinRow:
    triple_id: str
    block_id: str
    pinned_version: int
    newest_version: int
    reason: str

    def as_dict(self) -> dict:
        return {
            "id": self.triple_id,
            "block_id": self.block_id,
            "pinned_version": self.pinned_version,
            "current_version": self.newest_version,
            "reason": self.reason,
        }


def superseded_pins(filters: FreezeFilters, *, project) -> list[SupersededPinRow]:
    """The gold triples the filters match whose pin is superseded, whether or not the freeze
    includes them (one query)."""
    rows = (
        _filtered_gold(filters, project=project)
        .filter(superseded_pin_q())
        .values_list(
            "external_id",
            "current_revision__expected_block_version__block__block_id",
            "current_revision__expected_block_version__version",
            "newest_version",
            "current_revision__superseded_reason",
        )
        .order_by("external_id")
    )
    return [SupersededPinRow(*row) for row in rows]


def superseded_manifest(filters: FreezeFilters, *, project) -> dict:
    """What the manifest says about superseded pins: whether they were included, and which."""
    return {
        "included": filters.include_superseded,
        "triples": [row.as_dict() for row in superseded_pins(filters, project=project)],
    }


def selected_rows(filters: FreezeFilters, *, project):
    """The gold rows of the selected triples, streamed from plain columns (issue 26: no model
    objects for a hundred thousand triples and their joins)."""
    return iter_gold_rows(selected_triples(filters, project=project), batch=ROW_BATCH)


def freeze_seeds(filters: FreezeFilters, *, project) -> dict:
    seeds = {"bootstrap_ci": DEFAULT_SEED}
    if filters.working_slice:
        chosen = WorkingSlice.objects.filter(project=project, quarter=filters.working_slice).first()
        if chosen is not None:
            seeds["working_slice"] = chosen.seed
    return seeds


AGREEMENT_METHOD = (
    "Inter-rater agreement of the independent judgements behind this version, taken before "
    "resolution: Krippendorff's alpha (nominal for verdicts and acceptability, ordinal for "
    "grounding) and percent agreement (share of agreeing rating pairs per item), over items "
    "rated at least twice, each with a percentile bootstrap 95 % CI resampling items. "
    "A value of null gives its reason (e.g. every rating alike: alpha is 0/0)."
)


def agreement_summary(filters: FreezeFilters, *, project) -> dict:
    """Agreement figures that mean something (issue 12 item 3), via the agreement service's
    adapters and ``scoring.agreement``:

    * ``triple_reviews``: every review of every revision of the triples this version freezes —
      flags on earlier revisions and spot-check second looks included — as verdict ratings per
      revision, i.e. agreement *before* resolution (the final reviews of gold triples alone are
      all confirmations by construction, which says nothing);
    * ``answer_labels``: the production answer labels at freeze time (acceptability, grounding,
      severe safety). Answer records are not rows of a gold version, so this is the labelling
      team's agreement when the version was frozen, stated as such.

    Bootstrap seed and resamples: the project's ``AGREEMENT_BOOTSTRAP_SEED`` (8821) and
    ``AGREEMENT_BOOTSTRAP_RESAMPLES``, recorded in the summary. Only the project's reviews and
    labels count."""
    triples = selected_triples(filters, project=project).values("pk")
    n_resamples = tunable("AGREEMENT_BOOTSTRAP_RESAMPLES", project=project)
    seed = tunable("AGREEMENT_BOOTSTRAP_SEED", project=project)
    # Columnar COPY reads on PostgreSQL (issue 26): categorical columns instead of a tuple per
    # rating; one frame at a time, the reviews' dropped before the labels' is read.
    columnar = connection.vendor == "postgresql"
    reviews = summary_figures(
        triple_review_frame(project=project, triples=triples)
        if columnar
        else ratings_frame(triple_review_ratings(project=project, triples=triples)),
        n_resamples=n_resamples,
        seed=seed,
    )
    labels = summary_figures(
        answer_label_frame(project=project)
        if columnar
        else ratings_frame(answer_label_ratings(project=project)),
        n_resamples=n_resamples,
        seed=seed,
    )
    return {
        "method": AGREEMENT_METHOD,
        "bootstrap": {"seed": seed, "resamples": n_resamples, "level": 0.95},
        "triple_reviews": {
            "scope": "every review of every revision of this version's triples, before "
            "resolution (spot checks included); one item per revision",
            **reviews.get(TRIPLES, {}).get("verdict", {"ratings": 0}),
        },
        "answer_labels": {
            "scope": "all production answer labels at freeze time (calibration excluded); one "
            "item per answer record",
            "axes": labels.get(ANSWERS, {}),
        },
    }


@dataclass(frozen=True)
class FreezePreview:
    count: int
    by_domain: dict
    by_tier: dict
    by_source: dict
    against: int | None
    diff: VersionDiff
    superseded: list[SupersededPinRow] = field(default_factory=list)
    include_superseded: bool = False


def preview_freeze(*, project, filters: FreezeFilters) -> FreezePreview:
    """Counts and the diff against the project's latest version, without storing anything, and every
    matching gold triple pinned to a superseded block version (included or left out, as
    ``filters.include_superseded`` says)."""
    stats = RowStats()
    checksums = {}
    for row in selected_rows(filters, project=project):
        meta = row.get("metadata") or {}
        stats.count += 1
        stats.by_domain[meta.get("domain") or ""] += 1
        stats.by_tier[meta.get("tier") or ""] += 1
        stats.by_source[meta.get("source") or ""] += 1
        checksums[row["id"]] = exports.sha256_bytes(exports.canonical_bytes(row))
    parent = latest_version(project=project)
    return FreezePreview(
        count=stats.count,
        by_domain=dict(sorted(stats.by_domain.items())),
        by_tier=dict(sorted(stats.by_tier.items())),
        by_source=dict(sorted(stats.by_source.items())),
        against=parent.number if parent else None,
        diff=diff_against(parent, checksums),
        superseded=superseded_pins(filters, project=project),
        include_superseded=filters.include_superseded,
    )


def freeze_gold_version(
    *, project, filters: FreezeFilters, actor, note: str = "", extra_files=None
) -> GoldVersion:
    """Freeze the project's gold triples the filters select as its next version (atomic; see
    :func:`store_frozen_version`). Revoked customers' triples are never selected; triples
    pinned to superseded block versions only with ``filters.include_superseded`` (the manifest
    lists them either way)."""
    extra = {
        ExportFormat.ADJUDICATION: render_adjudication_export,
        ExportFormat.PAIRWISE_GOLD: render_pairwise_gold,
        **(extra_files or {}),
    }
    return store_frozen_version(
        project=project,
        rows=selected_rows(filters, project=project),
        actor=actor,
        filters=filters.as_dict(),
        seeds=freeze_seeds(filters, project=project),
        agreement=agreement_summary(filters, project=project),
        superseded=superseded_manifest(filters, project=project),
        note=note,
        extra_files=extra,
    )
