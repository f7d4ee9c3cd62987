"""Decode an OTLP/HTTP traces request body (`ExportTraceServiceRequest`) into plain spans.

`decode_export_request(body, content_type=…, content_encoding=…, max_body_bytes=…)` accepts the
two OTLP/HTTP encodings:

- `application/x-protobuf` (also `application/protobuf`): the binary message, parsed with the
  descriptors of the `opentelemetry-proto` package;
- `application/json`: the OTLP/JSON encoding — trace and span ids as hex strings (not base64),
  64-bit integers as decimal strings (numbers accepted too), enums as integers (names accepted),
  `lowerCamelCase` field names (the proto `snake_case` names accepted too), unknown fields ignored,
  values as `stringValue` / `boolValue` / `intValue` / `doubleValue` / `bytesValue` (base64) /
  `arrayValue.values` / `kvlistValue.values`.

Both may arrive with `Content-Encoding: gzip`.

What the receiver answers, decided here:

| input | outcome |
|---|---|
| content type other than the two above, content encoding other than gzip/identity | `UnsupportedMediaType` (415) |
| body, or its gzip-decompressed form, larger than `max_body_bytes` | `BodyTooLarge` (413); decompression stops at the limit, so a gzip bomb costs at most `max_body_bytes` of memory |
| corrupt gzip, corrupt protobuf, JSON that does not parse or has the wrong shape (`resourceSpans` not a list, an attribute not an object…) | `DecodeError` (400) |
| one span with a missing or malformed trace/span id, a missing start or end time, an end before its start, a NUL character or invalid UTF-8 in its name, an attribute key or value, an event or its resource, attributes nested deeper than `MAX_VALUE_DEPTH` | that span rejected (`SpanRejection`), the others kept: 200 with `partial_success` |
| the same (trace id, span id) twice in one request | identical copies collapse into one; differing copies are all rejected |
| a span rejected (above) whose trace id is valid | every span of that trace in the request rejected with it, and the trace id listed in `Decoded.rejected_trace_ids` so the receiver drops spans of it stored from earlier requests: nothing partial is mapped |

Invalid UTF-8 is found per span because the protobuf message is parsed with a copy of the OTLP
descriptors whose `string` fields are `bytes` (the wire format is the same); the strict parser
would refuse the whole request for one bad attribute. For JSON, raw invalid bytes are read with
`surrogateescape` and `\\udXXX` escapes of lone surrogates end up the same way: a string that
cannot be encoded as UTF-8 rejects its span.

Attribute values become plain Python values: str, bool, int, float, list, dict (kvlist), None (an
empty value), and base64 text for `bytesValue`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

# 16 MiB after decompression: a batch of 512 spans (the SDK's default batch) carrying ten
# retrieved passages of a few kB each is well under 10 MiB.
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
# Nested arrays/kvlists deeper than this reject their span (no real instrumentation nests past 4).
MAX_VALUE_DEPTH = 16
# How many rejection reasons `Decoded.error_message` spells out before "and N more".
MAX_REASONS_IN_MESSAGE = 10
MAX_KEY_IN_REASON = 80

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_CONTENT_TYPES = {"application/x-protobuf": PROTOBUF, "application/protobuf": PROTOBUF, JSON: JSON}
_IDENTITY_ENCODINGS = {"", "identity"}
_GZIP_ENCODINGS = {"gzip", "x-gzip"}

SPAN_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_CODES = ("UNSET", "OK", "ERROR")
# SpanFlags in trace.proto: bit 8 says whether bit 9 is known; bit 9 says the parent is remote.
_FLAG_PARENT_IS_REMOTE = 0x200
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64_MAX = 2**64 - 1


class DecodeError(ValueError):
    """The whole body is refused; `status` is the HTTP status the receiver answers."""

    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BodyTooLarge(DecodeError):
    status = 413


class UnsupportedMediaType(DecodeError):
    status = 415


@dataclass(frozen=True)
class Scope:
    name: str = ""
    version: str = ""


@dataclass(frozen=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: dict


@dataclass(frozen=True)
class Span:
    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16 lowercase hex digits
    parent_span_id: str  # "" for a root span
    name: str
    kind: str  # one of SPAN_KINDS
    start_ns: int
    end_ns: int
    attributes: dict = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    resource: dict = field(default_factory=dict)
    scope: Scope = Scope()
    status: str = "UNSET"  # one of STATUS_CODES
    parent_is_remote: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.trace_id, self.span_id)


@dataclass(frozen=True)
class SpanRejection:
    trace_id: str  # as sent, or "" when missing
    span_id: str
    reason: str
    # False for the spans rejected only because another span of their trace was: the error
    # message names the first reasons before these
    primary: bool = True

    def __str__(self) -> str:
        who = f"span {self.span_id or '?'} of trace {self.trace_id or '?'}"
        return f"{who}: {self.reason}"


@dataclass
class Decoded:
    spans: list[Span]
    rejections: list[SpanRejection]

    @property
    def rejected_spans(self) -> int:
        return len(self.rejections)

    @property
    def rejected_trace_ids(self) -> set[str]:
        """Traces with a span rejected here: none of their spans is kept, and spans of theirs
        from other requests must not be mapped either (nothing partial is stored)."""
        return {r.trace_id for r in self.rejections if _is_hex(r.trace_id, 32)}

    def error_message(self) -> str:
        return error_message(self.rejections)

    def partial_success(self) -> dict | None:
        """The OTLP `partial_success` to answer with, or None when every span was accepted."""
        return partial_success(self.rejections)


def error_message(rejections: list[SpanRejection], warnings: list[str] = ()) -> str:
    """The rejections' reasons (the first `MAX_REASONS_IN_MESSAGE`, each trace's own reason
    before the spans rejected with their trace, then "and N more"), then the warnings."""
    ordered = sorted(rejections, key=lambda r: not r.primary)
    reasons = [str(r) for r in ordered[:MAX_REASONS_IN_MESSAGE]]
    more = len(rejections) - len(reasons)
    if more:
        reasons.append(f"and {more} more")
    shown = list(warnings[:MAX_REASONS_IN_MESSAGE])
    if len(warnings) > len(shown):
        shown.append(f"and {len(warnings) - len(shown)} more warnings")
    return "; ".join(reasons + shown)


def partial_success(rejections: list[SpanRejection], warnings: list[str] = ()) -> dict | None:
    """The OTLP `partial_success` to answer with: the spans rejected and why, and warnings
    about spans accepted but not kept whole (OTLP: a server may send warnings with
    `rejected_spans` 0 and a non-empty `error_message`); None when there is neither."""
    if not rejections and not warnings:
        return None
    return {
        "rejected_spans": len(rejections),
        "error_message": error_message(rejections, warnings),
    }


class _SpanProblem(Exception):
    """One span (or every span of one resource) cannot be accepted; the message says why."""


# ---------------------------------------------------------------------------------------------
# Body: size, encoding, content type


def decode_export_request(
    body: bytes | BinaryIO,
    *,
    content_type: str,
    content_encoding: str = "",
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Decoded:
    """Decode one OTLP/HTTP traces request body; raise `DecodeError` (or a subclass) to refuse it."""
    media = _CONTENT_TYPES.get(content_type.split(";", 1)[0].strip().lower())
    if media is None:
        raise UnsupportedMediaType(
            f"content type {content_type!r} is not supported "
            "(expected application/x-protobuf or application/json)"
        )
    encoding = content_encoding.strip().lower()
    if encoding not in _IDENTITY_ENCODINGS | _GZIP_ENCODINGS:
        raise UnsupportedMediaType(
            f"content encoding {content_encoding!r} is not supported (expected gzip or none)"
        )
    data = _read_bounded(body, max_body_bytes)
    if encoding in _GZIP_ENCODINGS:
        data = _gunzip_bounded(data, max_body_bytes)
    if media == PROTOBUF:
        spans, rejections = _decode_protobuf(data)
    else:
        spans, rejections = _decode_json(data)
    kept, duplicates = _drop_duplicates(spans)
    kept, whole_traces = _reject_whole_traces(kept, rejections + duplicates)
    return Decoded(spans=kept, rejections=rejections + duplicates + whole_traces)


def _read_bounded(body: bytes | BinaryIO, limit: int) -> bytes:
    if isinstance(body, bytes | bytearray | memoryview):
        data = bytes(body)
    else:
        chunks, size = [], 0
        while size <= limit:
            chunk = body.read(min(64 * 1024, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    if len(data) > limit:
        raise BodyTooLarge(f"the request body is larger than {limit} bytes")
    return data


def _gunzip_bounded(data: bytes, limit: int) -> bytes:
    """Decompress gzip (several members allowed), never holding more than limit + 1 bytes of output."""
    out = bytearray()
    pending = data
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            try:
                out += inflater.decompress(pending, limit + 1 - len(out))
            except zlib.error as exc:
                raise DecodeError(f"the body is not valid gzip ({exc})") from None
            if len(out) > limit:
                raise BodyTooLarge(f"the decompressed request body is larger than {limit} bytes")
            if inflater.eof:
                break
            if not inflater.unconsumed_tail:
                raise DecodeError("the gzip body is truncated")
            pending = inflater.unconsumed_tail
        pending = inflater.unused_data
        if not pending:
            return bytes(out)


# ---------------------------------------------------------------------------------------------
# Shared checks


def _text(value: str | bytes, where: str) -> str:
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise _SpanProblem(f"{where}: invalid UTF-8") from None
    else:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _SpanProblem(f"{where}: invalid UTF-8") from None
    if "\x00" in value:
        raise _SpanProblem(f"{where}: contains a NUL character")
    return value


def _short(key: str) -> str:
    """A key as named in a rejection reason: long keys are cut, so `error_message` stays small."""
    return key if len(key) <= MAX_KEY_IN_REASON else key[:MAX_KEY_IN_REASON] + "…"


def _hex_id(raw: bytes, size: int, what: str, *, required: bool) -> str:
    if not raw or raw == bytes(len(raw)):
        if required:
            raise _SpanProblem(f"missing {what}")
        return ""
    if len(raw) != size:
        raise _SpanProblem(f"{what} must be {size} bytes, got {len(raw)}")
    return raw.hex()


def _times(start: int, end: int) -> tuple[int, int]:
    if not start:
        raise _SpanProblem("missing start time")
    if not end:
        raise _SpanProblem("missing end time")
    if end < start:
        raise _SpanProblem(f"ends before it starts (end {end} < start {start})")
    return start, end


def _enum_name(value: int | str, names: tuple[str, ...], prefix: str) -> str:
    if isinstance(value, int) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str):
        name = value.upper().removeprefix(prefix)
        if name in names:
            return name
    return names[0]


def same_span(a: Span, b: Span) -> bool:
    """Equal, counting a NaN attribute equal to itself (a resent span is the same span)."""
    return a == b or repr(a) == repr(b)


def _drop_duplicates(spans: list[Span]) -> tuple[list[Span], list[SpanRejection]]:
    by_key: dict[tuple[str, str], list[Span]] = {}
    for span in spans:
        by_key.setdefault(span.key, []).append(span)
    kept, rejections = [], []
    for (trace_id, span_id), copies in by_key.items():
        if all(same_span(copy, copies[0]) for copy in copies[1:]):
            kept.append(copies[0])
            continue
        reason = f"span id sent {len(copies)} times in this request with different content"
        rejections.extend(SpanRejection(trace_id, span_id, reason) for _ in copies)
    return kept, rejections


def _is_hex(value: str, digits: int) -> bool:
    return len(value) == digits and all(c in "0123456789abcdef" for c in value)


def _reject_whole_traces(
    spans: list[Span], rejections: list[SpanRejection]
) -> tuple[list[Span], list[SpanRejection]]:
    """A trace with one span rejected is rejected whole: mapping it without that span would store
    a partial record (a retriever span dropped for a NUL would leave an answer without passages)."""
    first_reason: dict[str, SpanRejection] = {}
    for rejection in rejections:
        if _is_hex(rejection.trace_id, 32):
            first_reason.setdefault(rejection.trace_id, rejection)
    kept, more = [], []
    for span in spans:
        cause = first_reason.get(span.trace_id)
        if cause is None:
            kept.append(span)
        else:
            more.append(rejected_with(span, cause))
    return kept, more


def rejected_with(span: Span, cause: SpanRejection) -> SpanRejection:
    """``span``'s rejection because its trace was rejected for ``cause``."""
    reason = f"trace rejected with its span {cause.span_id or '?'} ({cause.reason})"
    return SpanRejection(span.trace_id, span.span_id, reason, primary=False)


