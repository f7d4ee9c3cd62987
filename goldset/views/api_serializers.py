"""Shapes of the API's answers and request bodies. No business rule lives here: validation is
of shape only; the services decide."""

import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from goldset.imports.errors import problem_from_text
from goldset.models import (
    AgreementSnapshot,
    Block,
    BlockVersion,
    Document,
    Domain,
    GoldVersion,
    ImportJob,
    ImportKind,
    ScoreAggregate,
    ScoreQueryResult,
    ScoringJob,
    Source,
    Tier,
    Triple,
    VersionTag,
    VersionTagMove,
)
from goldset.selectors.agreement import subject_display
from goldset.selectors.exports import release_gate
from workbench.roles import Role


class ProjectSerializer(serializers.Serializer):
    """A project the caller belongs to: ``{"project": Project, "role": str}``."""

    slug = serializers.SlugField(source="project.slug")
    name = serializers.CharField(source="project.name")
    description = serializers.CharField(source="project.description")
    archived = serializers.BooleanField(source="project.archived")
    role = serializers.ChoiceField(choices=Role.choices)
    api = serializers.SerializerMethodField(help_text="The prefix of the project's API.")

    def get_api(self, obj) -> str:
        return f"/api/v1/projects/{obj['project'].slug}/"


class DomainSerializer(serializers.ModelSerializer):
    class Meta:
        model = Domain
        fields = ["slug", "name", "created_at"]


class DocumentSerializer(serializers.ModelSerializer):
    domain = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    authority = serializers.FloatField()

    class Meta:
        model = Document
        fields = ["document_id", "title", "domain", "authority", "created_at"]


class ImportProblemSerializer(serializers.Serializer):
    line = serializers.IntegerField(allow_null=True, required=False)
    field = serializers.CharField(allow_blank=True, required=False)
    message = serializers.CharField()
    expected = serializers.CharField(allow_blank=True, required=False)


class ImportJobSerializer(serializers.ModelSerializer):
    errors = ImportProblemSerializer(many=True)
    summary = serializers.DictField()

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "kind",
            "filename",
            "sha256",
            "size",
            "status",
            "stage",
            "progress",
            "summary",
            "errors",
            "error_count",
            "message",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["errors"] = [_located(e) for e in data["errors"]]
        return data


def _located(error: dict) -> dict:
    """An error stored as text only ("run.jsonl, line 2: …") with its line and field filled in."""
    if error.get("line") is not None or error.get("field"):
        return error
    found = problem_from_text(error.get("message", ""))
    return {**error, "line": found.line, "field": found.field}


VERSION_REF_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
VERSION_REF_SCHEMA = {
    "oneOf": [
        {"type": "integer", "minimum": 1},
        {"type": "string", "minLength": 1, "maxLength": 64, "pattern": VERSION_REF_PATTERN},
    ],
    "description": 'A gold version: its number (7, or "v7"), a tag of the project '
    '("release-2026q4") or "latest" (the newest frozen version).',
}


