"""REST API v1: thin views over the selectors and services the pages use. Who may call what is
the access table's (``workbench.access``, entries ``api:*``) through
:class:`~goldset.views.api_support.AccessTablePermission`; object scope is the selectors'."""

import hashlib
import json

from django.core.files.base import ContentFile
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from goldset.models import ImportKind, ScoringJob
from goldset.rules.exports import pick_file
from goldset.selectors import agreement as agreement_selectors
from goldset.selectors import corpus as corpus_selectors
from goldset.selectors import exports as export_selectors
from goldset.selectors.imports import get_import_job_for
from goldset.services import exports as export_files
from goldset.services.blinded_downloads import project_jsonl
from goldset.services.import_jobs import UploadRejected, submit_import
from goldset.views import api_serializers as s
from goldset.views.api_support import Cursor, Problem
from workbench.access import ALL_FIELDS, entry_for, fields_for
from workbench.roles import roles_of
from workbench.services.audit import record_event

# Each import kind is allowed to the roles of the page that imports it: one table for both.
IMPORT_PAGE = {
    ImportKind.CORPUS: "corpus:import",
    ImportKind.TRIPLES: "curation:import",
    ImportKind.QUESTIONS: "answers:import",
    ImportKind.ANSWERS: "answers:import",
    ImportKind.RUN: "exports:jobs",
}


class DomainList(generics.ListAPIView):
    serializer_class = s.DomainSerializer
    pagination_class = type("DomainCursor", (Cursor,), {"ordering": "slug"})

    def get_queryset(self):
        return corpus_selectors.list_domains()


class DocumentList(generics.ListAPIView):
    serializer_class = s.DocumentSerializer
    pagination_class = type("DocumentCursor", (Cursor,), {"ordering": "document_id"})

    @extend_schema(parameters=[OpenApiParameter("domain", str), OpenApiParameter("q", str)])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return corpus_selectors.list_documents(
            domain=self.request.query_params.get("domain", ""),
            query=self.request.query_params.get("q", ""),
        )


class DocumentDetail(generics.RetrieveAPIView):
    serializer_class = s.DocumentSerializer

    def get_object(self):
        return corpus_selectors.get_document(document_id=self.kwargs["document_id"])


@extend_schema(
    request={"multipart/form-data": s.ImportRequestSerializer},
    responses={202: s.ImportJobSerializer},
)
@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser])
def import_create(request):
    """Upload a file to import in the background (the same job as the upload pages): 202 with
    the import job; poll it for status, progress and errors with line and field."""
    body = s.ImportRequestSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    page = entry_for(IMPORT_PAGE[data["kind"]])
    if not roles_of(request.user) & page.roles:
        raise Problem(
            status_code=403, title="Forbidden", detail=f"Your role may not import {data['kind']}."
        )
    options = {k: data[k] for k in ("domain", "on_behalf", "version", "name", "k") if k in data}
    try:
        submission = submit_import(
            kind=data["kind"], upload=data["file"], actor=request.user, options=options
        )
    except UploadRejected as exc:
        raise Problem(status_code=422, title="File rejected", detail=str(exc)) from exc
    job = submission.job
    job.refresh_from_db()
    return Response(
        s.ImportJobSerializer(job).data,
        status=status.HTTP_202_ACCEPTED,
        headers={"Location": f"/api/v1/imports/{job.pk}/"},
    )


class ImportDetail(generics.RetrieveAPIView):
    """An import job: status, progress, summary and its errors (line, field, message)."""

    serializer_class = s.ImportJobSerializer

    def get_object(self):
        return get_import_job_for(user=self.request.user, pk=self.kwargs["pk"])


class VersionList(generics.ListAPIView):
    serializer_class = s.GoldVersionSerializer
    pagination_class = type("VersionCursor", (Cursor,), {"ordering": "-number"})

    def get_queryset(self):
        return export_selectors.list_versions().prefetch_related("files")


class VersionDetail(generics.RetrieveAPIView):
    """A frozen gold version with its manifest (counts, filters, seeds, checksums, diff)."""

    serializer_class = s.GoldVersionDetailSerializer

    def get_object(self):
        return export_selectors.get_version(number=self.kwargs["number"])


@extend_schema(
    parameters=[
        OpenApiParameter("a", {"type": "integer", "minimum": 1}, required=True),
        OpenApiParameter("b", {"type": "integer", "minimum": 1}, required=True),
    ],
    responses={200: s.VersionDiffSerializer},
)
@api_view(["GET"])
def version_diff(request):
    """Triples added, removed and changed between versions ``a`` and ``b``."""
    a = export_selectors.get_version(number=_positive(request.query_params.get("a"), "a"))
    b = export_selectors.get_version(number=_positive(request.query_params.get("b"), "b"))
    before = export_files.verified_row_checksums(a)
    after = export_files.verified_row_checksums(b)
    diff = export_selectors.diff_versions(a=a, b=b, before=before, after=after)
    return Response(
        {
            "a": a.number,
            "b": b.number,
            "added": diff.added,
            "removed": diff.removed,
            "changed": [
                {"id": row.triple_id, "fields": [name for name, _, _ in row.fields]}
                for row in diff.changed
            ],
        }
    )


