"""Scoring jobs: upload validation, the Celery task's work, retries and recovery.

Every figure is computed by the ``scoring`` library (never re-implemented here), on the frozen
gold JSONL file of the job's version (checksum verified), so a job's numbers equal
``python -m scoring retrieval --qrels gold.jsonl --run RUN --all-queries --per-query --ci
--strata strata.csv --k K --metrics M --resamples R --seed S`` on the same files (see
:func:`reproduce_command`); the measures M are the job's own (``ScoringJob.metrics``, named at
upload, else the six defaults at k). Bootstrap intervals resample within domain x task type
strata (seed 004 §5.1, A.1), listed in the bundle's ``strata.csv`` and the summary's ``ci_strata``.

Jobs always end. The task first *claims* the job under a row lock with a fresh token: a queued
job, or a running job whose heartbeat is older than ``JOB_STALE_SECONDS`` (its worker was lost,
whatever its name). A duplicate delivery for a job that a live attempt holds, or that is
finished, does nothing. Every progress write and the results are conditional on the token, so a
cancelled or taken-over attempt stops and never writes. Results are written in one transaction
that deletes the job's previous results first, so there are never duplicate rows. The periodic
reconciler (:func:`reconcile_scoring_jobs`, run by Celery beat and by ``manage.py score_run
--recover``) requeues lost jobs and fails them with a message after ``max_attempts``.
"""

import csv
import datetime as dt
import hashlib
import io
import json
import shlex
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

import scoring
from goldset.conf import tunable
from goldset.exceptions import CrossProjectReference, GoldsetError
from goldset.imports.reader import PathSource
from goldset.models import (
    ExportFormat,
    GoldVersion,
    GoldVersionRow,
    JobStatus,
    OutboxMessage,
    RunFormat,
    RunKind,
    ScoreAggregate,
    ScoreQueryResult,
    ScoringJob,
    WebhookEvent,
)
from goldset.rules.display import display
from goldset.rules.jobs import SCORING_OUTBOX_KIND, scoring_dedupe_key
from goldset.rules.measures import check_measures, job_measures, same_measures
from goldset.services import exports, outbox, scoring_chunks, webhooks
from goldset.services.answer_scoring import score_answer_log, validate_answer_log
from goldset.services.heartbeat import TRANSIENT, Heartbeat, record_despite_lost_connection
from goldset.services.pcs_calibrations import probe_config_for
from goldset.services.scoring_runs import (
    Outcome,
    QueryRow,
    RunRejected,
    ValidatedRun,
    inspect_run_file,
    known_block_ids,
    spooled_run,
    store_run_chunks,
    stored_run_file,
    text_lines,
)
from scoring.errors import InputError
from scoring.io import (
    arrow_columns,
    distinct_query_ids,
    iter_distinct_doc_ids,
    read_qrels,
    read_run,
    release_unused_memory,
    select_queries,
)
from scoring.retrieval import evaluate
from scoring.stats import bootstrap_cis
from workbench.services.audit import record_event

MAX_ERRORS = 50
DEFAULT_SEED = 8821
DEFAULT_RESAMPLES = 10_000
# Bootstrap work grows with resamples x queries; above this many cells per metric the default
# resample count shrinks (never below MIN_RESAMPLES) so a 100,000-query run still scores in
# seconds. The count used is stored on the job and in its reproducibility bundle.
CI_CELL_BUDGET = 50_000_000
MIN_RESAMPLES = 500
WORST_QUERIES = 25
RESULT_BATCH = 5000
PRIMARY_METRIC = "ndcg@{k}"
# The Celery task that runs run_scoring_job (goldset.tasks).
SCORE_RUN_TASK = "goldset.score_run"


