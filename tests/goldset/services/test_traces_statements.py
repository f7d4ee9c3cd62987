"""The traces path at production rates (issue 28, ≥ 1,000 spans/s): the receiver's store stage
and the worker's mapping batch take as many statements for many traces as for a few (the
statements of a batch do not grow per span or per trace), and storing the sampled traces'
records together still refuses only the trace the database refuses."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from goldset.models import AnswerRecord, Domain, ReceivedTrace, RetrievedPassage, UnmatchedPassage
from goldset.services.answer_imports import import_answer_logs
from goldset.services.traces import map_pending_traces, receive_spans
from goldset.traces.decode import decode_export_request
from goldset.traces.stored import question_id_for
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    DomainFactory,
    QuestionFactory,
    default_project,
)
from tests.goldset.otlp_support import PROTOBUF, pipeline_spans, protobuf_body
from tests.goldset.rules.traces_support import CORPUS

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    domain = DomainFactory(slug="controls")
    document = DocumentFactory(domain=domain, document_id="doc-AC-2")
    BlockVersionFactory(block=BlockFactory(block_id="AC-2", document=document), text=CORPUS["AC-2"])
    return default_project()


def traces(count: int, *, first: int = 0) -> list[list]:
    """The spans of ``count`` pipeline runs, each a question of its own (a new question, a
    record, a matched and an unmatched passage each)."""
    return [
        pipeline_spans("openinference", question=f"How are system accounts reviewed, case {n}?")[0]
        for n in range(first, first + count)
    ]


def decoded(runs):
    body = protobuf_body([span for spans in runs for span in spans])
    return decode_export_request(body, content_type=PROTOBUF)


def statements(work) -> int:
    with CaptureQueriesContext(connection) as queries:
        work()
    return len(queries)


def test_the_store_stage_and_the_mapping_take_as_many_statements_for_many_traces(
    project, django_capture_on_commit_callbacks
):
    # a first trace creates what every later one reuses: the mapping's outbox message, the
    # system, the domain's label load
    with django_capture_on_commit_callbacks(execute=False):
        receive_spans(project=project, decoded=decoded(traces(1, first=100)))
    map_pending_traces(project_id=project.pk)
    few, many = traces(2), traces(12, first=2)
    with django_capture_on_commit_callbacks(execute=False):
        received_few = statements(lambda: receive_spans(project=project, decoded=decoded(few)))
    mapped_few = statements(lambda: map_pending_traces(project_id=project.pk))
    with django_capture_on_commit_callbacks(execute=False):
        received_many = statements(lambda: receive_spans(project=project, decoded=decoded(many)))
    mapped_many = statements(lambda: map_pending_traces(project_id=project.pk))
    # every trace became a record (no sampling rule: all are sampled), with its passages
    assert AnswerRecord.objects.count() == 15
    assert RetrievedPassage.objects.count() == 15 and UnmatchedPassage.objects.count() == 15
    assert received_many == received_few
    assert mapped_many == mapped_few


def test_a_trace_the_database_refuses_is_rejected_alone_and_the_batch_is_stored(
    project, admin_user
):
    """An answer log already holds a run named like one trace's run, answering its question:
    that trace's record breaks the one-record-per-run-and-question constraint. The batch is
    stored again one trace at a time, so only that trace is rejected."""
    runs = traces(3)
    clash = runs[1]
    trace_id = f"{clash[-1].context.trace_id:032x}"
    question = "How are system accounts reviewed, case 1?"
    line = {
        "run_id": f"trace-{trace_id}",
        "system_id": "uploaded",
        "question_id": question_id_for(question),
        "answer": "An uploaded answer.",
    }
    QuestionFactory(
        question_id=question_id_for(question),
        domain=Domain.objects.get(slug="controls"),
        text=question,
    )
    import_answer_logs(project=project, source=json.dumps(line) + "\n", actor=admin_user)
    receive_spans(project=project, decoded=decoded(runs))
    summary = map_pending_traces(project_id=project.pk)
    assert summary["mapped"] == 2 and summary["rejected"] == 1
    rejected = ReceivedTrace.objects.get(status="rejected")
    assert rejected.trace_id == trace_id and "could not be stored" in rejected.reason
    assert AnswerRecord.objects.filter(trace__status="mapped").count() == 2
