"""Claims under real concurrency: PostgreSQL row locks (SKIP LOCKED) and the unique constraints."""

import threading
from collections import Counter

import pytest
from django.db import connection

from goldset.models import LabelAssignment
from goldset.services.labeling import claim_next_item, shuffle_key
from tests.factories import AnswerRecordFactory, DomainFactory, RunFactory
from tests.goldset.answers_helpers import default_project, qualified_annotators

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _race(users):
    barrier = threading.Barrier(len(users))
    results, errors = [], []

    def worker(user):
        try:
            barrier.wait()
            result = claim_next_item(annotator=user, project=default_project())
            results.append((user.pk, result.assignment.pk if result.assignment else None))
        except Exception as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(user,)) for user in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return results


def test_thirty_threads_claiming_at_once_fill_every_slot_exactly_once(postgres):
    domain = DomainFactory(slug="supply_chain")
    runs = [RunFactory() for _ in range(3)]
    records = [AnswerRecordFactory(question__domain=domain, run=runs[n % 3]) for n in range(10)]
    annotators = qualified_annotators(domain, 30)
    results = _race(annotators)
    assert all(assignment_id is not None for _, assignment_id in results)
    assignments = list(
        LabelAssignment.objects.filter(is_calibration=False).select_related("record")
    )
    assert len(assignments) == 30
    assert Counter(a.record_id for a in assignments) == {r.pk: 3 for r in records}
    assert max(Counter((a.record_id, a.annotator_id) for a in assignments).values()) == 1
    assert max(Counter((a.record_id, a.slot) for a in assignments).values()) == 1
    for a in assignments:  # the recorded order key is reproducible from seed 6601
        assert a.shuffle_seed == 6601
        assert a.shuffle_key == shuffle_key(
            seed=6601, annotator_id=a.annotator_id, public_id=a.record.public_id
        )


def test_one_annotators_simultaneous_claims_yield_one_item(postgres):
    domain = DomainFactory(slug="supply_chain")
    for _ in range(5):
        AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    results = _race([annotator] * 30)
    assert len({assignment_id for _, assignment_id in results}) == 1
    assert LabelAssignment.objects.filter(annotator=annotator).count() == 1


def test_a_record_passed_over_during_a_claim_is_not_left_locked(postgres):
    """A claim that cannot take a record must release its row lock before trying the next one;
    holding it while waiting on another claim's record is how two claims deadlock."""
    import psycopg
    from django.db import transaction

    from goldset.services.labeling import _claim_or_release

    domain = DomainFactory(slug="supply_chain")
    record = AnswerRecordFactory(question__domain=domain, run=RunFactory())
    (annotator,) = qualified_annotators(domain, 1)
    assert (
        claim_next_item(annotator=annotator, project=default_project()).assignment.record_id
        == record.pk
    )
    db = connection.settings_dict
    other = psycopg.connect(
        host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"], dbname=db["NAME"]
    )
    try:
        with transaction.atomic():
            # The annotator already holds a slot on this record, so the attempt cannot claim it.
            assert _claim_or_release(annotator, record.pk, skip_locked=False) is None
            free = other.execute(
                "SELECT id FROM goldset_answerrecord WHERE id = %s FOR UPDATE SKIP LOCKED",
                [record.pk],
            ).fetchall()
            other.rollback()
        assert free == [(record.pk,)]
    finally:
        other.close()
