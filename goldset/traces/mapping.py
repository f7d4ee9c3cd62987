"""Map the spans of one trace to an answer record (`TraceRecord`).

Two conventions are read, detected per span (`detect_convention`): OpenInference (a span with
`openinference.span.kind`) and the OpenTelemetry GenAI semantic conventions (a span with a
`gen_ai.*` attribute or event). A trace may mix them.

Span roles:

| role | OpenInference | GenAI |
|---|---|---|
| root | the span without a parent (or whose parent is remote: `flags` bit 9) | same |
| LLM call | `openinference.span.kind = LLM` | `gen_ai.operation.name` in chat, text_completion, generate_content (or no operation name and a `gen_ai.request.model` / `gen_ai.response.model`) |
| retriever | `openinference.span.kind = RETRIEVER` | `gen_ai.operation.name = retrieval` |
| reranker | `openinference.span.kind = RERANKER` | — |

Record fields:

| field | taken from |
|---|---|
| question | the root's input: `input.value` (OpenInference), else the last user message of `gen_ai.input.messages`, `llm.input_messages.N.message.*`, `gen_ai.prompt.N.*`, `gen_ai.prompt` or a `gen_ai.user.message` event; if the root has none, the same on the first LLM call. When the input is a JSON object, its `question`, `query` or `input` string |
| answer | the root's output: `output.value`, else the last assistant message of `gen_ai.output.messages`, `llm.output_messages.N.message.*`, `gen_ai.completion.N.*`, `gen_ai.completion` or a `gen_ai.choice` event; if the root has none, the same on the last LLM call to end. When the output is a JSON object, its `answer`, `output`, `text` or `content` string |
| citations | the `citations` list of a JSON-object output (document ids, or objects with `id` / `document_id`) |
| passages | the last reranker's `reranker.output_documents.N.document.{id,score,content}` if there is a reranker, else every retriever's `retrieval.documents.N.document.{id,score,content}` (OpenInference) or `gen_ai.retrieval.documents` (GenAI: a JSON list of `{id, score, content}`), retrievers in start-time order, documents in index order; ranks 1…n in that order |
| latency_ms | the root span's end minus start (one clock: skew between services does not enter) |
| input_tokens, output_tokens | summed over LLM calls: `gen_ai.usage.input_tokens` (or `prompt_tokens`) / `llm.token_count.prompt`, `gen_ai.usage.output_tokens` (or `completion_tokens`) / `llm.token_count.completion`; None when no call reports them |
| cost | summed over LLM calls: `llm.cost.total`, else `gen_ai.usage.cost`; the root's own value when no LLM call has one; None when absent |
| model_ids | every `gen_ai.response.model` (else `gen_ai.request.model`), `llm.model_name`, `embedding.model_name`, `reranker.model_name`, first seen first |
| system | `service.name`, `service.version` of the root's resource, and the model of the LLM call that answered (kept for admins only) |
| raw_attributes | every span's name, kind, attributes and events by span id, and the root's resource (kept for admins only) |

Outcomes of `map_trace`:

Feedback and evaluation spans (`is_annotation_span`) are left out of the roles: they feed the
sampling rules (`goldset.traces.signals`), so a thumbs-down sent later as a span of its own
neither adds a root nor waits for a parent.

- `TraceIncomplete`: no root span yet, or spans whose parent has not arrived (a trace's spans may
  come in several requests; map it again when more arrive). Nothing is mapped.
- `TraceRejected`: two root spans, one span id received twice with different content, or no
  question or no answer found (the reason names the attributes looked for).
- `TraceRecord` otherwise.

Bounds: at most `max_passages` (default `DEFAULT_MAX_PASSAGES` = 1,000) passages are kept, the
first by rank; `passages_dropped` counts the rest, whose per-document attributes are also left out
of `raw_attributes` (a trace with 10,000 retrieved documents maps to its top 1,000).
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

from goldset.traces.decode import Span, same_span

DEFAULT_MAX_PASSAGES = 1000

OPENINFERENCE = "openinference"
GENAI = "genai"
NONE = "none"
MIXED = "mixed"

_LLM_OPERATIONS = {"chat", "text_completion", "generate_content"}
_DOCUMENT_KEY = re.compile(
    r"^(retrieval\.documents|reranker\.output_documents|reranker\.input_documents)"
    r"\.(\d+)\.document\.(id|score|content)$"
)
_INDEXED_MESSAGE = re.compile(
    r"^(llm\.input_messages|llm\.output_messages)\.(\d+)\.message\.(role|content)$"
    r"|^(gen_ai\.prompt|gen_ai\.completion)\.(\d+)\.(role|content)$"
)


@dataclass(frozen=True)
class Passage:
    rank: int
    document_id: str | None
    score: float | None
    text: str
    span_id: str


@dataclass(frozen=True)
class SystemIdentity:
    service_name: str
    service_version: str
    model: str


@dataclass(frozen=True)
class TraceRecord:
    trace_id: str
    root_span_id: str
    convention: str  # openinference, genai, mixed or none
    question: str
    answer: str
    passages: tuple[Passage, ...]
    passages_dropped: int
    citations: tuple[str, ...]
    latency_ms: float
    cost: float | None
    input_tokens: int | None
    output_tokens: int | None
    model_ids: tuple[str, ...]
    system: SystemIdentity
    started_at_ns: int
    raw_attributes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TraceIncomplete:
    trace_id: str
    reason: str
    span_count: int


@dataclass(frozen=True)
class TraceRejected:
    trace_id: str
    reason: str
    span_count: int


def group_by_trace(spans: Iterable[Span]) -> dict[str, list[Span]]:
    """Spans (from one request or several) by trace id, in the order received."""
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    return traces


def detect_convention(span: Span) -> str:
    if "openinference.span.kind" in span.attributes:
        return OPENINFERENCE
    if any(key.startswith("gen_ai.") for key in span.attributes) or any(
        event.name.startswith("gen_ai.") for event in span.events
    ):
        return GENAI
    return NONE


def map_trace(
    spans: Iterable[Span], *, max_passages: int = DEFAULT_MAX_PASSAGES
) -> TraceRecord | TraceIncomplete | TraceRejected:
    """Map the spans of ONE trace (all sharing a trace id) to its answer record."""
    spans = list(spans)
    if not spans:
        raise ValueError("map_trace needs at least one span")
    trace_id = spans[0].trace_id
    if any(span.trace_id != trace_id for span in spans):
        raise ValueError("map_trace takes the spans of one trace; use group_by_trace first")

    by_id: dict[str, Span] = {}
    for span in spans:
        if span.span_id in by_id and not same_span(by_id[span.span_id], span):
            return TraceRejected(
                trace_id, f"span {span.span_id} received twice with different content", len(spans)
            )
        by_id[span.span_id] = span
    count = len(by_id)
    # Feedback and evaluation spans (a thumbs-down or a judge's verdict, often sent later and
    # parented to a span of another process) are read by the sampling rules, not mapped.
    unique = sorted(
        (s for s in by_id.values() if not is_annotation_span(s)),
        key=lambda s: (s.start_ns, s.span_id),
    )
    if not unique:
        return TraceIncomplete(trace_id, "only feedback or evaluation spans so far", count)

    roots = [s for s in unique if not s.parent_span_id or s.parent_is_remote]
    if len(roots) > 1:
        ids = ", ".join(s.span_id for s in roots)
        return TraceRejected(trace_id, f"{len(roots)} root spans ({ids})", count)
    waiting = [s for s in unique if s not in roots and s.parent_span_id not in by_id]
    if not roots:
        return TraceIncomplete(trace_id, "no root span yet", count)
    if waiting:
        missing = sorted({s.parent_span_id for s in waiting})
        return TraceIncomplete(
            trace_id,
            f"{len(waiting)} spans wait for parent spans not received yet ({', '.join(missing[:5])})",
            count,
        )
    root = roots[0]

    llm_calls = [s for s in unique if _is_llm(s)]
    question = _input_text(root)
    if question is None and llm_calls:
        question = _input_text(llm_calls[0])
    if question is None:
        return TraceRejected(
            trace_id,
            "no question: the root span has no input.value, gen_ai.input.messages, "
            "gen_ai.prompt or user message, and no LLM call has one",
            count,
        )
    answer_source, output = root, _output(root)
    if output is None:
        for call in sorted(llm_calls, key=lambda s: (s.end_ns, s.span_id), reverse=True):
            output = _output(call)
            if output is not None:
                answer_source = call
                break
    if output is None:
        return TraceRejected(
            trace_id,
            "no answer: the root span has no output.value, gen_ai.output.messages, "
            "gen_ai.completion or assistant message, and no LLM call has one",
            count,
        )
    answer, citations = output

    passages, total_documents = _passages(unique, max_passages)
    conventions = {detect_convention(s) for s in unique} - {NONE}
    model_ids = _unique(m for s in unique for m in _models(s))
    answering_call = answer_source if _is_llm(answer_source) else None
    if answering_call is None and llm_calls:
        answering_call = max(llm_calls, key=lambda s: (s.end_ns, s.span_id))
    answer_model = (_models(answering_call) or [""])[0] if answering_call else ""

    input_tokens = _sum(
        _first_int(
            s, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"
        )
        for s in llm_calls
    )
    output_tokens = _sum(
        _first_int(
            s,
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
        )
        for s in llm_calls
    )
    cost = _sum(_first_number(s, "llm.cost.total", "gen_ai.usage.cost") for s in llm_calls)
    if cost is None:
        cost = _first_number(root, "llm.cost.total", "gen_ai.usage.cost")

    return TraceRecord(
        trace_id=trace_id,
        root_span_id=root.span_id,
        convention=(conventions.pop() if len(conventions) == 1 else MIXED if conventions else NONE),
        question=question,
        answer=answer,
        passages=tuple(passages),
        passages_dropped=total_documents - len(passages),
        citations=tuple(citations),
        latency_ms=(root.end_ns - root.start_ns) / 1_000_000,
        cost=cost,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model_ids=tuple(model_ids),
        system=SystemIdentity(
            service_name=str(root.resource.get("service.name", "")),
            service_version=str(root.resource.get("service.version", "")),
            model=answer_model,
        ),
        started_at_ns=root.start_ns,
        raw_attributes=_raw(unique, root, max_passages),
    )


def split_by_corpus(
    passages: Iterable[Passage], known_document_ids: Container[str]
) -> tuple[list[Passage], list[Passage]]:
    """(matched, unmatched): a passage matches when its document id is in the corpus; the
    unmatched keep their text, to be stored as unmatched passages."""
    matched, unmatched = [], []
    for passage in passages:
        hit = passage.document_id is not None and passage.document_id in known_document_ids
        (matched if hit else unmatched).append(passage)
    return matched, unmatched


# ---------------------------------------------------------------------------------------------
# Roles

# Attributes that make a span a feedback or evaluation span when it carries no input, output or
# pipeline role of its own (see goldset.traces.signals).
ANNOTATION_KEYS = ("goldset.feedback", "user.feedback", "gen_ai.evaluation.name")
EVALUATION_EVENT = "gen_ai.evaluation.result"


def is_annotation_span(span: Span) -> bool:
    """A span that only says something about the trace: user feedback or a judge's evaluation
    (``goldset.feedback`` / ``user.feedback`` / ``gen_ai.evaluation.*`` attributes, or only
    ``gen_ai.evaluation.result`` events), with no input, output or LLM/retriever/reranker role."""
    marked = any(key in span.attributes for key in ANNOTATION_KEYS) or (
        bool(span.events) and all(e.name == EVALUATION_EVENT for e in span.events)
    )
    if not marked or _is_llm(span) or _is_retriever(span) or _is_reranker(span):
        return False
    return _first_input(span) is None and _first_output(span) is None


def _oi_kind(span: Span) -> str:
    return str(span.attributes.get("openinference.span.kind", "")).upper()


def _is_llm(span: Span) -> bool:
    if _oi_kind(span):
        return _oi_kind(span) == "LLM"
    operation = span.attributes.get("gen_ai.operation.name")
    if operation is not None:
        return operation in _LLM_OPERATIONS
    return "gen_ai.request.model" in span.attributes or "gen_ai.response.model" in span.attributes


def _is_retriever(span: Span) -> bool:
    return (
        _oi_kind(span) == "RETRIEVER" or span.attributes.get("gen_ai.operation.name") == "retrieval"
    )


def _is_reranker(span: Span) -> bool:
    return _oi_kind(span) == "RERANKER"


# ---------------------------------------------------------------------------------------------
# Question and answer


def _input_text(span: Span) -> str | None:
    """The span's question; a blank one counts as none."""
    text = _first_input(span)
    return text if text is not None and text.strip() else None


