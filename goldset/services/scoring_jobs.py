"""Scoring jobs: upload validation, the Celery task's work, retries and recovery.

Every figure is computed by the ``scoring`` library (never re-implemented here), on the frozen
gold JSONL file of the job's version (checksum verified), so a job's numbers equal
``python -m scoring retrieval --qrels gold.jsonl --run RUN --all-queries --per-query --ci
--k K --resamples R --seed S`` on the same files (see :func:`reproduce_command`).

Idempotency: the task first *claims* the job (``queued`` → ``running``, one conditional
UPDATE), so a duplicate or re-delivered message for a job that is running, done or failed does
nothing. Results are written in one transaction that deletes the job's previous results first and
checks the job is still claimed by this worker, so there are never duplicate result rows.
A worker killed mid-job leaves it ``running``; :func:`recover_orphaned_jobs` (run when any
worker starts, and by ``manage.py score_run --recover``) re-queues jobs whose worker no longer
answers.
"""

import hashlib
import io
import json
import time
from collections import defaultdict
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

import scoring
from goldset.exceptions import GoldsetError
from goldset.models import (
    ExportFormat,
    GoldVersion,
    GoldVersionRow,
    JobStatus,
    RunFormat,
    RunKind,
    ScoreAggregate,
    ScoreQueryResult,
    ScoringJob,
    ScoringRunChunk,
)
from goldset.services import exports
from goldset.services.answer_scoring import score_answer_log, validate_answer_log
from goldset.services.scoring_runs import (
    Outcome,
    QueryRow,
    RunRejected,
    ValidatedRun,
    known_block_ids,
    read_run_bytes,
)
from scoring.errors import InputError
from scoring.io import read_qrels, read_run
from scoring.retrieval import evaluate
from scoring.stats import bootstrap_ci
from workbench.dispatch import enqueue
from workbench.services.audit import record_event

MAX_ERRORS = 50
RUN_CHUNK = exports.CHUNK_SIZE
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


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RunRejected([f"{name}, line {line}: not valid UTF-8 text"], source=name) from None


def _detect_kind(text: str) -> tuple[str, str]:
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return RunKind.RETRIEVAL, RunFormat.TREC
    first = text.lstrip().splitlines()[0]
    try:
        obj = json.loads(first)
    except json.JSONDecodeError:
        return RunKind.RETRIEVAL, RunFormat.JSONL
    if isinstance(obj, dict) and ("retrieved_passages" in obj or "answer" in obj):
        return RunKind.ANSWERS, RunFormat.ANSWERS
    return RunKind.RETRIEVAL, RunFormat.JSONL


def _scan_lines(text: str, fmt: str):
    """(line number, query id, [doc ids]) per record; only used to locate problems."""
    for lineno, raw in enumerate(text.splitlines(), start=1):
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


def _known_versions_hint(query_ids: list[str]) -> str:
    numbers = sorted(
        set(
            GoldVersionRow.objects.filter(triple_id__in=query_ids[:50]).values_list(
                "version__number", flat=True
            )
        )
    )
    return f" (they belong to {', '.join(f'v{n}' for n in numbers)})" if numbers else ""


def validate_retrieval_run(*, version: GoldVersion, text: str, name: str) -> ValidatedRun:
    """Validate the whole run or raise RunRejected listing every problem with its line:
    malformed lines and scores (via ``scoring.io``), a document twice for one query, a query
    on two JSONL lines, query ids that are not triples of ``version`` and block ids that are
    not in the corpus."""
    kind, fmt = _detect_kind(text)
    buffer = io.StringIO(text)
    buffer.name = name
    try:
        run = read_run(buffer, fmt=fmt)
    except InputError as exc:
        raise RunRejected([str(exc)], source=name) from None
    known_queries = set(version.rows.values_list("triple_id", flat=True))
    run_queries = pd.unique(run.query_id)
    unknown_q = {q for q in run_queries if q not in known_queries}
    doc_ids = pd.unique(run.doc_id)
    known_blocks = known_block_ids(list(doc_ids))
    unknown_d = {d for d in doc_ids if d not in known_blocks}
    problems: list[str] = []
    if unknown_q and len(unknown_q) == len(run_queries):
        problems.append(
            f"{name}: none of the run's {len(run_queries)} query ids are triples of gold version "
            f"v{version.number}; was the run made for another version?"
            + _known_versions_hint(sorted(unknown_q))
        )
    duplicate_lines = fmt == RunFormat.JSONL and len(run_queries) != _count_records(text)
    if unknown_q or unknown_d or duplicate_lines:
        first_line: dict[str, int] = {}
        for lineno, qid, docs in _scan_lines(text, fmt):
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
    return ValidatedRun(kind=kind, fmt=fmt, n_queries=len(run_queries), n_rows=len(run.query_id))