# ---------------------------------------------------------------------------------------------
# Protobuf


def _lenient_request_class():
    """ExportTraceServiceRequest with every `string` field read as `bytes` (same wire format)."""
    files, seen = [], set()

    def collect(file_descriptor):
        for dependency in file_descriptor.dependencies:
            collect(dependency)
        if file_descriptor.name not in seen:
            seen.add(file_descriptor.name)
            files.append(file_descriptor)

    def loosen(message_proto):
        for field_proto in message_proto.field:
            if field_proto.type == descriptor_pb2.FieldDescriptorProto.TYPE_STRING:
                field_proto.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
        for nested in message_proto.nested_type:
            loosen(nested)

    collect(trace_service_pb2.DESCRIPTOR)
    pool = descriptor_pool.DescriptorPool()
    for file_descriptor in files:
        file_proto = descriptor_pb2.FileDescriptorProto()
        file_descriptor.CopyToProto(file_proto)
        for message_proto in file_proto.message_type:
            loosen(message_proto)
        pool.Add(file_proto)
    name = trace_service_pb2.ExportTraceServiceRequest.DESCRIPTOR.full_name
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


_LenientRequest = _lenient_request_class()


def _decode_protobuf(data: bytes) -> tuple[list[Span], list[SpanRejection]]:
    try:
        request = _LenientRequest.FromString(data)
    except (ProtobufDecodeError, RecursionError) as exc:
        raise DecodeError(f"the body is not a valid ExportTraceServiceRequest ({exc})") from None
    spans, rejections = [], []
    for resource_spans in request.resource_spans:
        try:
            resource = _pb_attributes(resource_spans.resource.attributes, "resource attribute")
            resource_problem = ""
        except _SpanProblem as exc:
            resource, resource_problem = {}, str(exc)
        for scope_spans in resource_spans.scope_spans:
            try:
                scope = Scope(
                    _text(scope_spans.scope.name, "scope name"),
                    _text(scope_spans.scope.version, "scope version"),
                )
                scope_problem = ""
            except _SpanProblem as exc:
                scope, scope_problem = Scope(), str(exc)
            for pb_span in scope_spans.spans:
                trace_id, span_id = pb_span.trace_id.hex(), pb_span.span_id.hex()
                try:
                    if resource_problem or scope_problem:
                        raise _SpanProblem(resource_problem or scope_problem)
                    spans.append(_pb_span(pb_span, resource, scope))
                except _SpanProblem as exc:
                    rejections.append(SpanRejection(trace_id, span_id, str(exc)))
    return spans, rejections


