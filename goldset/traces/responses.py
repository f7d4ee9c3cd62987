"""The OTLP/HTTP traces receiver's error answers (issue 28), in one place for the view and for
the request-body guard (``workbench.middleware.RequestBodyGuardMiddleware``), which refuses a
body announced above ``DATA_UPLOAD_MAX_MEMORY_SIZE`` before the view runs: either way the
exporter reads a ``google.rpc.Status`` in its request's encoding.

A protobuf request's error is the ``Status`` message; a JSON request's is one JSON document that
is both the API's problem+json and OTLP's JSON ``Status`` (its ``code`` and ``message``; a Status
reader ignores the other members). 413, 429 and 503 answers carry ``Retry-After`` (the OTLP
exporters retry 429 and 503 after it; on 413 it is harmless, and the issue asks for it)."""

import json
from http import HTTPStatus

from django.http import HttpResponse

from goldset.traces.decode import (
    JSON,
    PROTOBUF,
    encode_error_status,
    error_status_code,
    response_media_type,
)

PROBLEM_JSON = "application/problem+json"
# The receiver's path under a project's API (goldset.urls.api: "otlp/v1/traces").
OTLP_TRACES_PATH = "/otlp/v1/traces"
RETRY_AFTER_STATUSES = frozenset({413, 429, 503})


def is_otlp_traces_request(path: str) -> bool:
    return path.startswith("/api/") and path.rstrip("/").endswith(OTLP_TRACES_PATH)


def error_response(status: int, message: str, content_type: str, *, retry_after: int):
    """The error answer to a request of ``content_type`` (an unknown one is answered as
    protobuf, the OTLP default), with ``Retry-After: retry_after`` on 413, 429 and 503."""
    media = response_media_type(content_type) or PROTOBUF
    if media == JSON:
        body = {
            "type": "about:blank",
            "title": HTTPStatus(status).phrase,
            "status": status,
            "detail": message,
            "code": error_status_code(status),
            "message": message,
        }
        response = HttpResponse(json.dumps(body), status=status, content_type=PROBLEM_JSON)
    else:
        response = HttpResponse(
            encode_error_status(status, message, content_type=media),
            status=status,
            content_type=media,
        )
    if status in RETRY_AFTER_STATUSES:
        response["Retry-After"] = str(retry_after)
    return response
