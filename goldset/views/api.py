"""REST API v1: thin views over the selectors and services the pages use. Who may call what is
the access table's (``workbench.access``, entries ``api:*``) through
:class:`~goldset.views.api_support.AccessTablePermission`; object scope is the selectors'."""

import json
import math
import re

from django.core.files.base import ContentFile
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.decorators import api_view, parser_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from goldset.exceptions import GoldsetError
from goldset.imports.errors import problem_from_text
from goldset.models import DEFAULT_PROJECT_SLUG, ImportKind, JobStatus, ScoringJob, TripleState
from goldset.selectors import agreement as agreement_selectors
from goldset.selectors import corpus as corpus_selectors
from goldset.selectors import curation as curation_selectors
from goldset.selectors import evaluators as evaluator_selectors
from goldset.selectors import exports as export_selectors
from goldset.selectors import version_tags as tag_selectors
from goldset.selectors.imports import get_import_job_for
from goldset.selectors.projects import list_projects_for
from goldset.services import exports as export_files
from goldset.services.blinded_downloads import ChecksumMismatch, NoSuchDownload, serve_version_file
from goldset.services.freeze import FreezeFilters, NothingToFreeze, freeze_gold_version
from goldset.services.gate import BadVersionRef, UnknownVersion, resolve_version_ref
from goldset.services.import_jobs import (
    UploadRejected,
    cancel_import_job,
    retry_import_job,
    submit_import,
)
from goldset.services.version_tags import (
    delete_version_tag,
    resolve_version,
    resolve_version_option,
    set_version_tag,
)
from goldset.views import api_serializers as s
from goldset.views.api_parsers import DepthLimitedJSONParser
from goldset.views.api_support import (
    Cursor,
    ListFilters,
    Problem,
    api_url,
    bad_query,
    check_query,
    parse_updated_since,
)
from goldset.views.downloads import file_response
from workbench.access import entry_for
from workbench.models import ApiToken
from workbench.roles import Role, roles_of

# What the schema documents of a version reference (resolve_version_ref reads it): a number,
# v7, a tag or latest.
VERSION_REF_PATTERN = s.VERSION_REF_PATTERN
MAX_ID = 2**63 - 1  # the largest id the database stores (bigint)
ID_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
REF_PARAMETER = OpenApiParameter(
    "ref",
    s.VERSION_REF_SCHEMA["oneOf"][1],
    OpenApiParameter.PATH,
    description=s.VERSION_REF_SCHEMA["description"],
)

# Each import kind is allowed to the roles of the page that imports it: one table for both.
IMPORT_PAGE = {
    ImportKind.CORPUS: "corpus:import",
    ImportKind.TRIPLES: "curation:import",
    ImportKind.QUESTIONS: "answers:import",
    ImportKind.ANSWERS: "answers:import",
    ImportKind.RUN: "exports:jobs",
}


# The stored figures alerts are computed from (goldset.selectors.agreement.list_agreement_alerts).
# A person's strongest role in a project names it in the project list.
ROLE_STRENGTH = (Role.ADMIN, Role.LEAD, Role.ANNOTATOR)


@extend_schema(
    responses={200: s.ProjectSerializer(many=True)},
    parameters=[
        OpenApiParameter(
            "updated_since",
            OpenApiTypes.DATETIME,
            description="Only projects created or archived at or after this moment (RFC 3339).",
        )
    ],
)
@api_view(["GET"])
def project_list(request):
    """The projects the caller belongs to (every project for installation admins), by name,
    each with the caller's role in it and the prefix of its API; a token limited to one project
    lists that project only. ``updated_since``: those created or archived since."""
    check_query(request, allowed=("updated_since",))
    if getattr(request, "project_slug", None):
        raise Problem(status_code=404, title="Not Found", detail="No such endpoint.")
    raw = request.query_params.get("updated_since")
    since = parse_updated_since(raw) if raw is not None else None
    token = request.auth
    rows = []
    for access in list_projects_for(user=request.user):
        if isinstance(token, ApiToken) and token.project_id not in (None, access.project.pk):
            continue
        if since is not None and not _changed_since(access.project, since):
            continue
        role = next((r for r in ROLE_STRENGTH if r.value in access.roles), None)
        rows.append({"project": access.project, "role": role.value if role else ""})
    return Response(s.ProjectSerializer(rows, many=True).data)


