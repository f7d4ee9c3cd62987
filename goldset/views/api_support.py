"""The REST API's plumbing: the access table as a DRF permission, problem+json errors (RFC 9457)
and cursor pagination. Views in :mod:`goldset.views.api` stay thin over selectors and services."""

from http import HTTPStatus

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpResponse
from rest_framework import exceptions
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response
from rest_framework.views import exception_handler

from goldset.exceptions import GoldsetError
from goldset.views.api_access import IdempotentReplay
from workbench.middleware import BodyReadTimeout

PROBLEM_JSON = "application/problem+json"


class Cursor(CursorPagination):
    page_size = 50
    max_page_size = 500
    page_size_query_param = "page_size"
    ordering = "-id"


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
        return problem_response(
            status_code=422, title="Unprocessable request", detail=str(exc), errors=None
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
    "429": "Rate limit of this token reached (see Retry-After).",
}


def document_problems(result, generator, request, public):
    """drf-spectacular postprocessing hook: every operation documents its problem+json errors
    (and 422 for writes), so clients and schemathesis know every status the API answers."""
    result.setdefault("components", {}).setdefault("schemas", {})["Problem"] = PROBLEM_SCHEMA
    content = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            statuses = dict(_ERROR_STATUSES)
            if method in ("post", "put", "patch", "delete"):
                statuses["422"] = "Rejected by a rule (a file, a version that is not frozen…)."
            responses = operation.setdefault("responses", {})
            for code, description in statuses.items():
                if code not in responses or not responses[code].get("content"):
                    responses[code] = {"description": description, "content": content}
    return result