@cache
def scorer_version() -> str:
    """Identifies the scoring code: a hash of the ``scoring`` package sources."""
    digest = hashlib.sha256()
    for path in sorted(Path(scoring.__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"scoring-{digest.hexdigest()[:12]}"


def default_resamples(n_queries: int) -> int:
    if n_queries * DEFAULT_RESAMPLES <= CI_CELL_BUDGET:
        return DEFAULT_RESAMPLES
    return max(MIN_RESAMPLES, (CI_CELL_BUDGET // max(n_queries, 1)) // 100 * 100)


# ---------------------------------------------------------------- validating an upload


def _detect_kind(first_line: str) -> tuple[str, str]:
    """Kind and format from the run's first line of text (after leading whitespace)."""
    if first_line[:1] not in ("{", "["):
        return RunKind.RETRIEVAL, RunFormat.TREC
    try:
        obj = json.loads(first_line)
    except json.JSONDecodeError:
        return RunKind.RETRIEVAL, RunFormat.JSONL
    if isinstance(obj, dict) and ("retrieved_passages" in obj or "answer" in obj):
        return RunKind.ANSWERS, RunFormat.ANSWERS
    return RunKind.RETRIEVAL, RunFormat.JSONL


def _scan_lines(path: Path, fmt: str):
    """(line number, query id, [doc ids]) per record; only used to locate problems."""
    for lineno, raw in enumerate(text_lines(path), start=1):
        if not raw.strip():
            continue
        if fmt == RunFormat.TREC:
            fields = raw.split()
            yield lineno, fields[0], [fields[2]] if len(fields) > 2 else []
        else:
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError:
                continue
            results = obj.get("results") if isinstance(obj, dict) else None
            docs = [
                str(r.get("doc_id"))
                for r in results or []
                if isinstance(r, dict) and r.get("doc_id") is not None
            ]
            yield lineno, str(obj.get("query_id")) if isinstance(obj, dict) else "", docs


def _known_versions_hint(query_ids: list[str], *, project) -> str:
    """Which of the project's versions hold these query ids (never another project's)."""
    numbers = sorted(
        set(
            GoldVersionRow.objects.filter(
                version__project=project, triple_id__in=query_ids[:50]
            ).values_list("version__number", flat=True)
        )
    )
    return f" (they belong to {', '.join(f'v{n}' for n in numbers)})" if numbers else ""


def validate_retrieval_run(
    *, version: GoldVersion, path: Path, name: str, fmt: str
) -> ValidatedRun:
    """Validate the whole run file (UTF-8, checked by :func:`inspect_run_file`) or raise
    RunRejected listing every problem with its line: malformed lines and scores (via
    ``scoring.io``), a document twice for one query, a query on two JSONL lines, query ids that
    are not triples of ``version`` and block ids that are not in the corpus.

    The run is read from its path by the library's columnar reader and checked on its distinct
    ids (no Python object per row); the file is read again line by line only to name the lines
    of problems found."""
    try:
        run = read_run(path, fmt=fmt, name=name)
    except InputError as exc:
        raise RunRejected([str(exc)], source=name) from None
    known_queries = set(version.rows.values_list("triple_id", flat=True))
    run_queries = distinct_query_ids(run)
    unknown_q = {q for q in run_queries if q not in known_queries}
    unknown_d: set[str] = set()
    # Looked up a batch of distinct ids at a time, so only one batch is Python strings.
    for doc_ids in iter_distinct_doc_ids(run):
        known_blocks = known_block_ids(doc_ids, project=version.project)
        unknown_d.update(d for d in doc_ids if d not in known_blocks)
    n_rows = len(run)
    del run
    problems: list[str] = []
    if unknown_q and len(unknown_q) == len(run_queries):
        problems.append(
            f"{name}: none of the run's {len(run_queries)} query ids are triples of gold version "
            f"v{version.number}; was the run made for another version?"
            + _known_versions_hint(sorted(unknown_q), project=version.project)
        )
    duplicate_lines = fmt == RunFormat.JSONL and len(run_queries) != _count_records(path)
    if unknown_q or unknown_d or duplicate_lines:
        first_line: dict[str, int] = {}
        for lineno, qid, docs in _scan_lines(path, fmt):
            if fmt == RunFormat.JSONL and qid in first_line:
                problems.append(
                    f"{name}, line {lineno}: query {qid!r} already appears on line "
                    f"{first_line[qid]} (one line per query)"
                )
            first_line.setdefault(qid, lineno)
            if qid in unknown_q and len(unknown_q) != len(run_queries):
                problems.append(
                    f"{name}, line {lineno}: unknown query id {qid!r}: not a triple of gold "
                    f"version v{version.number}"
                )
                if fmt == RunFormat.JSONL:
                    unknown_q.discard(qid)
            for doc in docs:
                if doc in unknown_d:
                    problems.append(
                        f"{name}, line {lineno}: unknown block id {doc!r}: not in the corpus"
                    )
            if len(problems) > MAX_ERRORS:
                break
    if problems:
        extra = len(problems) - MAX_ERRORS
        shown = problems[:MAX_ERRORS] + ([f"… and more ({extra}+)"] if extra > 0 else [])
        raise RunRejected(shown, source=name)
    return ValidatedRun(kind=RunKind.RETRIEVAL, fmt=fmt, n_queries=len(run_queries), n_rows=n_rows)


def _count_records(path: Path) -> int:
    return sum(1 for line in text_lines(path) if line.strip())


# ---------------------------------------------------------------- creating, retrying


@transaction.atomic
def create_scoring_job(
    *,
    version: GoldVersion,
    name: str,
    filename: str,
    actor,
    data: bytes | None = None,
    path: Path | None = None,
    k: int = 10,
    resamples: int | None = None,
    seed: int = DEFAULT_SEED,
    calibration=None,
    metrics: list[str] | str | None = None,
) -> ScoringJob:
    """Validate the uploaded run whole, store it and queue its scoring after commit.

    The run is a file at ``path`` (what the import job and ``score_run`` pass: it is read in
    blocks and by the library's columnar reader, never held whole in memory) or ``data``
    (small runs in scripts and tests; written to a temporary file first).

    ``metrics`` names the retrieval measures to compute (``scoring.retrieval`` names, checked by
    ``goldset.rules.measures.check_measures``; BadMeasures for a bad one); none -> the six
    defaults at ``k``. They are stored on the job as labels and are part of its identity.

    ``calibration`` (a succeeded PcsCalibration) scores an answer log with its configuration;
    without one the seed's defaults apply.

    The job belongs to the version's project; ``calibration`` must be of the same project
    (:class:`CrossProjectReference`, a GoldsetError, otherwise: nothing stored).

    Raises RunRejected (nothing stored, no job) for any problem in the file, GoldsetError for a
    version that is not sealed. Idempotent: the same file (by sha256) uploaded again for the same
    version and settings, while its first job is queued, running or succeeded, returns that job
    with ``reused`` set (uploads are serialised per version with a row lock, so a double click
    makes one job). The scoring task goes through the outbox: the job commits even when the
    broker is down and is dispatched when it returns."""
    if (data is None) == (path is None):
        raise TypeError("create_scoring_job takes the run as data or as path, not both")
    if not version.sealed:
        raise GoldsetError(f"gold version v{version.number} is not frozen")
    if calibration is not None and calibration.project_id != version.project_id:
        raise CrossProjectReference(
            f"PCS calibration {calibration.label} belongs to another project than gold version "
            f"v{version.number}; choose a calibration of this project"
        )
    measures = check_measures(metrics, k=k)
    with _run_on_disk(data, path) as run_path:
        return _create_scoring_job(
            version=version,
            name=name,
            path=run_path,
            filename=filename,
            actor=actor,
            k=k,
            resamples=resamples,
            seed=seed,
            calibration=calibration,
            metrics=metrics,
            measures=measures,
        )


@contextmanager
def _run_on_disk(data: bytes | None, path: Path | None) -> Iterator[Path]:
    if path is not None:
        yield Path(path)
        return
    with spooled_run([data]) as spooled:
        yield spooled


def _create_scoring_job(
    *,
    version: GoldVersion,
    name: str,
    path: Path,
    filename: str,
    actor,
    k: int,
    resamples: int | None,
    seed: int,
    calibration,
    metrics,
    measures: list[str],
) -> ScoringJob:
    facts = inspect_run_file(path, filename)
    if facts.first_line is None:
        raise RunRejected([f"{filename}: the file is empty"], source=filename)
    kind, fmt = _detect_kind(facts.first_line)
    if calibration is not None:
        if kind != RunKind.ANSWERS:
            raise RunRejected(
                [
                    f"{filename}: calibration: a PCS calibration applies to answer logs only; "
                    "this file is a retrieval run (score it with the PROBE defaults)"
                ],
                source=filename,
            )
        probe_config_for(calibration)  # raises GoldsetError unless it has succeeded
    if kind == RunKind.ANSWERS:
        if metrics:
            raise RunRejected(
                [
                    f"{filename}: measures ({', '.join(measures)}) apply to retrieval runs; an "
                    "answer log is scored by PROBE: leave the measures empty"
                ],
                source=filename,
            )
        measures = []
        checked = validate_answer_log(version=version, source=PathSource(path), name=filename)
    else:
        checked = validate_retrieval_run(version=version, path=path, name=filename, fmt=fmt)
    digest = facts.sha256
    GoldVersion.objects.select_for_update().filter(pk=version.pk).first()
    same = ScoringJob.objects.filter(
        version=version, run_sha256=digest, k=k, seed=seed, calibration=calibration
    ).exclude(status__in=[JobStatus.FAILED, JobStatus.CANCELLED])
    if resamples:
        same = same.filter(resamples=resamples)
    # The same run with other measures is another job.
    existing = next((j for j in same.order_by("id") if same_measures(j.metrics, measures)), None)
    if existing is not None:
        existing.reused = True
        return existing
    job = ScoringJob.objects.create(
        project_id=version.project_id,
        version=version,
        name=name or filename,
        kind=checked.kind,
        run_format=checked.fmt,
        run_filename=filename,
        run_sha256=digest,
        run_size=facts.size,
        k=k,
        metrics=measures,
        seed=seed,
        resamples=resamples or default_resamples(checked.n_queries),
        scorer_version=scorer_version(),
        calibration=calibration,
        max_attempts=max_attempts(),
        queued_at=timezone.now(),
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    store_run_chunks(job, path)
    record_event(
        actor=actor,
        verb="scoring_job_created",
        obj=job,
        detail={
            "version": version.number,
            "run_sha256": job.run_sha256,
            "kind": job.kind,
            "queries": checked.n_queries,
            "metrics": measures,
        },
    )
    dispatch_scoring_job(job_id=job.pk)
    job.reused = False
    return job


def dispatch_scoring_job(*, job_id: int) -> None:
    """Queue the scoring task through the outbox (inside the caller's transaction)."""
    outbox.enqueue(
        kind=SCORING_OUTBOX_KIND, payload={"job_id": job_id}, dedupe_key=scoring_dedupe_key(job_id)
    )


def stale_seconds() -> int:
    return tunable("JOB_STALE_SECONDS")


def max_attempts() -> int:
    return tunable("JOB_MAX_ATTEMPTS")


def heartbeat_age(job: ScoringJob, *, now: dt.datetime | None = None) -> float | None:
    """Seconds since the job's last heartbeat (None when it never had one)."""
    if job.heartbeat_at is None:
        return None
    return max(0.0, ((now or timezone.now()) - job.heartbeat_at).total_seconds())


def is_stuck(job: ScoringJob, *, now: dt.datetime | None = None) -> bool:
    """Running without a heartbeat for longer than the staleness window, or queued for longer
    than the redispatch window without a worker picking it up."""
    now = now or timezone.now()
    if job.status == JobStatus.RUNNING:
        age = heartbeat_age(job, now=now)
        return age is None or age > stale_seconds()
    if job.status == JobStatus.QUEUED:
        since = job.queued_at or job.created_at
        return since is not None and (now - since).total_seconds() > outbox.redispatch_seconds()
    return False


@dataclass(frozen=True)
class JobLiveness:
    """What the job page says about the worker: the heartbeat's age and whether the job is
    stuck (its worker presumed lost, or nobody picked it up), so the user may retry it."""

    heartbeat_age: float | None
    stuck: bool
    stale_seconds: int
    can_cancel: bool
    can_retry: bool
    notices: list[str]


def job_liveness(job: ScoringJob) -> JobLiveness:
    stuck = is_stuck(job)
    return JobLiveness(
        heartbeat_age=heartbeat_age(job),
        stuck=stuck,
        stale_seconds=stale_seconds(),
        can_cancel=not job.finished,
        can_retry=job.status in (JobStatus.FAILED, JobStatus.CANCELLED) or stuck,
        notices=[line for line in job.notice.splitlines() if line.strip()],
    )


def _note(job: ScoringJob, text: str) -> str:
    return (job.notice + "\n" if job.notice else "") + text


def _when(moment: dt.datetime | None) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC" if moment else "never"


@transaction.atomic
def retry_scoring_job(*, job: ScoringJob, actor) -> ScoringJob:
    """Queue a failed, cancelled or stuck job again (its results are recomputed from scratch,
    with a fresh allowance of ``JOB_MAX_ATTEMPTS`` attempts). Any earlier attempt still running
    loses its claim and stops at its next progress write. Raises GoldsetError otherwise."""
    locked = ScoringJob.objects.select_for_update().get(pk=job.pk)
    if locked.status not in (JobStatus.FAILED, JobStatus.CANCELLED) and not is_stuck(locked):
        raise GoldsetError(
            f"only a failed, cancelled or stuck job can be retried; job {job.pk} is "
            f"{display(locked.status).lower()} and its worker is alive"
        )
    now = timezone.now()
    who = getattr(actor, "username", "") or "a script"
    locked.notice = _note(
        locked, f"Retried by {who} at {_when(now)} (was {display(locked.status).lower()})."
    )
    locked.status, locked.stage, locked.progress, locked.error = JobStatus.QUEUED, "", 0, ""
    locked.claim, locked.queued_at, locked.finished_at = "", now, None
    locked.max_attempts = locked.attempts + max_attempts()
    locked.save(
        update_fields=[
            "status",
            "stage",
            "progress",
            "error",
            "claim",
            "queued_at",
            "finished_at",
            "max_attempts",
            "notice",
        ]
    )
    record_event(actor=actor, verb="scoring_job_retried", obj=locked)
    dispatch_scoring_job(job_id=locked.pk)
    return locked


@transaction.atomic
def cancel_scoring_job(*, job: ScoringJob, actor) -> ScoringJob:
    """Cancel a queued or running job. A worker still running it loses its claim and stops at
    its next progress write; nothing it computed is stored. Raises GoldsetError for a finished
    job. The job can be retried afterwards."""
    locked = ScoringJob.objects.select_for_update().get(pk=job.pk)
    if locked.finished:
        raise GoldsetError(f"job {job.pk} is already {display(locked.status).lower()}")
    now = timezone.now()
    who = getattr(actor, "username", "") or "a script"
    locked.notice = _note(
        locked, f"Cancelled by {who} at {_when(now)} (was {display(locked.status).lower()})."
    )
    locked.status, locked.claim, locked.finished_at = JobStatus.CANCELLED, "", now
    locked.error = f"Cancelled by {who}."
    locked.save(update_fields=["status", "claim", "finished_at", "error", "notice"])
    record_event(actor=actor, verb="scoring_job_cancelled", obj=locked)
    return locked


def reconcile_scoring_jobs(*, now: dt.datetime | None = None) -> dict:
    """The reconciler's pass over scoring jobs (any worker's name, alive or not):

    * running with no heartbeat for ``JOB_STALE_SECONDS``: its worker was lost (SIGKILL, OOM,
      hard time limit, a restarted container). Requeued with a notice saying so, or failed with
      a message once ``max_attempts`` attempts were used;
    * queued for ``OUTBOX_REDISPATCH_SECONDS`` with no open outbox message (the task started but
      its worker died before claiming, or the row predates the outbox): dispatched again.

    Each change is a conditional update under a row lock, so concurrent reconcilers and
    redelivered tasks never requeue or fail a job twice."""
    now = now or timezone.now()
    stale_before = now - dt.timedelta(seconds=stale_seconds())
    requeued, failed, redispatched = [], [], []
    lost = ScoringJob.objects.filter(status=JobStatus.RUNNING).filter(
        Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True)
    )
    for pk in lost.values_list("pk", flat=True):
        with transaction.atomic():
            job = ScoringJob.objects.select_for_update().get(pk=pk)
            if job.status != JobStatus.RUNNING or not is_stuck(job, now=now):
                continue
            lost_text = (
                f"Attempt {job.attempts} on worker {job.worker or '?'} was lost: no heartbeat "
                f"since {_when(job.heartbeat_at)} (staleness window {stale_seconds()} s)."
            )
            if job.attempts >= job.max_attempts:
                _fail(
                    job,
                    error=f"{lost_text} All {job.max_attempts} attempts are used; "
                    "retry the job to try again.",
                    now=now,
                )
                failed.append(pk)
                continue
            job.notice = _note(job, f"{lost_text} Requeued by the reconciler at {_when(now)}.")
            job.status, job.claim, job.queued_at = JobStatus.QUEUED, "", now
            job.stage, job.progress = "re-queued: worker lost", 0
            job.save(update_fields=["notice", "status", "claim", "queued_at", "stage", "progress"])
            record_event(
                actor=None,
                verb="scoring_job_requeued",
                obj=job,
                detail={"lost_worker": job.worker, "attempt": job.attempts},
            )
            dispatch_scoring_job(job_id=pk)
            requeued.append(pk)
    waiting_since = now - dt.timedelta(seconds=outbox.redispatch_seconds())
    open_keys = set(
        OutboxMessage.objects.filter(kind=SCORING_OUTBOX_KIND, done_at__isnull=True).values_list(
            "dedupe_key", flat=True
        )
    )
    waiting = ScoringJob.objects.filter(status=JobStatus.QUEUED).filter(
        Q(queued_at__lt=waiting_since) | Q(queued_at__isnull=True, created_at__lt=waiting_since)
    )
    for pk in waiting.values_list("pk", flat=True):
        if scoring_dedupe_key(pk) in open_keys:
            continue  # its message is pending or in flight; the outbox reconciler watches it
        with transaction.atomic():
            moved = ScoringJob.objects.filter(pk=pk, status=JobStatus.QUEUED).update(queued_at=now)
            if moved:
                dispatch_scoring_job(job_id=pk)
                redispatched.append(pk)
    return {"requeued": requeued, "failed": failed, "redispatched": redispatched}


def _fail(job: ScoringJob, *, error: str, now: dt.datetime) -> None:
    job.status, job.error, job.claim, job.finished_at = JobStatus.FAILED, error[:4000], "", now
    job.save(update_fields=["status", "error", "claim", "finished_at"])
    scoring_chunks.discard_pieces(job)
    record_event(actor=None, verb="scoring_job_failed", obj=job, detail={"error": error[:500]})
    webhooks.emit(
        WebhookEvent.SCORING_JOB_FAILED,
        webhooks.scoring_job_data(job),
        project=job.project,
        now=now,
    )


# ---------------------------------------------------------------- running (the task's work)


class JobAbandoned(Exception):
    """This attempt no longer holds the job (it was cancelled, retried or taken over)."""


class _Progress:
    """Writes stage, progress and per-stage timings to the job row as the work advances
    (autocommit, so the job page sees them while the task runs). Every write is conditional on
    this attempt's claim; when it matches nothing the attempt was cancelled or taken over and
    :class:`JobAbandoned` stops the work."""

    def __init__(self, job_id: int, claim: str = ""):
        self.job_id = job_id
        self.claim = claim
        self.timings: dict[str, float] = {}
        self.stage = ""
        self.started = time.perf_counter()

    def _mine(self):
        return ScoringJob.objects.filter(pk=self.job_id, claim=self.claim, status=JobStatus.RUNNING)

    def enter(self, stage: str, progress: int) -> None:
        self._close()
        self.stage, self.started = stage, time.perf_counter()
        if not self._mine().update(
            stage=stage, progress=progress, heartbeat_at=timezone.now(), stage_timings=self.timings
        ):
            raise JobAbandoned(self.job_id)

    def step(self, progress: int) -> None:
        if not self._mine().update(progress=progress, heartbeat_at=timezone.now()):
            raise JobAbandoned(self.job_id)

    def _close(self) -> None:
        if self.stage:
            self.timings[self.stage] = round(time.perf_counter() - self.started, 3)

    def finish(self) -> dict[str, float]:
        self._close()
        self.stage = ""
        return self.timings


def _heartbeat(job_id: int, claim: str) -> Heartbeat:
    return Heartbeat(
        f"job-{job_id}",
        lambda: ScoringJob.objects.filter(pk=job_id, claim=claim, status=JobStatus.RUNNING),
    )


def gold_jsonl_bytes(version: GoldVersion) -> bytes:
    stored = version.files.get(format=ExportFormat.GOLD_JSONL, redacted=False)
    return exports.read_verified_bytes(stored)


def _claim(*, job_id: int, worker: str, claim: str) -> bool:
    """Take the job for this attempt: a queued job, or a running one whose heartbeat is older
    than the staleness window (its worker was lost, whatever its name: a redelivered task takes
    it over). A lost job that used all its attempts is failed with a message instead."""
    now = timezone.now()
    with transaction.atomic():
        job = ScoringJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            return False
        takeover = job.status == JobStatus.RUNNING and is_stuck(job, now=now)
        if job.status != JobStatus.QUEUED and not takeover:
            return False
        if takeover:
            lost_text = (
                f"Attempt {job.attempts} on worker {job.worker or '?'} was lost: no heartbeat "
                f"since {_when(job.heartbeat_at)}."
            )
            if job.attempts >= job.max_attempts:
                _fail(
                    job,
                    error=f"{lost_text} All {job.max_attempts} attempts are used; retry "
                    "the job to try again.",
                    now=now,
                )
                return False
            job.notice = _note(job, f"{lost_text} Taken over by {worker or '?'} at {_when(now)}.")
            record_event(
                actor=None,
                verb="scoring_job_taken_over",
                obj=job,
                detail={"lost_worker": job.worker, "worker": worker},
            )
        elif job.attempts >= job.max_attempts:
            _fail(
                job,
                error=f"All {job.max_attempts} attempts are used; retry the job to try again.",
                now=now,
            )
            return False
        job.status, job.worker, job.claim = JobStatus.RUNNING, worker, claim
        job.attempts += 1
        job.started_at = job.heartbeat_at = now
        job.finished_at, job.stage, job.progress, job.error, job.stage_timings = None, "", 0, "", {}
        job.save(
            update_fields=[
                "status",
                "worker",
                "claim",
                "attempts",
                "started_at",
                "heartbeat_at",
                "finished_at",
                "stage",
                "progress",
                "error",
                "stage_timings",
                "notice",
            ]
        )
    return True


def run_scoring_job(*, job_id: int, worker: str = "", heartbeat: bool = False) -> ScoringJob:
    """Score one job (the body of ``score_run_task``). Claims the job first (see
    :func:`_claim`); returns it unchanged when this delivery may not take it (a duplicate, or a
    job another live attempt holds). ``heartbeat`` starts the heartbeat thread (real workers).

    A failure never escapes: a lost database connection (the job's backend terminated, a
    failover) is survived by reconnecting before recording it, and requeues the job while it
    has attempts left; any other error fails the job with the reason (the user can retry it)."""
    claim = uuid.uuid4().hex
    if not _claim(job_id=job_id, worker=worker, claim=claim):
        return ScoringJob.objects.select_related("version").get(pk=job_id)
    job = ScoringJob.objects.select_related("version").get(pk=job_id)
    beat = _heartbeat(job_id, claim) if heartbeat else None
    if beat is not None:
        beat.start()
    progress = _Progress(job_id, claim)
    try:
        _score_and_store(job=job, claim=claim, progress=progress)
    except JobAbandoned:
        pass
    except Exception as exc:  # any failure is reported on the job page
        _record_failure(job_id=job_id, claim=claim, exc=exc, progress=progress)
    finally:
        if beat is not None:
            beat.stop()
        # The job's arrays are gone with _score_and_store's frame: hand their pages back, so
        # the pool child does not keep the job's peak for the next task (issue 24).
        release_unused_memory()
    return ScoringJob.objects.select_related("version").get(pk=job_id)


def _score_and_store(*, job: ScoringJob, claim: str, progress: "_Progress") -> None:
    if job.kind == RunKind.ANSWERS:
        outcome = score_answer_log(job=job, progress=progress)
    else:
        outcome = _score_retrieval(job=job, claim=claim, progress=progress)
    progress.enter("store", 90)
    _store(job=job, claim=claim, outcome=outcome, progress=progress)


def _record_failure(*, job_id: int, claim: str, exc: Exception, progress: _Progress) -> None:
    """Record a failed attempt, reconnecting first when the connection is dead (the error
    handler must not fail on the connection that failed the job)."""
    record_despite_lost_connection(
        lambda: _finish_failed_attempt(job_id=job_id, claim=claim, exc=exc, progress=progress),
        reconnect=isinstance(exc, TRANSIENT),
    )


@transaction.atomic
def _finish_failed_attempt(*, job_id: int, claim: str, exc: Exception, progress) -> None:
    job = (
        ScoringJob.objects.select_for_update()
        .filter(pk=job_id, claim=claim, status=JobStatus.RUNNING)
        .first()
    )
    if job is None:
        return  # cancelled, retried or taken over meanwhile: that attempt owns the outcome
    now = timezone.now()
    reason = f"{type(exc).__name__}: {exc}".strip()[:3000]
    job.stage_timings = progress.finish()
    if isinstance(exc, TRANSIENT) and job.attempts < job.max_attempts:
        job.notice = _note(
            job,
            f"Attempt {job.attempts} on {job.worker or '?'} lost its database connection at "
            f"{_when(now)} ({reason.splitlines()[0][:300]}); requeued automatically.",
        )
        job.status, job.claim, job.queued_at, job.stage, job.progress = (
            JobStatus.QUEUED,
            "",
            now,
            "re-queued: database connection lost",
            0,
        )
        job.save(
            update_fields=[
                "notice",
                "status",
                "claim",
                "queued_at",
                "stage",
                "progress",
                "stage_timings",
            ]
        )
        record_event(
            actor=None, verb="scoring_job_requeued", obj=job, detail={"error": reason[:500]}
        )
        dispatch_scoring_job(job_id=job.pk)
        return
    if isinstance(exc, TRANSIENT):
        reason = f"{reason} (attempt {job.attempts} of {job.max_attempts}; retry the job)"
    job.save(update_fields=["stage_timings"])
    _fail(job, error=reason, now=now)


def _score_retrieval(*, job: ScoringJob, claim: str, progress: _Progress) -> Outcome:
    """Score a retrieval run: in this process, or split over the workers when the version has
    ``SCORING_SPLIT_MIN_QUERIES`` queries or more (``scoring_chunks``; identical figures)."""
    progress.enter("load run", 5)
    with stored_run_file(job) as run_path:
        run = read_run(run_path, fmt=job.run_format, name=job.run_filename)
    progress.enter("load gold version", 15)
    qrels = read_qrels(io.BytesIO(gold_jsonl_bytes(job.version)), fmt="gold")
    split = scoring_chunks.should_split(n_queries=len(set(qrels.queries.tolist())))
    progress.enter("evaluate", 25)
    if split:
        result = scoring_chunks.evaluate_split(
            job=job,
            claim=claim,
            qrels=qrels,
            run=run,
            metrics=job_measures(job),
            still_mine=lambda done: progress.step(25 + int(15 * done)),
        )
    else:
        result = evaluate(qrels, run, k=job.k, metrics=job_measures(job), all_queries=True)
    progress.enter("bootstrap", 40)
    labels = list(result.per_query)
    qids = [str(q) for q in result.query_ids]
    strata = dict(
        (t, (d, tt))
        for t, d, tt in job.version.rows.values_list("triple_id", "domain", "task_type")
    )
    # Seed 004 §5.1/A.1: resample within domain x task family (a triple's task type).
    boot_strata = bootstrap_strata(qids, strata)
    if split:
        cis = scoring_chunks.bootstrap_split(
            job=job,
            claim=claim,
            per_query=result.per_query,
            strata=boot_strata,
            still_mine=lambda done: progress.step(40 + int(40 * done)),
        )
    else:
        # One draw of resampling indices for every measure (the same figures as one
        # bootstrap_ci per measure, to the bit).
        shown = [40]

        def advance(done: float) -> None:
            # A write (and the check that the job is still this attempt's) per percent.
            if 40 + int(40 * done) > shown[0]:
                shown[0] = 40 + int(40 * done)
                progress.step(shown[0])

        cis = bootstrap_cis(
            {label: result.per_query[label] for label in labels},
            n=job.resamples,
            seed=job.seed,
            strata=boot_strata,
            progress=advance,
        )
    progress.enter("breakdown", 82)
    aggregates = [
        ScoreAggregate(
            job=job,
            stratum="all",
            metric=label,
            value=result.aggregate[label],
            ci_low=cis[label].low,
            ci_high=cis[label].high,
            n=result.n_queries,
        )
        for label in labels
    ]
    frame = pd.DataFrame({label: result.per_query[label] for label in labels})
    domains = [strata.get(q, ("", ""))[0] for q in qids]
    task_types = [strata.get(q, ("", ""))[1] for q in qids]
    frame["domain"], frame["task_type"] = domains, task_types
    for column in ("domain", "task_type"):
        grouped = frame.groupby(column)
        means, sizes = grouped[labels].mean(), grouped.size()
        for value, row in means.iterrows():
            for label in labels:
                aggregates.append(
                    ScoreAggregate(
                        job=job,
                        stratum=f"{column}:{value}",
                        metric=label,
                        value=float(row[label]),
                        n=int(sizes[value]),
                    )
                )
    primary = primary_measure(job, labels)
    order = np.lexsort((np.array(qids, dtype=object), result.per_query[primary]))
    worst = {qids[i] for i in order[:WORST_QUERIES]}
    retrieved = _top_k(run, worst, job.k)
    run_queries = set(distinct_query_ids(run))
    del run
    columns = [result.per_query[label].tolist() for label in labels]
    per_query = []
    for i, qid in enumerate(qids):
        values = dict(zip(labels, (column[i] for column in columns), strict=True))
        per_query.append(
            QueryRow(
                query_id=qid,
                domain=domains[i],
                task_type=task_types[i],
                metrics=values,
                retrieved=retrieved.get(qid, []),
                primary=values[primary],
            )
        )
    summary = {
        "n_queries": result.n_queries,
        "k": job.k,
        "metrics": labels,
        "all_queries": True,
        "aggregate": result.aggregate,
        "ci": {label: [cis[label].low, cis[label].high] for label in labels},
        "primary_metric": primary,
        "ci_strata": strata_summary(boot_strata),
        "run_queries": len(run_queries),
        "missing_queries": int(result.n_queries - len(run_queries & set(qids))),
    }
    if split:
        summary["split"] = scoring_chunks.split_summary(job, claim)
    return Outcome(per_query=per_query, aggregates=aggregates, summary=summary)


def primary_measure(job: ScoringJob, labels: list[str]) -> str:
    """The measure worst queries are ranked by: nDCG@k when the job computes it, else the
    first measure chosen."""
    preferred = PRIMARY_METRIC.format(k=job.k)
    return preferred if preferred in labels else labels[0]


def bootstrap_strata(qids: list[str], strata: dict[str, tuple[str, str]]) -> list[str]:
    """The bootstrap stratum of each query: ``domain|task_type`` of its triple."""
    return ["|".join(strata.get(q, ("", ""))) for q in qids]


def strata_summary(labels: list[str]) -> dict:
    """What the bundle records about the stratification: the keys and each stratum's size."""
    sizes: dict[str, int] = defaultdict(int)
    for label in labels:
        sizes[label] += 1
    return {"by": ["domain", "task_type"], "sizes": dict(sorted(sizes.items()))}


def strata_csv(job: ScoringJob) -> bytes:
    """``query_id,stratum`` for every query of a retrieval job (``--strata`` of the CLI)."""
    rows = job.query_results.order_by("query_id").values_list("query_id", "domain", "task_type")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["query_id", "stratum"])
    writer.writerows((q, f"{d}|{t}") for q, d, t in rows)
    return out.getvalue().encode()


def _top_k(run, wanted: set[str], k: int) -> dict[str, list[str]]:
    """The top k documents of the wanted queries in trec_eval order (score desc at float32,
    then document id desc), for display next to the expected block.

    Works on integer codes: a query's top k are among its rows scoring at least its k-th best
    score, so only those rows (k and any ties) become Python objects and are sorted."""
    columns = arrow_columns(select_queries(run, wanted))
    codes = columns["query_id"].indices.to_numpy()
    score = columns["score"].to_numpy().astype(np.float32)
    if not len(codes):
        return {}
    order = np.lexsort((-score, codes))  # by query, best score first
    counts = np.bincount(codes)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    kth = score[order[starts + np.minimum(counts, k) - 1]]
    rows = np.flatnonzero(score >= kth[codes])
    names = columns["query_id"].dictionary.to_pylist()
    docs = columns["doc_id"].take(pa.array(rows)).to_pylist()
    found = defaultdict(list)
    for code, did, value in zip(codes[rows].tolist(), docs, score[rows].tolist(), strict=True):
        found[names[code]].append((value, did))
    return {
        q: [d for _, d in sorted(items, key=lambda x: (x[0], x[1]), reverse=True)[:k]]
        for q, items in found.items()
    }


def _store(*, job: ScoringJob, claim: str, outcome: Outcome, progress: "_Progress") -> None:
    with transaction.atomic():
        locked = ScoringJob.objects.select_for_update().get(pk=job.pk)
        if locked.status != JobStatus.RUNNING or locked.claim != claim:
            raise JobAbandoned(job.pk)
        ScoreQueryResult.objects.filter(job=locked).delete()
        ScoreAggregate.objects.filter(job=locked).delete()
        scoring_chunks.discard_pieces(locked)
        _insert_query_results(locked, outcome.per_query)
        ScoreAggregate.objects.bulk_create(outcome.aggregates, batch_size=RESULT_BATCH)
        timings = progress.finish()
        locked.status = JobStatus.SUCCEEDED
        locked.progress = 100
        locked.stage = "done"
        locked.summary = outcome.summary
        locked.stage_timings = timings
        locked.finished_at = timezone.now()
        locked.heartbeat_at = locked.finished_at
        locked.save(
            update_fields=[
                "status",
                "progress",
                "stage",
                "summary",
                "stage_timings",
                "finished_at",
                "heartbeat_at",
            ]
        )
        record_event(
            actor=None,
            verb="scoring_job_succeeded",
            obj=locked,
            detail={"worker": locked.worker, "attempt": locked.attempts},
        )
        webhooks.emit(
            WebhookEvent.SCORING_JOB_SUCCEEDED,
            webhooks.scoring_job_data(locked),
            project=locked.project,
            now=locked.finished_at,
        )


QUERY_RESULT_COLUMNS = (
    "job_id",
    "query_id",
    "domain",
    "task_type",
    "metrics",
    "retrieved",
    "detail",
    "primary",
)


def _insert_query_results(job: ScoringJob, results: list[QueryRow]) -> None:
    """COPY on PostgreSQL (100,000 rows in about a second), bulk INSERT elsewhere."""
    if connection.vendor != "postgresql":
        ScoreQueryResult.objects.bulk_create(
            (
                ScoreQueryResult(
                    job=job,
                    query_id=r.query_id,
                    domain=r.domain,
                    task_type=r.task_type,
                    metrics=r.metrics,
                    retrieved=r.retrieved,
                    detail=r.detail,
                    primary=r.primary,
                )
                for r in results
            ),
            batch_size=RESULT_BATCH,
        )
        return
    table = ScoreQueryResult._meta.db_table
    columns = ", ".join(f'"{c}"' for c in QUERY_RESULT_COLUMNS)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for r in results:
                copy.write_row(
                    (
                        job.pk,
                        r.query_id,
                        r.domain,
                        r.task_type,
                        json.dumps(r.metrics),
                        json.dumps(r.retrieved),
                        json.dumps(r.detail),
                        r.primary,
                    )
                )


# ---------------------------------------------------------------- reproducibility


def ci_description(job: ScoringJob) -> str:
    """How the job's intervals are computed, in words (the job page and ``score_run``)."""
    strata = (job.summary or {}).get("ci_strata") or {}
    by = " × ".join(
        STRATUM_KEY_WORDS.get(k, k) for k in strata.get("by") or ["domain", "task_type"]
    )
    sizes = strata.get("sizes") or {}
    counted = f": {len(sizes)} strata" if sizes else ""
    return (
        f"95 % percentile bootstrap, {job.resamples} resamples, seed {job.seed}, resampled "
        f"within {by} strata{counted}"
        + (" (strata.csv in the reproducibility bundle)" if job.kind != RunKind.ANSWERS else "")
    )


STRATUM_KEY_WORDS = {"domain": "domain", "task_type": "task type"}


def ci_strata_sizes(job: ScoringJob) -> list[tuple[str, int]]:
    """Each interval stratum as a page says it (``domain / task type`` in words) with its size."""
    sizes = ((job.summary or {}).get("ci_strata") or {}).get("sizes") or {}
    return [
        (" / ".join(display(part) for part in name.split("|")) if name else "(none)", n)
        for name, n in sizes.items()
    ]


def reproduce_command(job: ScoringJob) -> str:
    """The ``python -m scoring`` command that recomputes the job's figures — values, per-query
    measures and the stratified intervals — on the files of its reproducibility bundle."""
    if job.kind == RunKind.ANSWERS:
        return (
            "python -m scoring probe --questions probe-questions-packets.jsonl "
            f"--answers {shlex.quote(job.run_filename)} --labels labels.jsonl"
        )
    measures = ",".join(job_measures(job))
    return (
        f"python -m scoring retrieval --qrels goldset-v{job.version.number}-gold.jsonl "
        f"--run {shlex.quote(job.run_filename)} --run-format {job.run_format} --k {job.k} "
        f"--metrics {shlex.quote(measures)} --all-queries --per-query --ci --strata strata.csv "
        f"--resamples {job.resamples} --seed {job.seed}"
    )
