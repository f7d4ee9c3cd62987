"""Automated evaluators judged against the gold tier, PCS calibrations and release reports
(seed 004 Tables 4–9, A.7, A.8). The computation is in ``scoring``; these rows store its inputs
(evaluator outputs) and results (report snapshots, calibrations, release reports).

Evaluators are hidden like systems: only admins see their identity; leads see the evaluator
report with evaluators named by an opaque label."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from goldset.models.answers import AnswerRecord
from goldset.models.exports import GoldVersion


class EvaluatorKind(models.TextChoices):
    LLM_JUDGE = "llm_judge", "LLM judge"
    METRIC = "metric", "Metric"
    HEURISTIC = "heuristic", "Heuristic"
    HUMAN_PANEL = "human_panel", "Human panel"


class Evaluator(models.Model):
    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=120)
    version = models.CharField(max_length=40)
    kind = models.CharField(max_length=16, choices=EvaluatorKind.choices)
    model_id = models.CharField(max_length=200, blank=True)
    prompt_hash = models.CharField(max_length=128, blank=True)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name", "version"], name="evaluator_name_version_per_project"
            )
        ]

    def __str__(self):
        return f"{self.name} {self.version}"


class EvaluatorImport(models.Model):
    """One accepted outputs file (rejected files store nothing)."""

    evaluator = models.ForeignKey(Evaluator, on_delete=models.PROTECT, related_name="imports")
    source_name = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64)
    n_records = models.PositiveIntegerField()
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-imported_at", "-id"]

    def __str__(self):
        return f"{self.source_name} → {self.evaluator}"


class EvaluatorOutput(models.Model):
    """An evaluator's judgement of one answer record: labels per axis, a score in [0, 1] and an
    unsafe probability (each optional). Re-importing a record overwrites its judgement."""

    evaluator = models.ForeignKey(Evaluator, on_delete=models.PROTECT, related_name="outputs")
    record = models.ForeignKey(AnswerRecord, on_delete=models.PROTECT, related_name="+")
    source = models.ForeignKey(EvaluatorImport, on_delete=models.PROTECT, related_name="outputs")
    labels = models.JSONField(default=dict, blank=True)
    score = models.FloatField(null=True, blank=True)
    unsafe_probability = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["evaluator", "record"]
        constraints = [
            models.UniqueConstraint(fields=["evaluator", "record"], name="evaluator_output_once"),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=1),
                name="evaluator_score_0_1",
            ),
            models.CheckConstraint(
                condition=Q(unsafe_probability__isnull=True)
                | Q(unsafe_probability__gte=0, unsafe_probability__lte=1),
                name="evaluator_unsafe_0_1",
            ),
        ]

    def __str__(self):
        return f"{self.evaluator} on {self.record_id}"


class EvaluatorReportSnapshot(models.Model):
    """The evaluator report (``scoring.evaluators.EvaluatorReport.to_dict()``) as computed at
    ``created_at``; rows name evaluators by ``evaluator:<id>`` so the page can pseudonymise."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    report = models.JSONField()
    trust_kappa = models.FloatField()
    n_items = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The project's latest evaluator report.
            models.Index(fields=["project", "-created_at"], name="eval_report_project_recent")
        ]

    def __str__(self):
        return f"evaluator report {self.pk}"


class CalibrationStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class PcsCalibration(models.Model):
    """A named, versioned PCS calibration (A.7 grid, A.8 objective) run by a Celery job.

    ``selected`` holds the chosen weights, caps and thresholds once it has succeeded; scoring
    jobs may choose it (the seed's defaults stay the default)."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    name = models.CharField(max_length=80)
    version = models.PositiveIntegerField()
    status = models.CharField(
        max_length=12, choices=CalibrationStatus.choices, default=CalibrationStatus.QUEUED
    )
    stage = models.CharField(max_length=60, blank=True)
    progress = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    # What happened to earlier attempts (worker lost and requeued), for the page.
    notice = models.TextField(blank=True)
    # A worker claims the calibration by raising ``attempts``: only the attempt whose number is
    # on the row may write progress or the result (see ``reconcile_pcs_calibrations``).
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    selected = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name", "version"], name="calibration_name_version_per_project"
            ),
            models.CheckConstraint(condition=Q(progress__lte=100), name="calibration_progress"),
        ]
        indexes = [
            models.Index(fields=["status"]),
            models.Index(fields=["status", "heartbeat_at"], name="calibration_status_heartbeat"),
        ]

    def __str__(self):
        return f"{self.name} v{self.version}"

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


class ReleaseReport(models.Model):
    """A release report for chosen runs on one gold version (``scoring.report``), with the HTML
    download rendered once so the file is what was reviewed."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    version = models.ForeignKey(GoldVersion, on_delete=models.PROTECT, related_name="+")
    run_ids = models.JSONField(default=list)
    calibration = models.ForeignKey(
        PcsCalibration, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    report = models.JSONField()
    html = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"], name="release_project_recent")]

    def __str__(self):
        return f"release report {self.pk} on v{self.version_id}"
