"""The OTLP/HTTP traces receiver (issue 28): a trace exported by the real OpenTelemetry SDK (both
conventions, protobuf and JSON) becomes an answer record routed like an uploaded answer log,
with its passages matched to the corpus or kept as unmatched; a batch sent again creates
nothing; spans split over requests are mapped once the trace is whole; bad bodies get the
OTLP/HTTP answers (400, 413, 415, partial_success) and store nothing; back-pressure is a 429
with Retry-After; tokens and roles are refused as elsewhere in the API. The mapping task runs
in the request's commit (the test overlay's eager Celery)."""

import gzip
import json

import psycopg
import pytest
from django.db import connection
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from goldset.models import (
    AnswerRecord,
    Domain,
    Project,
    Question,
    ReceivedSpan,
    ReceivedTrace,
    RetrievedPassage,
    Run,
    System,
    TraceStatus,
    UnmatchedPassage,
)
from goldset.models.routing import Tier
from goldset.services.answer_imports import import_answer_logs
from goldset.services.projects import grant_role
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    DomainFactory,
    UserFactory,
    default_project,
)
from tests.goldset.otlp_support import (
    JSON,
    PROTOBUF,
    error_status,
    json_body,
    otlp_url,
    partial_success,
    pipeline_spans,
    post,
    protobuf_body,
    write_token,
)
from tests.goldset.rules.traces_support import BODIES, CHAT_MODEL, CORPUS, QUESTION, SERVICE
from workbench.roles import Role

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"


@pytest.fixture
def project():
    return default_project()


@pytest.fixture
def domain(project):
    return DomainFactory(slug="controls", name="Security controls")


@pytest.fixture
def token(admin_user):
    return write_token(admin_user)


@pytest.fixture
def send(client, project, token, django_capture_on_commit_callbacks):
    """POST a body as the admin's write token; the mapping queued at commit runs at once."""

    def send(body, *, content_type=PROTOBUF, target=None, **headers):
        with django_capture_on_commit_callbacks(execute=True):
            return post(
                client, target or project, body, token=token, content_type=content_type, **headers
            )

    return send


def corpus_block(block_id, domain):
    """A corpus block with the id the pipeline's retriever returns (one block per document)."""
    document = DocumentFactory(domain=domain, document_id=f"doc-{block_id}")
    return BlockVersionFactory(
        block=BlockFactory(block_id=block_id, document=document), text=CORPUS[block_id]
    )


def test_an_openinference_trace_becomes_a_record_with_matched_and_unmatched_passages(send, domain):
    matched = corpus_block("AC-2", domain)
    spans, run = pipeline_spans("openinference")
    response = send(protobuf_body(spans))
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == PROTOBUF
    assert partial_success(response) == (0, "")
    trace = ReceivedTrace.objects.get()
    assert (trace.status, trace.sampled_by, trace.span_count) == ("mapped", "all", len(spans))
    record = trace.record
    assert record.answer == run.answer
    assert record.question.text == QUESTION and record.question.domain == domain
    # the reranker's two documents, in its order: the corpus block matched, the other kept
    ranked = [doc_id for doc_id, _ in run.reranked]
    retrieved = list(RetrievedPassage.objects.filter(record=record))
    unmatched = list(UnmatchedPassage.objects.filter(record=record))
    # with the reranker's score, for the passage matched to the corpus as for the others
    assert [(p.rank, p.passage_ref, p.block_version, p.score) for p in retrieved] == [
        (ranked.index("AC-2") + 1, "AC-2", matched, dict(run.reranked)["AC-2"])
    ]
    assert [(p.passage_ref, p.text) for p in unmatched] == [
        (d, CORPUS[d]) for d in ranked if d != "AC-2"
    ]
    assert unmatched[0].score == dict(run.reranked)[unmatched[0].passage_ref]
    assert [c.passage_ref for c in record.citations.all()] == ["AC-2"]
    assert record.extra["trace"]["unmatched_citations"] == [d for d in run.citations if d != "AC-2"]
    # system identity where admins see it: the service, its version and the answering model
    system = record.run.system
    assert (
        system.system_id == f"{SERVICE['service.name']}@{SERVICE['service.version']}+{CHAT_MODEL}"
    )
    assert record.run.run_id == f"trace-{trace.trace_id}"
    assert record.model["name"] == CHAT_MODEL
    assert float(record.cost_usd) == pytest.approx(run.cost, abs=1e-6)
    root = next(s for s in spans if s.parent is None)  # latency: the root span's, in ms
    assert record.latency_ms == round((root.end_time - root.start_time) / 1_000_000)
    assert record.extra["tokens"] == {"input": run.input_tokens, "output": run.output_tokens}


