"""The REST API's plumbing: the access table as a DRF permission, problem+json errors (RFC 9457)
and cursor pagination. Views in :mod:`goldset.views.api` stay thin over selectors and services."""

from datetime import UTC, datetime
from http import HTTPStatus

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db.models import Q
from django.http import Http404, HttpResponse
from django.urls import reverse
from rest_framework import exceptions
from rest_framework.filters import BaseFilterBackend
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response
from rest_framework.views import exception_handler

from goldset.exceptions import GoldsetError
from goldset.views.api_access import IdempotentReplay
from workbench.access import entry_for
from workbench.middleware import BodyReadTimeout
from workbench.roles import roles_of

PROBLEM_JSON = "application/problem+json"


class Cursor(CursorPagination):
    """Cursor pagination whose ``page_size`` is checked: a value that is not an integer from 1
    to ``max_page_size`` is a 400 naming the field, never silently replaced."""

    page_size = 50
    max_page_size = 500
    page_size_query_param = "page_size"
    ordering = "-id"

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if not 1 <= size <= self.max_page_size:
            raise bad_query("page_size", f"expected an integer from 1 to {self.max_page_size}")
        return size

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_page_size,
                    "default": self.page_size,
                }
        return parameters


API_ROOT = "/api/v1/"


def api_url(request, viewname: str, **kwargs) -> str:
    """``viewname``'s API URL as the caller addressed the API: under
    ``/api/v1/projects/<slug>/`` when the request came through a project's prefix (Location
    headers and links stay in the project), unprefixed otherwise (the default project)."""
    return project_api_url(getattr(request, "project_slug", None), viewname, **kwargs)


def project_api_url(slug: str | None, viewname: str, **kwargs) -> str:
    """``viewname``'s API URL under project ``slug``'s prefix (unprefixed for ``None``);
    ``api:project`` is the project itself, ``/api/v1/projects/<slug>/``."""
    path = reverse(viewname, kwargs=kwargs or None)
    if slug and API_ROOT in path:
        path = path.replace(API_ROOT, f"{API_ROOT}projects/{slug}/", 1)
    return path


def check_page_role(request, page: str, what: str) -> None:
    """Writing needs the roles of the page that does the same thing (one table for both):
    a 403 otherwise."""
    if not roles_of(request.user) & entry_for(page).roles:
        raise Problem(status_code=403, title="Forbidden", detail=f"Your role may not {what}.")


def checked_body(request, serializer_class, *, what: str, **kwargs) -> dict:
    """The request body checked by ``serializer_class`` (types and ranges: a 400 naming the
    field); a member the body may not have is a 400 naming it too (a misspelt field must not
    be silently ignored)."""
    body = serializer_class(data=request.data, **kwargs)
    if isinstance(request.data, dict):
        unknown = sorted(set(request.data) - set(body.fields))
        if unknown:
            raise bad_query(unknown[0], f"not a field of {what}")
    body.is_valid(raise_exception=True)
    return dict(body.validated_data)


def form_errors(form) -> list[dict]:
    """A Django form's errors as problem ``errors`` (``field`` empty for the form's own)."""
    return [
        {"field": name if name != "__all__" else "", "message": str(message)}
        for name, messages in form.errors.items()
        for message in messages
    ]


def bad_query(name: str, message: str) -> "Problem":
    return Problem(
        status_code=400,
        title="Bad Request",
        detail=f"{name}: {message}",
        errors=[{"field": name, "message": message}],
    )


def check_query(request, *, allowed) -> None:
    """Refuse (400) a query parameter the endpoint does not document: a misspelt filter must
    not silently return everything."""
    unknown = sorted(set(request.query_params) - set(allowed))
    if unknown:
        raise Problem(
            status_code=400,
            title="Bad Request",
            detail=f"unknown query parameter(s): {', '.join(unknown)}",
            errors=[{"field": name, "message": "not a filter of this list"} for name in unknown],
        )


def parse_updated_since(raw: str) -> datetime:
    """An RFC 3339 date-time (``2026-11-20T08:00:00Z``); a naive one is read as UTC."""
    text = raw.strip().upper().replace(" ", "T")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None:
        raise bad_query("updated_since", "expected an RFC 3339 date-time")
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    # In UTC: the database refuses offsets beyond ±15:59, which RFC 3339 allows.
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # before year 1 or after 9999 once in UTC
        edge = datetime.min if moment.year == 1 else datetime.max
        return edge.replace(tzinfo=UTC)


