"""The OTLP/HTTP traces receiver (issue 28): ``POST /api/v1/projects/<slug>/otlp/v1/traces``,
so an application's OpenTelemetry SDK or an OpenTelemetry Collector exports to the workbench
with its own exporter (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and ``_HEADERS``: an API token
with the write scope, ``Authorization=Bearer gst_…``).

Answers as the OTLP/HTTP specification says: 200 with an ``ExportTraceServiceResponse`` in the
request's encoding, carrying ``partial_success`` (rejected spans and why) when some spans were
refused (on receipt: :func:`goldset.services.traces.receive_spans`) or accepted but not kept
whole; 400 for a malformed body; 413 over ``OTLP_MAX_BODY_BYTES`` (from ``Content-Length``
before the body is read, and after gunzip; above ``DATA_UPLOAD_MAX_MEMORY_SIZE`` the request
guard answers the same before the view runs); 415 for another content type or encoding; 429
when the project's mapping is behind and 503 when the database is busy; 413, 429 and 503 with
``Retry-After``. Error bodies are a ``google.rpc.Status`` in the request's encoding
(:mod:`goldset.traces.responses`; 415: problem+json, the request's encoding being unknown).
Who may call it is its access-table entry (admins: the traces carry system identity); a read
token is refused (403). The request only stores spans and queues
their mapping (:mod:`goldset.services.traces`). Not in the OpenAPI schema: its bodies are the
OTLP protobuf/JSON messages, not this API's JSON."""

import logging

from django.db import OperationalError
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, parser_classes

from goldset.conf import tunable
from goldset.services.traces import TracesBacklogged, receive_spans
from goldset.traces.decode import (
    DecodeError,
    UnsupportedMediaType,
    decode_export_request,
    encode_export_response,
    response_media_type,
)
from goldset.traces.responses import error_response
from goldset.views.api_support import Problem

logger = logging.getLogger(__name__)


@extend_schema(exclude=True)
@api_view(["POST"])
@parser_classes([])
def otlp_traces(request):
    content_type = request.META.get("CONTENT_TYPE", "")
    media = response_media_type(content_type)
    if media is None:
        raise Problem(
            status_code=415,
            title="Unsupported Media Type",
            detail=f"content type {content_type[:100]!r} is not supported "
            "(expected application/x-protobuf or application/json)",
        )
    cap = tunable("OTLP_MAX_BODY_BYTES")
    announced = int(request.META.get("CONTENT_LENGTH") or 0)  # checked by RequestBodyGuard
    if announced > cap:
        return _error(413, f"the request announces {announced} bytes; at most {cap}", media)
    try:
        decoded = decode_export_request(
            request._request,  # the body stream, read bounded by the decoder
            content_type=content_type,
            content_encoding=request.META.get("HTTP_CONTENT_ENCODING", ""),
            max_body_bytes=cap,
        )
    except UnsupportedMediaType as exc:
        raise Problem(status_code=415, title="Unsupported Media Type", detail=exc.message) from exc
    except DecodeError as exc:
        return _error(exc.status, exc.message, media)
    try:
        received = receive_spans(project=request.project, decoded=decoded)
    except TracesBacklogged as exc:
        return _error(429, f"{exc}; retry later", media)
    except OperationalError:
        logger.warning("traces of %s not stored: the database is busy", request.project.slug)
        return _error(503, "the database is busy; retry later", media)
    body = encode_export_response(
        decoded, content_type=media, rejections=received.rejections, warnings=received.warnings
    )
    return HttpResponse(body, content_type=media)


def _error(status: int, message: str, media: str) -> HttpResponse:
    return error_response(status, message, media, retry_after=tunable("OTLP_RETRY_AFTER_SECONDS"))