@extend_schema(
    responses={
        (200, "application/octet-stream"): OpenApiResponse(
            description="The file; its sha256 in the X-Checksum-SHA256 header."
        ),
    }
)
@api_view(["GET"])
def version_download(request, number, fmt):
    """A version's file in ``fmt`` (gold_jsonl, unrag_json, probe_questions, probe_packets,
    adjudication, manifest), reduced to the fields the caller's role gets (the page's rule)."""
    version = export_selectors.get_version(number=number)
    spec = fields_for(entry_for("exports:download"), roles_of(request.user), variant=fmt)
    if spec is None:
        raise Problem(status_code=404, title="Not Found", detail=f"no {fmt} download")
    stored = pick_file(version, fmt=fmt, user=request.user)
    content = export_files.verified_chunks(stored)
    digest = stored.sha256
    if spec != ALL_FIELDS:
        # The lead's variant differs from the stored file: hash what is actually sent.
        body = b"".join(project_jsonl(content, spec=spec, version_number=version.number))
        digest = hashlib.sha256(body).hexdigest()
        content = iter([body])
    record_event(
        actor=request.user,
        verb="gold_version_downloaded",
        obj=version,
        detail={"format": fmt, "sha256": digest, "via": "api", "redacted": stored.redacted},
    )
    response = StreamingHttpResponse(content, content_type=stored.content_type)
    response["Content-Disposition"] = f'attachment; filename="{stored.filename}"'
    response["X-Checksum-SHA256"] = digest
    return response


class JobList(generics.ListCreateAPIView):
    """Scoring jobs. POST a JSON body (version, name, k, run: the run's lines as objects): the
    run is stored as an import job of kind ``run`` and scored in the background (202)."""

    serializer_class = s.ScoringJobSerializer

    def get_queryset(self):
        return export_selectors.list_jobs().select_related("version")

    @extend_schema(
        request=s.ScoringJobRequestSerializer,
        responses={202: s.ImportJobSerializer},
    )
    def post(self, request, *args, **kwargs):
        body = s.ScoringJobRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        lines = "".join(json.dumps(line, sort_keys=True) + "\n" for line in data["run"])
        upload = ContentFile(lines.encode(), name=f"{data.get('name') or 'run'}.jsonl")
        options = {"version": data["version"], "name": data.get("name", ""), "k": data["k"]}
        try:
            submission = submit_import(
                kind=ImportKind.RUN, upload=upload, actor=request.user, options=options
            )
        except UploadRejected as exc:
            raise Problem(status_code=422, title="Run rejected", detail=str(exc)) from exc
        job = submission.job
        job.refresh_from_db()
        return Response(
            s.ImportJobSerializer(job).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": f"/api/v1/imports/{job.pk}/"},
        )


class JobDetail(generics.RetrieveAPIView):
    """A scoring job: status, progress, and (when it succeeded) aggregates with CIs."""

    serializer_class = s.ScoringJobDetailSerializer

    def get_object(self):
        return get_object_or_404(
            ScoringJob.objects.select_related("version").prefetch_related("aggregates"),
            pk=self.kwargs["pk"],
        )


class JobQueries(generics.ListAPIView):
    """Per-query rows of a scoring job."""

    serializer_class = s.QueryResultSerializer
    pagination_class = type("QueryCursor", (Cursor,), {"ordering": "id"})

    def get_queryset(self):
        job = export_selectors.get_job(pk=self.kwargs["pk"])
        return job.query_results.all()


@extend_schema(responses={200: s.AlertSerializer(many=True)})
@api_view(["GET"])
def alert_list(request):
    """Agreement and quality alerts currently raised (the dashboard's list)."""
    alerts = agreement_selectors.list_agreement_alerts()
    return Response(s.AlertSerializer(alerts, many=True).data)


def _positive(value, name: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1:
        raise Problem(
            status_code=400,
            title="Bad Request",
            detail=f"{name} must be a version number",
            errors=[{"field": name, "message": "expected a positive integer"}],
        )
    return number


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
def not_found(request, rest=""):
    """Any other URL under /api/v1/: a problem+json 404, never an HTML page."""
    raise Problem(status_code=404, title="Not Found", detail="No such endpoint.")