class ListFilters(BaseFilterBackend):
    """The filters of every list: only the ones a view declares (``query_filters``; others are a
    400), and ``updated_since`` on lists whose rows carry a change time (``updated_fields``:
    rows created, or changed, at or after that moment), for incremental sync."""

    def filter_queryset(self, request, queryset, view):
        fields = getattr(view, "updated_fields", ())
        paging = ("cursor", "page_size") if view.pagination_class else ()
        since = ("updated_since",) if fields else ()
        check_query(request, allowed=(*getattr(view, "query_filters", ()), *paging, *since))
        raw = request.query_params.get("updated_since")
        if fields and raw is not None:
            moment = parse_updated_since(raw)
            condition = Q()
            for name in fields:
                condition |= Q(**{f"{name}__gte": moment})
            queryset = queryset.filter(condition)
        return queryset

    def get_schema_operation_parameters(self, view):
        if not getattr(view, "updated_fields", ()):
            return []
        return [
            {
                "name": "updated_since",
                "in": "query",
                "required": False,
                "description": "Only rows created or changed at or after this moment (RFC 3339).",
                "schema": {"type": "string", "format": "date-time"},
            }
        ]


class Problem(exceptions.APIException):
    """A 4xx answer with extra members (``errors``: line, field, message, expected)."""

    def __init__(self, *, status_code: int, title: str, detail: str, errors=None):
        super().__init__(detail)
        self.status_code = status_code
        self.title = title
        self.errors = errors or []


def problem_response(*, status_code: int, title: str, detail: str, errors=None, headers=None):
    body = {"type": "about:blank", "title": title, "status": status_code, "detail": detail}
    if errors:
        body["errors"] = errors
    return Response(body, status=status_code, content_type=PROBLEM_JSON, headers=headers)


def problem_exception_handler(exc, context):
    """Every API error as problem+json: DRF's own, Http404/PermissionDenied from selectors, and
    GoldsetError (a domain rule refused the request: 422)."""
    if isinstance(exc, IdempotentReplay):
        row = exc.row
        replay = HttpResponse(
            bytes(row.body), status=row.status_code, content_type=row.content_type
        )
        replay["Idempotent-Replayed"] = "true"
        if row.location:
            replay["Location"] = row.location
        return replay
    if isinstance(exc, Problem):
        return problem_response(
            status_code=exc.status_code, title=exc.title, detail=str(exc.detail), errors=exc.errors
        )
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return problem_response(
            status_code=413,
            title="Request body too large",
            detail=(
                f"A JSON body is read into memory, so it may be at most {limit} bytes "
                "(DATA_UPLOAD_MAX_MEMORY_SIZE). Send a large run as a file "
                "(multipart/form-data), which is streamed to storage."
            ),
        )
    if isinstance(exc, BodyReadTimeout):
        return problem_response(status_code=408, title="Request Timeout", detail=str(exc))
    if isinstance(exc, GoldsetError):
        field = getattr(exc, "field", "")  # the input at fault, when the rule names one
        return problem_response(
            status_code=422,
            title="Unprocessable request",
            detail=str(exc),
            errors=[{"field": field, "message": str(exc)}] if field else None,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    errors = None
    if isinstance(data, dict) and "detail" in data:
        detail = str(data["detail"])
    else:
        detail = "The request has invalid fields."
        errors = [
            {"field": name, "message": str(message)}
            for name, messages in (data.items() if isinstance(data, dict) else [("", data)])
            for message in (messages if isinstance(messages, list) else [messages])
        ]
    headers = {
        k: v for k, v in response.headers.items() if k in ("WWW-Authenticate", "Retry-After")
    }
    return problem_response(
        status_code=response.status_code,
        title=HTTPStatus(response.status_code).phrase,
        detail=detail,
        errors=errors,
        headers=headers,
    )


PROBLEM_SCHEMA = {
    "type": "object",
    "description": "RFC 9457 problem details; import errors list line and field.",
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "line": {"type": ["integer", "null"]},
                    "field": {"type": "string"},
                    "message": {"type": "string"},
                    "expected": {"type": "string"},
                },
                "required": ["message"],
            },
        },
    },
    "required": ["title", "status"],
}
_ERROR_STATUSES = {
    "400": "Bad request (a field is named in errors).",
    "401": "No credentials, or an invalid, expired or revoked token.",
    "403": "Your role or your token's scope does not allow this.",
    "404": "Not found, or not yours.",
    "405": "This path does not take the request's method (Allow lists those it takes).",
    "429": "Rate limit of this token reached (see Retry-After).",
}
_BODY_STATUSES = {
    "408": "The request body stalled (REQUEST_BODY_TIMEOUT_SECONDS).",
    "413": "The request body is too large.",
    "415": "The request body's Content-Type is not one this operation reads.",
}
_WRITE_STATUSES = {
    "409": "A request with this Idempotency-Key is still running, or the object's state does "
    "not allow this.",
    "408": _BODY_STATUSES["408"],
    "413": _BODY_STATUSES["413"],
}