def _changed_since(project, moment) -> bool:
    """Whether ``project`` was created or archived at or after ``moment`` (its change times)."""
    return project.created_at >= moment or (
        project.archived_at is not None and project.archived_at >= moment
    )


class ApiList(generics.ListAPIView):
    """A list: its declared filters only (``query_filters``; anything else is a 400), a checked
    ``page_size``, and ``updated_since`` when ``updated_fields`` names its change times."""

    filter_backends = [ListFilters]
    query_filters: tuple[str, ...] = ()
    updated_fields: tuple[str, ...] = ()


class DomainList(ApiList):
    """The corpus's domains (slug and name)."""

    serializer_class = s.DomainSerializer
    pagination_class = type("DomainCursor", (Cursor,), {"ordering": "slug"})
    updated_fields = ("created_at",)

    def get_queryset(self):
        return corpus_selectors.list_domains(project=self.request.project)


class DocumentList(ApiList):
    """Corpus documents, filtered by ``domain`` and a title search ``q``."""

    serializer_class = s.DocumentSerializer
    pagination_class = type("DocumentCursor", (Cursor,), {"ordering": "document_id"})
    query_filters = ("domain", "q")
    updated_fields = ("created_at",)

    @extend_schema(parameters=[OpenApiParameter("domain", str), OpenApiParameter("q", str)])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return corpus_selectors.list_documents(
            project=self.request.project,
            domain=self.request.query_params.get("domain", ""),
            query=self.request.query_params.get("q", ""),
        )


class DocumentDetail(generics.RetrieveAPIView):
    serializer_class = s.DocumentSerializer

    def get_object(self):
        return corpus_selectors.get_document(
            project=self.request.project, document_id=self.kwargs["document_id"]
        )


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
    return _queued_import(request, kind=data["kind"], upload=data["file"], options=options)


def _queued_import(request, *, kind: str, upload, options: dict, title: str = "File rejected"):
    """Store the upload as a background import job (the upload pages' service) and answer 202
    with the job; poll ``Location`` for status, progress and errors with line and field."""
    try:
        submission = submit_import(
            project=request.project, kind=kind, upload=upload, actor=request.user, options=options
        )
    except UploadRejected as exc:
        problem = problem_from_text(str(exc))
        errors = [problem.as_dict()] if problem.line is not None else None
        raise Problem(status_code=422, title=title, detail=str(exc), errors=errors) from exc
    job = submission.job
    job.refresh_from_db()
    return Response(
        s.ImportJobSerializer(job).data,
        status=status.HTTP_202_ACCEPTED,
        headers={"Location": api_url(request, "api:import", pk=job.pk)},
    )


def _file_import(kind: str, *, doc: str, request_serializer=s.FileUploadSerializer):
    """A POST endpoint importing one kind of file as a background job; who may call it is its
    access-table entry (the roles of the page that imports the same kind)."""

    @extend_schema(
        request={"multipart/form-data": request_serializer},
        responses={202: s.ImportJobSerializer},
        description=doc,
    )
    @api_view(["POST"])
    @parser_classes([MultiPartParser, FormParser])
    def create(request):
        body = request_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        options = {k: v for k, v in body.validated_data.items() if k != "file"}
        return _queued_import(
            request, kind=kind, upload=body.validated_data["file"], options=options
        )

    create.__name__ = f"{kind}_import"
    return create