def _count_records(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


# ---------------------------------------------------------------- creating, retrying


@transaction.atomic
def create_scoring_job(
    *,
    version: GoldVersion,
    name: str,
    data: bytes,
    filename: str,
    actor,
    k: int = 10,
    resamples: int | None = None,
    seed: int = DEFAULT_SEED,
) -> ScoringJob:
    """Validate the uploaded run whole, store it and queue its scoring after commit.

    Raises RunRejected (nothing stored, no job) for any problem in the file, GoldsetError for a
    version that is not sealed. The task is dispatched with ``transaction.on_commit``."""
    if not version.sealed:
        raise GoldsetError(f"gold version v{version.number} is not frozen")
    text = _decode(data, filename)
    if not text.strip():
        raise RunRejected([f"{filename}: the file is empty"], source=filename)
    kind, _ = _detect_kind(text)
    if kind == RunKind.ANSWERS:
        checked = validate_answer_log(version=version, text=text, name=filename)
    else:
        checked = validate_retrieval_run(version=version, text=text, name=filename)
    job = ScoringJob.objects.create(
        version=version,
        name=name or filename,
        kind=checked.kind,
        run_format=checked.fmt,
        run_filename=filename,
        run_sha256=exports.sha256_bytes(data),
        run_size=len(data),
        k=k,
        seed=seed,
        resamples=resamples or default_resamples(checked.n_queries),
        scorer_version=scorer_version(),
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    ScoringRunChunk.objects.bulk_create(
        ScoringRunChunk(job=job, index=i, data=data[start : start + RUN_CHUNK])
        for i, start in enumerate(range(0, len(data), RUN_CHUNK))
    )
    record_event(
        actor=actor,
        verb="scoring_job_created",
        obj=job,
        detail={
            "version": version.number,
            "run_sha256": job.run_sha256,
            "kind": job.kind,
            "queries": checked.n_queries,
        },
    )
    _dispatch_after_commit(job.pk)
    return job


def _dispatch_after_commit(job_id: int) -> None:
    transaction.on_commit(lambda: enqueue(SCORE_RUN_TASK, job_id))


@transaction.atomic
def retry_scoring_job(*, job: ScoringJob, actor) -> ScoringJob:
    """Queue a failed job again (its results are recomputed from scratch). Only failed jobs
    can be retried; raises GoldsetError otherwise."""
    locked = ScoringJob.objects.select_for_update().get(pk=job.pk)
    if locked.status != JobStatus.FAILED:
        raise GoldsetError(f"only a failed job can be retried; job {job.pk} is {locked.status}")
    locked.status, locked.stage, locked.progress, locked.error = JobStatus.QUEUED, "", 0, ""
    locked.save(update_fields=["status", "stage", "progress", "error"])
    record_event(actor=actor, verb="scoring_job_retried", obj=locked)
    _dispatch_after_commit(locked.pk)
    return locked


def recover_orphaned_jobs(*, alive_workers: set[str]) -> list[int]:
    """Re-queue running jobs whose worker is not in ``alive_workers`` (it died mid-job, e.g.
    SIGKILL). Each job is re-queued at most once per death: the conditional UPDATE only
    matches while the job is still marked as running on that dead worker."""
    requeued = []
    candidates = ScoringJob.objects.filter(status=JobStatus.RUNNING).values_list("pk", "worker")
    for pk, worker in candidates:
        if worker in alive_workers:
            continue
        moved = ScoringJob.objects.filter(pk=pk, status=JobStatus.RUNNING, worker=worker).update(
            status=JobStatus.QUEUED, stage="re-queued: worker lost", progress=0
        )
        if moved:
            record_event(
                actor=None,
                verb="scoring_job_requeued",
                object_type="goldset.scoringjob",
                object_id=pk,
                detail={"lost_worker": worker},
            )
            enqueue(SCORE_RUN_TASK, pk)
            requeued.append(pk)
    return requeued


# ---------------------------------------------------------------- running (the task's work)


class _Progress:
    """Writes stage, progress and per-stage timings to the job row as the work advances
    (autocommit, so the job page sees them while the task runs)."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.timings: dict[str, float] = {}
        self.stage = ""
        self.started = time.perf_counter()

    def enter(self, stage: str, progress: int) -> None:
        self._close()
        self.stage, self.started = stage, time.perf_counter()
        ScoringJob.objects.filter(pk=self.job_id).update(
            stage=stage, progress=progress, heartbeat_at=timezone.now(), stage_timings=self.timings
        )

    def step(self, progress: int) -> None:
        ScoringJob.objects.filter(pk=self.job_id).update(
            progress=progress, heartbeat_at=timezone.now()
        )

    def _close(self) -> None:
        if self.stage:
            self.timings[self.stage] = round(time.perf_counter() - self.started, 3)

    def finish(self) -> dict[str, float]:
        self._close()
        self.stage = ""
        return self.timings


def gold_jsonl_bytes(version: GoldVersion) -> bytes:
    stored = version.files.get(format=ExportFormat.GOLD_JSONL, redacted=False)
    return exports.read_verified_bytes(stored)


def run_scoring_job(*, job_id: int, worker: str = "") -> ScoringJob:
    """Score one job (the body of ``score_run_task``). Claims the job first; returns it
    unchanged when it is not queued (duplicate or late delivery). A failure marks the job
    failed with the reason and is not re-raised (the user retries from the job page)."""
    now = timezone.now()
    claimed = ScoringJob.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING,
        worker=worker,
        attempts=F("attempts") + 1,
        started_at=now,
        heartbeat_at=now,
        finished_at=None,
        stage="",
        progress=0,
        error="",
        stage_timings={},
    )
    job = ScoringJob.objects.select_related("version").get(pk=job_id)
    if not claimed:
        return job
    progress = _Progress(job_id)
    try:
        if job.kind == RunKind.ANSWERS:
            outcome = score_answer_log(job=job, progress=progress)
        else:
            outcome = _score_retrieval(job=job, progress=progress)
        progress.enter("store", 90)
        _store(job=job, worker=worker, outcome=outcome, progress=progress)
    except Exception as exc:  # noqa: BLE001 - any failure is reported on the job page
        ScoringJob.objects.filter(pk=job_id, status=JobStatus.RUNNING, worker=worker).update(
            status=JobStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:4000],
            finished_at=timezone.now(),
            stage_timings=progress.finish(),
        )
    job.refresh_from_db()
    return job


def _score_retrieval(*, job: ScoringJob, progress: _Progress) -> Outcome:
    progress.enter("load run", 5)
    run_text = read_run_bytes(job).decode("utf-8")
    run = read_run(io.StringIO(run_text), fmt=job.run_format)
    del run_text
    progress.enter("load gold version", 15)
    qrels = read_qrels(io.BytesIO(gold_jsonl_bytes(job.version)), fmt="gold")
    progress.enter("evaluate", 25)
    result = evaluate(qrels, run, k=job.k, all_queries=True)
    progress.enter("bootstrap", 40)
    labels = list(result.per_query)
    cis = {}
    for index, label in enumerate(labels):
        cis[label] = bootstrap_ci(result.per_query[label], n=job.resamples, seed=job.seed)
        progress.step(40 + int(40 * (index + 1) / len(labels)))
    progress.enter("breakdown", 82)
    qids = [str(q) for q in result.query_ids]
    strata = dict(
        (t, (d, tt))
        for t, d, tt in job.version.rows.values_list("triple_id", "domain", "task_type")
    )
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
    primary = PRIMARY_METRIC.format(k=job.k)
    order = np.lexsort((np.array(qids, dtype=object), result.per_query[primary]))
    worst = {qids[i] for i in order[:WORST_QUERIES]}
    retrieved = _top_k(run, worst, job.k)
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
        "all_queries": True,
        "aggregate": result.aggregate,
        "ci": {label: [cis[label].low, cis[label].high] for label in labels},
        "primary_metric": primary,
        "run_queries": int(len(pd.unique(run.query_id))),
        "missing_queries": int(result.n_queries - len(set(pd.unique(run.query_id)) & set(qids))),
    }
    return Outcome(per_query=per_query, aggregates=aggregates, summary=summary)


def _top_k(run, wanted: set[str], k: int) -> dict[str, list[str]]:
    """The top k documents of the wanted queries in trec_eval order (score desc at float32,
    then document id desc), for display next to the expected block."""
    mask = pd.Series(run.query_id).isin(wanted).to_numpy()
    rows = defaultdict(list)
    for qid, did, score in zip(run.query_id[mask], run.doc_id[mask], run.score[mask], strict=True):
        rows[str(qid)].append((float(np.float32(score)), str(did)))
    return {
        q: [d for _, d in sorted(items, key=lambda x: (x[0], x[1]), reverse=True)[:k]]
        for q, items in rows.items()
    }


def _store(*, job: ScoringJob, worker: str, outcome: Outcome, progress: "_Progress") -> None:
    with transaction.atomic():
        locked = ScoringJob.objects.select_for_update().get(pk=job.pk)
        if locked.status != JobStatus.RUNNING or locked.worker != worker:
            raise GoldsetError(f"job {job.pk} is no longer claimed by {worker}")
        ScoreQueryResult.objects.filter(job=locked).delete()
        ScoreAggregate.objects.filter(job=locked).delete()
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
            detail={"worker": worker, "attempt": locked.attempts},
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
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:  # noqa: S608
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


def reproduce_command(job: ScoringJob) -> str:
    if job.kind == RunKind.ANSWERS:
        return (
            "python -m scoring probe --questions probe-questions-packets.jsonl "
            f"--answers {job.run_filename} --labels labels.jsonl"
        )
    return (
        f"python -m scoring retrieval --qrels goldset-v{job.version.number}-gold.jsonl "
        f"--run {job.run_filename} --run-format {job.run_format} --k {job.k} --all-queries "
        f"--per-query --ci --resamples {job.resamples} --seed {job.seed}"
    )