def test_a_json_encoded_genai_trace_is_answered_in_json_and_mapped(send, domain):
    spans, run = pipeline_spans("genai")
    response = send(json_body(spans), content_type=JSON)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == JSON
    assert response.json() == {}
    record = ReceivedTrace.objects.get(status="mapped").record
    assert record.answer == run.answer
    assert UnmatchedPassage.objects.filter(record=record).count() == 3  # no corpus yet
    assert record.extra["trace"]["convention"] == "genai"


def test_a_trace_is_routed_exactly_like_an_uploaded_answer_log(send, domain, admin_user):
    """The same question answered through a trace and through an answer log: same tier, rule,
    rules version and labels (one routing rule, goldset.services.answer_imports.RecordRouter)."""
    spans, _ = pipeline_spans(
        "openinference", resource={**SERVICE, "goldset.task_type": "summarization"}
    )
    assert send(protobuf_body(spans)).status_code == 200
    traced = ReceivedTrace.objects.get().record
    line = {
        "run_id": "uploaded",
        "system_id": "uploaded-system",
        "question_id": traced.question.question_id,
        "answer": "An uploaded answer.",
    }
    import_answer_logs(project=traced.project, source=json.dumps(line) + "\n", actor=admin_user)
    uploaded = AnswerRecord.objects.get(run__run_id="uploaded")
    fields = ("tier", "routing_rule", "rules_version", "labels_required", "domain_id")
    assert [getattr(traced, f) for f in fields] == [getattr(uploaded, f) for f in fields]
    assert traced.tier == Tier.TRIAGE


def test_sending_the_same_batch_again_creates_nothing(send, domain):
    spans, _ = pipeline_spans("openinference")
    body = protobuf_body(spans)
    assert send(body).status_code == 200
    counts = [m.objects.count() for m in (ReceivedSpan, ReceivedTrace, AnswerRecord, Run, Question)]
    again = send(body)
    assert again.status_code == 200 and partial_success(again) == (0, "")
    assert (
        [m.objects.count() for m in (ReceivedSpan, ReceivedTrace, AnswerRecord, Run, Question)]
        == counts
        == [len(spans), 1, 1, 1, 1]
    )


def test_spans_split_over_two_requests_are_mapped_once_the_root_arrives(send, domain):
    spans, run = pipeline_spans("openinference")
    children, root = spans[:-1], spans[-1:]
    assert not root[0].parent
    assert send(protobuf_body(children)).status_code == 200
    trace = ReceivedTrace.objects.get()
    assert trace.status == "incomplete" and "no root span" in trace.reason
    assert not AnswerRecord.objects.exists()
    assert send(protobuf_body(root)).status_code == 200
    trace.refresh_from_db()
    assert trace.status == "mapped" and trace.record.answer == run.answer
    assert AnswerRecord.objects.count() == 1