def _output(span: Span) -> tuple[str, list[str]] | None:
    """(answer text, citations) of a span, or None when it carries no output or a blank one."""
    output = _first_output(span)
    return output if output is not None and output[0].strip() else None


def _first_input(span: Span) -> str | None:
    attributes = span.attributes
    if isinstance(attributes.get("input.value"), str):
        return _unwrap(attributes["input.value"], ("question", "query", "input"))[0]
    for text in (
        _last_message(_json_list(attributes.get("gen_ai.input.messages")), "user"),
        _last_message(_indexed_messages(attributes, "llm.input_messages"), "user"),
        _last_message(_indexed_messages(attributes, "gen_ai.prompt"), "user"),
    ):
        if text is not None:
            return text
    if isinstance(attributes.get("gen_ai.prompt"), str):
        return attributes["gen_ai.prompt"]
    for event in reversed(span.events):
        if event.name == "gen_ai.user.message":
            text = _event_content(event.attributes)
            if text is not None:
                return text
        if event.name == "gen_ai.client.inference.operation.details":
            text = _last_message(_json_list(event.attributes.get("gen_ai.input.messages")), "user")
            if text is not None:
                return text
    return None


def _first_output(span: Span) -> tuple[str, list[str]] | None:
    attributes = span.attributes
    if isinstance(attributes.get("output.value"), str):
        return _unwrap(attributes["output.value"], ("answer", "output", "text", "content"))
    for text in (
        _last_message(_json_list(attributes.get("gen_ai.output.messages")), "assistant"),
        _last_message(_indexed_messages(attributes, "llm.output_messages"), "assistant"),
        _last_message(_indexed_messages(attributes, "gen_ai.completion"), "assistant"),
    ):
        if text is not None:
            return _unwrap(text, ("answer", "output", "text", "content"))
    if isinstance(attributes.get("gen_ai.completion"), str):
        return _unwrap(attributes["gen_ai.completion"], ("answer", "output", "text", "content"))
    for event in reversed(span.events):
        if event.name == "gen_ai.choice":
            message = event.attributes.get("message")
            text = _message_text(message) if isinstance(message, dict) else None
            if text is None:
                text = _event_content(event.attributes)
            if text is not None:
                return _unwrap(text, ("answer", "output", "text", "content"))
        if event.name == "gen_ai.client.inference.operation.details":
            messages = _json_list(event.attributes.get("gen_ai.output.messages"))
            text = _last_message(messages, "assistant")
            if text is not None:
                return _unwrap(text, ("answer", "output", "text", "content"))
    return None


