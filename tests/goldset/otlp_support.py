"""Builders shared by the OTLP receiver tests: the receiver's URL in a project, a write token,
the spans of the instrumented RAG pipeline of ``tests/goldset/rules/traces_support.py`` (real
OpenTelemetry SDK, both conventions), and readers of the receiver's answers (the real
``ExportTraceServiceResponse`` and ``google.rpc.Status`` messages)."""

import base64
import json

from google.protobuf.json_format import MessageToDict
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.goldset.rules.traces_support import (
    CORPUS,
    JSON,
    PROTOBUF,
    SERVICE,
    json_body,
    protobuf_body,
    provider,
    run_genai,
    run_openinference,
)
from workbench.services.api_tokens import create_api_token

__all__ = ["CORPUS", "JSON", "PROTOBUF", "SERVICE", "json_body", "protobuf_body"]


def otlp_url(project) -> str:
    return f"/api/v1/projects/{project.slug}/otlp/v1/traces"


def write_token(user, *, project=None, scope="write") -> str:
    _, raw = create_api_token(user=user, name="otlp", scope=scope, project=project)
    return raw


def pipeline_spans(kind: str = "openinference", resource: dict | None = None, **kwargs):
    """The finished SDK spans of one pipeline run (children first, root last) and what the
    pipeline computed."""
    tracer_provider, exporter = provider(resource)
    tracer = tracer_provider.get_tracer("rag-test")
    run = (run_openinference if kind == "openinference" else run_genai)(tracer, **kwargs)
    tracer_provider.shutdown()
    return list(exporter.get_finished_spans()), run


def post(client, project, body: bytes, *, token: str, content_type: str = PROTOBUF, **headers):
    return client.post(
        otlp_url(project),
        data=body,
        content_type=content_type,
        HTTP_AUTHORIZATION=f"Bearer {token}",
        **headers,
    )


def partial_success(response) -> tuple[int, str]:
    """(rejected spans, error message) of a 200 answer, in either encoding."""
    if response["Content-Type"].startswith(JSON):
        partial = response.json().get("partialSuccess", {})
        return int(partial.get("rejectedSpans", 0)), partial.get("errorMessage", "")
    message = ExportTraceServiceResponse.FromString(response.content)
    return message.partial_success.rejected_spans, message.partial_success.error_message


def error_status(response) -> tuple[int, str]:
    """(gRPC code, message) of an error answer's ``google.rpc.Status``, in either encoding."""
    if "json" in response["Content-Type"]:  # problem+json carrying the Status's members
        body = response.json()
        assert body["status"] == response.status_code and body["detail"] == body["message"]
        return body["code"], body["message"]
    status = Status.FromString(response.content)
    return status.code, status.message


def request_of(spans):
    """The SDK spans as an ``ExportTraceServiceRequest`` message, to alter before sending."""
    return encode_spans(spans)


def without_attributes(request, *prefixes: str):
    """``request`` with every span attribute whose key starts with one of ``prefixes`` removed."""
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                kept = [a for a in span.attributes if not a.key.startswith(prefixes)]
                del span.attributes[:]
                span.attributes.extend(kept)
    return request


def spans_of(request) -> list:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def encoded(request, content_type: str) -> bytes:
    """``request`` in an OTLP/HTTP encoding: the protobuf message, or OTLP/JSON (the proto3
    JSON mapping, with trace and span ids as hex rather than base64)."""
    if content_type == PROTOBUF:
        return request.SerializeToString()
    body = MessageToDict(request)
    for resource_spans in body.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(body).encode()