def test_the_same_question_asked_again_is_one_question_with_two_records(send, domain):
    first, _ = pipeline_spans("openinference")
    second, _ = pipeline_spans("openinference", question="  how are SYSTEM accounts   reviewed? ")
    assert send(protobuf_body(first + second)).status_code == 200
    assert ReceivedTrace.objects.filter(status="mapped").count() == 2
    assert Question.objects.count() == 1 and AnswerRecord.objects.count() == 2
    assert System.objects.count() == 1 and Run.objects.count() == 2


def test_a_named_question_id_and_domain_file_the_trace_under_them(send, domain, project):
    other = DomainFactory(slug="audit", name="Audit")
    resource = {**SERVICE, "goldset.domain": "audit", "goldset.question_id": "prod-q-17"}
    spans, _ = pipeline_spans("openinference", resource=resource)
    assert send(protobuf_body(spans)).status_code == 200
    question = ReceivedTrace.objects.get().record.question
    assert (question.question_id, question.domain) == ("prod-q-17", other)


def test_a_trace_without_a_domain_in_a_project_of_several_is_rejected_naming_the_attribute(
    send, domain
):
    DomainFactory(slug="audit")
    spans, _ = pipeline_spans("openinference")
    response = send(protobuf_body(spans))
    assert response.status_code == 200  # refused in the answer (tests/…/test_otlp_bad_input.py)
    assert partial_success(response)[0] == len(spans)
    trace = ReceivedTrace.objects.get()
    assert trace.status == "rejected" and "goldset.domain" in trace.reason
    assert not AnswerRecord.objects.exists() and not Question.objects.exists()


def _attribute(request, span_index: int, key: str, value: str):
    span = request.resource_spans[0].scope_spans[0].spans[span_index]
    span.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))


@pytest.mark.parametrize("bad", ["nul", "utf8"])
def test_nul_or_invalid_utf8_in_an_attribute_rejects_its_trace_as_partial_success(
    send, domain, bad
):
    broken, _ = pipeline_spans("openinference")
    good, run = pipeline_spans("genai")
    request = encode_spans(broken + good)
    spans_of = {s.trace_id for s in request.resource_spans[0].scope_spans[0].spans}
    assert len(spans_of) == 2
    index = next(
        n
        for n, s in enumerate(request.resource_spans[0].scope_spans[0].spans)
        if s.name == "retrieve"
    )
    _attribute(request, index, "note", "a\x00b" if bad == "nul" else "MARKERXX")
    body = request.SerializeToString()
    if bad == "utf8":
        body = body.replace(b"MARKERXX", b"MARK\xff\xfeXX")
    response = send(body)
    assert response.status_code == 200
    rejected, message = partial_success(response)
    assert rejected == len(broken)  # the whole trace, not only the span
    assert ("NUL" if bad == "nul" else "invalid UTF-8") in message
    traces = dict(ReceivedTrace.objects.values_list("status", "record__answer"))
    assert traces == {"rejected": None, "mapped": run.answer}
    assert ReceivedSpan.objects.count() == len(good)  # nothing of the rejected trace


def test_a_nul_inside_a_json_message_rejects_the_trace_on_receipt(send, domain):
    """The attribute is clean text (its NUL is a JSON escape), so it passes the decoder; the
    message it carries holds a NUL, which the database cannot store: the trace is refused when
    it arrives, in the response."""
    spans, _ = pipeline_spans("genai")
    body = json.loads(json_body(spans))
    root = next(
        s for s in body["resourceSpans"][0]["scopeSpans"][0]["spans"] if not s.get("parentSpanId")
    )
    messages = [{"role": "user", "parts": [{"type": "text", "content": "What is\u0000 AC-2?"}]}]
    for attribute in root["attributes"]:
        if attribute["key"] == "gen_ai.input.messages":
            attribute["value"] = {"stringValue": json.dumps(messages)}
    assert "\\u0000" in json.dumps(body)
    response = send(json.dumps(body).encode(), content_type=JSON)
    assert response.status_code == 200
    rejected, message = partial_success(response)
    assert rejected == len(spans)
    assert f"of trace {root['traceId']}: the question contains a NUL character" in message
    trace = ReceivedTrace.objects.get()
    assert trace.status == "rejected" and "NUL" in trace.reason
    assert not AnswerRecord.objects.exists() and not Question.objects.exists()