triples_import = _file_import(
    ImportKind.TRIPLES,
    doc="Import triples (gold JSONL shape) in the background, all or nothing; they enter "
    "review like authored ones. ``on_behalf`` (admins) keeps the file's authors.",
    request_serializer=s.TripleImportRequestSerializer,
)
questions_import = _file_import(
    ImportKind.QUESTIONS,
    doc="Import questions with gold evidence packets (JSONL) in the background.",
)
answers_import = _file_import(
    ImportKind.ANSWERS,
    doc="Import per-system answer logs (JSONL, one answer record per line) in the background: "
    "each record is routed and queued for blind labeling.",
)


class DocumentBlocks(ApiList):
    """A document's blocks, each with its latest version number and version count."""

    serializer_class = s.BlockSerializer
    pagination_class = type("BlockCursor", (Cursor,), {"ordering": "block_id"})
    updated_fields = ("changed_at",)  # its newest version's creation: how a block changes

    def get_queryset(self):
        document = corpus_selectors.get_document(
            project=self.request.project, document_id=self.kwargs["document_id"]
        )
        return corpus_selectors.list_blocks_of(document=document)


class BlockVersions(ApiList):
    """A block's versions (append-only), oldest first, with text and sha256."""

    serializer_class = s.BlockVersionSerializer
    pagination_class = type("BlockVersionCursor", (Cursor,), {"ordering": "version"})
    updated_fields = ("created_at",)

    def get_queryset(self):
        return corpus_selectors.list_versions_of(
            project=self.request.project, block_id=self.kwargs["block_id"]
        )


class BlockVersionDetail(generics.RetrieveAPIView):
    serializer_class = s.BlockVersionSerializer

    def get_object(self):
        return corpus_selectors.get_block_version(
            project=self.request.project,
            block_id=self.kwargs["block_id"],
            version=self.kwargs["version"],
        )


class TripleList(ApiList):
    """Triples in the caller's scope (the triple page's rule): leads and admins see every
    triple; annotators the triples they wrote and those they flagged."""

    serializer_class = s.TripleSerializer
    pagination_class = type("TripleCursor", (Cursor,), {"ordering": "-id"})
    query_filters = ("state",)
    updated_fields = ("updated_at",)

    @extend_schema(parameters=[OpenApiParameter("state", str, enum=list(TripleState.values))])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        state = self.request.query_params.get("state", "")
        if state and state not in TripleState.values:
            raise Problem(
                status_code=400,
                title="Bad Request",
                detail=f"unknown state {state!r}",
                errors=[{"field": "state", "message": "expected a triple state"}],
            )
        return curation_selectors.list_triples_for(
            project=self.request.project, user=self.request.user, state=state
        )


class TripleDetail(generics.RetrieveAPIView):
    serializer_class = s.TripleSerializer

    def get_object(self):
        return curation_selectors.get_triple_by_external_id_for(
            project=self.request.project,
            user=self.request.user,
            external_id=self.kwargs["triple_id"],
        )


@extend_schema(
    request={"multipart/form-data": s.FileUploadSerializer},
    responses={202: s.ImportJobSerializer},
)
@api_view(["POST"])
@parser_classes([MultiPartParser, FormParser])
def evaluator_outputs_import(request, pk):
    """Import one evaluator's outputs (JSONL: record_id, labels, score, unsafe_probability) in
    the background, all or nothing, like the evaluator's page: 202 with the import job; poll
    ``Location`` for status, progress and errors with line and field."""
    evaluator = evaluator_selectors.get_evaluator_for(
        project=request.project, user=request.user, evaluator_id=pk
    )
    body = s.FileUploadSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    return _queued_import(
        request,
        kind=ImportKind.EVALUATOR,
        upload=body.validated_data["file"],
        options={"evaluator": evaluator.pk},
    )


class ImportDetail(generics.RetrieveAPIView):
    """An import job: status, progress, summary and its errors (line, field, message)."""

    serializer_class = s.ImportJobSerializer

    def get_object(self):
        return get_import_job_for(
            project=self.request.project, user=self.request.user, pk=self.kwargs["pk"]
        )