def _pb_span(pb_span, resource: dict, scope: Scope) -> Span:
    start, end = _times(pb_span.start_time_unix_nano, pb_span.end_time_unix_nano)
    events = tuple(
        SpanEvent(
            name=_text(event.name, "event name"),
            time_ns=event.time_unix_nano,
            attributes=_pb_attributes(event.attributes, "event attribute"),
        )
        for event in pb_span.events
    )
    return Span(
        trace_id=_hex_id(pb_span.trace_id, 16, "trace id", required=True),
        span_id=_hex_id(pb_span.span_id, 8, "span id", required=True),
        parent_span_id=_hex_id(pb_span.parent_span_id, 8, "parent span id", required=False),
        name=_text(pb_span.name, "span name"),
        kind=_enum_name(pb_span.kind, SPAN_KINDS, "SPAN_KIND_"),
        start_ns=start,
        end_ns=end,
        attributes=_pb_attributes(pb_span.attributes, "attribute"),
        events=events,
        resource=resource,
        scope=scope,
        status=_enum_name(pb_span.status.code, STATUS_CODES, "STATUS_CODE_"),
        parent_is_remote=bool(pb_span.flags & _FLAG_PARENT_IS_REMOTE),
    )


def _pb_attributes(key_values, what: str, depth: int = 0) -> dict:
    result = {}
    for key_value in key_values:
        key = _text(key_value.key, f"{what} key")
        result[key] = _pb_value(key_value.value, f"{what} {_short(key)!r}", depth)
    return result


