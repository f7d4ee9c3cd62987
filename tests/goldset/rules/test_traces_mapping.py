"""A trace from a real SDK-instrumented RAG pipeline, exported with the real OTLP encoders,
decodes and maps to the answer record the pipeline computed, in both conventions."""

import json

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from goldset.traces.decode import decode_export_request
from goldset.traces.mapping import (
    GENAI,
    MIXED,
    OPENINFERENCE,
    Passage,
    TraceIncomplete,
    TraceRecord,
    TraceRejected,
    detect_convention,
    group_by_trace,
    map_trace,
    split_by_corpus,
)
from tests.goldset.rules.traces_support import (
    BODIES,
    CHAT_MODEL,
    CORPUS,
    JSON,
    PROTOBUF,
    QUESTION,
    RERANK_MODEL,
    SERVICE,
    protobuf_body,
    provider,
    run_genai,
    run_openinference,
)


def decode(body: bytes, content_type: str = PROTOBUF):
    decoded = decode_export_request(body, content_type=content_type)
    assert decoded.rejections == []
    return decoded.spans


def only_trace(spans) -> TraceRecord:
    traces = group_by_trace(spans)
    assert len(traces) == 1
    record = map_trace(next(iter(traces.values())))
    assert isinstance(record, TraceRecord), record
    return record


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_genai_pipeline_maps_to_its_answer_record(content_type):
    tracer_provider, exporter = provider()
    run = run_genai(tracer_provider.get_tracer("policy-bot"))
    sdk_spans = exporter.get_finished_spans()
    root = next(s for s in sdk_spans if s.parent is None)

    record = only_trace(decode(BODIES[content_type](sdk_spans), content_type))

    assert record.trace_id == otel_trace.format_trace_id(root.context.trace_id)
    assert record.root_span_id == otel_trace.format_span_id(root.context.span_id)
    assert record.convention == GENAI
    assert record.question == QUESTION
    assert record.answer == run.answer
    assert [(p.rank, p.document_id, p.score, p.text) for p in record.passages] == [
        (rank, doc_id, score, CORPUS[doc_id]) for rank, (doc_id, score) in enumerate(run.ranked, 1)
    ]
    assert record.passages_dropped == 0
    assert record.citations == ()
    assert record.latency_ms == (root.end_time - root.start_time) / 1e6
    assert (record.input_tokens, record.output_tokens) == (run.input_tokens, run.output_tokens)
    assert record.cost is None
    assert record.model_ids == (CHAT_MODEL,)
    assert record.system.service_name == SERVICE["service.name"]
    assert record.system.service_version == SERVICE["service.version"]
    assert record.system.model == CHAT_MODEL
    raw_root = record.raw_attributes["spans"][record.root_span_id]
    assert raw_root["attributes"]["gen_ai.agent.name"] == "policy-bot"
    assert record.raw_attributes["resource"]["service.name"] == SERVICE["service.name"]


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_openinference_pipeline_maps_reranked_passages_citations_and_cost(content_type):
    tracer_provider, exporter = provider()
    run = run_openinference(tracer_provider.get_tracer("policy-bot"))
    sdk_spans = exporter.get_finished_spans()

    record = only_trace(decode(BODIES[content_type](sdk_spans), content_type))

    assert record.convention == OPENINFERENCE
    assert record.question == QUESTION
    assert record.answer == run.answer
    # The generator saw the reranker's output, so those are the passages, in its order.
    assert [(p.rank, p.document_id, p.score) for p in record.passages] == [
        (rank, doc_id, score) for rank, (doc_id, score) in enumerate(run.reranked, 1)
    ]
    assert [p.text for p in record.passages] == [CORPUS[d] for d, _ in run.reranked]
    assert record.citations == tuple(run.citations)
    assert record.cost == pytest.approx(run.cost)
    assert (record.input_tokens, record.output_tokens) == (run.input_tokens, run.output_tokens)
    assert record.model_ids == (RERANK_MODEL, CHAT_MODEL)
    assert record.system.model == CHAT_MODEL


def test_a_trace_mixing_both_conventions_is_mapped_and_says_so():
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span(
        "rag", attributes={"openinference.span.kind": "CHAIN", "input.value": QUESTION}
    ):
        run_genai(tracer)  # a GenAI-instrumented library called inside an OpenInference chain
    record = only_trace(decode(protobuf_body(exporter.get_finished_spans())))
    assert record.convention == MIXED
    assert record.question == QUESTION
    assert record.answer.endswith("(see AC-2)")  # the root has no output: the last LLM call's


