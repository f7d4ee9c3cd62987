import pytest

from goldset.models import LabelAssignment
from goldset.services.labeling import (
    QUEUE_SHUFFLE_SEED,
    claim_next_item,
    shuffle_key,
    submit_label,
)
from tests.factories import AnswerRecordFactory, DomainFactory, RunFactory, UserFactory
from tests.goldset.answers_helpers import GOOD, default_project, qualified_annotators
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def domain():
    return DomainFactory(slug="supply_chain")


def test_unqualified_annotator_gets_no_production_items(domain):
    AnswerRecordFactory(question__domain=domain)
    newcomer = UserFactory(role=Role.ANNOTATOR, username="newcomer")
    result = claim_next_item(annotator=newcomer, project=default_project())
    assert result.assignment is None and result.reason == "not_qualified"


def test_queue_order_is_the_seeded_per_annotator_shuffle_and_mixes_systems(domain):
    runs = [RunFactory() for _ in range(3)]
    records = [AnswerRecordFactory(question__domain=domain, run=runs[n % 3]) for n in range(12)]
    (annotator,) = qualified_annotators(domain, 1)
    order = []
    for _ in records:
        assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
        order.append(assignment.record.public_id)
        assert assignment.shuffle_seed == QUEUE_SHUFFLE_SEED == 6601
        submit_label(assignment=assignment, **GOOD)
    expected = sorted(
        (r.public_id for r in records),
        key=lambda p: shuffle_key(seed=6601, annotator_id=annotator.pk, public_id=p),
    )
    assert order == expected
    first_four_systems = {next(r.run_id for r in records if r.public_id == p) for p in order[:6]}
    assert len(first_four_systems) > 1


def test_shuffle_differs_between_annotators_and_is_stable():
    ids = [f"rec{n}" for n in range(20)]
    a = sorted(ids, key=lambda p: shuffle_key(seed=6601, annotator_id=1, public_id=p))
    b = sorted(ids, key=lambda p: shuffle_key(seed=6601, annotator_id=2, public_id=p))
    assert a != b
    assert a == sorted(ids, key=lambda p: shuffle_key(seed=6601, annotator_id=1, public_id=p))


def test_open_claim_is_resumed_and_never_the_same_record_twice(domain):
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    first = claim_next_item(annotator=annotator, project=default_project())
    again = claim_next_item(annotator=annotator, project=default_project())
    assert first.reason == "claimed" and again.reason == "resumed"
    assert first.assignment.pk == again.assignment.pk
    submit_label(assignment=first.assignment, **GOOD)
    assert claim_next_item(annotator=annotator, project=default_project()).reason == "queue_empty"


def test_a_gold_record_gets_exactly_three_distinct_annotators(domain):
    record = AnswerRecordFactory(question__domain=domain)
    annotators = qualified_annotators(domain, 4)
    claimed = [
        claim_next_item(annotator=a, project=default_project()).assignment for a in annotators
    ]
    assert sum(1 for c in claimed if c is not None) == 3
    slots = sorted(LabelAssignment.objects.filter(record=record).values_list("slot", flat=True))
    assert slots == [1, 2, 3]


def test_load_stays_within_ten_percent_of_the_fair_share(domain):
    for _ in range(20):
        AnswerRecordFactory(question__domain=domain)
    annotators = qualified_annotators(domain, 4)
    eager = annotators[0]
    taken = 0
    while True:
        result = claim_next_item(annotator=eager, project=default_project())
        if result.assignment is None:
            break
        submit_label(assignment=result.assignment, **GOOD)
        taken += 1
    fair = 20 * 3 / 4
    assert result.reason == "share_reached"
    assert fair <= taken <= fair * 1.10