def _pb_value(value, where: str, depth: int):
    if depth >= MAX_VALUE_DEPTH:
        raise _SpanProblem(f"{where}: nested deeper than {MAX_VALUE_DEPTH} levels")
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return _text(value.string_value, where)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    if kind == "array_value":
        return [_pb_value(item, where, depth + 1) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _pb_attributes(value.kvlist_value.values, where, depth + 1)
    return getattr(value, kind)  # bool_value, int_value, double_value


# ---------------------------------------------------------------------------------------------
# OTLP/JSON


def _decode_json(data: bytes) -> tuple[list[Span], list[SpanRejection]]:
    # surrogateescape keeps invalid UTF-8 bytes as lone surrogates, so they reject one span
    # (found by `_text`) instead of the whole body.
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    try:
        request = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"the body is not valid JSON ({exc})") from None
    _expect(request, dict, "the body")
    spans, rejections = [], []
    for r, resource_spans in enumerate(_list(request, "resourceSpans", "resource_spans", "")):
        path = f"resourceSpans[{r}]"
        _expect(resource_spans, dict, path)
        resource_obj = _object(resource_spans, "resource", "resource", path)
        try:
            resource = _json_attributes(resource_obj, f"{path}.resource", "resource attribute")
            resource_problem = ""
        except _SpanProblem as exc:
            resource, resource_problem = {}, str(exc)
        for s, scope_spans in enumerate(_list(resource_spans, "scopeSpans", "scope_spans", path)):
            scope_path = f"{path}.scopeSpans[{s}]"
            _expect(scope_spans, dict, scope_path)
            scope_obj = _object(scope_spans, "scope", "scope", scope_path)
            try:
                scope = Scope(
                    _json_text(scope_obj.get("name", ""), "scope name"),
                    _json_text(scope_obj.get("version", ""), "scope version"),
                )
                scope_problem = ""
            except _SpanProblem as exc:
                scope, scope_problem = Scope(), str(exc)
            for n, json_span in enumerate(_list(scope_spans, "spans", "spans", scope_path)):
                span_path = f"{scope_path}.spans[{n}]"
                _expect(json_span, dict, span_path)
                trace_id = _as_str(_get(json_span, "traceId", "trace_id")).lower()
                span_id = _as_str(_get(json_span, "spanId", "span_id")).lower()
                try:
                    if resource_problem or scope_problem:
                        raise _SpanProblem(resource_problem or scope_problem)
                    spans.append(_json_span(json_span, span_path, resource, scope))
                except _SpanProblem as exc:
                    rejections.append(SpanRejection(trace_id, span_id, str(exc)))
    return spans, rejections