def _import_action(service, *, doc: str, name: str):
    """POST on an import job the caller may see (the page's selector: 404 otherwise), through
    the job page's service; 409 with the reason when the job's status does not allow it."""

    @extend_schema(
        request=None,
        responses={
            200: s.ImportJobSerializer,
            409: OpenApiResponse(description="The job's status does not allow this."),
        },
        description=doc,
    )
    @api_view(["POST"])
    def act(request, pk: int):
        job = get_import_job_for(project=request.project, user=request.user, pk=pk)
        try:
            job = service(job=job, actor=request.user)
        except GoldsetError as exc:
            raise Problem(status_code=409, title="Conflict", detail=str(exc)) from exc
        return Response(s.ImportJobSerializer(job).data)

    act.__name__ = name
    return act


import_cancel = _import_action(
    cancel_import_job,
    name="import_cancel",
    doc="Cancel a queued or running import: a running one stops at its next batch and stores "
    "nothing. 409 when it has already ended.",
)
import_retry = _import_action(
    retry_import_job,
    name="import_retry",
    doc="Queue a failed or cancelled import again from its kept file. 409 when it is not "
    "failed or cancelled, or when its file is no longer stored (upload it again).",
)


class VersionList(ApiList):
    """Frozen gold versions, newest first."""

    serializer_class = s.GoldVersionSerializer
    pagination_class = type("VersionCursor", (Cursor,), {"ordering": "-number"})
    updated_fields = ("created_at",)

    def get_queryset(self):
        return export_selectors.list_versions(project=self.request.project).prefetch_related(
            "files"
        )


class VersionDetail(generics.RetrieveAPIView):
    """A frozen gold version with its manifest (counts, filters, seeds, checksums, diff), by
    number (``7``, ``v7``), tag (``release-2026q4``) or ``latest``; 404 for anything else."""

    serializer_class = s.GoldVersionDetailSerializer

    @extend_schema(parameters=[REF_PARAMETER])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_object(self):
        return resolve_version(project=self.request.project, ref=self.kwargs["ref"])


@extend_schema(
    request=s.FreezeRequestSerializer,
    responses={201: s.FreezeResultSerializer, 200: s.FreezeResultSerializer},
)
@api_view(["POST"])
def version_freeze(request):
    """Freeze the gold triples the filters select as the next version (the freeze page): 201
    with the version; when the selection equals the latest version row for row, 200 with
    ``created: false`` and that version (nothing is created, so a retried call is harmless)."""
    body = s.FreezeRequestSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    filters = FreezeFilters(
        domain=data.get("domain", ""),
        tier=data.get("tier", ""),
        source=data.get("source", ""),
        public_only=data["public_only"],
        working_slice=data.get("working_slice", ""),
        include_superseded=data["include_superseded"],
    )
    if request.project.slug != DEFAULT_PROJECT_SLUG:
        # The freeze service selects and numbers the default project's triples only until it
        # takes a project (goldset.services.freeze): refuse rather than freeze another's.
        raise Problem(
            status_code=409,
            title="Conflict",
            detail="Freezing through the API is available in the default project only for now.",
        )
    try:
        version = freeze_gold_version(
            project=request.project, filters=filters, actor=request.user, note=data.get("note", "")
        )
    except NothingToFreeze as exc:
        latest = export_selectors.get_version(project=request.project, number=exc.latest.number)
        body = {"created": False, "detail": str(exc), "version": latest}
        return Response(s.FreezeResultSerializer(body).data, status=status.HTTP_200_OK)
    version = export_selectors.get_version(project=request.project, number=version.number)
    body = {"created": True, "detail": f"Froze gold version {version.label}.", "version": version}
    return Response(
        s.FreezeResultSerializer(body).data,
        status=status.HTTP_201_CREATED,
        headers={"Location": api_url(request, "api:version", ref=version.number)},
    )


