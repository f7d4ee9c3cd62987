import datetime as dt

import pytest
from django.db import connection

from goldset.imports import bulk
from goldset.models import (
    AnswerCitation,
    AnswerRecord,
    OutboxMessage,
    Project,
    Question,
    ReceivedTrace,
    RecordStatus,
    TraceStatus,
    default_project_id,
)
from tests.factories import AnswerRecordFactory, BlockVersionFactory, QuestionFactory

pytestmark = pytest.mark.django_db


def test_rows_given_as_tuples_are_stored_with_every_other_field_defaulted():
    template = AnswerRecordFactory()
    names = (
        "project_id",
        "public_id",
        "run_id",
        "question_id",
        "domain_id",
        "queue_rank",
        "answer",
        "model",
        "extra",
        "tier",
        "routing_rule",
        "rules_version",
        "labels_required",
    )
    rows = [
        (
            default_project_id(),
            f"bulk-{n}",
            template.run_id,
            QuestionFactory().pk,
            template.domain_id,
            n,
            f"Answer {n}",
            {"generator": "g", "layers": [n, None]},
            {"tokens": {"in": n}},
            "triage",
            "default",
            1,
            1,
        )
        for n in range(2)
    ]

    ids = bulk.insert_rows(AnswerRecord, names, rows, ids=True)

    stored = list(AnswerRecord.objects.filter(pk__in=ids).order_by("public_id"))
    assert [r.pk for r in stored] == ids
    first = stored[0]
    assert (first.public_id, first.answer, first.queue_rank) == ("bulk-0", "Answer 0", 0)
    assert first.model == {"generator": "g", "layers": [0, None]}
    assert first.extra == {"tokens": {"in": 0}}
    assert (first.status, first.assigned_count, first.spot_check) == (
        RecordStatus.LABELING,
        0,
        False,
    )
    assert first.spot_check_week == "" and first.finalized_at is None
    assert first.created_at is not None and first.created_at == stored[1].created_at


def test_rows_without_ids_return_none_and_an_empty_batch_stores_nothing():
    record = AnswerRecordFactory()
    version = BlockVersionFactory()
    names = ("record_id", "block_version_id", "passage_ref", "position")
    assert bulk.insert_rows(AnswerCitation, names, []) is None
    assert bulk.insert_rows(AnswerCitation, names, [(record.pk, version.pk, "p", 0)]) is None
    assert list(AnswerCitation.objects.values_list("record_id", "passage_ref")) == [
        (record.pk, "p")
    ]


def test_a_field_with_a_default_per_row_must_be_given(postgres):
    before = OutboxMessage.objects.count()
    with pytest.raises(ValueError, match="goldset.OutboxMessage.payload has a default per row"):
        bulk.insert_rows(OutboxMessage, ("kind",), [("k",)])
    assert OutboxMessage.objects.count() == before


def test_one_of_matches_ids_holding_array_syntax():
    odd = QuestionFactory(question_id='q-{"a",b}\\').question_id
    QuestionFactory(question_id="q-plain")
    QuestionFactory(question_id="q-other")

    found = Question.objects.filter(question_id__in=bulk.one_of([odd, "q-plain", "q-missing"]))

    assert sorted(found.values_list("question_id", flat=True)) == sorted([odd, "q-plain"])
    assert not Question.objects.filter(question_id__in=bulk.one_of([])).exists()


def test_update_rows_sets_each_rows_own_values_in_one_statement(django_assert_num_queries):
    project = Project.objects.get(pk=default_project_id())
    traces = [ReceivedTrace.objects.create(project=project, trace_id=f"{n:032x}") for n in (1, 2)]
    day = dt.date(2026, 11, 27)
    rows = [
        (traces[0].pk, TraceStatus.DROPPED, "", [3, 1], day, None),
        (traces[1].pk, TraceStatus.REJECTED, 'no answer: it\'s "quoted"', None, None, None),
    ]
    names = ("status", "reason", "capped_rules", "capped_on", "record_id")
    expected = 1 if connection.vendor == "postgresql" else 2  # bulk_update: a transaction too
    with django_assert_num_queries(expected, exact=False):
        bulk.update_rows(ReceivedTrace, names, rows)
    got = ReceivedTrace.objects.order_by("pk").values_list(*names)
    assert [tuple(row) for row in got] == [
        ("dropped", "", [3, 1], day, None),
        ("rejected", 'no answer: it\'s "quoted"', None, None, None),
    ]


def test_insert_missing_rows_keeps_what_is_there_and_defaults_the_rest():
    project = Project.objects.get(pk=default_project_id())
    ReceivedTrace.objects.create(project=project, trace_id="a" * 32, status=TraceStatus.MAPPED)
    rows = [(project.pk, "a" * 32), (project.pk, "b" * 32)]
    bulk.insert_missing_rows(ReceivedTrace, ("project_id", "trace_id"), rows)
    bulk.insert_missing_rows(ReceivedTrace, ("project_id", "trace_id"), rows)  # again: nothing
    traces = {t.trace_id: t for t in ReceivedTrace.objects.all()}
    assert set(traces) == {"a" * 32, "b" * 32}
    assert traces["a" * 32].status == "mapped"
    new = traces["b" * 32]
    assert (new.status, new.reason, new.span_count, new.capped_rules) == ("pending", "", 0, None)
    assert new.received_at is not None and new.updated_at is not None
