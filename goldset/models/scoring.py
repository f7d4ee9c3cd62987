"""Scoring jobs: an uploaded run scored against a frozen gold version by a Celery task.

Results are keyed on the job (unique per job and query / stratum and metric), so a re-delivered
task overwrites instead of duplicating."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from goldset.models.exports import GoldVersion


class RunKind(models.TextChoices):
    RETRIEVAL = "retrieval", "Retrieval run"
    ANSWERS = "answers", "RAG answer log"


class RunFormat(models.TextChoices):
    TREC = "trec", "TREC run"
    JSONL = "jsonl", "JSONL run"
    ANSWERS = "answers", "Answer log (JSONL)"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class ScoringJob(models.Model):
    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    version = models.ForeignKey(GoldVersion, on_delete=models.PROTECT, related_name="jobs")
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=12, choices=RunKind.choices)
    run_format = models.CharField(max_length=12, choices=RunFormat.choices)
    run_filename = models.CharField(max_length=300)
    run_sha256 = models.CharField(max_length=64)
    run_size = models.PositiveBigIntegerField()
    k = models.PositiveSmallIntegerField(default=10)
    seed = models.BigIntegerField(default=8821)
    resamples = models.PositiveIntegerField(default=10_000)
    # The retrieval measures computed, as ``scoring.retrieval`` labels in the order chosen
    # (``map``, ``ndcg@20``, ``rbp(0.9)``); empty for answer logs.
    metrics = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    stage = models.CharField(max_length=40, blank=True)
    progress = models.PositiveSmallIntegerField(default=0)
    stage_timings = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # Attempts allowed in total: set at creation and raised by each manual retry.
    max_attempts = models.PositiveIntegerField(default=3)
    worker = models.CharField(max_length=200, blank=True)
    # A fresh token per attempt: only the attempt holding it may write progress or results,
    # whatever the worker's name (a restarted worker keeps its name).
    claim = models.CharField(max_length=32, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    # What happened to earlier attempts (worker lost, connection lost, cancelled), for the page.
    notice = models.TextField(blank=True)
    scorer_version = models.CharField(max_length=80, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    calibration = models.ForeignKey(
        "goldset.PcsCalibration",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="PCS weights, caps and thresholds for answer logs; empty = PROBE defaults.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(progress__lte=100), name="job_progress_0_100"),
            models.CheckConstraint(condition=Q(k__gte=1), name="job_k_positive"),
        ]
        indexes = [
            # The project's job list, newest first.
            models.Index(fields=["project", "-created_at"], name="job_project_recent"),
            models.Index(fields=["version", "status"]),
            models.Index(fields=["status", "heartbeat_at"], name="job_status_heartbeat"),
            models.Index(fields=["run_sha256", "version"], name="job_run_sha_version"),
        ]

    def __str__(self):
        return f"job {self.pk} {self.name} on v{self.version_id}"

    @property
    def finished(self) -> bool:
        return self.status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class ScoringRunChunk(models.Model):
    """The uploaded run's bytes, in the database so any worker can read them."""

    job = models.ForeignKey(ScoringJob, on_delete=models.CASCADE, related_name="run_chunks")
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        ordering = ["job", "index"]
        constraints = [
            models.UniqueConstraint(fields=["job", "index"], name="run_chunk_unique_index")
        ]

    def __str__(self):
        return f"chunk {self.index} of job {self.job_id}"


class ChunkKind(models.TextChoices):
    EVALUATE = "evaluate", "Per-query measures of a slice of the queries"
    BOOTSTRAP = "bootstrap", "Bootstrap interval of one measure"


class ChunkStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"


class ScoringChunk(models.Model):
    """One piece of a large scoring job's work, done by whichever worker claims it first.

    Rows belong to one attempt of the job (``claim`` is the job's claim when the work was
    split); ``inputs`` and ``result`` are compact binary arrays (Arrow IPC / NumPy ``.npz``), so
    any worker on any machine can do the piece from the database alone. A running piece whose
    ``heartbeat_at`` is older than the staleness window is taken over."""

    job = models.ForeignKey(ScoringJob, on_delete=models.CASCADE, related_name="chunks")
    claim = models.CharField(max_length=32)
    kind = models.CharField(max_length=12, choices=ChunkKind.choices)
    index = models.PositiveIntegerField()
    label = models.CharField(max_length=80, blank=True)  # the measure of a bootstrap piece
    size = models.PositiveIntegerField(default=0)  # queries in the piece
    inputs = models.BinaryField()
    meta = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=12, choices=ChunkStatus.choices, default=ChunkStatus.QUEUED
    )
    worker = models.CharField(max_length=200, blank=True)
    chunk_claim = models.CharField(max_length=32, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)
    result = models.BinaryField(null=True, blank=True)

    class Meta:
        ordering = ["job", "kind", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "claim", "kind", "index"], name="scoring_chunk_unique"
            )
        ]
        indexes = [models.Index(fields=["job", "claim", "status"], name="scoring_chunk_open")]

    def __str__(self):
        return f"{self.kind} chunk {self.index} of job {self.job_id}"


class ScoreAggregate(models.Model):
    """A metric over all queries (stratum "all") or one breakdown stratum ("domain:x",
    "task_type:y", "system:z"), with its bootstrap CI when computed."""

    job = models.ForeignKey(ScoringJob, on_delete=models.CASCADE, related_name="aggregates")
    stratum = models.CharField(max_length=120, default="all")
    metric = models.CharField(max_length=80)
    value = models.FloatField(null=True)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    n = models.PositiveIntegerField()

    class Meta:
        ordering = ["job", "stratum", "metric"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "stratum", "metric"], name="score_aggregate_unique"
            )
        ]

    def __str__(self):
        return f"{self.metric} [{self.stratum}] = {self.value}"


class ScoreQueryResult(models.Model):
    """Per-query (retrieval) or per-answer (PROBE) results."""

    job = models.ForeignKey(ScoringJob, on_delete=models.CASCADE, related_name="query_results")
    query_id = models.CharField(max_length=200)
    domain = models.CharField(max_length=64, blank=True)
    task_type = models.CharField(max_length=32, blank=True)
    metrics = models.JSONField(default=dict)
    retrieved = models.JSONField(default=list, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    primary = models.FloatField(null=True)

    class Meta:
        ordering = ["job", "query_id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "query_id"], name="score_query_unique")
        ]
        indexes = [models.Index(fields=["job", "primary"])]

    def __str__(self):
        return f"{self.query_id} in job {self.job_id}"