@extend_schema(
    parameters=[
        OpenApiParameter("a", s.VERSION_REF_SCHEMA, required=True),
        OpenApiParameter("b", s.VERSION_REF_SCHEMA, required=True),
    ],
    responses={200: s.VersionDiffSerializer},
)
@api_view(["GET"])
def version_diff(request):
    """Triples added, removed and changed between versions ``a`` and ``b`` (each a number,
    ``v7``, a tag or ``latest``)."""
    check_query(request, allowed=("a", "b"))
    a = resolve_version(project=request.project, ref=_version_ref(request, "a"))
    b = resolve_version(project=request.project, ref=_version_ref(request, "b"))
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
    parameters=[REF_PARAMETER],
    responses={
        (200, "application/octet-stream"): OpenApiResponse(
            description="The file; its sha256 in the X-Checksum-SHA256 header."
        ),
        500: OpenApiResponse(description="The stored file failed its integrity check."),
    },
)
@api_view(["GET"])
def version_download(request, ref, fmt):
    """A version's file in ``fmt`` (gold_jsonl, unrag_json, probe_questions, probe_packets,
    adjudication, manifest), reduced to the fields the caller's role gets: the page's path
    (:func:`serve_version_file`) and status codes (404 no such file, 500 failed integrity).
    ``ref`` is a number, ``v7``, a tag or ``latest``."""
    version = resolve_version(project=request.project, ref=ref)
    try:
        download = serve_version_file(user=request.user, version=version, fmt=fmt, via="api")
    except ChecksumMismatch as exc:
        raise Problem(status_code=500, title="Integrity check failed", detail=str(exc)) from exc
    except NoSuchDownload as exc:
        raise Problem(status_code=404, title="Not Found", detail=str(exc)) from exc
    return file_response(download)


class JobList(ApiList, generics.CreateAPIView):
    """Scoring jobs. POST a run file (multipart/form-data: version, file, name, k) or a JSON
    body (version, name, k, run: the run's lines as objects): the run is stored as an import
    job of kind ``run`` and scored in the background (202 with the import job; its summary names
    the scoring job once the file is validated)."""

    serializer_class = s.ScoringJobSerializer
    query_filters = ("version", "system", "status")
    updated_fields = ("created_at", "started_at", "finished_at")
    parser_classes = [DepthLimitedJSONParser, MultiPartParser, FormParser]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "version",
                {"type": "string", "pattern": VERSION_REF_PATTERN},
                description="Jobs scored on this gold version: 7, v7, a tag or latest (none when "
                "it names no frozen version).",
            ),
            OpenApiParameter(
                "system",
                str,
                description="Jobs of this system: answer logs it answered in, retrieval runs "
                "named after it.",
            ),
            OpenApiParameter("status", str, enum=list(JobStatus.values)),
        ]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        params = self.request.query_params
        ref, status_ = params.get("version", ""), params.get("status", "")
        if status_ and status_ not in JobStatus.values:
            raise bad_query("status", f"unknown status {status_!r}; expected a job status")
        version = None
        if ref:
            try:
                version = resolve_version_ref(self.request.project, ref)
            except BadVersionRef as exc:
                raise bad_query("version", str(exc)) from exc
            except UnknownVersion:
                return ScoringJob.objects.none()  # a version not frozen (yet) has no jobs
        return export_selectors.list_jobs(
            project=self.request.project,
            version=version,
            system_id=params.get("system", ""),
            status=status_,
        )

    @extend_schema(
        request={
            "application/json": s.ScoringJobRequestSerializer,
            "multipart/form-data": s.RunUploadRequestSerializer,
        },
        responses={202: s.ImportJobSerializer},
    )
    def post(self, request, *args, **kwargs):
        if request.content_type.startswith("multipart/"):
            body = s.RunUploadRequestSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            data = body.validated_data
            upload = data["file"]
        else:
            body = s.ScoringJobRequestSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            data = body.validated_data
            lines = "".join(json.dumps(line, sort_keys=True) + "\n" for line in data["run"])
            upload = ContentFile(lines.encode(), name=f"{data.get('name') or 'run'}.jsonl")
        options = {"version": data["version"], "name": data.get("name", ""), "k": data["k"]}
        return _queued_import(
            request, kind=ImportKind.RUN, upload=upload, options=options, title="Run rejected"
        )


