"""OTLP/HTTP request bodies from the real SDK and encoders decode to the same spans in both
encodings; every kind of bad input is a refusal with its HTTP status or a per-span rejection."""

import gzip
import io
import json
import tracemalloc

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


def pipeline_spans():
    tracer_provider, exporter = provider()
    run_openinference(tracer_provider.get_tracer("policy-bot", "1.0"))
    return exporter.get_finished_spans()


def two_spans(**root_attributes):
    """A root with `root_attributes` and one clean child, from the real SDK."""
    tracer_provider, exporter = provider()
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span("root", attributes=root_attributes):
        with tracer.start_as_current_span("child", attributes={"ok": "yes"}):
            pass
    return exporter.get_finished_spans()


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
    stream = io.BytesIO(body + b"\0" * (100 * 1024 * 1024))  # a 100 MB upload
    with pytest.raises(BodyTooLarge):
        decode(stream, max_body_bytes=len(body))
    assert stream.tell() <= len(body) + 1  # read only one byte past the limit
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
def test_a_nul_in_an_attribute_rejects_only_its_span(content_type):
    sdk_spans = two_spans(note="before\x00after")
    decoded = decode(BODIES[content_type](sdk_spans), content_type)
    assert [s.name for s in decoded.spans] == ["child"]
    (rejection,) = decoded.rejections
    assert rejection.reason == "attribute 'note': contains a NUL character"
    root = next(s for s in sdk_spans if s.name == "root")
    assert rejection.span_id == otel_trace.format_span_id(root.context.span_id)
    assert decoded.partial_success() == {
        "rejected_spans": 1,
        "error_message": str(rejection),
    }


def test_invalid_utf8_in_a_protobuf_attribute_rejects_only_its_span():
    body = protobuf_body(two_spans(note="PLACEHOLDER"))
    assert body.count(b"PLACEHOLDER") == 1
    broken = body.replace(b"PLACEHOLDER", b"PLACE\xff\xfeHOLD")  # same length: still valid wire
    with pytest.raises(Exception, match="UTF-8"):
        ExportTraceServiceRequest.FromString(broken)  # the strict parser refuses everything
    decoded = decode(broken)
    assert [s.name for s in decoded.spans] == ["child"]
    assert [r.reason for r in decoded.rejections] == ["attribute 'note': invalid UTF-8"]


def test_invalid_utf8_in_a_protobuf_resource_rejects_the_spans_of_that_resource():
    body = protobuf_body(two_spans())
    marker = SERVICE["service.name"].encode()
    broken = body.replace(marker, b"\xc3" + marker[1:])
    decoded = decode(broken)
    assert decoded.spans == []
    assert [r.reason for r in decoded.rejections] == [
        "resource attribute 'service.name': invalid UTF-8"
    ] * 2


def test_invalid_utf8_in_json_rejects_only_its_span():
    body = json_body(two_spans(note="PLACEHOLDER"))
    raw_bytes = body.replace(b"PLACEHOLDER", b"PLACE\xff\xfeHOLD")
    escaped = body.replace(b"PLACEHOLDER", b"PLACE\\udc80HOLD")  # a lone surrogate escape
    for broken in (raw_bytes, escaped):
        decoded = decode(broken, JSON)
        assert [s.name for s in decoded.spans] == ["child"]
        assert [r.reason for r in decoded.rejections] == ["attribute 'note': invalid UTF-8"]
        json.dumps(decoded.partial_success())  # the message itself is safe to send back


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("span_id", b"", "missing span id"),
        ("trace_id", b"", "missing trace id"),
        ("trace_id", bytes(16), "missing trace id"),
        ("span_id", b"\x01\x02\x03", "span id must be 8 bytes, got 3"),
        ("parent_span_id", b"\x01", "parent span id must be 8 bytes, got 1"),
        ("start_time_unix_nano", 0, "missing start time"),
        ("end_time_unix_nano", 0, "missing end time"),
        ("end_time_unix_nano", 1, "ends before it starts"),
    ],
)
def test_a_protobuf_span_missing_ids_or_times_is_rejected_alone(field, value, reason):
    request = encode_spans(pipeline_spans())
    spans = request.resource_spans[0].scope_spans[0].spans
    setattr(spans[1], field, value)
    decoded = decode(request.SerializeToString())
    assert len(decoded.spans) == 3
    (rejection,) = decoded.rejections
    assert rejection.reason.startswith(reason)


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("traceId", None, "missing trace id"),
        ("spanId", "", "missing span id"),
        ("spanId", "zz" * 8, "span id must be 16 hex digits"),
        ("traceId", "AAAAAAAAAAAAAAAAAAAAAA==", "trace id must be 32 hex digits"),  # base64
        ("startTimeUnixNano", "soon", "start time: 'soon' is not an integer"),
        ("endTimeUnixNano", "-5", "end time: -5 is out of range"),
    ],
)
def test_a_json_span_with_bad_ids_or_times_is_rejected_alone(field, value, reason):
    request = json.loads(json_body(pipeline_spans()))
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    if value is None:
        del span[field]
    else:
        span[field] = value
    decoded = decode(json.dumps(request).encode(), JSON)
    assert len(decoded.spans) == 3
    (rejection,) = decoded.rejections
    assert rejection.reason.startswith(reason)


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_duplicate_span_ids_in_one_request(content_type):
    sdk_spans = pipeline_spans()
    # The same span twice, identical (an exporter that batched it twice): kept once.
    decoded = decode(BODIES[content_type]([*sdk_spans, sdk_spans[0]]), content_type)
    assert len(decoded.spans) == 4 and decoded.rejections == []

    # The same ids with different content: every copy rejected, the rest kept.
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
    assert len(decoded.spans) == 3
    span_id = otel_trace.format_span_id(sdk_spans[0].context.span_id)
    assert [(r.span_id, r.reason) for r in decoded.rejections] == [
        (span_id, "span id sent 2 times in this request with different content")
    ] * 2


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
