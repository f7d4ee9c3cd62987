"""What a received span is stored as and what a mapped trace is filed under
(``goldset.traces.stored``): a span read back is the span decoded (NaN attributes included);
the same question asked with other case and spacing is one question id; a system id fits its
column and stays unique; the ``goldset.*`` attributes are read from the root, else the
resource, and a malformed one is refused naming it; error answers are real ``google.rpc.Status``
messages."""

import json
import math

import pytest
from google.rpc.status_pb2 import Status

from goldset.traces.decode import decode_export_request, encode_error_status, same_span
from goldset.traces.mapping import SystemIdentity, map_trace
from goldset.traces.stored import (
    SYSTEM_ID_LENGTH,
    FactsProblem,
    question_id_for,
    span_from_payload,
    span_payload,
    system_id_for,
    trace_facts,
)
from tests.goldset.rules.traces_support import (
    JSON,
    PROTOBUF,
    SERVICE,
    protobuf_body,
    provider,
    run_openinference,
)


def decoded_spans(resource=None, **root_attributes):
    tracer_provider, exporter = provider(resource)
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span("outer", attributes=root_attributes):
        run_openinference(tracer)
    body = protobuf_body(exporter.get_finished_spans())
    return decode_export_request(body, content_type=PROTOBUF).spans


def test_a_stored_span_reads_back_as_the_span_decoded_nan_included():
    spans = decoded_spans(score=math.nan, big=math.inf, note="ünïcode")
    for span in spans:
        text = span_payload(span)
        json.loads(text)  # JSON text (NaN is a Python JSON extension, which the reader keeps)
        again = span_from_payload(
            trace_id=span.trace_id,
            span_id=span.span_id,
            parent_span_id=span.parent_span_id,
            payload=text,
        )
        assert same_span(again, span)


def test_the_same_question_with_other_case_and_spacing_is_one_id():
    assert question_id_for("How are  accounts\treviewed?") == question_id_for(
        " how are ACCOUNTS reviewed? "
    )
    assert question_id_for("How are accounts reviewed?") != question_id_for("Who reviews them?")
    assert question_id_for("x").startswith("otlp-") and len(question_id_for("x")) == 29


def test_a_system_id_names_service_version_and_model_and_fits_its_column():
    assert system_id_for(SystemIdentity("bot", "1.2", "gpt-x")) == "bot@1.2+gpt-x"
    assert system_id_for(SystemIdentity("", "", "")) == "unknown-service"
    long_a = system_id_for(SystemIdentity("s" * 300, "1", "a"))
    long_b = system_id_for(SystemIdentity("s" * 300, "1", "b"))
    assert len(long_a) == len(long_b) == SYSTEM_ID_LENGTH and long_a != long_b


def test_goldset_attributes_come_from_the_root_else_the_resource():
    resource = {**SERVICE, "goldset.domain": "from-resource", "goldset.task_type": "retrieval"}
    spans = decoded_spans(resource, **{"goldset.domain": "from-root", "goldset.uncertainty": 0.8})
    record = map_trace(spans)
    facts = trace_facts(record, id_length=200, family_length=120)
    assert (facts.domain, facts.task_type, facts.uncertainty) == ("from-root", "retrieval", 0.8)
    assert (facts.question_id, facts.task_family) == ("", "production")


@pytest.mark.parametrize(
    ("attributes", "names"),
    [
        ({"goldset.uncertainty": 1.5}, "goldset.uncertainty"),
        ({"goldset.uncertainty": "high"}, "goldset.uncertainty"),
        ({"goldset.domain": " "}, "goldset.domain"),
        ({"goldset.question_id": 17}, "goldset.question_id"),
        ({"goldset.task_family": "f" * 121}, "goldset.task_family"),
    ],
)
def test_a_malformed_goldset_attribute_is_refused_naming_it(attributes, names):
    record = map_trace(decoded_spans(**attributes))
    with pytest.raises(FactsProblem, match=names):
        trace_facts(record, id_length=200, family_length=120)


@pytest.mark.parametrize(("status", "code"), [(400, 3), (413, 8), (429, 8), (503, 14)])
def test_error_answers_are_google_rpc_status_messages(status, code):
    message = "the body is not valid gzip ✗"
    parsed = Status.FromString(encode_error_status(status, message, content_type=PROTOBUF))
    assert (parsed.code, parsed.message) == (code, message)
    as_json = json.loads(encode_error_status(status, message, content_type=JSON))
    assert as_json == {"code": code, "message": message}