class JobDetail(generics.RetrieveAPIView):
    """A scoring job: status, progress, and (when it succeeded) aggregates with CIs."""

    serializer_class = s.ScoringJobDetailSerializer

    def get_object(self):
        return get_object_or_404(
            ScoringJob.objects.filter(project=self.request.project)
            .select_related("version")
            .prefetch_related("aggregates"),
            pk=self.kwargs["pk"],
        )


class JobQueries(ApiList):
    """Per-query rows of a scoring job."""

    serializer_class = s.QueryResultSerializer
    pagination_class = type("QueryCursor", (Cursor,), {"ordering": "id"})
    updated_fields = ("job__finished_at",)  # a job's rows are (re)written when it finishes

    def get_queryset(self):
        job = export_selectors.get_job(project=self.request.project, pk=self.kwargs["pk"])
        return job.query_results.all()


@extend_schema(
    parameters=[
        OpenApiParameter(
            "jobs",
            {
                "type": "array",
                "items": ID_SCHEMA,
                "minItems": 2,
                "maxItems": 20,
                "uniqueItems": True,
            },
            required=True,
            explode=True,
        ),
        OpenApiParameter("method", str, enum=["auto", "exact", "asymptotic"]),
    ],
    responses={
        200: s.ComparisonSerializer,
        422: OpenApiResponse(description="Not comparable: jobs on different gold versions."),
    },
)
@api_view(["GET"])
def job_compare(request):
    """Paired comparison of succeeded scoring jobs (the compare page): ``jobs`` repeated, all
    scored against one gold version; otherwise 422 saying why."""
    ids = [_positive(v, "jobs", what="job ids") for v in request.query_params.getlist("jobs")]
    jobs = export_selectors.list_comparable_jobs(project=request.project, job_ids=ids)
    method = request.query_params.get("method") or "auto"
    comparison = export_selectors.compare_jobs(jobs=jobs, wilcoxon_method=method)
    return Response(_finite(s.ComparisonSerializer(comparison).data))


