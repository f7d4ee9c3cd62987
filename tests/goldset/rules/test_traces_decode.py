"""OTLP/HTTP request bodies from the real SDK and encoders decode to the same spans in both
encodings; every kind of bad input is a refusal with its HTTP status or a per-span rejection."""

import gzip
import io
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from goldset.traces.decode import (
    MAX_VALUE_DEPTH,
    BodyTooLarge,
    Decoded,
    DecodeError,
    SpanRejection,
    UnsupportedMediaType,
    decode_export_request,
    encode_export_response,
)
from tests.goldset.rules.traces_support import (
    BODIES,
    JSON,
    PROTOBUF,
    SERVICE,
    json_body,
    protobuf_body,
    provider,
    run_openinference,
)

ROOT = Path(__file__).resolve().parents[3]


def pipeline_spans(runs: int = 1):
    """`runs` traces of four spans each (retrieve, rerank, llm, rag: the order they end)."""
    tracer_provider, exporter = provider()
    for _ in range(runs):
        run_openinference(tracer_provider.get_tracer("policy-bot", "1.0"))
    return exporter.get_finished_spans()


def two_traces(**root_attributes):
    """From the real SDK: trace A, a root with `root_attributes` and a clean child; trace B,
    one clean span named "other"."""
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span("root", attributes=root_attributes):
        with tracer.start_as_current_span("child", attributes={"ok": "yes"}):
            pass
    with tracer.start_as_current_span("other", attributes={"ok": "yes"}):
        pass
    return exporter.get_finished_spans()


def hex_ids(sdk_span) -> tuple[str, str]:
    context = sdk_span.get_span_context()
    return otel_trace.format_trace_id(context.trace_id), otel_trace.format_span_id(context.span_id)


class Upload(io.RawIOBase):
    """A request body of `total` bytes (`head`, then zeros) that exists only as it is read."""

    def __init__(self, head: bytes, *, total: int):
        self.head, self.total, self.position = head, total, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = min(len(buffer), self.total - self.position)
        chunk = self.head[self.position : self.position + size]
        chunk += bytes(size - len(chunk))
        buffer[:size] = chunk
        self.position += size
        return size


def decode(body, content_type=PROTOBUF, **kwargs) -> Decoded:
    return decode_export_request(body, content_type=content_type, **kwargs)


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_sdk_spans_decode_with_their_ids_times_attributes_events_and_resource(content_type):
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot", "1.0")
    with tracer.start_as_current_span(
        "root",
        kind=otel_trace.SpanKind.SERVER,
        attributes={"n": 7, "big": 2**62, "x": 1.5, "flag": True, "tags": ["a", "b"], "ns": [1, 2]},
    ) as root:
        root.add_event("gen_ai.user.message", {"content": "Hello"})
        with tracer.start_as_current_span("child"):
            pass
    sdk_spans = exporter.get_finished_spans()

    decoded = decode(BODIES[content_type](sdk_spans), content_type)

    assert decoded.rejections == [] and decoded.partial_success() is None
    by_name = {s.name: s for s in decoded.spans}
    sdk_root = next(s for s in sdk_spans if s.name == "root")
    span = by_name["root"]
    assert span.trace_id == otel_trace.format_trace_id(sdk_root.context.trace_id)
    assert span.span_id == otel_trace.format_span_id(sdk_root.context.span_id)
    assert span.parent_span_id == "" and not span.parent_is_remote
    assert by_name["child"].parent_span_id == span.span_id
    assert (span.start_ns, span.end_ns) == (sdk_root.start_time, sdk_root.end_time)
    assert span.kind == "SERVER" and by_name["child"].kind == "INTERNAL"
    assert span.attributes == {
        "n": 7,
        "big": 2**62,
        "x": 1.5,
        "flag": True,
        "tags": ["a", "b"],
        "ns": [1, 2],
    }
    assert [(e.name, e.attributes) for e in span.events] == [
        ("gen_ai.user.message", {"content": "Hello"})
    ]
    assert span.resource["service.name"] == SERVICE["service.name"]
    assert (span.scope.name, span.scope.version) == ("policy-bot", "1.0")


