"""Import jobs: every upload page stores the file and returns at once; a worker imports it.

* :func:`submit_import` (the request): the file is placed in the import storage directory
  (``IMPORT_STORAGE_DIR``, shared by web and workers; :mod:`goldset.imports.storage`): an upload
  Django already wrote there, hashed as it arrived, is renamed into place, so the request does no
  pass of its own over the bytes. A file over the size cap, not UTF-8 text or empty is refused
  (:class:`UploadRejected`, answered 422, nothing kept). The job records the file's name, size
  and sha256, and :func:`goldset.tasks.run_import_task` is queued through the outbox. The same
  file (sha256) for the same kind and options is the same job: a second submission (a double
  click) returns the first job and says so; a rejected or failed one is queued again with the
  new upload's file.
* :func:`run_import_job` (the worker): claims the job (``queued`` → ``running``, one
  conditional UPDATE, so a duplicate message does nothing), streams the stored file through the
  kind's importer (validate everything, then write all or nothing) and records the result in the
  same transaction as the rows. A rejected file ends ``rejected`` with its problems (line, field,
  message, expected); an unexpected error ends ``failed`` with a message. A lost database
  connection (a failover, a terminated backend) is survived like a scoring job's: the worker
  reconnects and requeues the import while it has attempts left (``max_attempts``), then fails
  it with a message. When a job is imported or rejected its file is deleted (after commit); a
  requeued job keeps it, and so does a failed or cancelled one, for
  ``IMPORT_RETRY_KEEP_SECONDS``, so its user can retry it.
* :func:`cancel_import_job` / :func:`retry_import_job` (the job page and the API): a queued or
  running import is cancelled (a running attempt stops at its next batch or progress write and
  stores nothing: the rows and the result commit together, under the job row's lock); a failed
  or cancelled one is queued again while its file is kept, else the user is told to upload it
  again.
* ``import_*`` commands call the same importers synchronously on a file (no job).
"""

import datetime as dt
import hashlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from django.db import (
    DatabaseError,
    IntegrityError,
    close_old_connections,
    connection,
    transaction,
)
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import GoldsetError, ImportRejected
from goldset.imports import storage
from goldset.imports.errors import problem_from_text
from goldset.imports.runs import checked_run_file
from goldset.imports.storage import StoredFile, UploadRejected
from goldset.imports.stored import StoredFileMissing, StoredUpload
from goldset.models import (
    FINISHED_IMPORT_STATUSES,
    RETRYABLE_IMPORT_STATUSES,
    Evaluator,
    GoldVersion,
    ImportChunk,
    ImportJob,
    ImportKind,
    ImportStatus,
    OutboxMessage,
    PairwiseTask,
    PcsCalibration,
    WebhookEvent,
)
from goldset.rules.jobs import IMPORT_OUTBOX_KIND, import_dedupe_key
from goldset.rules.measures import check_measures
from goldset.services import outbox, webhooks
from goldset.services.answer_imports import import_answer_logs, import_questions
from goldset.services.corpus import import_corpus
from goldset.services.evaluators import import_evaluator_outputs
from goldset.services.heartbeat import TRANSIENT, Heartbeat, record_despite_lost_connection
from goldset.services.pairwise_imports import import_pair_judgments
from goldset.services.pcs_calibrations import probe_config_for
from goldset.services.scoring_jobs import create_scoring_job, heartbeat_age, stale_seconds
from goldset.services.triples import import_triples
from goldset.services.version_tags import resolve_version_option
from workbench.roles import Role, has_role
from workbench.services.audit import record_event

logger = logging.getLogger(__name__)
RUN_IMPORT_TASK = "goldset.run_import"
__all__ = [
    "UploadRejected",
    "submit_import",
    "run_import_job",
    "reconcile_imports",
    "cancel_import_job",
    "retry_import_job",
]
# A lost connection (the backend terminated, a failover): the import is requeued, not failed.


@dataclass(frozen=True)
class Submission:
    job: ImportJob
    created: bool
    message: str


def max_upload_bytes() -> int:
    return tunable("IMPORT_MAX_UPLOAD_BYTES")


