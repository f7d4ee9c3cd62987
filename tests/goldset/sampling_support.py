"""Traces for the sampling-rule tests: the OpenInference pipeline of
``tests/goldset/rules/traces_support.py`` run with the real OpenTelemetry SDK, with extra
attributes on its root span (``goldset.*`` facts, feedback, evaluations), and a feedback span sent
later in the same trace (parented to the root as a remote span, as a separate process sends it)."""

from opentelemetry import trace as otel
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from goldset.services.traces import map_pending_traces, receive_spans
from goldset.traces.decode import decode_export_request
from tests.goldset.otlp_support import PROTOBUF, protobuf_body
from tests.goldset.rules.traces_support import QUESTION, provider, run_openinference


def pipeline(question: str = QUESTION, **root_attributes):
    """The finished spans of one pipeline run whose root carries ``root_attributes``."""
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("sampling-test")
    with tracer.start_as_current_span("app") as outer:
        # the pipeline's root is "rag"; "app" wraps it so the attributes sit on the root
        for key, value in root_attributes.items():
            outer.set_attribute(key, value)
        outer.set_attribute("openinference.span.kind", "CHAIN")
        outer.set_attribute("input.value", question)
        run = run_openinference(tracer, question=question)
        outer.set_attribute("output.value", run.answer)
    tracer_provider.shutdown()
    return list(exporter.get_finished_spans())


def root_of(spans):
    return next(s for s in spans if s.parent is None)


def later_feedback(spans, **attributes):
    """A span sent after the trace, by another process, saying something about it."""
    root = root_of(spans)
    tracer_provider, exporter = provider()
    parent = SpanContext(
        trace_id=root.context.trace_id,
        span_id=root.context.span_id,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    context = otel.set_span_in_context(NonRecordingSpan(parent))
    tracer = tracer_provider.get_tracer("feedback")
    with tracer.start_as_current_span("user feedback", context=context, attributes=attributes):
        pass
    tracer_provider.shutdown()
    return list(exporter.get_finished_spans())


def trace_id_of(spans) -> str:
    return f"{root_of(spans).context.trace_id:032x}"


def send(project, *traces) -> dict:
    """Receive the spans of ``traces`` (one request) and map them; the mapping's counts."""
    spans = [span for spans in traces for span in spans]
    receive_spans(
        project=project, decoded=decode_export_request(protobuf_body(spans), content_type=PROTOBUF)
    )
    return map_pending_traces(project_id=project.pk)
