"""Bad input answered in the OTLP/HTTP response itself (issue 28: "each a 4xx or a
partial_success naming what was rejected"), through the live receiver endpoint in both
encodings: a trace without a question, an answer or a domain is refused when it arrives (its
spans counted in ``rejected_spans``, the message naming the trace, its root span and what is
missing), also when it completes over two requests; a span sent again later with the same ids
and other content is refused as a conflicting duplicate while an identical re-send changes
nothing; a retriever span over the 1,000-document cap is stored truncated to its first 1,000
and the answer says so (a warning: ``rejected_spans`` 0)."""

import pytest

from goldset.models import AnswerRecord, Question, ReceivedSpan, ReceivedTrace, UnmatchedPassage
from tests.factories import DomainFactory, default_project
from tests.goldset.otlp_support import (
    JSON,
    PROTOBUF,
    encoded,
    partial_success,
    pipeline_spans,
    post,
    request_of,
    spans_of,
    without_attributes,
    write_token,
)
from tests.goldset.rules.traces_support import SERVICE, provider, run_genai

pytestmark = pytest.mark.django_db
ENCODINGS = [PROTOBUF, JSON]


@pytest.fixture
def domain():
    return DomainFactory(slug="controls", name="Security controls")


@pytest.fixture
def send(client, admin_user, django_capture_on_commit_callbacks):
    """POST a request message in an encoding as the admin's write token; the mapping queued at
    commit runs at once."""
    token = write_token(admin_user)

    def send(request, content_type):
        with django_capture_on_commit_callbacks(execute=True):
            response = post(
                client,
                default_project(),
                encoded(request, content_type),
                token=token,
                content_type=content_type,
            )
        assert response.status_code == 200, response.content
        assert response["Content-Type"] == content_type
        return partial_success(response)

    return send


def ids(spans) -> tuple[str, str]:
    """(trace id, root span id) of the SDK spans of one trace, as the receiver names them."""
    root = next(s for s in spans if s.parent is None)
    return f"{root.context.trace_id:032x}", f"{root.context.span_id:016x}"


# what each case leaves out of the OpenInference pipeline (root and LLM call alike)
MISSING = {
    "question": (("input.value", "llm.input_messages"), "no question"),
    "answer": (("output.value", "llm.output_messages"), "no answer"),
}


@pytest.mark.parametrize("content_type", ENCODINGS)
@pytest.mark.parametrize("missing", ["question", "answer", "domain"])
def test_a_trace_missing_its_question_answer_or_domain_is_refused_in_the_response(
    send, domain, content_type, missing
):
    bad, _ = pipeline_spans("openinference")
    good, run = pipeline_spans(
        "genai", resource={**SERVICE, "goldset.domain": "controls"}, question="Who reviews logs?"
    )
    request = request_of(bad + good)  # one request, two traces
    if missing == "domain":
        DomainFactory(slug="audit", name="Audit")  # several domains, and the trace names none
        attribute, said = "goldset.domain", "no domain"
    else:
        prefixes, said = MISSING[missing]
        request = request_of(good)
        request.MergeFrom(without_attributes(request_of(bad), *prefixes))
        attribute = prefixes[0]
    rejected, message = send(request, content_type)
    trace_id, root_id = ids(bad)
    assert rejected == len(bad)
    assert f"span {root_id} of trace {trace_id}: {said}" in message and attribute in message
    # refused whole, nothing of it stored; the other trace of the request is mapped
    traces = dict(ReceivedTrace.objects.values_list("trace_id", "status"))
    assert traces == {trace_id: "rejected", ids(good)[0]: "mapped"}
    assert said in ReceivedTrace.objects.get(trace_id=trace_id).reason
    assert set(ReceivedSpan.objects.values_list("trace_id", flat=True)) == {ids(good)[0]}
    assert list(AnswerRecord.objects.values_list("answer", flat=True)) == [run.answer]


@pytest.mark.parametrize("content_type", ENCODINGS)
def test_a_trace_completed_by_a_later_request_is_refused_when_its_root_arrives(
    send, domain, content_type
):
    spans, _ = pipeline_spans("openinference")
    children, root = spans[:-1], spans[-1:]
    assert root[0].parent is None
    first = without_attributes(request_of(children), "llm.output_messages")
    assert send(first, content_type) == (0, "")
    assert ReceivedTrace.objects.get().status == "incomplete"
    rejected, message = send(without_attributes(request_of(root), "output.value"), content_type)
    trace_id, root_id = ids(spans)
    assert rejected == 1 and f"span {root_id} of trace {trace_id}: no answer" in message
    assert ReceivedTrace.objects.get().status == "rejected"
    assert not ReceivedSpan.objects.exists()  # the first request's spans dropped with it
    # the trace's spans sent again later are refused, naming why
    rejected, message = send(request_of(root), content_type)
    assert rejected == 1 and "its trace was rejected before: no answer" in message


@pytest.mark.parametrize("content_type", ENCODINGS)
def test_a_span_sent_again_with_other_content_is_refused_as_a_conflicting_duplicate(
    send, domain, content_type
):
    spans, run = pipeline_spans("openinference")
    assert send(request_of(spans), content_type) == (0, "")
    stored = dict(ReceivedSpan.objects.values_list("span_id", "payload"))
    record = AnswerRecord.objects.get()
    # an identical re-send is idempotent: nothing refused, nothing changed
    assert send(request_of(spans), content_type) == (0, "")
    changed = request_of(spans)
    retriever = next(s for s in spans_of(changed) if s.name == "retrieve")
    retriever.name = "retrieve again"
    rejected, message = send(changed, content_type)
    trace_id = ids(spans)[0]
    assert rejected == 1
    assert f"span {retriever.span_id.hex()} of trace {trace_id}: conflicting duplicate" in message
    assert dict(ReceivedSpan.objects.values_list("span_id", "payload")) == stored
    assert list(AnswerRecord.objects.all()) == [record] and record.answer == run.answer


@pytest.mark.parametrize("content_type", ENCODINGS)
def test_ten_thousand_retrieved_documents_are_stored_truncated_and_said(send, domain, content_type):
    corpus = {f"DOC-{n:05d}": f"system accounts note {n}" for n in range(10_000)}
    tracer_provider, exporter = provider()
    run = run_genai(tracer_provider.get_tracer("policy-bot"), corpus=corpus)
    spans = list(exporter.get_finished_spans())
    rejected, message = send(request_of(spans), content_type)
    trace_id = ids(spans)[0]
    assert rejected == 0  # a warning: every span is accepted, the trace keeps 1,000 documents
    assert message == (
        f"trace {trace_id}: 10000 retrieved documents; the first 1000 by rank are kept, "
        "9000 dropped"
    )
    record = AnswerRecord.objects.get()
    assert record.extra["trace"]["passages_dropped"] == 9000
    kept = list(UnmatchedPassage.objects.filter(record=record).order_by("rank"))
    assert [p.passage_ref for p in kept] == [doc_id for doc_id, _ in run.ranked[:1000]]
    assert Question.objects.count() == 1