def _dedupe_key(kind: str, sha256: str, options: dict) -> str:
    canonical = json.dumps({"kind": kind, "sha256": sha256, "options": options}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def check_options(*, project, kind: str, actor, options: dict) -> dict:
    """The options each kind accepts, for an import into ``project``; raises GoldsetError for a
    wrong one (a version, calibration or evaluator of another project is unknown here)."""
    if kind not in ImportKind.values:
        raise GoldsetError(f"unknown import kind {kind!r}")
    allowed = {
        ImportKind.CORPUS: {"domain"},
        ImportKind.TRIPLES: {"on_behalf"},
        ImportKind.RUN: {"version", "name", "k", "calibration", "metrics"},
        ImportKind.EVALUATOR: {"evaluator"},
        ImportKind.PAIRWISE: {"task"},
    }.get(kind, set())
    cleaned = {k: v for k, v in options.items() if k in allowed and v not in (None, "", False)}
    if kind == ImportKind.TRIPLES and cleaned.get("on_behalf"):
        if not has_role(actor, Role.ADMIN):
            raise GoldsetError("Only an admin may import triples on behalf of other authors.")
    if kind == ImportKind.EVALUATOR:
        if not has_role(actor, Role.ADMIN):
            raise GoldsetError("Only an admin may import evaluator outputs.")
        _evaluator(cleaned, project=project)  # raises unless it exists in the project
    if kind == ImportKind.PAIRWISE:
        if not has_role(actor, Role.ADMIN):
            raise GoldsetError("Only an admin may import pairwise judgments.")
        _pairwise_task(cleaned, project=project)  # raises unless it exists in the project
    if kind == ImportKind.RUN:
        # A tag or "latest" is resolved now: the job scores the version it named when sent.
        cleaned["version"] = resolve_version_option(
            project=project, ref=cleaned.get("version")
        ).number
    if kind == ImportKind.RUN and cleaned.get("calibration"):
        if not has_role(actor, Role.ADMIN):
            raise GoldsetError("Only an admin may score a run with a PCS calibration.")
        # Raises unless it is the project's and has succeeded.
        probe_config_for(_calibration(cleaned, project=project), project=project)
    if kind == ImportKind.RUN and "metrics" in cleaned:
        # Stored as labels, so the same measures spelled twice ("P_5", "precision@5") are
        # the same options; other measures are another job.
        cleaned["metrics"] = check_measures(cleaned["metrics"], k=int(cleaned.get("k") or 10))
    return cleaned


def _calibration(options: dict, *, project) -> PcsCalibration | None:
    """The project's PCS calibration a run import's options name (a pk), or None for the
    defaults."""
    pk = options.get("calibration")
    if not pk:
        return None
    calibration = PcsCalibration.objects.filter(project=project, pk=pk).first()
    if calibration is None:
        raise GoldsetError(f"calibration: no PCS calibration #{pk}")
    return calibration


def _evaluator(options: dict, *, project) -> Evaluator:
    """The project's evaluator an evaluator-output import's options name (a pk)."""
    evaluator = Evaluator.objects.filter(project=project, pk=options.get("evaluator") or 0).first()
    if evaluator is None:
        raise GoldsetError(f"evaluator: no evaluator #{options.get('evaluator')}")
    return evaluator


def submit_import(*, project, kind: str, upload, actor, options: dict | None = None) -> Submission:
    """Store an upload and queue its import into ``project``; see the module docstring. Raises
    UploadRejected (nothing stored) for a file over the size cap, not UTF-8 or empty,
    GoldsetError for a bad option. Idempotent per (project, kind, file sha256, options)."""
    name = upload.name or "upload"
    options = check_options(project=project, kind=kind, actor=actor, options=options or {})
    stored = storage.store_upload(upload, name=name)
    try:
        submission = _submit(
            project=project, kind=kind, stored=stored, name=name, actor=actor, options=options
        )
    except BaseException:
        stored.discard()  # no job refers to it (the transaction rolled back)
        raise
    if submission.job.file_name != stored.name:
        stored.discard()  # the same file was already submitted: that job has its own copy
    return submission


@transaction.atomic
def _submit(
    *, project, kind: str, stored: StoredFile, name: str, actor, options: dict
) -> Submission:
    key = _dedupe_key(kind, stored.sha256, options)
    existing = (
        ImportJob.objects.select_for_update()
        .filter(project=project, kind=kind, dedupe_key=key)
        .first()
    )
    if existing is not None:
        return _resubmitted(existing, actor, stored)
    try:
        with transaction.atomic():
            job = ImportJob.objects.create(
                project=project,
                kind=kind,
                dedupe_key=key,
                filename=name[:300],
                sha256=stored.sha256,
                size=stored.size,
                file_name=stored.name,
                options=options,
                on_behalf=bool(options.get("on_behalf")),
                max_attempts=tunable("JOB_MAX_ATTEMPTS"),
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
    except IntegrityError:
        # A concurrent submission of the same file committed first: that is the job.
        existing = ImportJob.objects.select_for_update().get(
            project=project, kind=kind, dedupe_key=key
        )
        return _resubmitted(existing, actor, stored)
    record_event(
        actor=actor,
        verb="import_submitted",
        obj=job,
        detail={"kind": kind, "sha256": stored.sha256, "size": stored.size, "options": options},
    )
    _queue(job.pk)
    return Submission(job=job, created=True, message=f"{name} is queued for import.")


def _resubmitted(job: ImportJob, actor, stored: StoredFile) -> Submission:
    when = timezone.localtime(job.created_at).strftime("%Y-%m-%d %H:%M")
    if job.status in (ImportStatus.QUEUED, ImportStatus.RUNNING):
        message = (
            f"This file was already submitted ({when}); it is {job.get_status_display().lower()}."
        )
        if job.status == ImportStatus.QUEUED:
            _queue(job.pk)  # its message may be lost; a duplicate does nothing
    elif job.status == ImportStatus.SUCCEEDED:
        message = f"This file was already imported ({when}); nothing was imported again."
    else:
        # Its file was deleted when it ended: the same bytes (same sha256) just arrived.
        previous, old = job.get_status_display().lower(), job.file_name
        job.file_name = stored.name
        _reset(job)
        transaction.on_commit(lambda: storage.remove(old))
        record_event(actor=actor, verb="import_resubmitted", obj=job)
        _queue(job.pk)
        message = f"This file was {previous} before; it is checked again."
    return Submission(job=job, created=False, message=message)


def _reset(job: ImportJob, *, message: str = "") -> None:
    """Queue an ended job again, with a fresh allowance of ``JOB_MAX_ATTEMPTS`` attempts
    (its ``attempts`` keep counting, so an earlier attempt still running never matches)."""
    job.status, job.stage, job.progress = ImportStatus.QUEUED, "", 0
    job.errors, job.error_count, job.message, job.summary = [], 0, message, {}
    job.finished_at = None
    job.max_attempts = job.attempts + tunable("JOB_MAX_ATTEMPTS")
    job.save(
        update_fields=[
            "file_name",
            "status",
            "stage",
            "progress",
            "errors",
            "error_count",
            "message",
            "summary",
            "finished_at",
            "max_attempts",
        ]
    )


def _who(actor) -> str:
    return getattr(actor, "username", "") or "a script"


def _when(moment: dt.datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def file_kept(job: ImportJob) -> bool:
    """Whether the job's file can still be read (a retry needs it)."""
    if job.chunk_count:
        return True
    return bool(job.file_name) and storage.path_of(job.file_name).is_file()


@dataclass(frozen=True)
class ImportLiveness:
    """What the import's page says about its worker and what may be done with the job (who
    may do it is the access table's): the heartbeat's age, whether a running import has gone
    quiet past the staleness window, and whether it can be cancelled or retried from its file."""

    heartbeat_age: float | None
    stuck: bool
    stale_seconds: int
    can_cancel: bool
    can_retry: bool
    file_gone: bool


def import_liveness(job: ImportJob) -> ImportLiveness:
    age = heartbeat_age(job)
    retryable = job.status in RETRYABLE_IMPORT_STATUSES
    kept = retryable and file_kept(job)
    return ImportLiveness(
        heartbeat_age=age,
        stuck=job.status == ImportStatus.RUNNING and (age is None or age > stale_seconds()),
        stale_seconds=stale_seconds(),
        can_cancel=not job.finished,
        can_retry=kept,
        file_gone=retryable and not kept,
    )


@transaction.atomic
def cancel_import_job(*, job: ImportJob, actor) -> ImportJob:
    """Cancel a queued or running import (under the row's lock). A running attempt stops at
    its next batch or progress write and stores nothing: its rows and its result commit in one
    transaction that locks this row first, so it either committed before (then the job is
    imported and cannot be cancelled) or rolls back. The file is kept for a retry. Raises
    GoldsetError for an import that has ended. Idempotent in effect: cancelling twice says so."""
    locked = ImportJob.objects.select_for_update().get(pk=job.pk)
    if locked.finished:
        raise GoldsetError(f"Import #{job.pk} is already {locked.get_status_display().lower()}.")
    now = timezone.now()
    was = locked.get_status_display().lower()
    locked.status, locked.stage, locked.finished_at = ImportStatus.CANCELLED, "", now
    locked.message = f"Cancelled by {_who(actor)} at {_when(now)} (was {was}); nothing imported."
    locked.save(update_fields=["status", "stage", "finished_at", "message"])
    record_event(actor=actor, verb="import_cancelled", obj=locked, detail={"was": was})
    webhooks.emit(
        WebhookEvent.IMPORT_FINISHED,
        webhooks.import_data(locked, status=ImportStatus.CANCELLED),
        project=locked.project,
    )
    return locked


@transaction.atomic
def retry_import_job(*, job: ImportJob, actor) -> ImportJob:
    """Queue a failed or cancelled import again from its kept file (the whole file is checked
    and written again, all or nothing). Raises GoldsetError for any other status, and, with a
    plain message asking for the file again, when the file is no longer stored (deleted after
    ``IMPORT_RETRY_KEEP_SECONDS``, or another volume)."""
    locked = ImportJob.objects.select_for_update().get(pk=job.pk)
    if locked.status not in RETRYABLE_IMPORT_STATUSES:
        raise GoldsetError(
            f"Only a failed or cancelled import can be retried; import #{job.pk} is "
            f"{locked.get_status_display().lower()}."
        )
    if not file_kept(locked):
        raise GoldsetError(
            f"The file of import #{job.pk} ({locked.filename}) is no longer stored; "
            "upload it again to import it."
        )
    was = locked.get_status_display().lower()
    _reset(locked, message=f"Retried by {_who(actor)} at {_when(timezone.now())} (was {was}).")
    record_event(actor=actor, verb="import_retried", obj=locked, detail={"was": was})
    _queue(locked.pk)
    return locked


def _queue(job_id: int) -> None:
    """Queue the job's task through the outbox, in the caller's transaction: the upload commits
    even when the broker is down, and the message is relayed at commit or, after an outage, by
    the reconciler (a duplicate message does nothing: the claim is conditional)."""
    outbox.enqueue(
        kind=IMPORT_OUTBOX_KIND, payload={"import_id": job_id}, dedupe_key=import_dedupe_key(job_id)
    )


def reconcile_imports(*, now: dt.datetime | None = None) -> dict:
    """The reconciler's pass over import jobs, like scoring jobs': a running job with no
    heartbeat for ``JOB_STALE_SECONDS`` lost its worker (its write transaction died with it, so
    nothing of it is stored) and is requeued, or failed with a message once ``JOB_MAX_ATTEMPTS``
    attempts were used; a queued job with no open outbox message after
    ``OUTBOX_REDISPATCH_SECONDS`` is queued again. Each change happens under the row's lock."""
    now = now or timezone.now()
    stale_before = now - dt.timedelta(seconds=tunable("JOB_STALE_SECONDS"))
    requeued, failed, redispatched = [], [], []
    lost = ImportJob.objects.filter(status=ImportStatus.RUNNING).filter(
        Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True)
    )
    for pk in lost.values_list("pk", flat=True):
        with transaction.atomic():
            job = ImportJob.objects.select_for_update().get(pk=pk)
            fresh = job.heartbeat_at is not None and job.heartbeat_at >= stale_before
            if job.status != ImportStatus.RUNNING or fresh:
                continue
            since = job.heartbeat_at.isoformat(timespec="seconds") if job.heartbeat_at else "-"
            lost_text = (
                f"Attempt {job.attempts} on worker {job.worker or '?'} was lost: "
                f"no heartbeat since {since}."
            )
            if job.attempts >= job.max_attempts:
                _finish(
                    job,
                    ImportStatus.FAILED,
                    message=f"{lost_text} All {job.attempts} attempts are used; "
                    "retry the import to try again.",
                    problems=[],
                )
                failed.append(pk)
                continue
            ImportJob.objects.filter(pk=pk).update(
                status=ImportStatus.QUEUED,
                stage="re-queued: worker lost",
                progress=0,
                message=f"{lost_text} Requeued by the reconciler.",
            )
            record_event(
                actor=None,
                verb="import_requeued",
                obj=job,
                detail={"lost_worker": job.worker, "attempt": job.attempts},
            )
            _queue(pk)
            requeued.append(pk)
    waiting_since = now - dt.timedelta(seconds=outbox.redispatch_seconds())
    open_keys = set(
        OutboxMessage.objects.filter(kind=IMPORT_OUTBOX_KIND, done_at__isnull=True).values_list(
            "dedupe_key", flat=True
        )
    )
    waiting = ImportJob.objects.filter(status=ImportStatus.QUEUED, created_at__lt=waiting_since)
    for pk in waiting.values_list("pk", flat=True):
        if import_dedupe_key(pk) in open_keys:
            continue  # its message is pending or in flight; the outbox reconciler watches it
        with transaction.atomic():
            if (
                ImportJob.objects.select_for_update()
                .filter(pk=pk, status=ImportStatus.QUEUED)
                .exists()
            ):
                _queue(pk)
                redispatched.append(pk)
    return {
        "requeued": requeued,
        "failed": failed,
        "redispatched": redispatched,
        "files_swept": _sweep_files(now=now),
    }


def _sweep_files(*, now: dt.datetime | None = None) -> int:
    """Delete the files of failed or cancelled jobs once ``IMPORT_RETRY_KEEP_SECONDS`` after
    they ended (a retry then asks for the file again), and stored files no job refers to, once
    older than IMPORT_ORPHAN_SECONDS (a request that died after storing its file, a submission
    that rolled back). Files of imported or rejected jobs are deleted as they end."""
    now = now or timezone.now()
    expired = ImportJob.objects.filter(
        status__in=RETRYABLE_IMPORT_STATUSES,
        finished_at__lt=now - dt.timedelta(seconds=tunable("IMPORT_RETRY_KEEP_SECONDS")),
    ).exclude(file_name="")
    for pk in expired.values_list("pk", flat=True):
        with transaction.atomic():
            job = ImportJob.objects.select_for_update().get(pk=pk)
            if job.status in RETRYABLE_IMPORT_STATUSES and job.file_name:
                _drop_file(job)
                job.file_name = ""
                job.save(update_fields=["file_name"])
    keep = set(
        ImportJob.objects.exclude(
            status__in=[s for s in FINISHED_IMPORT_STATUSES if s not in RETRYABLE_IMPORT_STATUSES]
        )
        .exclude(file_name="")
        .values_list("file_name", flat=True)
    )
    swept = storage.orphans(keep=keep, older_than_seconds=tunable("IMPORT_ORPHAN_SECONDS"))
    for path in swept:
        path.unlink(missing_ok=True)
    if swept:
        logger.info("import storage: deleted %s orphaned file(s)", len(swept))
    return len(swept)


# ---------------------------------------------------------------- the worker's side


def _claim(job_id: int, worker: str) -> ImportJob | None:
    now = timezone.now()
    claimed = ImportJob.objects.filter(pk=job_id, status=ImportStatus.QUEUED).update(
        status=ImportStatus.RUNNING,
        stage="validating",
        progress=0,
        worker=worker[:200],
        started_at=now,
        heartbeat_at=now,
        attempts=F("attempts") + 1,
    )
    if not claimed:
        return None
    return ImportJob.objects.select_related("created_by", "project").get(pk=job_id)


class _ProgressRelay(threading.Thread):
    """Writes an attempt's progress from inside its write transaction on a connection of its
    own: an update on the import's connection would stay invisible until commit (the bar sat
    at "validating 50 %" through the whole store stage) and would lock the job row. The import
    only posts the latest (stage, percent) and never waits for it; a write blocked on the job
    row (the result being committed) finds the attempt ended afterwards and updates nothing.
    Best effort: a failed write is dropped (the next one or the result says more)."""

    def __init__(self, rows: Callable[[], QuerySet]):
        super().__init__(name="import-progress", daemon=True)
        self.rows = rows  # this attempt's row, while it is still this attempt's
        self.latest: tuple[str, int] | None = None
        self.posted = threading.Event()
        self.halt = False

    def post(self, stage: str, percent: int) -> None:
        self.latest = (stage, percent)
        self.posted.set()

    def run(self) -> None:
        try:
            while True:
                self.posted.wait()
                self.posted.clear()
                if self.halt:
                    return
                stage, percent = self.latest
                try:
                    self.rows().update(stage=stage, progress=percent, heartbeat_at=timezone.now())
                except TRANSIENT:
                    connection.close()
        finally:
            connection.close()

    def stop(self) -> None:
        self.halt = True
        self.posted.set()
        self.join(timeout=5)


def _progress_writer(job_id: int, attempt: int, relay: _ProgressRelay | None = None):
    """Progress of one attempt, written at each batch boundary; raises :class:`_TakenOver` once
    the job is no longer this attempt's (cancelled, or taken over by the reconciler), so the
    attempt stops there and stores nothing. Inside the write transaction the progress goes
    through ``relay`` (its own connection), so the page follows the store stage too."""
    mine = ImportJob.objects.filter(pk=job_id, status=ImportStatus.RUNNING, attempts=attempt)
    reached = [0]

    def write(stage: str, percent: int) -> None:
        percent = reached[0] = max(reached[0], min(percent, 99))  # the bar never goes back
        if transaction.get_connection().in_atomic_block:
            # A read still sees a cancellation committed meanwhile (read committed).
            if not mine.exists():
                raise _TakenOver(job_id)
            if relay is not None:
                relay.post(stage, percent)
            return
        if not mine.update(stage=stage, progress=percent, heartbeat_at=timezone.now()):
            raise _TakenOver(job_id)

    return write


def _importer(job: ImportJob):
    options = job.options
    # The store stage writes into the job's project (documents, blocks, triples and their
    # look-ups by id are the project's).
    if job.kind == ImportKind.CORPUS:
        return lambda **kw: import_corpus(
            project=job.project, default_domain=options.get("domain"), **kw
        )
    if job.kind == ImportKind.TRIPLES:
        return lambda **kw: import_triples(
            project=job.project, on_behalf=bool(options.get("on_behalf")), **kw
        )
    if job.kind == ImportKind.QUESTIONS:
        return lambda **kw: import_questions(project=job.project, **kw)
    if job.kind == ImportKind.ANSWERS:
        return lambda **kw: import_answer_logs(project=job.project, **kw)
    if job.kind == ImportKind.EVALUATOR:
        return lambda **kw: import_evaluator_outputs(
            evaluator=_evaluator(options, project=job.project), **kw
        )
    if job.kind == ImportKind.PAIRWISE:
        return lambda **kw: import_pair_judgments(
            task=_pairwise_task(options, project=job.project), **kw
        )
    return lambda **kw: _import_run(options=options, project=job.project, **kw)


def _pairwise_task(options: dict, *, project) -> PairwiseTask:
    """The project's pairwise task a judgments import's options name (a pk)."""
    task = PairwiseTask.objects.filter(project=project, pk=options.get("task") or 0).first()
    if task is None:
        raise GoldsetError("Name a pairwise task of this project to import judgments into.")
    return task


# The tables each kind writes, whose planner statistics are refreshed after it (see
# ``refresh_statistics``).
WRITTEN_TABLES = {
    ImportKind.CORPUS: ("goldset_document", "goldset_block", "goldset_blockversion"),
    ImportKind.QUESTIONS: ("goldset_question", "goldset_evidencepassage"),
    ImportKind.ANSWERS: (
        "goldset_system",
        "goldset_run",
        "goldset_answerrecord",
        "goldset_retrievedpassage",
        "goldset_answercitation",
    ),
    ImportKind.TRIPLES: ("goldset_triple", "goldset_triplerevision"),
    ImportKind.EVALUATOR: ("goldset_evaluatoroutput",),
    ImportKind.PAIRWISE: ("goldset_pairassignment", "goldset_pairjudgment"),
}


def refresh_statistics(kind: str) -> list[str]:
    """``ANALYZE`` the tables an imported file just filled (PostgreSQL; returns them). A bulk
    load can double a table in one commit, and until autovacuum's next round (a minute at best,
    never when it is off) the planner plans on the old row counts: the next import's look-ups
    by id then scanned every block version per batch instead of probing the index (the 200 MB
    answer log after a 200 MB corpus, issue 24). Best effort: a failure is logged, the import
    stays imported."""
    tables = WRITTEN_TABLES.get(kind, ())
    if not tables or connection.vendor != "postgresql":
        return []
    try:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE " + ", ".join(tables))
    except DatabaseError:
        logger.warning("import: ANALYZE of %s failed", ", ".join(tables), exc_info=True)
        return []
    return list(tables)


def _import_run(*, options: dict, project, source, actor, source_name: str, progress, on_written):
    """A run to score: read through the toolkit first (BOM, UTF-8, NUL, NaN/Infinity, nesting
    depth, with line and field), then validated by the scoring upload rules; a scoring job is
    created in the same transaction as the import job's result. The run goes from the stored
    upload to a temporary file in blocks and is validated and stored from that file (a 200 MiB
    run is never held whole in memory)."""
    with checked_run_file(source) as path:
        progress("validating", 40)
        # The import job's project's version: a run is scored in the project it was sent to.
        version = GoldVersion.objects.get(project=project, number=options["version"], sealed=True)
        with transaction.atomic():
            job = create_scoring_job(
                version=version,
                name=options.get("name") or source_name,
                path=path,
                filename=source_name,
                actor=actor,
                k=int(options.get("k") or 10),
                calibration=_calibration(options, project=project),
                metrics=options.get("metrics"),
            )
            summary = {
                "scoring_job": job.pk,
                "kind": job.kind,
                "format": job.run_format,
                "calibration": job.calibration.label if job.calibration else "",
                "reused": bool(getattr(job, "reused", False)),
            }
            on_written(_Summary(summary))
    return summary


class _Summary:
    def __init__(self, data: dict):
        self.data = data

    def as_dict(self) -> dict:
        return self.data


class _TakenOver(Exception):
    """This attempt lost its job (cancelled, or taken over by the reconciler): nothing it wrote
    may commit."""


def run_import_job(*, job_id: int, worker: str = "", heartbeat: bool = False) -> ImportJob | None:
    """Run one queued import job (see the module docstring). Returns the job, or ``None``
    when it was not queued (a duplicate or re-delivered message). ``heartbeat`` starts the
    heartbeat thread (real workers), so the reconciler can tell a long import from a lost one."""
    job = _claim(job_id, worker)
    if job is None:
        return None
    actor = job.created_by
    importer = _importer(job)
    this_attempt = ImportJob.objects.filter(
        pk=job.pk, status=ImportStatus.RUNNING, attempts=job.attempts
    )
    beat = Heartbeat(f"import-{job.pk}", lambda: this_attempt.all()) if heartbeat else None

    def succeeded(summary) -> None:
        # Only this attempt may record the result, in the rows' own transaction, holding the
        # job row's lock until commit: an attempt cancelled or given up on by the reconciler
        # rolls its rows back instead of importing the file twice, and a cancellation waits
        # for this commit and then finds the job imported.
        if not list(this_attempt.select_for_update().values_list("pk", flat=True)):
            raise _TakenOver(job.pk)
        this_attempt.all().update(
            status=ImportStatus.SUCCEEDED,
            stage="done",
            progress=100,
            summary=summary.as_dict(),
            finished_at=timezone.now(),
            file_name="",
        )
        _drop_file(job)
        record_event(actor=actor, verb="import_succeeded", obj=job, detail=summary.as_dict())
        webhooks.emit(
            WebhookEvent.IMPORT_FINISHED,
            webhooks.import_data(job, status=ImportStatus.SUCCEEDED, summary=summary.as_dict()),
            project=job.project,
        )

    source = StoredUpload(job)
    try:
        source.check()
    except StoredFileMissing as exc:
        _finish(job, ImportStatus.FAILED, message=str(exc), problems=[], attempt=job.attempts)
        return ImportJob.objects.get(pk=job.pk)
    if beat is not None:
        beat.start()
    # SQLite allows one writer: a second connection would wait for the import's commit.
    relay = _ProgressRelay(lambda: this_attempt.all()) if connection.vendor != "sqlite" else None
    if relay is not None:
        relay.start()
    try:
        importer(
            source=source,
            actor=actor,
            source_name=job.filename,
            progress=_progress_writer(job.pk, job.attempts, relay),
            on_written=succeeded,
        )
    except _TakenOver:
        logger.warning(
            "import job %s: attempt %s was cancelled or taken over; its rows rolled back",
            job.pk,
            job.attempts,
        )
    except StoredFileMissing as exc:
        _finish(job, ImportStatus.FAILED, message=str(exc), problems=[], attempt=job.attempts)
    except ImportRejected as exc:
        # Every problem with its line: the toolkit's carry it; a run's (the scoring library's
        # words, "run.trec, line 3: …") are read back from the text.
        problems = exc.problems or [
            problem_from_text(text) for text in exc.errors if not text.startswith("…")
        ]
        _finish(
            job,
            ImportStatus.REJECTED,
            message=f"{len(exc.errors)} problem(s)",
            problems=problems,
            attempt=job.attempts,
        )
    except GoldsetError as exc:
        _finish(
            job,
            ImportStatus.REJECTED,
            message=str(exc),
            problems=[problem_from_text(str(exc))],
            attempt=job.attempts,
        )
    except TRANSIENT as exc:
        logger.warning("import job %s lost its database connection: %s", job.pk, exc)
        _record_lost_connection(job, exc)
    except Exception as exc:
        logger.exception("import job %s failed", job.pk)
        close_old_connections()
        _finish(
            job,
            ImportStatus.FAILED,
            message=f"{type(exc).__name__}: {exc}"[:2000],
            problems=[],
            attempt=job.attempts,
        )
    else:
        refresh_statistics(job.kind)
    finally:
        if relay is not None:
            relay.stop()
        if beat is not None:
            beat.stop()
    return ImportJob.objects.get(pk=job.pk)


def _record_lost_connection(job: ImportJob, exc: Exception) -> None:
    """A lost database connection ends this attempt, not the job: reconnect first (the error
    handler must not fail on the connection that failed the import), then requeue it while it
    has attempts left, else fail it with a message. Its write transaction died with the
    connection, so nothing of it is stored."""
    record_despite_lost_connection(lambda: _requeue_or_fail(job, exc), reconnect=True)


@transaction.atomic
def _requeue_or_fail(job: ImportJob, exc: Exception) -> None:
    locked = (
        ImportJob.objects.select_for_update()
        .filter(pk=job.pk, status=ImportStatus.RUNNING, attempts=job.attempts)
        .first()
    )
    if locked is None:
        return  # cancelled or taken over meanwhile: that decision stands
    reason = (f"{type(exc).__name__}: {exc}".strip().splitlines() or [""])[0][:300]
    lost = (
        f"Attempt {locked.attempts} on {locked.worker or '?'} lost its database connection at "
        f"{_when(timezone.now())} ({reason})."
    )
    if locked.attempts >= locked.max_attempts:
        _finish(
            locked,
            ImportStatus.FAILED,
            message=f"{lost} All {locked.max_attempts} attempts are used; nothing was "
            "imported. Retry the import to try again.",
            problems=[],
            attempt=locked.attempts,
        )
        return
    ImportJob.objects.filter(pk=locked.pk).update(
        status=ImportStatus.QUEUED,
        stage="re-queued: database connection lost",
        progress=0,
        message=f"{lost} Requeued automatically; nothing of that attempt was stored.",
    )
    record_event(
        actor=None,
        verb="import_requeued",
        obj=locked,
        detail={"error": reason, "attempt": locked.attempts},
    )
    _queue(locked.pk)


@transaction.atomic
def _finish(
    job: ImportJob, status: str, *, message: str, problems, attempt: int | None = None
) -> None:
    """Record a rejected or failed import, its audit event and its webhook event together.
    With ``attempt``, only while that attempt still holds the job (an attempt the reconciler
    took over must not overwrite what the reconciler decided). A rejected file is deleted
    (after commit); a failed job keeps its file for a retry (see :func:`_sweep_files`)."""
    keep_file = status == ImportStatus.FAILED and file_kept(job)
    ending = ImportJob.objects.filter(pk=job.pk)
    if attempt is not None:
        ending = ending.filter(status=ImportStatus.RUNNING, attempts=attempt)
    if not ending.update(
        status=status,
        stage="",
        errors=[p.as_dict() for p in problems],
        error_count=len(problems),
        message=message,
        finished_at=timezone.now(),
        file_name=job.file_name if keep_file else "",
    ):
        return
    if not keep_file:
        _drop_file(job)
    record_event(
        actor=job.created_by,
        verb=f"import_{status}",
        obj=job,
        detail={"message": message[:500], "problems": len(problems)},
    )
    webhooks.emit(
        WebhookEvent.IMPORT_FINISHED,
        webhooks.import_data(job, status=status, errors=len(problems)),
        project=job.project,
    )


def _drop_file(job: ImportJob) -> None:
    """The job has ended: its stored file goes once that is committed (a rollback keeps both)."""
    name = job.file_name
    if job.chunk_count:
        ImportChunk.objects.filter(job_id=job.pk).delete()
    transaction.on_commit(lambda: storage.remove(name))
