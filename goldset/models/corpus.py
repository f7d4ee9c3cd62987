"""The corpus a gold set is curated against: documents, blocks and append-only block versions."""

from django.db import models
from django.db.models import F, Q
from django.utils import timezone


class TaskType(models.TextChoices):
    FACTUAL_QA = "factual_qa", "Factual QA"
    SUMMARIZATION = "summarization", "Summarization"
    CODE_GENERATION = "code_generation", "Code generation"
    RAG_SYNTHESIS = "rag_synthesis", "RAG synthesis"
    RETRIEVAL = "retrieval", "Retrieval"


class Domain(models.Model):
    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=128)
    # For the API's updated_since (issue 29); rows from before it carry the migration's time.
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.UniqueConstraint(fields=["project", "slug"], name="domain_slug_per_project")
        ]

    def __str__(self):
        return self.slug


class Document(models.Model):
    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    document_id = models.CharField(max_length=200)
    title = models.CharField(max_length=500)
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="documents")
    authority = models.DecimalField(max_digits=4, decimal_places=3)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "document_id"], name="document_document_id_per_project"
            ),
            models.CheckConstraint(
                condition=Q(authority__gte=0) & Q(authority__lte=1), name="document_authority_0_1"
            ),
        ]
        permissions = [
            ("import_corpus", "Can import corpus files"),
            ("view_snippets", "Can see source snippets in exports"),
            ("lead_quality", "Can adjudicate, calibrate and watch agreement"),
        ]

    def __str__(self):
        return self.document_id


class Block(models.Model):
    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    block_id = models.CharField(max_length=200)
    document = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="blocks")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["document_id", "position", "block_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "block_id"], name="block_block_id_per_project"
            )
        ]

    def __str__(self):
        return self.block_id


class BlockVersion(models.Model):
    """One immutable text of a block. Versions are append-only: a changed text is a new version."""

    block = models.ForeignKey(Block, on_delete=models.PROTECT, related_name="versions")
    version = models.PositiveIntegerField()
    text = models.TextField()
    section = models.CharField(max_length=200, blank=True)
    page_start = models.PositiveIntegerField(null=True, blank=True)
    page_end = models.PositiveIntegerField(null=True, blank=True)
    effective_from = models.DateField(null=True, blank=True)
    effective_to = models.DateField(null=True, blank=True)
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["block_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["block", "version"], name="block_version_unique"),
            models.CheckConstraint(condition=Q(version__gte=1), name="block_version_positive"),
            models.CheckConstraint(
                condition=Q(effective_to__isnull=True)
                | Q(effective_from__isnull=True)
                | Q(effective_to__gte=F("effective_from")),
                name="block_version_effective_order",
            ),
            models.CheckConstraint(
                condition=Q(page_end__isnull=True)
                | Q(page_start__isnull=True)
                | Q(page_end__gte=F("page_start")),
                name="block_version_page_order",
            ),
        ]
        indexes = [models.Index(fields=["sha256"])]

    def __str__(self):
        return f"{self.block.block_id}@v{self.version}"

    @property
    def page_range(self) -> list[int] | None:
        return page_range_of(self.page_start, self.page_end)


def page_range_of(page_start: int | None, page_end: int | None) -> list[int] | None:
    """A block version's ``[first, last]`` pages (one page when only the start is known)."""
    if page_start is None:
        return None
    return [page_start, page_end if page_end is not None else page_start]