def _json_span(obj: dict, path: str, resource: dict, scope: Scope) -> Span:
    # The nested lists first: a wrong shape there refuses the body even when the span also has
    # a bad id or time.
    attributes = _json_attributes(obj, path, "attribute")
    events = []
    for e, event in enumerate(_list(obj, "events", "events", path)):
        event_path = f"{path}.events[{e}]"
        _expect(event, dict, event_path)
        events.append(
            SpanEvent(
                name=_json_text(event.get("name", ""), "event name"),
                time_ns=_json_uint(_get(event, "timeUnixNano", "time_unix_nano"), "event time"),
                attributes=_json_attributes(event, event_path, "event attribute"),
            )
        )
    status = _object(obj, "status", "status", path)
    start = _json_uint(_get(obj, "startTimeUnixNano", "start_time_unix_nano"), "start time")
    end = _json_uint(_get(obj, "endTimeUnixNano", "end_time_unix_nano"), "end time")
    start, end = _times(start, end)
    flags = _json_uint(obj.get("flags"), "flags")
    return Span(
        trace_id=_json_hex_id(_get(obj, "traceId", "trace_id"), 16, "trace id", required=True),
        span_id=_json_hex_id(_get(obj, "spanId", "span_id"), 8, "span id", required=True),
        parent_span_id=_json_hex_id(
            _get(obj, "parentSpanId", "parent_span_id"), 8, "parent span id", required=False
        ),
        name=_json_text(obj.get("name", ""), "span name"),
        kind=_enum_name(obj.get("kind", 0), SPAN_KINDS, "SPAN_KIND_"),
        start_ns=start,
        end_ns=end,
        attributes=attributes,
        events=tuple(events),
        resource=resource,
        scope=scope,
        status=_enum_name(status.get("code", 0), STATUS_CODES, "STATUS_CODE_"),
        parent_is_remote=bool(flags & _FLAG_PARENT_IS_REMOTE),
    )


