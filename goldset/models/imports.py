"""Import jobs: an uploaded file kept in the import storage directory (``IMPORT_STORAGE_DIR``, a
volume web and workers share; see ``goldset.imports.storage``) and parsed by a worker, all or
nothing. Jobs queued before that directory existed kept their file in ``ImportChunk`` rows.

A submission is identified by ``dedupe_key`` (the kind, the file's sha256 and the options that
change the result), unique per kind, so the same file submitted twice is the same job."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class ImportKind(models.TextChoices):
    CORPUS = "corpus", "Corpus (JSONL manifest or Unrag JSON)"
    TRIPLES = "triples", "Gold triples"
    QUESTIONS = "questions", "Questions"
    ANSWERS = "answers", "Answer logs"
    RUN = "run", "Run to score"
    EVALUATOR = "evaluator", "Evaluator outputs"
    PAIRWISE = "pairwise", "Pairwise judgments"


class ImportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Imported"
    REJECTED = "rejected", "Rejected"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


FINISHED_IMPORT_STATUSES = (
    ImportStatus.SUCCEEDED,
    ImportStatus.REJECTED,
    ImportStatus.FAILED,
    ImportStatus.CANCELLED,
)
# Ended imports a user may retry (their file is kept for IMPORT_RETRY_KEEP_SECONDS).
RETRYABLE_IMPORT_STATUSES = (ImportStatus.FAILED, ImportStatus.CANCELLED)


class ImportJob(models.Model):
    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=12, choices=ImportKind.choices)
    dedupe_key = models.CharField(max_length=64)
    filename = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    # The file in IMPORT_STORAGE_DIR (relative to it); empty once the job has ended and the file
    # was deleted, and for jobs stored as ImportChunk rows.
    file_name = models.CharField(max_length=200, blank=True)
    chunk_count = models.PositiveIntegerField(default=0)
    options = models.JSONField(default=dict, blank=True)
    on_behalf = models.BooleanField(default=False)
    status = models.CharField(
        max_length=12, choices=ImportStatus.choices, default=ImportStatus.QUEUED
    )
    stage = models.CharField(max_length=60, blank=True)
    progress = models.PositiveSmallIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    error_count = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # Attempts this job may use before it fails (JOB_MAX_ATTEMPTS at submission; a retry by a
    # user grants that many more).
    max_attempts = models.PositiveIntegerField(default=3)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "kind", "dedupe_key"], name="import_job_unique_file_per_project"
            ),
            models.CheckConstraint(condition=Q(progress__lte=100), name="import_progress_0_100"),
        ]
        indexes = [models.Index(fields=["status", "created_at"])]

    def __str__(self):
        return f"import {self.pk} {self.kind} {self.filename}"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED_IMPORT_STATUSES


class ImportChunk(models.Model):
    """The uploaded file's bytes, in order (jobs submitted before the import storage directory;
    new jobs keep their file on disk)."""

    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        ordering = ["job", "index"]
        constraints = [
            models.UniqueConstraint(fields=["job", "index"], name="import_chunk_unique_index")
        ]

    def __str__(self):
        return f"chunk {self.index} of import {self.job_id}"
