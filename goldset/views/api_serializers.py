"""Shapes of the API's answers and request bodies. No business rule lives here: validation is
of shape only; the services decide."""

from rest_framework import serializers

from goldset.models import (
    Document,
    Domain,
    GoldVersion,
    ImportJob,
    ImportKind,
    ScoreAggregate,
    ScoreQueryResult,
    ScoringJob,
)


class DomainSerializer(serializers.ModelSerializer):
    class Meta:
        model = Domain
        fields = ["slug", "name"]


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


class ImportRequestSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=ImportKind.choices)
    file = serializers.FileField()
    domain = serializers.CharField(required=False, allow_blank=True)
    on_behalf = serializers.BooleanField(required=False, default=False)
    version = serializers.IntegerField(required=False, min_value=1)
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


class ScoringJobDetailSerializer(ScoringJobSerializer):
    aggregates = AggregateSerializer(many=True, read_only=True)
    summary = serializers.DictField()

    class Meta(ScoringJobSerializer.Meta):
        fields = [*ScoringJobSerializer.Meta.fields, "aggregates", "summary"]


class QueryResultSerializer(serializers.ModelSerializer):
    metrics = serializers.DictField()
    retrieved = serializers.ListField()

    class Meta:
        model = ScoreQueryResult
        fields = ["query_id", "domain", "task_type", "metrics", "retrieved"]


class RunLineSerializer(serializers.Serializer):
    """One line of a retrieval run, as a JSON object (the same fields as a run file's line)."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("each run line must be a JSON object")
        return data


class ScoringJobRequestSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1)
    name = serializers.CharField(required=False, allow_blank=True, max_length=120)
    k = serializers.IntegerField(required=False, min_value=1, max_value=1000, default=10)
    run = serializers.ListField(child=RunLineSerializer(), allow_empty=False)


class AlertSerializer(serializers.Serializer):
    kind = serializers.CharField()
    title = serializers.CharField()
    detail = serializers.CharField()
    numbers = serializers.DictField()
