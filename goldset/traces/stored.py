"""How a received span is stored and read back, and what a mapped trace's answer record is
filed under (pure: no database).

- `span_payload(span)` is the span's JSON text (what `ReceivedSpan.payload` holds) and
  `span_from_payload(...)` reads it back as the same `Span`: JSON text, not jsonb, keeps NaN and
  ±Infinity attribute values as they were sent.
- `question_id_for(text)`: a question nobody named is filed under the hash of its normalised
  text (case folded, white space collapsed), so the same question asked again in production is
  one question.
- `system_id_for(system)`: the system a trace's record belongs to is its service, service
  version and answering model (admins only, as every system).
- `trace_facts(record)`: what the application may say about a trace for the workbench in
  `goldset.*` attributes of its root span (or of its resource): the question id, domain, task
  type, task family and an uncertainty for routing. A malformed one rejects the trace
  (`FactsProblem`, naming the attribute).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

from goldset.traces.decode import Scope, Span, SpanEvent
from goldset.traces.mapping import SystemIdentity, TraceRecord

SYSTEM_ID_LENGTH = 200
QUESTION_ID_PREFIX = "otlp-"

QUESTION_ID = "goldset.question_id"
DOMAIN = "goldset.domain"
TASK_TYPE = "goldset.task_type"
TASK_FAMILY = "goldset.task_family"
UNCERTAINTY = "goldset.uncertainty"
DEFAULT_TASK_FAMILY = "production"


def span_payload(span: Span) -> str:
    return json.dumps(
        {
            "name": span.name,
            "kind": span.kind,
            "start_ns": span.start_ns,
            "end_ns": span.end_ns,
            "attributes": span.attributes,
            "events": [[e.name, e.time_ns, e.attributes] for e in span.events],
            "resource": span.resource,
            "scope": [span.scope.name, span.scope.version],
            "status": span.status,
            "parent_is_remote": span.parent_is_remote,
        },
        separators=(",", ":"),
    )


def span_from_payload(*, trace_id: str, span_id: str, parent_span_id: str, payload: str) -> Span:
    data = json.loads(payload)
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_span_id,
        name=data["name"],
        kind=data["kind"],
        start_ns=data["start_ns"],
        end_ns=data["end_ns"],
        attributes=data["attributes"],
        events=tuple(SpanEvent(name, time_ns, attrs) for name, time_ns, attrs in data["events"]),
        resource=data["resource"],
        scope=Scope(*data["scope"]),
        status=data["status"],
        parent_is_remote=data["parent_is_remote"],
    )


def normalised_question(text: str) -> str:
    return " ".join(text.casefold().split())


def question_id_for(text: str) -> str:
    digest = hashlib.sha256(normalised_question(text).encode("utf-8")).hexdigest()
    return f"{QUESTION_ID_PREFIX}{digest[:24]}"


def system_id_for(system: SystemIdentity) -> str:
    """``service@version+model`` (the parts present); a longer one than the column holds is cut
    and made unique again with a hash of the whole."""
    name = system.service_name or "unknown-service"
    if system.service_version:
        name += f"@{system.service_version}"
    if system.model:
        name += f"+{system.model}"
    if len(name) <= SYSTEM_ID_LENGTH:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
    return f"{name[: SYSTEM_ID_LENGTH - 17]}~{digest}"


class FactsProblem(ValueError):
    """A `goldset.*` attribute the trace cannot be filed with; the message names it."""


@dataclass(frozen=True)
class TraceFacts:
    question_id: str  # "" when the application named none
    domain: str  # "" when none
    task_type: str  # "" when none
    task_family: str
    uncertainty: float | None


def trace_facts(record: TraceRecord, *, id_length: int, family_length: int) -> TraceFacts:
    """The `goldset.*` attributes of the root span, else of its resource."""
    root = record.raw_attributes.get("spans", {}).get(record.root_span_id, {})
    sources = (root.get("attributes", {}), record.raw_attributes.get("resource", {}))

    def text(key: str, limit: int) -> str:
        for attributes in sources:
            if key in attributes:
                value = attributes[key]
                if not isinstance(value, str) or not value.strip():
                    raise FactsProblem(f"{key}: expected a non-empty string")
                if len(value) > limit:
                    raise FactsProblem(f"{key}: longer than {limit} characters")
                return value.strip()
        return ""

    uncertainty = None
    for attributes in sources:
        if UNCERTAINTY in attributes:
            value = attributes[UNCERTAINTY]
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 <= value <= 1
            ):
                raise FactsProblem(f"{UNCERTAINTY}: expected a number between 0 and 1")
            uncertainty = float(value)
            break
    return TraceFacts(
        question_id=text(QUESTION_ID, id_length),
        domain=text(DOMAIN, 64),
        task_type=text(TASK_TYPE, 32),
        task_family=text(TASK_FAMILY, family_length) or DEFAULT_TASK_FAMILY,
        uncertainty=uncertainty,
    )