def test_spans_arriving_in_several_requests_map_once_the_root_has_arrived():
    tracer_provider, exporter = provider()
    run = run_openinference(tracer_provider.get_tracer("policy-bot"))
    sdk_spans = exporter.get_finished_spans()
    children = [s for s in sdk_spans if s.parent is not None]
    root = [s for s in sdk_spans if s.parent is None]

    first = decode(protobuf_body(children[:2]))
    (partial,) = group_by_trace(first).values()
    outcome = map_trace(partial)
    assert isinstance(outcome, TraceIncomplete)
    assert outcome.reason == "no root span yet"

    # With the root, every span present has its parent: the trace maps (a sibling still in
    # flight cannot be known; the receiver waits for the trace to settle before mapping it).
    second = decode(protobuf_body(root))
    outcome = map_trace(group_by_trace(first + second)[partial[0].trace_id])
    assert isinstance(outcome, TraceRecord)
    assert outcome.input_tokens is None  # the LLM span has not arrived
    third = decode(protobuf_body(children[2:]))
    # A resent first batch (an exporter retry) changes nothing.
    record = map_trace(first + second + third + first)
    assert isinstance(record, TraceRecord)
    assert record.answer == run.answer
    assert len(record.passages) == len(run.reranked)


def test_a_span_whose_parent_has_not_arrived_keeps_the_trace_incomplete():
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span(
        "rag", attributes={"input.value": QUESTION, "output.value": "x"}
    ):
        with tracer.start_as_current_span("step"):
            with tracer.start_as_current_span("leaf"):
                pass
    spans = decode(protobuf_body(exporter.get_finished_spans()))
    without_middle = [s for s in spans if s.name != "step"]
    outcome = map_trace(without_middle)
    assert isinstance(outcome, TraceIncomplete)
    assert "1 spans wait for parent spans" in outcome.reason
    assert isinstance(map_trace(spans), TraceRecord)