def _unwrap(value: str, keys: tuple[str, ...]) -> tuple[str, list[str]]:
    """A JSON-object value gives its first string under `keys` and its `citations`; any other
    value is the text itself."""
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return value, []
    if not isinstance(parsed, dict):
        return value, []
    text = next((parsed[k] for k in keys if isinstance(parsed.get(k), str)), value)
    return text, _citations(parsed.get("citations"))


def _citations(value) -> list[str]:
    if not isinstance(value, list):
        return []
    ids = []
    for item in value:
        if isinstance(item, dict):
            item = item.get("id", item.get("document_id"))
        if isinstance(item, str | int) and not isinstance(item, bool):
            ids.append(str(item))
    return _unique(ids)


def _json_list(value) -> list:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return []
    return value if isinstance(value, list) else []


def _indexed_messages(attributes: dict, prefix: str) -> list[dict]:
    messages: dict[int, dict] = {}
    for key, value in attributes.items():
        match = _INDEXED_MESSAGE.match(key)
        if match is None or (match.group(1) or match.group(4)) != prefix:
            continue
        index = int(match.group(2) or match.group(5))
        messages.setdefault(index, {})[match.group(3) or match.group(6)] = value
    return [messages[i] for i in sorted(messages)]


def _last_message(messages: list, role: str) -> str | None:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role", role) == role:
            text = _message_text(message)
            if text is not None:
                return text
    return None