def _get(obj: dict, camel: str, snake: str):
    return obj[camel] if camel in obj else obj.get(snake)


def _expect(value, kind: type, path: str) -> None:
    if not isinstance(value, kind):
        expected = "an object" if kind is dict else "a list"
        raise DecodeError(f"{path or 'the body'}: expected {expected}")


def _list(obj: dict, camel: str, snake: str, path: str) -> list:
    value = _get(obj, camel, snake)
    if value is None:
        return []
    _expect(value, list, f"{path}.{camel}" if path else camel)
    return value


def _object(obj: dict, camel: str, snake: str, path: str) -> dict:
    value = _get(obj, camel, snake)
    if value is None:
        return {}
    _expect(value, dict, f"{path}.{camel}")
    return value


def _as_str(value) -> str:
    """An id as sent, made safe to echo back in `error_message` (UTF-8, no NUL, bounded)."""
    if not isinstance(value, str):
        return ""
    safe = value[:64].encode("utf-8", "backslashreplace").decode("utf-8")
    return safe.replace("\x00", "\\x00")


def _json_text(value, where: str) -> str:
    if not isinstance(value, str):
        raise _SpanProblem(f"{where}: expected a string")
    return _text(value, where)


def _json_hex_id(value, size: int, what: str, *, required: bool) -> str:
    if value in (None, ""):
        raw = b""
    elif not isinstance(value, str) or len(value) != 2 * size:
        raise _SpanProblem(f"{what} must be {2 * size} hex digits")
    else:
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raise _SpanProblem(f"{what} must be {2 * size} hex digits") from None
    return _hex_id(raw, size, what, required=required)


def _json_int(value, where: str, low: int, high: int) -> int:
    if isinstance(value, bool):
        raise _SpanProblem(f"{where}: expected an integer")
    if isinstance(value, str):
        try:
            value = int(value.strip(), 10)
        except ValueError:
            raise _SpanProblem(f"{where}: {value[:40]!r} is not an integer") from None
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise _SpanProblem(f"{where}: expected an integer")
    if not low <= value <= high:
        raise _SpanProblem(f"{where}: {value} is out of range")
    return value


def _json_uint(value, where: str) -> int:
    return 0 if value is None else _json_int(value, where, 0, _UINT64_MAX)


def _json_attributes(obj: dict, path: str, what: str, depth: int = 0) -> dict:
    result = {}
    for index, key_value in enumerate(_list(obj, "attributes", "attributes", path)):
        _expect(key_value, dict, f"{path}.attributes[{index}]")
        key = _json_text(key_value.get("key", ""), f"{what} key")
        result[key] = _json_value(key_value.get("value"), f"{what} {_short(key)!r}", depth)
    return result


