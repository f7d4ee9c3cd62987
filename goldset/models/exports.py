"""Frozen gold versions: immutable canonical rows, rendered files stored in the database, and a
manifest. Nothing here changes once a version is sealed; on PostgreSQL triggers refuse UPDATE
and DELETE of rows, files and chunks and any write to a sealed version (migration 0003)."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class ExportFormat(models.TextChoices):
    GOLD_JSONL = "gold_jsonl", "Gold JSONL"
    UNRAG_JSON = "unrag_json", "Unrag dataset JSON v1"
    PROBE_QUESTIONS = "probe_questions", "PROBE question file"
    PROBE_PACKETS = "probe_packets", "PROBE evidence packets"
    ADJUDICATION = "adjudication", "Adjudication export"
    TREC_QRELS = "trec_qrels", "TREC qrels"
    PAIRWISE_GOLD = "pairwise_gold", "Pairwise gold"
    MANIFEST = "manifest", "Manifest"


FORMAT_FILES = {
    ExportFormat.GOLD_JSONL: ("gold.jsonl", "application/x-ndjson"),
    ExportFormat.UNRAG_JSON: ("unrag.json", "application/json"),
    ExportFormat.PROBE_QUESTIONS: ("probe-questions.jsonl", "application/x-ndjson"),
    ExportFormat.PROBE_PACKETS: ("probe-evidence-packets.jsonl", "application/x-ndjson"),
    ExportFormat.ADJUDICATION: ("adjudication.jsonl", "application/x-ndjson"),
    ExportFormat.TREC_QRELS: ("qrels.txt", "text/plain; charset=utf-8"),
    ExportFormat.PAIRWISE_GOLD: ("pairwise-gold.jsonl", "application/x-ndjson"),
    ExportFormat.MANIFEST: ("manifest.json", "application/json"),
}


class GoldVersion(models.Model):
    """One frozen gold version (v1, v2, …). Written once by ``freeze_gold_version``: created
    unsealed, its rows and files inserted, then sealed with the manifest in the same
    transaction. A sealed version is never written again."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")

    number = models.PositiveIntegerField()
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    filters = models.JSONField(default=dict, blank=True)
    seeds = models.JSONField(default=dict, blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    note = models.CharField(max_length=300, blank=True)
    row_count = models.PositiveIntegerField(default=0)
    rows_sha256 = models.CharField(max_length=64, blank=True)
    manifest_sha256 = models.CharField(max_length=64, blank=True)
    sealed = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "number"], name="gold_version_number_per_project"
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="gold_version_number_positive"),
        ]

    def __str__(self):
        return self.label

    @property
    def label(self) -> str:
        return f"v{self.number}"


class GoldVersionRow(models.Model):
    """One triple as frozen: its canonical gold JSONL line (sort_keys, compact, UTF-8)."""

    version = models.ForeignKey(GoldVersion, on_delete=models.PROTECT, related_name="rows")
    position = models.PositiveIntegerField()
    triple_id = models.CharField(max_length=200)
    line = models.TextField()
    sha256 = models.CharField(max_length=64)
    domain = models.CharField(max_length=64, blank=True)
    tier = models.CharField(max_length=16, blank=True)
    source = models.CharField(max_length=40, blank=True)
    task_type = models.CharField(max_length=32, blank=True)
    block_id = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "triple_id"], name="gold_row_unique_id"),
            models.UniqueConstraint(fields=["version", "position"], name="gold_row_unique_pos"),
        ]

    def __str__(self):
        return f"{self.triple_id} in v{self.version_id}"


class GoldVersionFile(models.Model):
    """A rendered export, its bytes in ``GoldVersionFileChunk`` rows (no shared disk needed
    between web and workers). ``redacted`` variants replace source snippets."""

    version = models.ForeignKey(GoldVersion, on_delete=models.PROTECT, related_name="files")
    format = models.CharField(max_length=20, choices=ExportFormat.choices)
    redacted = models.BooleanField(default=False)
    filename = models.CharField(max_length=200)
    content_type = models.CharField(max_length=80)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    chunk_count = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version", "format", "redacted"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "format", "redacted"], name="gold_file_unique_variant"
            )
        ]

    def __str__(self):
        return f"v{self.version_id} {self.format}{' (redacted)' if self.redacted else ''}"


class GoldVersionFileChunk(models.Model):
    file = models.ForeignKey(GoldVersionFile, on_delete=models.PROTECT, related_name="chunks")
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        ordering = ["file", "index"]
        constraints = [
            models.UniqueConstraint(fields=["file", "index"], name="gold_chunk_unique_index")
        ]

    def __str__(self):
        return f"chunk {self.index} of file {self.file_id}"