def test_protobuf_and_json_decode_to_the_same_spans():
    sdk_spans = pipeline_spans()
    from_protobuf = decode(protobuf_body(sdk_spans)).spans
    from_json = decode(json_body(sdk_spans), JSON).spans
    assert len(from_protobuf) == 4
    assert from_protobuf == from_json


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_gzip_bodies_decode_like_plain_ones(content_type):
    sdk_spans = pipeline_spans()
    body = BODIES[content_type](sdk_spans)
    plain = decode(body, content_type).spans
    assert decode(gzip.compress(body), content_type, content_encoding="gzip").spans == plain
    # Two gzip members back to back are one body (RFC 1952).
    half = len(body) // 2
    two_members = gzip.compress(body[:half]) + gzip.compress(body[half:])
    assert decode(two_members, content_type, content_encoding="gzip").spans == plain


def test_content_type_parameters_and_case_are_ignored():
    body = protobuf_body(pipeline_spans())
    assert len(decode(body, "Application/X-Protobuf; charset=binary").spans) == 4


def test_a_gzip_bomb_is_refused_without_inflating_it():
    limit = 1024 * 1024
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < limit // 10
    tracemalloc.start()
    try:
        with pytest.raises(BodyTooLarge) as refused:
            decode(bomb, content_encoding="gzip", max_body_bytes=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.status == 413
    assert peak < 4 * limit  # the 64 MiB were never held


def test_a_body_over_the_limit_is_refused_413_bytes_or_stream():
    body = protobuf_body(pipeline_spans())
    with pytest.raises(BodyTooLarge) as refused:
        decode(body, max_body_bytes=len(body) - 1)
    assert refused.value.status == 413
    stream = Upload(body, total=100 * 1024 * 1024)  # a 100 MB upload, produced as it is read
    with pytest.raises(BodyTooLarge):
        decode(stream, max_body_bytes=len(body))
    assert stream.position == len(body) + 1  # read only one byte past the limit
    assert len(decode(io.BytesIO(body), max_body_bytes=len(body)).spans) == 4


@pytest.mark.parametrize(
    ("content_type", "content_encoding"),
    [("text/plain", ""), ("application/xml", ""), ("", ""), (PROTOBUF, "br"), (JSON, "deflate")],
)
def test_a_wrong_content_type_or_encoding_is_refused_415(content_type, content_encoding):
    with pytest.raises(UnsupportedMediaType) as refused:
        decode(b"{}", content_type, content_encoding=content_encoding)
    assert refused.value.status == 415


@pytest.mark.parametrize(
    ("body", "content_type", "content_encoding", "says"),
    [
        (b"\x0a\xff\xff\xff\xff\x0f", PROTOBUF, "", "not a valid ExportTraceServiceRequest"),
        (b"this is not protobuf at all", PROTOBUF, "", "not a valid ExportTraceServiceRequest"),
        (b'{"resourceSpans": [', JSON, "", "not valid JSON"),
        (b"[]", JSON, "", "the body: expected an object"),
        (b'{"resourceSpans": {}}', JSON, "", "resourceSpans: expected a list"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [7]}]}]}', JSON, "", "spans[0]"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": "x"}]}]}]}',
            JSON,
            "",
            "spans[0].attributes: expected a list",
        ),
        (b"", JSON, "", "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, JSON, "", "not valid JSON"),  # nesting past recursion
        (b'{"resourceSpans": ' + b"9" * 5000 + b"}", JSON, "", "not valid JSON"),  # huge int
        (b"not gzip", PROTOBUF, "gzip", "not valid gzip"),
    ],
)
def test_a_malformed_body_is_refused_400(body, content_type, content_encoding, says):
    with pytest.raises(DecodeError) as refused:
        decode(body, content_type, content_encoding=content_encoding)
    assert refused.value.status == 400
    assert says in refused.value.message