@extend_schema_field(VERSION_REF_SCHEMA)
class VersionRefField(serializers.Field):
    """A version as a request names it: a number, ``"v7"``, a tag or ``"latest"`` (shape only:
    ``goldset.services.version_tags.resolve_version`` decides what it names)."""

    default_error_messages = {
        "invalid": "expected a version number (7, v7), a tag or 'latest'",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("invalid")
        if isinstance(data, int):
            if data < 1:
                self.fail("invalid")
            return data
        if len(data) > 64 or not re.fullmatch(VERSION_REF_PATTERN, data):
            self.fail("invalid")
        return data

    def to_representation(self, value):
        return value


class ImportRequestSerializer(serializers.Serializer):
    # Evaluator outputs are posted to their evaluator (``evaluators/{id}/outputs/``), pairwise
    # judgments to their task (``pairwise/tasks/{id}/judgments/import/``).
    kind = serializers.ChoiceField(
        choices=[
            c for c in ImportKind.choices if c[0] not in (ImportKind.EVALUATOR, ImportKind.PAIRWISE)
        ]
    )
    # An empty file is refused by the upload service (422 with its name), as on the pages.
    file = serializers.FileField(allow_empty_file=True)
    domain = serializers.CharField(required=False, allow_blank=True)
    on_behalf = serializers.BooleanField(required=False, default=False)
    version = VersionRefField(required=False)
    name = serializers.CharField(required=False, allow_blank=True, max_length=120)
    k = serializers.IntegerField(required=False, min_value=1, max_value=1000)


class GoldVersionSerializer(serializers.ModelSerializer):
    parent = serializers.SerializerMethodField()
    files = serializers.SerializerMethodField()

    class Meta:
        model = GoldVersion
        fields = [
            "number",
            "parent",
            "note",
            "row_count",
            "rows_sha256",
            "manifest_sha256",
            "created_at",
            "files",
        ]

    def get_parent(self, obj) -> int | None:
        return obj.parent.number if obj.parent_id else None

    def get_files(self, obj) -> list[str]:
        return sorted({f.format for f in obj.files.all()})


class GoldVersionDetailSerializer(GoldVersionSerializer):
    manifest = serializers.DictField()

    class Meta(GoldVersionSerializer.Meta):
        fields = [*GoldVersionSerializer.Meta.fields, "manifest"]


class VersionDiffSerializer(serializers.Serializer):
    a = serializers.IntegerField()
    b = serializers.IntegerField()
    added = serializers.ListField(child=serializers.CharField())
    removed = serializers.ListField(child=serializers.CharField())
    changed = serializers.ListField(child=serializers.DictField())


class ScoringJobSerializer(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version.number")

    class Meta:
        model = ScoringJob
        fields = [
            "id",
            "name",
            "version",
            "kind",
            "run_format",
            "run_sha256",
            "k",
            "seed",
            "resamples",
            "status",
            "stage",
            "progress",
            "error",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
        ]


class AggregateSerializer(serializers.ModelSerializer):
    class Meta:
        model = ScoreAggregate
        fields = ["stratum", "metric", "value", "ci_low", "ci_high", "n"]


class ReleaseGateSystemSerializer(serializers.Serializer):
    release = serializers.BooleanField()
    reasons = serializers.ListField(child=serializers.CharField())
    mean_pcs = serializers.FloatField(allow_null=True)
    unsafe_rate = serializers.FloatField(allow_null=True)
    gate_pass_rate = serializers.FloatField(allow_null=True)


class ReleaseGateSerializer(serializers.Serializer):
    passed = serializers.BooleanField()
    systems = serializers.DictField(child=ReleaseGateSystemSerializer())


class ScoringJobDetailSerializer(ScoringJobSerializer):
    aggregates = AggregateSerializer(many=True, read_only=True)
    summary = serializers.DictField()
    release_gate = serializers.SerializerMethodField()

    class Meta(ScoringJobSerializer.Meta):
        fields = [*ScoringJobSerializer.Meta.fields, "aggregates", "summary", "release_gate"]

    @extend_schema_field(ReleaseGateSerializer(allow_null=True))
    def get_release_gate(self, obj):
        return release_gate(obj)


class QueryResultSerializer(serializers.ModelSerializer):
    metrics = serializers.DictField()
    retrieved = serializers.ListField()

    class Meta:
        model = ScoreQueryResult
        fields = ["query_id", "domain", "task_type", "metrics", "retrieved"]


@extend_schema_field(
    {"type": "object", "additionalProperties": True, "description": "One line of the run."}
)
class RunLineField(serializers.Field):
    """One line of a retrieval run, as a JSON object (the same fields as a run file's line)."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("each run line must be a JSON object")
        return data

    def to_representation(self, value):
        return value


class ScoringJobRequestSerializer(serializers.Serializer):
    version = VersionRefField()
    name = serializers.CharField(required=False, allow_blank=True, max_length=120)
    k = serializers.IntegerField(required=False, min_value=1, max_value=1000, default=10)
    run = serializers.ListField(child=RunLineField(), allow_empty=False)


class AlertSerializer(serializers.Serializer):
    kind = serializers.CharField()
    title = serializers.CharField()
    detail = serializers.CharField()
    numbers = serializers.DictField()


class BlockSerializer(serializers.ModelSerializer):
    latest_version = serializers.IntegerField(allow_null=True)
    version_count = serializers.IntegerField()

    class Meta:
        model = Block
        fields = ["block_id", "position", "latest_version", "version_count"]


class BlockVersionSerializer(serializers.ModelSerializer):
    block_id = serializers.CharField(source="block.block_id")
    document_id = serializers.CharField(source="block.document.document_id")

    class Meta:
        model = BlockVersion
        fields = [
            "block_id",
            "document_id",
            "version",
            "text",
            "section",
            "page_start",
            "page_end",
            "effective_from",
            "effective_to",
            "sha256",
            "created_at",
        ]


class PinnedBlockSerializer(serializers.Serializer):
    block_id = serializers.CharField(source="expected_block_version.block.block_id")
    document_id = serializers.CharField(source="expected_block_version.block.document.document_id")
    version = serializers.IntegerField(source="expected_block_version.version")
    sha256 = serializers.CharField(source="expected_block_version.sha256")
    superseded_reason = serializers.CharField()


class TripleSerializer(serializers.ModelSerializer):
    """What the triple's page shows; reviews are not part of it (they stay blind until
    resolution, and the page is the place to read them)."""

    id = serializers.CharField(source="external_id")
    domain = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    customer = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    author = serializers.CharField(source="author.username")
    revision = serializers.IntegerField(source="current_revision.number", allow_null=True)
    question = serializers.CharField(source="current_revision.question", allow_null=True)
    expected_answer = serializers.CharField(
        source="current_revision.expected_answer", allow_null=True
    )
    expected_block = PinnedBlockSerializer(source="current_revision", allow_null=True)

    class Meta:
        model = Triple
        fields = [
            "id",
            "state",
            "resolution",
            "tier",
            "routing_rule",
            "source",
            "customer",
            "domain",
            "task_type",
            "difficulty",
            "author",
            "added_at",
            "gold_at",
            "revision",
            "question",
            "expected_answer",
            "expected_block",
        ]


class FileUploadSerializer(serializers.Serializer):
    # An empty file is refused by the upload service (422 with its name), as on the pages.
    file = serializers.FileField(allow_empty_file=True)


class TripleImportRequestSerializer(FileUploadSerializer):
    on_behalf = serializers.BooleanField(required=False, default=False)


class FreezeRequestSerializer(serializers.Serializer):
    """The freeze page's choices (``goldset.services.freeze.FreezeFilters``)."""

    domain = serializers.CharField(required=False, allow_blank=True, max_length=64)
    tier = serializers.ChoiceField(choices=Tier.choices, required=False, allow_blank=True)
    source = serializers.ChoiceField(choices=Source.choices, required=False, allow_blank=True)
    public_only = serializers.BooleanField(required=False, default=False)
    working_slice = serializers.CharField(required=False, allow_blank=True, max_length=16)
    include_superseded = serializers.BooleanField(required=False, default=False)
    note = serializers.CharField(required=False, allow_blank=True, max_length=300)


class FreezeResultSerializer(serializers.Serializer):
    created = serializers.BooleanField()
    detail = serializers.CharField()
    version = GoldVersionSerializer()


class SnapshotSerializer(serializers.ModelSerializer):
    """A stored agreement figure; the subject as the dashboard shows it (display names, never
    user keys), from ``context["names"]``."""

    subject = serializers.SerializerMethodField()

    class Meta:
        model = AgreementSnapshot
        fields = [
            "protocol",
            "axis",
            "metric",
            "tier",
            "task_type",
            "domain",
            "week",
            "subject",
            "value",
            "ci_low",
            "ci_high",
            "n_items",
            "n_annotators",
            "reason",
            "data_version",
            "computed_at",
        ]

    def get_subject(self, obj) -> str:
        return subject_display(obj.metric, obj.axis, obj.subject, self.context.get("names", {}))


class RunUploadRequestSerializer(serializers.Serializer):
    """A run file (JSONL, TREC or an answer log) uploaded as multipart/form-data."""

    version = VersionRefField()
    # An empty file is refused by the upload service (422 with its name), as on the pages.
    file = serializers.FileField(allow_empty_file=True)
    name = serializers.CharField(required=False, allow_blank=True, max_length=120)
    k = serializers.IntegerField(required=False, min_value=1, max_value=1000, default=10)


class CompareJobSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    version = serializers.IntegerField(source="version.number")


class PairSerializer(serializers.Serializer):
    a = serializers.IntegerField(source="a.pk")
    b = serializers.IntegerField(source="b.pk")
    metric = serializers.CharField()
    mean_a = serializers.FloatField(allow_null=True)
    mean_b = serializers.FloatField(allow_null=True)
    test = serializers.CharField()
    statistic = serializers.FloatField(allow_null=True)
    pvalue = serializers.FloatField(allow_null=True)
    method = serializers.CharField(allow_null=True)
    adjusted = serializers.FloatField(allow_null=True)
    reject = serializers.BooleanField()
    wins = serializers.IntegerField()
    losses = serializers.IntegerField()
    ties = serializers.IntegerField()
    n = serializers.IntegerField()
    reason = serializers.CharField(allow_null=True)


class SpreadSerializer(serializers.Serializer):
    query_id = serializers.CharField()
    values = serializers.ListField(child=serializers.FloatField(allow_null=True))
    spread = serializers.FloatField(allow_null=True)


class ComparisonSerializer(serializers.Serializer):
    jobs = CompareJobSerializer(many=True)
    metrics = serializers.ListField(child=serializers.CharField())
    n_queries = serializers.IntegerField()
    wilcoxon_method = serializers.CharField()
    alpha = serializers.FloatField()
    pairs = PairSerializer(many=True)
    per_query = SpreadSerializer(many=True)


class TagMoveSerializer(serializers.ModelSerializer):
    """One change of a tag: ``from_version`` null when it was created, ``to_version`` null when
    it was deleted."""

    action = serializers.ChoiceField(choices=["created", "moved", "deleted"])
    from_version = serializers.SerializerMethodField()
    to_version = serializers.SerializerMethodField()
    moved_by = serializers.SerializerMethodField()

    class Meta:
        model = VersionTagMove
        fields = ["name", "action", "from_version", "to_version", "note", "moved_by", "moved_at"]

    def get_from_version(self, obj) -> int | None:
        return obj.from_version.number if obj.from_version_id else None

    def get_to_version(self, obj) -> int | None:
        return obj.to_version.number if obj.to_version_id else None

    def get_moved_by(self, obj) -> str | None:
        return obj.moved_by.username if obj.moved_by_id else None


class TagSerializer(serializers.ModelSerializer):
    """A tag: the version it points at, and the note, admin and time of its last change."""

    version = serializers.IntegerField(source="version.number")
    moved_by = serializers.SerializerMethodField()

    class Meta:
        model = VersionTag
        fields = ["name", "version", "note", "moved_by", "moved_at", "created_at"]

    def get_moved_by(self, obj) -> str | None:
        return obj.moved_by.username if obj.moved_by_id else None


class TagDetailSerializer(TagSerializer):
    history = serializers.SerializerMethodField()

    class Meta(TagSerializer.Meta):
        fields = [*TagSerializer.Meta.fields, "history"]

    @extend_schema_field(TagMoveSerializer(many=True))
    def get_history(self, obj) -> list:
        return TagMoveSerializer(self.context.get("history", []), many=True).data


class TagRequestSerializer(serializers.Serializer):
    version = VersionRefField()
    note = serializers.CharField(required=False, allow_blank=True, max_length=300, default="")
