"""A small RAG pipeline instrumented with the real OpenTelemetry SDK, in the two conventions the
traces mapping reads (OpenTelemetry GenAI and OpenInference), and the real OTLP encoders.

The pipeline really retrieves (word overlap over a three-document corpus), reranks and answers,
so the tests compare the mapped record with what the pipeline computed, not with literals."""

import json
import re
from dataclasses import dataclass

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans as encode_json
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as encode_protobuf
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

SERVICE = {"service.name": "policy-bot", "service.version": "2.3.1"}
CORPUS = {
    "AC-2": "Account management: the organization manages system accounts and reviews them.",
    "AU-6": "Audit record review: the organization reviews audit records for unusual activity.",
    "IA-5": "Authenticator management: passwords and tokens are changed at defined intervals.",
}
QUESTION = "How are system accounts reviewed?"
CHAT_MODEL = "gpt-4o-mini-2024-07-18"
RERANK_MODEL = "bge-reranker-v2"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


@dataclass
class Run:
    """What the pipeline computed, to compare the mapped record with."""

    ranked: list[tuple[str, float]]  # (document id, score) in retrieval order
    reranked: list[tuple[str, float]]
    answer: str
    citations: list[str]
    input_tokens: int
    output_tokens: int
    cost: float


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def retrieve(question: str, corpus: dict[str, str] = CORPUS) -> list[tuple[str, float]]:
    q = words(question)
    scored = [(doc_id, len(q & words(text)) / len(q)) for doc_id, text in corpus.items()]
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def rerank(question: str, ranked: list[tuple[str, float]], top: int = 2) -> list[tuple[str, float]]:
    q = words(question)
    rescored = [
        (doc_id, round(len(q & words(CORPUS[doc_id])) / len(words(CORPUS[doc_id])), 6))
        for doc_id, _ in ranked
    ]
    return sorted(rescored, key=lambda item: (-item[1], item[0]))[:top]


def generate(
    question: str, context: list[str], corpus: dict[str, str] = CORPUS
) -> tuple[str, int, int]:
    """The answer (the first passage's statement), prompt tokens and completion tokens."""
    answer = f"{corpus[context[0]].split(':', 1)[-1].strip()} (see {context[0]})"
    prompt_tokens = len(question.split()) + sum(len(corpus[c].split()) for c in context)
    return answer, prompt_tokens, len(answer.split())


def provider(
    resource: dict | None = None, *, max_attributes: int | None = None
) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A tracer provider whose finished spans land in the returned in-memory exporter.
    `max_attributes` raises the SDK's 128-attribute limit (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT)."""
    exporter = InMemorySpanExporter()
    limits = SpanLimits(max_span_attributes=max_attributes) if max_attributes else None
    tracer_provider = TracerProvider(
        resource=Resource.create(resource or SERVICE), span_limits=limits
    )
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider, exporter


def run_genai(tracer, question: str = QUESTION, corpus: dict[str, str] = CORPUS) -> Run:
    """invoke_agent → retrieval → chat, attributes per the OpenTelemetry GenAI conventions."""
    user = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    with tracer.start_as_current_span(
        "invoke_agent policy-bot",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "policy-bot",
            "gen_ai.input.messages": json.dumps(user),
        },
    ) as root:
        with tracer.start_as_current_span(
            "retrieval controls", attributes={"gen_ai.operation.name": "retrieval"}
        ) as span:
            ranked = retrieve(question, corpus)
            documents = [{"id": d, "score": s, "content": corpus[d]} for d, s in ranked]
            span.set_attribute("gen_ai.data_source.id", "controls")
            span.set_attribute("gen_ai.retrieval.query.text", question)
            span.set_attribute("gen_ai.retrieval.documents", json.dumps(documents))
        with tracer.start_as_current_span(
            f"chat {CHAT_MODEL}",
            attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"},
        ) as span:
            context = [ranked[0][0]]
            answer, tokens_in, tokens_out = generate(question, context, corpus)
            output = [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": answer}],
                    "finish_reason": "stop",
                }
            ]
            span.set_attribute("gen_ai.input.messages", json.dumps(user))
            span.set_attribute("gen_ai.output.messages", json.dumps(output))
            span.set_attribute("gen_ai.response.model", CHAT_MODEL)
            span.set_attribute("gen_ai.usage.input_tokens", tokens_in)
            span.set_attribute("gen_ai.usage.output_tokens", tokens_out)
        root.set_attribute("gen_ai.output.messages", json.dumps(output))
    return Run(ranked, [], answer, [], tokens_in, tokens_out, 0.0)


def run_openinference(tracer, question: str = QUESTION) -> Run:
    """CHAIN → RETRIEVER → RERANKER → LLM, attributes per OpenInference (Phoenix/Arize)."""
    with tracer.start_as_current_span(
        "rag",
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": question,
            "input.mime_type": "text/plain",
        },
    ) as root:
        with tracer.start_as_current_span(
            "retrieve", attributes={"openinference.span.kind": "RETRIEVER", "input.value": question}
        ) as span:
            ranked = retrieve(question)
            for n, (doc_id, score) in enumerate(ranked):
                span.set_attribute(f"retrieval.documents.{n}.document.id", doc_id)
                span.set_attribute(f"retrieval.documents.{n}.document.score", score)
                span.set_attribute(f"retrieval.documents.{n}.document.content", CORPUS[doc_id])
        with tracer.start_as_current_span(
            "rerank",
            attributes={"openinference.span.kind": "RERANKER", "reranker.model_name": RERANK_MODEL},
        ) as span:
            reranked = rerank(question, ranked)
            span.set_attribute("reranker.query", question)
            for n, (doc_id, _score) in enumerate(ranked):
                span.set_attribute(f"reranker.input_documents.{n}.document.id", doc_id)
            for n, (doc_id, score) in enumerate(reranked):
                span.set_attribute(f"reranker.output_documents.{n}.document.id", doc_id)
                span.set_attribute(f"reranker.output_documents.{n}.document.score", score)
                span.set_attribute(
                    f"reranker.output_documents.{n}.document.content", CORPUS[doc_id]
                )
        with tracer.start_as_current_span(
            "llm", attributes={"openinference.span.kind": "LLM"}
        ) as span:
            context = [doc_id for doc_id, _ in reranked]
            answer, tokens_in, tokens_out = generate(question, context)
            cost = round(tokens_in * 0.15e-6 + tokens_out * 0.6e-6, 12)
            span.set_attribute("llm.model_name", CHAT_MODEL)
            span.set_attribute("llm.input_messages.0.message.role", "system")
            span.set_attribute("llm.input_messages.0.message.content", "Answer from the context.")
            span.set_attribute("llm.input_messages.1.message.role", "user")
            span.set_attribute("llm.input_messages.1.message.content", question)
            span.set_attribute("llm.output_messages.0.message.role", "assistant")
            span.set_attribute("llm.output_messages.0.message.content", answer)
            span.set_attribute("llm.token_count.prompt", tokens_in)
            span.set_attribute("llm.token_count.completion", tokens_out)
            span.set_attribute("llm.token_count.total", tokens_in + tokens_out)
            span.set_attribute("llm.cost.total", cost)
        root.set_attribute("output.value", json.dumps({"answer": answer, "citations": context}))
        root.set_attribute("output.mime_type", "application/json")
    return Run(ranked, reranked, answer, context, tokens_in, tokens_out, cost)


def protobuf_body(spans) -> bytes:
    return encode_protobuf(spans).SerializeToString()


def json_body(spans) -> bytes:
    return encode_json(spans).to_json().encode("utf-8")


BODIES = {PROTOBUF: protobuf_body, JSON: json_body}
