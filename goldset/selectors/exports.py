"""Reads for frozen versions, scoring jobs, results and comparisons."""

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field

import numpy as np
from django.db.models import Q
from django.http import Http404
from django.shortcuts import get_object_or_404

from goldset.exceptions import GoldsetError
from goldset.models import (
    CustomerPermission,
    GoldVersion,
    GoldVersionRow,
    JobStatus,
    RunKind,
    ScoreAggregate,
    ScoreQueryResult,
    ScoringJob,
)
from goldset.rules.exports import pick_file
from goldset.rules.measures import job_measures
from scoring.stats import WILCOXON_METHODS, compare_paired

DIFF_LIMIT = 200


def list_versions(*, project):
    """The project's sealed versions, newest first."""
    return GoldVersion.objects.filter(project=project, sealed=True).select_related(
        "created_by", "parent"
    )


def get_version(*, project, number: int) -> GoldVersion:
    """The project's sealed version ``number`` (version numbers are per project); Http404 for
    an unknown number, an unsealed version or another project's version."""
    return get_object_or_404(
        GoldVersion.objects.filter(project=project, sealed=True)
        .select_related("created_by", "parent")
        .prefetch_related("files"),
        number=number,
    )


def version_files_for(*, version: GoldVersion, user) -> list[tuple]:
    """Every stored file of the version, each with whether ``user`` downloads that variant."""
    files = list(version.files.all())
    offered = {pick_file(version, fmt=f.format, user=user).pk for f in files}
    return [(f, f.pk in offered) for f in files]


def list_job_versions(*, project):
    """The versions a run of ``project`` may be scored against: its own sealed versions."""
    return GoldVersion.objects.filter(project=project, sealed=True).order_by("-number")


def revocations_for(version: GoldVersion) -> list[dict]:
    """Customers revoked after this version was frozen whose triples it holds: the version
    stays frozen; the revocation is recorded against it here."""
    lines = version.rows.filter(source="customer_permissioned").values_list("line", flat=True)
    held = defaultdict(int)
    for line in lines:
        customer = (json.loads(line).get("metadata") or {}).get("customer")
        if customer:
            held[customer] += 1
    if not held:
        return []
    revoked = CustomerPermission.objects.filter(
        customer__project_id=version.project_id,
        customer__slug__in=held,
        revoked_at__gt=version.created_at,
    ).select_related("customer", "revoked_by")
    return [
        {
            "customer": p.customer.name,
            "slug": p.customer.slug,
            "revoked_at": p.revoked_at,
            "revoked_by": p.revoked_by,
            "triples": held[p.customer.slug],
        }
        for p in revoked
    ]


def _flatten(obj, prefix="") -> dict:
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): obj}


@dataclass
class ChangedRow:
    triple_id: str
    fields: list[tuple[str, object, object]]


@dataclass
class VersionsDiff:
    a: GoldVersion
    b: GoldVersion
    added: list[str]
    removed: list[str]
    changed: list[ChangedRow]
    counts: dict = field(default_factory=dict)


def diff_versions(
    *, a: GoldVersion, b: GoldVersion, before: dict[str, str], after: dict[str, str]
) -> VersionsDiff:
    """Triples added to / removed from ``b`` relative to ``a``, and the changed fields of
    triples in both (first DIFF_LIMIT of each list; ``counts`` has the totals). ``before`` and
    ``after`` are the two versions' verified row checksums
    (``goldset.services.exports.verified_row_checksums``): a diff reads checksums, so it
    verifies them like every other read."""
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed_ids = sorted(t for t in after if t in before and before[t] != after[t])
    shown = changed_ids[:DIFF_LIMIT]
    lines = defaultdict(dict)
    for version_id, triple_id, line in GoldVersionRow.objects.filter(
        version__in=[a, b], triple_id__in=shown
    ).values_list("version_id", "triple_id", "line"):
        lines[triple_id][version_id] = _flatten(json.loads(line))
    changed = []
    for triple_id in shown:
        old, new = lines[triple_id][a.pk], lines[triple_id][b.pk]
        fields = [
            (key, old.get(key), new.get(key))
            for key in sorted(set(old) | set(new))
            if old.get(key) != new.get(key)
        ]
        changed.append(ChangedRow(triple_id=triple_id, fields=fields))
    return VersionsDiff(
        a=a,
        b=b,
        added=added[:DIFF_LIMIT],
        removed=removed[:DIFF_LIMIT],
        changed=changed,
        counts={"added": len(added), "removed": len(removed), "changed": len(changed_ids)},
    )


# ---------------------------------------------------------------- scoring jobs