def _header(description: str, schema=None, *, required: bool = False) -> dict:
    header = {"description": description, "schema": schema or {"type": "string"}}
    if required:
        header["required"] = True
    return header


_RETRY_AFTER = _header("Seconds until a retry may succeed.", {"type": "integer"})
# Statuses whose answers carry a header (429 and 503, whoever sends them: Retry-After).
_HEADERS = {
    "401": {"WWW-Authenticate": _header("The Bearer challenge.")},
    "405": {"Allow": _header("The methods this path takes.")},
    "429": {"Retry-After": _RETRY_AFTER},
    "503": {"Retry-After": _RETRY_AFTER},
}
# Every answer (workbench.middleware: RequestIdMiddleware on all of them; QueryCountMiddleware
# only where the installation turns it on).
_EVERY_RESPONSE_HEADERS = {
    "X-Request-ID": _header(
        "The request's id (the caller's X-Request-ID when well-formed, else a new one), as the "
        "audit log records it.",
        required=True,
    ),
    "X-Query-Count": _header(
        "SQL statements the request ran; only where QUERY_COUNT_HEADER is on (benchmarks).",
        {"type": "integer"},
    ),
    "Server-Timing": _header(
        "app, db and cpu durations; only where QUERY_COUNT_HEADER is on (benchmarks)."
    ),
}
_WRITE_HEADERS = {
    "Idempotent-Replayed": _header(
        "``true`` when this is the kept answer to an earlier request with the same Idempotency-Key."
    )
}
_CREATED_HEADERS = {"Location": _header("The URL of the created (or queued) resource.")}
_DOWNLOAD_HEADERS = {
    "X-Checksum-SHA256": _header("The sha256 of the file's bytes (hex)."),
    "Content-Disposition": _header("attachment, with the file's name."),
}
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Any string up to 255 characters: a repeat of this request (same method and "
    "path) with the same key gets the first answer again (Idempotent-Replayed: true) and "
    "changes nothing.",
    "schema": {"type": "string", "maxLength": 255},
}


def document_problems(result, generator, request, public):
    """drf-spectacular postprocessing hook: every operation documents its problem+json errors
    (405 for a method its path does not take; 408/409/413/422 for writes; 415 where it reads a
    body), the response headers the API sends (X-Request-ID on every answer, Retry-After on
    every 429 and 503, Allow on 405), and the Idempotency-Key header of every write (POST, PUT,
    PATCH, DELETE), so generated clients and schemathesis know every status and header."""
    result.setdefault("components", {}).setdefault("schemas", {})["Problem"] = PROBLEM_SCHEMA
    content = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            statuses = dict(_ERROR_STATUSES)
            if method in ("post", "put", "patch", "delete"):
                statuses.update(_WRITE_STATUSES)
                statuses["422"] = (
                    "Rejected by a rule (a file, a version that is not frozen…)."
                    if method == "post"
                    else "Rejected by a rule (a field is named in errors)."
                )
                parameters = operation.setdefault("parameters", [])
                if not any(p.get("name") == "Idempotency-Key" for p in parameters):
                    parameters.append(IDEMPOTENCY_KEY)
            if "requestBody" in operation:
                statuses.update(_BODY_STATUSES)
            responses = operation.setdefault("responses", {})
            for code, description in statuses.items():
                if code not in responses or not responses[code].get("content"):
                    responses[code] = {"description": description, "content": content}
            for code, response in responses.items():
                if code[:1] in ("4", "5") and not response.get("content"):
                    response["content"] = content  # every error is problem+json
                headers = {**_EVERY_RESPONSE_HEADERS, **_HEADERS.get(code, {})}
                if method != "get" and code.startswith("2"):
                    headers.update(_WRITE_HEADERS)
                if code in ("201", "202"):
                    headers.update(_CREATED_HEADERS)
                if "/download/" in path and code == "200":
                    headers.update(_DOWNLOAD_HEADERS)
                response["headers"] = {**headers, **response.get("headers", {})}
    return result