def test_a_root_with_a_remote_parent_is_the_root():
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    upstream = SpanContext(
        trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736,
        span_id=0x00F067AA0BA902B7,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    with tracer.start_as_current_span(
        "rag",
        context=otel_trace.set_span_in_context(NonRecordingSpan(upstream)),
        attributes={"input.value": QUESTION, "output.value": "Reviewed monthly."},
    ):
        pass
    (span,) = decode(protobuf_body(exporter.get_finished_spans()))
    assert span.parent_span_id == "00f067aa0ba902b7" and span.parent_is_remote
    record = map_trace([span])
    assert isinstance(record, TraceRecord)
    assert record.answer == "Reviewed monthly."


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_clock_skew_between_services_does_not_change_the_record(content_type):
    """The retriever runs on a host whose clock is five minutes behind: its span starts before
    the root and ends before the root starts. The record still maps, its latency the root's."""
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    skew = 5 * 60 * 10**9
    with tracer.start_as_current_span(
        "rag", attributes={"openinference.span.kind": "CHAIN", "input.value": QUESTION}
    ) as root:
        now = root.start_time
        retriever = tracer.start_span(
            "retrieve", attributes={"openinference.span.kind": "RETRIEVER"}, start_time=now - skew
        )
        retriever.set_attribute("retrieval.documents.0.document.id", "AC-2")
        retriever.set_attribute("retrieval.documents.0.document.score", 0.9)
        retriever.end(end_time=now - skew + 1_000_000)
        root.set_attribute("output.value", "They are reviewed.")
    sdk_root = next(s for s in exporter.get_finished_spans() if s.parent is None)

    record = only_trace(decode(BODIES[content_type](exporter.get_finished_spans()), content_type))

    assert record.latency_ms == (sdk_root.end_time - sdk_root.start_time) / 1e6
    assert record.latency_ms < 60_000
    assert [p.document_id for p in record.passages] == ["AC-2"]
    assert record.started_at_ns == sdk_root.start_time


def test_ten_thousand_retrieved_documents_keep_the_top_thousand_and_count_the_rest():
    corpus = {f"DOC-{n:05d}": f"system accounts note {n}" for n in range(10_000)}
    tracer_provider, exporter = provider()
    run = run_genai(tracer_provider.get_tracer("policy-bot"), corpus=corpus)
    body = protobuf_body(exporter.get_finished_spans())

    record = only_trace(decode(body))

    assert len(record.passages) == 1000
    assert record.passages_dropped == 9000
    assert [p.document_id for p in record.passages] == [d for d, _ in run.ranked[:1000]]
    assert [p.rank for p in record.passages] == list(range(1, 1001))


def test_ten_thousand_openinference_documents_leave_the_dropped_ones_out_of_raw_attributes():
    tracer_provider, exporter = provider(max_attributes=30_000)
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span(
        "rag", attributes={"input.value": QUESTION, "output.value": "Monthly."}
    ):
        with tracer.start_as_current_span(
            "retrieve", attributes={"openinference.span.kind": "RETRIEVER"}
        ) as span:
            for n in range(10_000):
                span.set_attribute(f"retrieval.documents.{n}.document.id", f"DOC-{n}")
                span.set_attribute(f"retrieval.documents.{n}.document.score", 1 - n / 10_000)
    record = only_trace(decode(protobuf_body(exporter.get_finished_spans())))
    assert [p.document_id for p in record.passages[:3]] == ["DOC-0", "DOC-1", "DOC-2"]
    assert record.passages[-1].document_id == "DOC-999"
    assert record.passages_dropped == 9000
    retriever = next(s for s in record.raw_attributes["spans"].values() if s["name"] == "retrieve")
    assert "retrieval.documents.999.document.id" in retriever["attributes"]
    assert "retrieval.documents.1000.document.id" not in retriever["attributes"]
    assert len(retriever["attributes"]) == 1 + 2 * 1000


def test_a_trace_without_a_question_is_rejected_naming_what_was_looked_for():
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span("rag", attributes={"output.value": "An answer to nothing."}):
        pass
    outcome = map_trace(decode(protobuf_body(exporter.get_finished_spans())))
    assert isinstance(outcome, TraceRejected)
    assert outcome.reason.startswith("no question")
    assert "input.value" in outcome.reason and "gen_ai.input.messages" in outcome.reason


def test_a_trace_without_an_answer_is_rejected():
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span("rag", attributes={"input.value": QUESTION}):
        pass
    outcome = map_trace(decode(protobuf_body(exporter.get_finished_spans())))
    assert isinstance(outcome, TraceRejected)
    assert outcome.reason.startswith("no answer") and "output.value" in outcome.reason


def test_two_roots_in_one_trace_are_rejected():
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span(
        "rag", attributes={"input.value": QUESTION, "output.value": "a"}
    ):
        pass
    (root,) = decode(protobuf_body(exporter.get_finished_spans()))
    second_root = type(root)(**{**root.__dict__, "span_id": "0123456789abcdef"})
    outcome = map_trace([root, second_root])
    assert isinstance(outcome, TraceRejected)
    assert outcome.reason.startswith("2 root spans")


def test_the_same_span_resent_with_different_content_rejects_the_trace():
    tracer_provider, exporter = provider()
    run_openinference(tracer_provider.get_tracer("policy-bot"))
    spans = decode(protobuf_body(exporter.get_finished_spans()))
    changed = type(spans[0])(**{**spans[0].__dict__, "name": "renamed"})
    outcome = map_trace([*spans, changed])
    assert isinstance(outcome, TraceRejected)
    assert f"span {spans[0].span_id} received twice with different content" == outcome.reason


def test_the_genai_events_of_older_instrumentations_give_question_and_answer():
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span("rag"):
        with tracer.start_as_current_span(
            "chat", attributes={"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o"}
        ) as span:
            span.add_event("gen_ai.user.message", {"content": QUESTION})
            span.add_event(
                "gen_ai.choice",
                {
                    "index": 0,
                    "gen_ai.event.content": json.dumps({"message": {"content": "Monthly."}}),
                },
            )
    record = only_trace(decode(protobuf_body(exporter.get_finished_spans())))
    assert (record.question, record.answer) == (QUESTION, "Monthly.")
    assert record.system.model == "gpt-4o"


def test_spans_group_by_trace_across_requests():
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    run_genai(tracer)
    run_openinference(tracer)
    spans = decode(protobuf_body(exporter.get_finished_spans()))
    traces = group_by_trace(spans)
    assert len(traces) == 2
    conventions = sorted(map_trace(t).convention for t in traces.values())
    assert conventions == [GENAI, OPENINFERENCE]
    assert {detect_convention(s) for s in spans} == {GENAI, OPENINFERENCE}


def test_unknown_documents_are_kept_unmatched_with_their_text():
    passages = [
        Passage(1, "AC-2", 0.9, "Account management", "a" * 16),
        Passage(2, "vendor-kb-17", 0.5, "A page outside the corpus", "a" * 16),
        Passage(3, None, None, "A passage without an id", "a" * 16),
    ]
    matched, unmatched = split_by_corpus(passages, set(CORPUS))
    assert [p.document_id for p in matched] == ["AC-2"]
    assert [p.text for p in unmatched] == ["A page outside the corpus", "A passage without an id"]


def test_a_blank_root_output_falls_back_to_the_llm_answer_and_blank_everywhere_is_rejected():
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span(
        "rag", attributes={"input.value": QUESTION, "output.value": " "}
    ):
        with tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "Monthly.",
            },
        ):
            pass
    spans = decode(protobuf_body(exporter.get_finished_spans()))
    assert map_trace(spans).answer == "Monthly."
    blank = [
        type(s)(
            **{
                **s.__dict__,
                "attributes": {**s.attributes, "llm.output_messages.0.message.content": ""},
            }
        )
        for s in spans
    ]
    outcome = map_trace(blank)
    assert isinstance(outcome, TraceRejected) and outcome.reason.startswith("no answer")


def test_a_resent_span_with_a_nan_attribute_is_the_same_span():
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span(
        "rag",
        attributes={"input.value": QUESTION, "output.value": "Monthly.", "score": float("nan")},
    ):
        pass
    body = protobuf_body(exporter.get_finished_spans())
    first, again = decode(body), decode(body)
    assert first[0] != again[0]  # NaN != NaN, yet it is the same span
    assert isinstance(map_trace(first + again), TraceRecord)
    assert (
        len(
            decode_export_request(
                protobuf_body(exporter.get_finished_spans() * 2), content_type=PROTOBUF
            ).spans
        )
        == 1
    )