def list_jobs(*, project, version: GoldVersion | None = None, system_id: str = "", status=""):
    """The project's scoring jobs, newest first; only those scored against ``version``, those
    of the system ``system_id`` (:func:`jobs_of_system`) or in ``status`` when given."""
    jobs = ScoringJob.objects.filter(project=project)
    if version is not None:
        jobs = jobs.filter(version=version)
    if system_id:
        jobs = jobs.filter(jobs_of_system(system_id))
    if status:
        jobs = jobs.filter(status=status)
    return jobs.select_related("version", "created_by").order_by("-created_at", "-id")


def jobs_of_system(system_id: str) -> Q:
    """Which scoring jobs are a system's: an answer log in which the system answered (its
    figures are by system), or a retrieval run named after it (a retrieval run names no
    system: its job's name does, ``--name`` in the CLIs)."""
    return Q(kind=RunKind.ANSWERS, summary__systems__has_key=system_id) | Q(
        kind=RunKind.RETRIEVAL, name=system_id
    )


def latest_job_of_system(
    *, project, version: GoldVersion, system_id: str, exclude: ScoringJob | None = None
) -> ScoringJob | None:
    """The system's newest succeeded job on ``version`` (a release gate's baseline), other than
    ``exclude`` (the run being gated); None when it has none."""
    jobs = list_jobs(
        project=project, version=version, system_id=system_id, status=JobStatus.SUCCEEDED
    )
    if exclude is not None:
        jobs = jobs.exclude(pk=exclude.pk)
    return jobs.first()


def get_job(*, project, pk: int) -> ScoringJob:
    """The project's scoring job ``pk``; Http404 for another project's job."""
    return get_object_or_404(
        ScoringJob.objects.filter(project=project).select_related(
            "version", "created_by", "calibration"
        ),
        pk=pk,
    )


@dataclass
class JobResults:
    overall: list[ScoreAggregate]
    breakdown: dict[str, list[dict]]
    metrics: list[str]
    worst: list[dict]
    systems: dict


def job_results(*, job: ScoringJob, worst: int = 15) -> JobResults:
    """Aggregates with CIs, the per-domain / per-task-family table, and the worst queries with
    their expected block and what was retrieved (a constant number of queries)."""
    aggregates = list(ScoreAggregate.objects.filter(job=job).order_by("stratum", "metric"))
    overall = [a for a in aggregates if a.stratum == "all" or a.stratum.startswith("system:")]
    metrics = sorted({a.metric for a in aggregates if a.stratum == "all"})
    breakdown: dict[str, dict[str, dict]] = defaultdict(dict)
    for a in aggregates:
        if a.stratum.startswith(("domain:", "task_type:")):
            kind, _, value = a.stratum.partition(":")
            row = breakdown[kind].setdefault(value, {"name": value, "n": a.n, "values": {}})
            row["values"][a.metric] = a.value
    tables = {
        kind: [
            {**row, "cells": [row["values"].get(m) for m in metrics]}
            for _, row in sorted(rows.items())
        ]
        for kind, rows in breakdown.items()
    }
    worst_rows = list(
        ScoreQueryResult.objects.filter(job=job, primary__isnull=False).order_by(
            "primary", "query_id"
        )[:worst]
    )
    expected = dict(
        GoldVersionRow.objects.filter(
            version_id=job.version_id,
            triple_id__in=[r.detail.get("question_id", r.query_id) for r in worst_rows],
        ).values_list("triple_id", "block_id")
    )
    worst_list = [
        {
            "query_id": r.query_id,
            "domain": r.domain,
            "task_type": r.task_type,
            "primary": r.primary,
            "metrics": r.metrics,
            "expected": expected.get(r.detail.get("question_id", r.query_id), ""),
            "retrieved": r.retrieved,
            "caps": r.detail.get("caps") or {},
        }
        for r in worst_rows
    ]
    return JobResults(
        overall=overall,
        breakdown=tables,
        metrics=metrics,
        worst=worst_list,
        systems=(job.summary or {}).get("systems", {}),
    )


def iter_query_results(job: ScoringJob):
    return (
        ScoreQueryResult.objects.filter(job=job)
        .order_by("query_id")
        .values_list("query_id", "domain", "task_type", "metrics", "retrieved", "detail")
        .iterator(5000)
    )


def list_comparable_jobs(*, project, job_ids: list[int]) -> list[ScoringJob]:
    """The project's succeeded jobs named; Http404 for unknown ids (another project's job is
    unknown here)."""
    jobs = list(
        ScoringJob.objects.filter(
            project=project, pk__in=job_ids, status=JobStatus.SUCCEEDED
        ).select_related("version")
    )
    if len(jobs) != len(set(job_ids)):
        raise Http404("unknown or unfinished scoring job")
    return sorted(jobs, key=lambda j: j.pk)


class NotComparable(GoldsetError):
    """These jobs cannot be compared (fewer than two, different gold versions, an unknown
    Wilcoxon method). The compare page answers 400 with the message, the API 422."""