def test_a_truncated_gzip_body_is_refused_400():
    body = gzip.compress(protobuf_body(pipeline_spans()))
    with pytest.raises(DecodeError) as refused:
        decode(body[: len(body) // 2], content_encoding="gzip")
    assert refused.value.status == 400 and "truncated" in refused.value.message


def test_an_empty_protobuf_request_is_valid_and_empty():
    decoded = decode(b"")
    assert decoded.spans == [] and decoded.rejections == []


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_a_nul_in_an_attribute_rejects_its_span_and_trace_and_keeps_the_others(content_type):
    sdk_spans = two_traces(note="before\x00after")
    root = next(s for s in sdk_spans if s.name == "root")
    child = next(s for s in sdk_spans if s.name == "child")
    trace_id, root_id = hex_ids(root)
    reason = "attribute 'note': contains a NUL character"

    decoded = decode(BODIES[content_type](sdk_spans), content_type)

    assert [s.name for s in decoded.spans] == ["other"]
    assert decoded.rejections == [
        SpanRejection(trace_id, root_id, reason),
        SpanRejection(
            trace_id,
            hex_ids(child)[1],
            f"trace rejected with its span {root_id} ({reason})",
            primary=False,
        ),
    ]
    assert decoded.rejected_trace_ids == {trace_id}
    assert decoded.partial_success() == {
        "rejected_spans": 2,
        "error_message": "; ".join(str(r) for r in decoded.rejections),
    }


def test_invalid_utf8_in_a_protobuf_attribute_rejects_its_span_and_trace_only():
    body = protobuf_body(two_traces(note="PLACEHOLDER"))
    assert body.count(b"PLACEHOLDER") == 1
    broken = body.replace(b"PLACEHOLDER", b"PLACE\xff\xfeHOLD")  # same length: still valid wire
    with pytest.raises(Exception, match="UTF-8"):
        ExportTraceServiceRequest.FromString(broken)  # the strict parser refuses everything
    decoded = decode(broken)
    assert [s.name for s in decoded.spans] == ["other"]
    assert decoded.rejections[0].reason == "attribute 'note': invalid UTF-8"
    assert decoded.rejected_spans == 2


def test_a_rejection_names_a_long_key_shortly():
    decoded = decode(json_body(two_traces(**{"k" * 5000: "a\x00"})), JSON)
    reason = decoded.rejections[0].reason
    assert reason == f"attribute '{'k' * 80}…': contains a NUL character"


def test_invalid_utf8_in_a_protobuf_resource_rejects_the_spans_of_that_resource():
    body = protobuf_body(two_traces())
    marker = SERVICE["service.name"].encode()
    broken = body.replace(marker, b"\xc3" + marker[1:])
    decoded = decode(broken)
    assert decoded.spans == []
    assert [r.reason for r in decoded.rejections] == [
        "resource attribute 'service.name': invalid UTF-8"
    ] * 3


def test_invalid_utf8_in_json_rejects_its_span_and_trace_only():
    body = json_body(two_traces(note="PLACEHOLDER"))
    raw_bytes = body.replace(b"PLACEHOLDER", b"PLACE\xff\xfeHOLD")
    escaped = body.replace(b"PLACEHOLDER", b"PLACE\\udc80HOLD")  # a lone surrogate escape
    for broken in (raw_bytes, escaped):
        decoded = decode(broken, JSON)
        assert [s.name for s in decoded.spans] == ["other"]
        assert decoded.rejections[0].reason == "attribute 'note': invalid UTF-8"
        assert decoded.rejected_spans == 2
        json.dumps(decoded.partial_success())  # the message itself is safe to send back


@pytest.mark.parametrize(
    ("field", "value", "reason", "kept"),
    [
        # Without a usable trace id the span belongs to no trace: it alone is rejected.
        ("trace_id", b"", "missing trace id", 7),
        ("trace_id", bytes(16), "missing trace id", 7),
        # Otherwise its whole trace goes with it; the other trace stays.
        ("span_id", b"", "missing span id", 4),
        ("span_id", b"\x01\x02\x03", "span id must be 8 bytes, got 3", 4),
        ("parent_span_id", b"\x01", "parent span id must be 8 bytes, got 1", 4),
        ("start_time_unix_nano", 0, "missing start time", 4),
        ("end_time_unix_nano", 0, "missing end time", 4),
        ("end_time_unix_nano", 1, "ends before it starts", 4),
    ],
)
def test_a_protobuf_span_missing_ids_or_times_is_rejected(field, value, reason, kept):
    sdk_spans = pipeline_spans(runs=2)
    request = encode_spans(sdk_spans)
    spans = request.resource_spans[0].scope_spans[0].spans
    setattr(spans[1], field, value)
    decoded = decode(request.SerializeToString())
    assert len(decoded.spans) == kept
    assert decoded.rejected_spans == 8 - kept
    assert decoded.rejections[0].reason.startswith(reason)
    second_trace = hex_ids(sdk_spans[4])[0]
    assert {s.trace_id for s in decoded.spans} >= {second_trace}


@pytest.mark.parametrize(
    ("field", "value", "reason", "kept"),
    [
        ("traceId", None, "missing trace id", 7),
        ("traceId", "AAAAAAAAAAAAAAAAAAAAAA==", "trace id must be 32 hex digits", 7),  # base64
        ("spanId", "", "missing span id", 4),
        ("spanId", "zz" * 8, "span id must be 16 hex digits", 4),
        ("startTimeUnixNano", "soon", "start time: 'soon' is not an integer", 4),
        ("endTimeUnixNano", "-5", "end time: -5 is out of range", 4),
    ],
)
def test_a_json_span_with_bad_ids_or_times_is_rejected(field, value, reason, kept):
    request = json.loads(json_body(pipeline_spans(runs=2)))
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    if value is None:
        del span[field]
    else:
        span[field] = value
    decoded = decode(json.dumps(request).encode(), JSON)
    assert len(decoded.spans) == kept
    assert decoded.rejected_spans == 8 - kept
    assert decoded.rejections[0].reason.startswith(reason)


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_duplicate_span_ids_in_one_request(content_type):
    sdk_spans = pipeline_spans(runs=2)
    # The same span twice, identical (an exporter that batched it twice): kept once.
    decoded = decode(BODIES[content_type]([*sdk_spans, sdk_spans[0]]), content_type)
    assert len(decoded.spans) == 8 and decoded.rejections == []

    # The same ids with different content: every copy rejected with its trace; the other kept.
    request = encode_spans([*sdk_spans, sdk_spans[0]])
    copies = request.resource_spans[0].scope_spans[0].spans
    copies[-1].name = "something else"
    if content_type == PROTOBUF:
        body = request.SerializeToString()
    else:
        as_json = json.loads(json_body([*sdk_spans, sdk_spans[0]]))
        as_json["resourceSpans"][0]["scopeSpans"][0]["spans"][-1]["name"] = "something else"
        body = json.dumps(as_json).encode()
    decoded = decode(body, content_type)
    trace_id, span_id = hex_ids(sdk_spans[0])
    assert {s.trace_id for s in decoded.spans} == {hex_ids(sdk_spans[4])[0]}
    assert len(decoded.spans) == 4
    reason = "span id sent 2 times in this request with different content"
    assert [(r.span_id, r.reason) for r in decoded.rejections[:2]] == [(span_id, reason)] * 2
    assert [r.reason for r in decoded.rejections[2:]] == [
        f"trace rejected with its span {span_id} ({reason})"
    ] * 3
    assert decoded.rejected_trace_ids == {trace_id}


def test_otlp_json_value_encodings_are_read():
    """kvlistValue, bytesValue, int64 as string or number, doubles as numbers or names,
    snake_case field names, string span kinds and unknown fields."""
    span = {
        "traceId": "5B8EFFF798038103D269B633813FC60C",
        "span_id": "eee19b7ec3c1b174",
        "name": "root",
        "kind": "SPAN_KIND_CLIENT",
        "startTimeUnixNano": 1544712660000000000,
        "end_time_unix_nano": "1544712661000000000",
        "somethingNew": {"ignored": True},
        "attributes": [
            {"key": "i", "value": {"intValue": "-9223372036854775808"}},
            {"key": "j", "value": {"intValue": 42}},
            {"key": "d", "value": {"doubleValue": "NaN"}},
            {"key": "b", "value": {"bytesValue": "AAEC"}},
            {"key": "empty", "value": {}},
            {
                "key": "kv",
                "value": {
                    "kvlistValue": {
                        "values": [
                            {"key": "role", "value": {"stringValue": "user"}},
                            {
                                "key": "n",
                                "value": {"arrayValue": {"values": [{"boolValue": False}]}},
                            },
                        ]
                    }
                },
            },
        ],
        "status": {"code": 2},
    }
    body = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    decoded = decode(json.dumps(body).encode(), JSON)
    assert decoded.rejections == []
    (result,) = decoded.spans
    assert result.trace_id == "5b8efff798038103d269b633813fc60c"
    assert result.kind == "CLIENT" and result.status == "ERROR"
    assert result.end_ns - result.start_ns == 10**9
    attrs = result.attributes
    assert attrs["i"] == -(2**63) and attrs["j"] == 42 and attrs["d"] != attrs["d"]
    assert attrs["b"] == "AAEC" and attrs["empty"] is None
    assert attrs["kv"] == {"role": "user", "n": [False]}


def test_attributes_nested_too_deep_reject_their_span():
    tracer_provider, exporter = provider()
    with tracer_provider.get_tracer("t").start_as_current_span("root"):
        pass
    sdk_spans = exporter.get_finished_spans()

    request = encode_spans(sdk_spans)
    deep = request.resource_spans[0].scope_spans[0].spans[0].attributes.add(key="deep").value
    json_value = {"stringValue": "leaf"}
    for _ in range(MAX_VALUE_DEPTH + 1):
        deep = deep.array_value.values.add()
        json_value = {"arrayValue": {"values": [json_value]}}
    deep.string_value = "leaf"
    as_json = json.loads(json_body(sdk_spans))
    as_json["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [
        {"key": "deep", "value": json_value}
    ]

    for body, content_type in (
        (request.SerializeToString(), PROTOBUF),
        (json.dumps(as_json).encode(), JSON),
    ):
        decoded = decode(body, content_type)
        assert decoded.spans == []
        assert [r.reason for r in decoded.rejections] == [
            f"attribute 'deep': nested deeper than {MAX_VALUE_DEPTH} levels"
        ]


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_the_response_carries_partial_success_only_when_spans_were_rejected(content_type):
    clean = decode(protobuf_body(pipeline_spans()))
    rejected = Decoded(
        spans=[], rejections=[SpanRejection("ab" * 16, "cd" * 8, "missing start time")] * 12
    )
    if content_type == PROTOBUF:
        ok = ExportTraceServiceResponse.FromString(
            encode_export_response(clean, content_type=PROTOBUF)
        )
        assert not ok.HasField("partial_success")
        partial = ExportTraceServiceResponse.FromString(
            encode_export_response(rejected, content_type=PROTOBUF)
        ).partial_success
        rejected_spans, message = partial.rejected_spans, partial.error_message
    else:
        assert json.loads(encode_export_response(clean, content_type=JSON)) == {}
        partial = json.loads(encode_export_response(rejected, content_type=JSON))["partialSuccess"]
        rejected_spans, message = int(partial["rejectedSpans"]), partial["errorMessage"]
    assert rejected_spans == 12
    assert message.count("missing start time") == 10 and message.endswith("and 2 more")


def test_the_traces_package_imports_without_django():
    """The receiver's pure part: decoding and mapping load neither Django nor the app."""
    code = (
        "import sys, goldset.traces.decode, goldset.traces.mapping; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'workbench')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    assert done.stdout.strip() == "[]"