def test_duplicate_span_ids_with_different_content_reject_their_trace(send, domain):
    spans, _ = pipeline_spans("openinference")
    body = json.loads(json_body(spans))
    scope = body["resourceSpans"][0]["scopeSpans"][0]
    twin = dict(scope["spans"][0], name="another name")
    scope["spans"].append(twin)
    response = send(json.dumps(body).encode(), content_type=JSON)
    assert response.status_code == 200
    rejected, message = partial_success(response)
    assert rejected == len(spans) + 1 and "different content" in message
    assert ReceivedTrace.objects.get().status == "rejected"
    assert not ReceivedSpan.objects.exists() and not AnswerRecord.objects.exists()


def test_a_rejected_span_drops_what_earlier_requests_stored_of_its_trace(send, domain):
    spans, _ = pipeline_spans("openinference")
    assert send(protobuf_body(spans[:1])).status_code == 200
    assert ReceivedSpan.objects.count() == 1
    body = json.loads(json_body(spans[1:]))
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["endTimeUnixNano"] = "1"
    response = send(json.dumps(body).encode(), content_type=JSON)
    assert partial_success(response)[0] == len(spans) - 1
    assert ReceivedTrace.objects.get().status == "rejected"
    assert not ReceivedSpan.objects.exists() and not AnswerRecord.objects.exists()


@pytest.mark.parametrize(
    ("content_type", "body"),
    [(PROTOBUF, b"\x0a\xff\xff\xff\xff\x0f"), (JSON, b'{"resourceSpans": [')],
)
def test_a_malformed_body_is_a_400_status_in_its_encoding(send, content_type, body):
    response = send(body, content_type=content_type)
    assert response.status_code == 400
    assert response["Content-Type"] == (PROBLEM if content_type == JSON else content_type)
    code, message = error_status(response)
    assert code == 3 and message
    assert not ReceivedTrace.objects.exists()


@pytest.mark.parametrize(
    ("content_type", "encoding"), [("text/plain", ""), ("application/xml", ""), (PROTOBUF, "br")]
)
def test_a_wrong_content_type_or_encoding_is_a_415(send, content_type, encoding):
    spans, _ = pipeline_spans("openinference")
    response = send(protobuf_body(spans), content_type=content_type, HTTP_CONTENT_ENCODING=encoding)
    assert response.status_code == 415
    assert response["Content-Type"] == PROBLEM
    assert not ReceivedSpan.objects.exists()