def _finite(value):
    """JSON has no NaN or Infinity: an undefined statistic is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


class SnapshotList(ApiList):
    """Stored agreement figures (the dashboard's), filtered by protocol, axis, metric and tier;
    subjects (annotator pairs, annotators) by display name as on the dashboard."""

    serializer_class = s.SnapshotSerializer
    pagination_class = type("SnapshotCursor", (Cursor,), {"ordering": "id"})
    FILTERS = ("protocol", "axis", "metric", "tier")
    query_filters = FILTERS
    updated_fields = ("computed_at",)

    @extend_schema(parameters=[OpenApiParameter(name, str) for name in FILTERS])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        q = self.request.query_params
        return agreement_selectors.list_snapshots(
            project=self.request.project, **{name: q[name] for name in self.FILTERS if q.get(name)}
        )

    def get_serializer(self, *args, **kwargs):
        if args and kwargs.get("many"):
            rows = list(args[0])
            args = (rows, *args[1:])
            kwargs["context"] = {
                **self.get_serializer_context(),
                "names": agreement_selectors.subject_names(rows),
            }
        return super().get_serializer(*args, **kwargs)


@extend_schema(responses={200: s.AlertSerializer(many=True)})
@api_view(["GET"])
def alert_list(request):
    """Agreement and quality alerts currently raised (the dashboard's list)."""
    check_query(request, allowed=())
    alerts = agreement_selectors.list_agreement_alerts(project=request.project)
    return Response(s.AlertSerializer(alerts, many=True).data)


def _version_ref(request, name: str) -> str:
    """The version the query parameter ``name`` names (shape only; 400 when it cannot name
    one); the resolver decides which version it is (404 for none)."""
    value = request.query_params.get(name, "")
    if not re.fullmatch(s.VERSION_REF_PATTERN, value):
        raise Problem(
            status_code=400,
            title="Bad Request",
            detail=f"{name} must name a gold version",
            errors=[{"field": name, "message": "expected a version number, a tag or 'latest'"}],
        )
    return value


# ---------------------------------------------------------------- version tags


class TagList(ApiList):
    """The project's version tags by name, each with the version it points at and its last
    change (``updated_since``: moved since)."""

    serializer_class = s.TagSerializer
    pagination_class = type("TagCursor", (Cursor,), {"ordering": "name"})
    updated_fields = ("moved_at",)

    def get_queryset(self):
        return tag_selectors.list_tags(project=self.request.project)


def _tag_body(request, tag):
    history = tag_selectors.list_tag_history(project=request.project, name=tag.name)
    return s.TagDetailSerializer(tag, context={"history": history}).data


def _check_tag_admin(request) -> None:
    """Moving and deleting tags: the roles of the page that does it (one table for both)."""
    if not roles_of(request.user) & entry_for("exports:tag_set").roles:
        raise Problem(status_code=403, title="Forbidden", detail="Only a project admin moves tags.")


class TagDetail(APIView):
    """One version tag: read it with its history (leads and admins); create or move it with
    PUT, delete it with DELETE (admins, write token). Every change is audited and sent as a
    ``tag.moved`` webhook event."""

    @extend_schema(responses={200: s.TagDetailSerializer})
    def get(self, request, name):
        """The tag, the version it points at, and its changes, newest first."""
        check_query(request, allowed=())
        tag = tag_selectors.get_tag(project=request.project, name=name)
        return Response(_tag_body(request, tag))

    @extend_schema(
        request=s.TagRequestSerializer,
        responses={
            200: OpenApiResponse(s.TagDetailSerializer, description="Moved (or already there)."),
            201: OpenApiResponse(s.TagDetailSerializer, description="Created."),
            422: OpenApiResponse(
                description="A name a tag may not take, a version the project does not have, "
                "or a note over 300 characters (the field is named in errors)."
            ),
        },
    )
    def put(self, request, name):
        """Point the tag at ``version`` (a number, ``v7``, another tag or ``latest``, resolved
        now: the tag pins that version), creating it when it does not exist: 201 when
        created, 200 when moved; putting it where it already is changes nothing (200)."""
        check_query(request, allowed=())
        _check_tag_admin(request)
        body = s.TagRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        version = resolve_version_option(project=request.project, ref=data["version"])
        change = set_version_tag(
            project=request.project,
            actor=request.user,
            name=name,
            version=version,
            note=data.get("note", ""),
        )
        if not change.created:
            return Response(_tag_body(request, change.tag))
        return Response(
            _tag_body(request, change.tag),
            status=status.HTTP_201_CREATED,
            headers={"Location": api_url(request, "api:tag", name=change.tag.name)},
        )

    @extend_schema(
        parameters=[OpenApiParameter("note", str, description="Why (kept in its history).")],
        responses={204: None},
    )
    def delete(self, request, name):
        """Delete the tag (its history stays): 204; 404 when there is no such tag."""
        check_query(request, allowed=("note",))
        _check_tag_admin(request)
        delete_version_tag(
            project=request.project,
            actor=request.user,
            name=name,
            note=request.query_params.get("note", ""),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


def _positive(value, name: str, *, what: str = "a version number") -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if not 1 <= number <= MAX_ID:
        raise Problem(
            status_code=400,
            title="Bad Request",
            detail=f"{name} must be {what}",
            errors=[{"field": name, "message": "expected a positive integer"}],
        )
    return number


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
def not_found(request, rest=""):
    """Any other URL under /api/v1/: a problem+json 404, never an HTML page."""
    raise Problem(status_code=404, title="Not Found", detail="No such endpoint.")