def _message_text(message: dict) -> str | None:
    if isinstance(message.get("content"), str):
        return message["content"]
    parts = message.get("parts")
    if isinstance(parts, list):
        texts = [
            p["content"]
            for p in parts
            if isinstance(p, dict)
            and p.get("type", "text") == "text"
            and isinstance(p.get("content"), str)
        ]
        if texts:
            return "\n".join(texts)
    return None


def _event_content(attributes: dict) -> str | None:
    if isinstance(attributes.get("content"), str):
        return attributes["content"]
    body = attributes.get("gen_ai.event.content")
    if isinstance(body, str):
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return body
        if isinstance(parsed, dict):
            message = parsed.get("message", parsed)
            return _message_text(message) if isinstance(message, dict) else None
    return None


# ---------------------------------------------------------------------------------------------
# Passages


def _passages(spans: list[Span], limit: int) -> tuple[list[Passage], int]:
    rerankers = [s for s in spans if _is_reranker(s)]
    if rerankers:
        documents = _documents(rerankers[-1], "reranker.output_documents")
    else:
        documents = [d for s in spans if _is_retriever(s) for d in _retriever_documents(s)]
    kept = [
        Passage(rank=rank, document_id=doc_id, score=score, text=text, span_id=span_id)
        for rank, (doc_id, score, text, span_id) in enumerate(documents[:limit], start=1)
    ]
    return kept, len(documents)