def test_a_gzip_body_is_accepted(send, domain):
    spans, run = pipeline_spans("openinference")
    response = send(gzip.compress(protobuf_body(spans)), HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 200
    assert ReceivedTrace.objects.get().record.answer == run.answer


def test_an_oversize_body_is_a_413_before_it_is_read(send, settings):
    settings.OTLP_MAX_BODY_BYTES = 1000
    settings.OTLP_RETRY_AFTER_SECONDS = 9
    response = send(b"\x00" * 1001)
    assert response.status_code == 413
    assert response["Retry-After"] == "9"  # harmless on a 413; the issue asks for it
    code, message = error_status(response)
    assert code == 8 and "1001" in message
    assert not ReceivedTrace.objects.exists()


def test_a_gzip_bomb_is_a_413(send, settings):
    settings.OTLP_MAX_BODY_BYTES = 1 << 20
    bomb = gzip.compress(b"\x00" * (64 << 20))
    assert len(bomb) < 1 << 20
    response = send(bomb, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 413 and response["Retry-After"]
    assert not ReceivedTrace.objects.exists()


def test_a_project_behind_on_mapping_answers_429_with_retry_after_and_stores_nothing(
    send, settings, project
):
    settings.OTLP_MAX_PENDING_TRACES = 1
    settings.OTLP_RETRY_AFTER_SECONDS = 7
    ReceivedTrace.objects.create(project=project, trace_id="a" * 32, status=TraceStatus.PENDING)
    spans, _ = pipeline_spans("openinference")
    response = send(protobuf_body(spans))
    assert response.status_code == 429
    assert response["Retry-After"] == "7"
    assert error_status(response)[0] == 8
    assert ReceivedTrace.objects.count() == 1 and not ReceivedSpan.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_a_busy_database_answers_503_with_retry_after_and_stores_nothing(
    client, project, token, settings, content_type
):
    """Another transaction holds the trace's row while the statement timeout is short: the
    receiver's lock wait ends in an OperationalError, answered 503 (the exporter retries)."""
    settings.OTLP_RETRY_AFTER_SECONDS = 4
    DomainFactory(slug="controls")
    spans, _ = pipeline_spans("openinference")
    trace_id = f"{spans[-1].context.trace_id:032x}"
    ReceivedTrace.objects.create(project=project, trace_id=trace_id, status="incomplete")
    db = connection.settings_dict
    dsn = f"host={db['HOST'] or '127.0.0.1'} port={db['PORT'] or 5432} dbname={db['NAME']}"
    with psycopg.connect(f"{dsn} user={db['USER']}") as holder:
        holder.execute(
            "SELECT 1 FROM goldset_receivedtrace WHERE trace_id = %s FOR UPDATE", [trace_id]
        )
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = '300ms'")
        try:
            response = post(client, project, BODIES[content_type](spans), token=token,
                            content_type=content_type)  # fmt: skip
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET statement_timeout")
    assert response.status_code == 503
    assert response["Retry-After"] == "4"
    assert error_status(response) == (14, "the database is busy; retry later")  # UNAVAILABLE
    assert not ReceivedSpan.objects.exists()
    assert ReceivedTrace.objects.get().status == "incomplete"


def test_tokens_and_roles_are_refused_as_elsewhere_in_the_api(
    client, project, annotator, lead, admin_user
):
    spans, _ = pipeline_spans("openinference")
    body = protobuf_body(spans)
    other = Project.objects.create(name="Other", slug="other-bot")
    outsider = UserFactory(username="outsider")
    grant_role(project=other, user=outsider, role=Role.ADMIN)
    cases = [
        (write_token(admin_user, scope="read"), 403),  # a read token only reads
        (write_token(annotator), 403),
        (write_token(lead), 403),
        (write_token(admin_user, project=other_project_of(admin_user, other)), 404),
        (write_token(outsider), 404),  # not a member of the default project
        ("gst_not-a-token", 401),
    ]
    for raw, expected in cases:
        response = post(client, project, body, token=raw)
        assert response.status_code == expected, (raw, response.content[:200])
        assert response["Content-Type"] == PROBLEM
    assert client.post(otlp_url(project), data=body, content_type=PROTOBUF).status_code == 401
    assert not ReceivedSpan.objects.exists()


def other_project_of(user, project):
    """``project``, with ``user`` a member there (a token may be limited to it)."""
    grant_role(project=project, user=user, role=Role.ADMIN)
    return project


def test_traces_go_to_the_project_of_the_url(
    client, admin_user, django_capture_on_commit_callbacks
):
    other = Project.objects.create(name="Other", slug="other-bot")
    other_project_of(admin_user, other)
    DomainFactory(slug="controls")  # the default project's: not the other's
    Domain.objects.create(project=other, slug="bot", name="Bot")
    spans, _ = pipeline_spans("openinference")
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, other, protobuf_body(spans), token=write_token(admin_user))
    assert response.status_code == 200
    trace = ReceivedTrace.objects.get()
    assert trace.project == other and trace.record.project == other
    assert trace.record.question.domain.slug == "bot"
