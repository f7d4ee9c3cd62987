"""Builders shared by the OTLP receiver tests: the receiver's URL in a project, a write token,
the spans of the instrumented RAG pipeline of ``tests/goldset/rules/traces_support.py`` (real
OpenTelemetry SDK, both conventions), and readers of the receiver's answers (the real
``ExportTraceServiceResponse`` and ``google.rpc.Status`` messages)."""

from google.rpc.status_pb2 import Status
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
