"""The list pages' maintained counters and indexes (issue 17, migration 0027): the runs, export,
customers and calibration status pages read counters that must equal a direct count after every
kind of write (insert, update of the counted columns, delete), and the promotion page's partial
indexes must hold exactly the promotable cases."""

import pytest
from django.db.models import Count

from goldset.models import (
    AnswerRecord,
    ItemSkip,
    RecordStatus,
    Source,
    Tier,
    Triple,
    TripleState,
)
from goldset.selectors.answers import count_records_by_status, count_skips_by_annotator
from goldset.selectors.curation import counter_rows
from goldset.selectors.promotion import promotable_records_q, promotable_triples_q
from tests.factories import (
    AnswerRecordFactory,
    CustomerPermissionFactory,
    RunFactory,
    UserFactory,
)
from tests.goldset.answers_helpers import default_project
from tests.goldset.curation_support import write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def test_the_promotable_indexes_hold_the_rules():
    (triples,) = [i for i in Triple._meta.indexes if i.name == "triple_promotable"]
    assert str(Triple.objects.filter(triples.condition).query) == str(
        Triple.objects.filter(promotable_triples_q()).query
    )
    (records,) = [i for i in AnswerRecord._meta.indexes if i.name == "answer_record_promotable"]
    assert str(AnswerRecord.objects.filter(records.condition).query) == str(
        AnswerRecord.objects.filter(promotable_records_q()).query
    )


def _run_counts() -> dict[str, int]:
    return dict(counter_rows("run_status", project=default_project())["run_status"])


def _direct_run_counts() -> dict[str, int]:
    rows = AnswerRecord.objects.values("run_id", "status").annotate(n=Count("id"))
    return {f"{r['run_id']}|{r['status']}": r["n"] for r in rows}


def _direct_status_counts() -> dict[str, int]:
    rows = (
        AnswerRecord.objects.filter(is_calibration=False)
        .values("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    return dict(rows)


def test_record_counters_follow_inserts_status_changes_and_deletes():
    one, two = RunFactory(), RunFactory()
    records = [AnswerRecordFactory(run=one) for _ in range(3)] + [AnswerRecordFactory(run=two)]
    calibration = AnswerRecordFactory(run=two, is_calibration=True)
    assert (
        count_records_by_status(project=default_project())
        == _direct_status_counts()
        == {RecordStatus.LABELING: 4}
    )
    assert (
        _run_counts() == _direct_run_counts() == {f"{one.pk}|labeling": 3, f"{two.pk}|labeling": 2}
    )
    AnswerRecord.objects.filter(pk__in=[records[0].pk, records[3].pk]).update(
        status=RecordStatus.FINAL
    )
    AnswerRecord.objects.filter(pk=records[1].pk).update(status=RecordStatus.NEEDS_ADJUDICATION)
    AnswerRecord.objects.filter(pk=calibration.pk).update(is_calibration=False)
    AnswerRecord.objects.filter(pk=records[2].pk).delete()
    assert count_records_by_status(project=default_project()) == _direct_status_counts()
    assert count_records_by_status(project=default_project()) == {
        RecordStatus.LABELING: 1,
        RecordStatus.FINAL: 2,
        RecordStatus.NEEDS_ADJUDICATION: 1,
    }
    assert _run_counts() == _direct_run_counts()


def test_customer_counters_follow_their_triples(admin_user):
    acme = CustomerPermissionFactory(customer__slug="acme").customer
    author = UserFactory(role=Role.ANNOTATOR, username="cust-author")
    ours = [
        write_triple(author, source=Source.CUSTOMER_PERMISSIONED, customer=acme) for _ in range(3)
    ]
    write_triple(author)  # public: no customer, not counted
    Triple.objects.filter(pk=ours[0].pk).update(state=TripleState.GOLD, resolution="consensus")
    Triple.objects.filter(pk=ours[1].pk).update(tier=Tier.TRIAGE)  # not a counted column
    rows = dict(counter_rows("customer_triples", project=default_project())["customer_triples"])
    direct = (
        Triple.objects.filter(customer__isnull=False)
        .values("customer_id", "state")
        .annotate(n=Count("id"))
    )
    assert rows == {f"{r['customer_id']}|{r['state']}": r["n"] for r in direct}
    assert rows == {f"{acme.pk}|gold": 1, f"{acme.pk}|pending_review": 2}


def test_skip_counters_follow_skips():
    one, two, three = (UserFactory(role=Role.ANNOTATOR, username=f"skipper{i}") for i in range(3))
    records = [AnswerRecordFactory() for _ in range(3)]
    for record in records:
        ItemSkip.objects.create(record=record, annotator=one, reason="unclear")
    ItemSkip.objects.create(record=records[0], annotator=two, reason="unclear")
    ItemSkip.objects.filter(annotator=one, record=records[2]).delete()
    assert count_skips_by_annotator([one.pk, two.pk, three.pk], project=default_project()) == {
        one.pk: 2,
        two.pk: 1,
    }
    assert count_skips_by_annotator([], project=default_project()) == {}
