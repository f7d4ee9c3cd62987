import pytest

from goldset.imports import bulk
from goldset.models import (
    AnswerCitation,
    AnswerRecord,
    OutboxMessage,
    Question,
    RecordStatus,
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