def document_count(span: Span) -> int:
    """How many documents a retriever or reranker span returned (0 for any other span)."""
    if _is_reranker(span):
        return len(_documents(span, "reranker.output_documents"))
    if _is_retriever(span):
        return len(_retriever_documents(span))
    return 0


def _retriever_documents(span: Span) -> list[tuple]:
    documents = _documents(span, "retrieval.documents")
    if documents:
        return documents
    result = []
    for item in _json_list(span.attributes.get("gen_ai.retrieval.documents")):
        if isinstance(item, dict):
            text = item.get("content", item.get("text", ""))
            result.append(
                (_doc_id(item.get("id")), _score(item.get("score")), _str(text), span.span_id)
            )
    return result


def _documents(span: Span, prefix: str) -> list[tuple]:
    fields: dict[int, dict] = {}
    for key, value in span.attributes.items():
        match = _DOCUMENT_KEY.match(key)
        if match is not None and match.group(1) == prefix:
            fields.setdefault(int(match.group(2)), {})[match.group(3)] = value
    return [
        (_doc_id(d.get("id")), _score(d.get("score")), _str(d.get("content", "")), span.span_id)
        for _, d in sorted(fields.items())
    ]


def _doc_id(value) -> str | None:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _score(value) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _str(value) -> str:
    return value if isinstance(value, str) else ""


# ---------------------------------------------------------------------------------------------
# Numbers, models, raw attributes


def _models(span: Span) -> list[str]:
    a = span.attributes
    genai = a.get("gen_ai.response.model") or a.get("gen_ai.request.model")
    names = [
        genai,
        a.get("llm.model_name"),
        a.get("embedding.model_name"),
        a.get("reranker.model_name"),
    ]
    return [n for n in names if isinstance(n, str) and n]


def _first_int(span: Span, *keys: str) -> int | None:
    for key in keys:
        value = span.attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _first_number(span: Span, *keys: str) -> float | None:
    for key in keys:
        value = _score(span.attributes.get(key))
        if value is not None:
            return value
    return None


def _sum(values: Iterable):
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _raw(spans: list[Span], root: Span, limit: int) -> dict:
    def keep(key: str) -> bool:
        match = _DOCUMENT_KEY.match(key)
        return match is None or int(match.group(2)) < limit

    return {
        "resource": root.resource,
        "spans": {
            s.span_id: {
                "name": s.name,
                "kind": s.kind,
                "parent_span_id": s.parent_span_id,
                "attributes": {k: v for k, v in s.attributes.items() if keep(k)},
                "events": [{"name": e.name, "attributes": e.attributes} for e in s.events],
            }
            for s in spans
        },
    }