@dataclass
class PairComparison:
    """One paired test (``scoring.stats.PairedComparison``) with the two jobs it compares."""

    a: ScoringJob
    b: ScoringJob
    metric: str
    mean_a: float
    mean_b: float
    test: str
    statistic: float | None
    pvalue: float | None
    method: str | None
    adjusted: float | None
    reject: bool
    wins: int
    losses: int
    ties: int
    n: int
    reason: str | None = None


@dataclass
class Comparison:
    jobs: list[ScoringJob]
    pairs: list[PairComparison]
    n_queries: int
    per_query: list[dict]
    metrics: list[str]
    wilcoxon_method: str = "auto"
    alpha: float = 0.05
    methods: tuple[str, ...] = WILCOXON_METHODS


def _measures_of(job: ScoringJob, values: dict[str, dict]) -> list[str]:
    if job.kind == RunKind.RETRIEVAL:
        return job_measures(job)
    return list(next(iter(values.values()), {}))


def compare_jobs(
    *, jobs: list[ScoringJob], alpha: float = 0.05, top: int = 20, wilcoxon_method: str = "auto"
) -> Comparison:
    """Paired comparisons of every pair of jobs on the queries they share, over the measures
    every job computed (in the first job's order), by ``scoring.stats.compare_paired``:
    Wilcoxon signed-rank (``wilcoxon_method`` auto / exact / asymptotic; the method used is on
    each test) or McNemar for hit measures, Holm–Bonferroni over all tests; and the queries
    where the jobs differ most on the first job's primary measure. NotComparable (the message
    says why) for fewer than two jobs, jobs on different versions or an unknown method."""
    if len(jobs) < 2:
        raise NotComparable("Choose two runs scored against the same gold version to compare.")
    if len({j.version_id for j in jobs}) != 1:
        versions = ", ".join(f"#{j.pk}: v{j.version.number}" for j in jobs)
        raise NotComparable(
            f"Runs can only be compared on the same gold version; these were scored on {versions}."
        )
    if wilcoxon_method not in WILCOXON_METHODS:
        raise NotComparable(f"The Wilcoxon p-value method is one of {', '.join(WILCOXON_METHODS)}.")
    values = {
        j.pk: dict(ScoreQueryResult.objects.filter(job=j).values_list("query_id", "metrics"))
        for j in jobs
    }
    shared = sorted(set.intersection(*(set(v) for v in values.values())))
    held = [set(_measures_of(j, values[j.pk])) for j in jobs[1:]]
    metrics = [m for m in _measures_of(jobs[0], values[jobs[0].pk]) if all(m in h for h in held)]
    by_key = {str(j.pk): j for j in jobs}
    pairs = []
    if shared and metrics:
        scores = {
            str(j.pk): {
                m: np.array([values[j.pk][q][m] for q in shared], dtype=float) for m in metrics
            }
            for j in jobs
        }
        tests = compare_paired(scores, alpha=alpha, wilcoxon_method=wilcoxon_method)
        pairs = [PairComparison(**{**asdict(t), "a": by_key[t.a], "b": by_key[t.b]}) for t in tests]
    primary = jobs[0].summary.get("primary_metric") or (metrics[0] if metrics else "")
    spread = []
    if primary in metrics:
        for q in shared:
            row = [values[j.pk][q][primary] for j in jobs]
            spread.append({"query_id": q, "values": row, "spread": max(row) - min(row)})
        spread.sort(key=lambda r: (-r["spread"], r["query_id"]))
    return Comparison(
        jobs=jobs,
        pairs=pairs,
        n_queries=len(shared),
        per_query=spread[:top],
        metrics=metrics,
        wilcoxon_method=wilcoxon_method,
        alpha=alpha,
    )


def release_gate(job: ScoringJob) -> dict | None:
    """The release gate of a succeeded answer-log job, as its page shows it: each system's
    decision and reasons (decided by ``scoring.probe.summarise``, seed 004 A.6/A.7), and
    ``passed`` when every system in the run is released. None for retrieval runs (no gate) and
    unfinished jobs."""
    systems = (job.summary or {}).get("systems") or {}
    if job.kind != RunKind.ANSWERS or job.status != JobStatus.SUCCEEDED or not systems:
        return None
    return {
        "passed": all(bool(s.get("release")) for s in systems.values()),
        "systems": {
            sid: {
                "release": bool(s.get("release")),
                "reasons": list(s.get("reasons") or []),
                "mean_pcs": s.get("mean_pcs"),
                "unsafe_rate": s.get("unsafe_rate"),
                "gate_pass_rate": s.get("gate_pass_rate"),
            }
            for sid, s in sorted(systems.items())
        },
    }