def _json_value(value, where: str, depth: int):
    if depth >= MAX_VALUE_DEPTH:
        raise _SpanProblem(f"{where}: nested deeper than {MAX_VALUE_DEPTH} levels")
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        raise _SpanProblem(f"{where}: expected an AnyValue object")
    if "stringValue" in value or "string_value" in value:
        return _json_text(_get(value, "stringValue", "string_value"), where)
    if "boolValue" in value or "bool_value" in value:
        flag = _get(value, "boolValue", "bool_value")
        if not isinstance(flag, bool):
            raise _SpanProblem(f"{where}: expected true or false")
        return flag
    if "intValue" in value or "int_value" in value:
        return _json_int(_get(value, "intValue", "int_value"), where, _INT64_MIN, _INT64_MAX)
    if "doubleValue" in value or "double_value" in value:
        return _json_double(_get(value, "doubleValue", "double_value"), where)
    if "bytesValue" in value or "bytes_value" in value:
        encoded = _json_text(_get(value, "bytesValue", "bytes_value"), where)
        try:
            return base64.b64encode(base64.b64decode(encoded, validate=True)).decode("ascii")
        except (binascii.Error, ValueError):
            raise _SpanProblem(f"{where}: bytesValue is not base64") from None
    if "arrayValue" in value or "array_value" in value:
        array = _get(value, "arrayValue", "array_value") or {}
        items = array.get("values", []) if isinstance(array, dict) else None
        if not isinstance(items, list):
            raise _SpanProblem(f"{where}: arrayValue.values must be a list")
        return [_json_value(item, where, depth + 1) for item in items]
    if "kvlistValue" in value or "kvlist_value" in value:
        kvlist = _get(value, "kvlistValue", "kvlist_value") or {}
        if not isinstance(kvlist, dict) or not isinstance(kvlist.get("values", []), list):
            raise _SpanProblem(f"{where}: kvlistValue.values must be a list")
        result = {}
        for key_value in kvlist.get("values", []):
            if not isinstance(key_value, dict):
                raise _SpanProblem(f"{where}: kvlistValue entries must be objects")
            key = _json_text(key_value.get("key", ""), f"{where} key")
            result[key] = _json_value(key_value.get("value"), f"{where}.{_short(key)}", depth + 1)
        return result
    return None  # an AnyValue with only unknown fields is an empty value


def _json_double(value, where: str) -> float:
    if isinstance(value, bool):
        raise _SpanProblem(f"{where}: expected a number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[value]
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise _SpanProblem(f"{where}: expected a number")


# ---------------------------------------------------------------------------------------------
# Response bodies


def encode_export_response(
    decoded: Decoded,
    *,
    content_type: str,
    rejections: list[SpanRejection] = (),
    warnings: list[str] = (),
) -> bytes:
    """The 200 body: an ExportTraceServiceResponse, with `partial_success` when spans were
    rejected — by the decoder, or on receipt (``rejections``: what the receiver refused after
    decoding) — or ``warnings`` say what was accepted but not kept whole."""
    partial = partial_success([*decoded.rejections, *rejections], list(warnings))
    if _CONTENT_TYPES.get(content_type.split(";", 1)[0].strip().lower()) == JSON:
        if partial is None:
            return b"{}"
        body = {
            "partialSuccess": {
                "rejectedSpans": str(partial["rejected_spans"]),
                "errorMessage": partial["error_message"],
            }
        }
        return json.dumps(body).encode("utf-8")
    response = trace_service_pb2.ExportTraceServiceResponse()
    if partial is not None:
        response.partial_success.rejected_spans = partial["rejected_spans"]
        response.partial_success.error_message = partial["error_message"]
    return response.SerializeToString()


# gRPC status codes of the `google.rpc.Status` an error answer carries (OTLP/HTTP: "the response
# body for all HTTP 4xx and HTTP 5xx responses MUST be a Status message").
GRPC_INVALID_ARGUMENT = 3
GRPC_RESOURCE_EXHAUSTED = 8
GRPC_UNAVAILABLE = 14
_GRPC_CODE_OF_HTTP = {
    413: GRPC_RESOURCE_EXHAUSTED,
    429: GRPC_RESOURCE_EXHAUSTED,
    503: GRPC_UNAVAILABLE,
}


def response_media_type(content_type: str) -> str | None:
    """The encoding of a request's answer (that of the request), None for an unsupported one."""
    return _CONTENT_TYPES.get(content_type.split(";", 1)[0].strip().lower())


def error_status_code(status: int) -> int:
    """The gRPC code of an error answer's `google.rpc.Status`, by its HTTP status."""
    return _GRPC_CODE_OF_HTTP.get(status, GRPC_INVALID_ARGUMENT)


def encode_error_status(status: int, message: str, *, content_type: str) -> bytes:
    """An error answer's body: a `google.rpc.Status` {code, message} in the request's encoding
    (protobuf written by hand: two fields, so no dependency on googleapis-common-protos)."""
    code = error_status_code(status)
    if response_media_type(content_type) == JSON:
        return json.dumps({"code": code, "message": message}).encode("utf-8")
    text = message.encode("utf-8", "backslashreplace")
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)
