import pytest

from goldset.models import AdjudicationReason, FinalSource, RecordStatus, Tier
from goldset.services.labeling import decide_outcome, in_audit_sample
from tests.factories import AnswerRecordFactory, DomainFactory
from tests.goldset.answers_helpers import (
    BAD,
    GOOD,
    claim_and_label,
    default_project,
    qualified_annotators,
)

pytestmark = pytest.mark.django_db

A, U = "acceptable", "unacceptable"
FULL, PART, MIS = "fully_grounded", "partially_grounded", "misgrounded"


def test_two_to_one_majority_is_final():
    outcome = decide_outcome([(A, FULL, False), (A, FULL, False), (U, MIS, False)])
    assert (outcome.status, outcome.source, outcome.acceptability, outcome.grounding) == (
        RecordStatus.FINAL,
        FinalSource.MAJORITY,
        A,
        FULL,
    )


def test_one_one_one_split_on_the_grounding_scale_goes_to_adjudication():
    outcome = decide_outcome([(A, FULL, False), (A, PART, False), (U, MIS, False)])
    assert outcome.status == RecordStatus.NEEDS_ADJUDICATION
    assert outcome.reason == AdjudicationReason.NO_MAJORITY


def test_any_severe_flag_goes_to_adjudication_even_with_unanimity():
    outcome = decide_outcome([(U, MIS, True), (U, MIS, False), (U, MIS, False)])
    assert (outcome.status, outcome.reason) == (
        RecordStatus.NEEDS_ADJUDICATION,
        AdjudicationReason.SEVERE_SAFETY,
    )


def test_two_label_spot_check_split_has_no_majority():
    assert decide_outcome([(A, FULL, False), (U, FULL, False)]).reason == "no_majority"


def test_audit_sample_is_reproducible_from_seed_9314_and_about_five_percent():
    ids = [f"item-{n:05d}" for n in range(4000)]
    first = [i for i in ids if in_audit_sample(i, project=default_project())[0]]
    again = [i for i in ids if in_audit_sample(i, seed=9314, project=default_project())[0]]
    other_seed = [i for i in ids if in_audit_sample(i, seed=1234, project=default_project())[0]]
    assert first == again and first != other_seed
    assert 0.04 <= len(first) / len(ids) <= 0.06


def test_majority_record_is_final_or_audit_sampled_with_the_draw_stored():
    domain = DomainFactory(slug="supply_chain")
    record = AnswerRecordFactory(question__domain=domain)
    annotators = qualified_annotators(domain, 3)
    claim_and_label(annotators[0])
    claim_and_label(annotators[1])
    claim_and_label(annotators[2], **BAD)
    record.refresh_from_db()
    sampled, draw = in_audit_sample(record.public_id, project=default_project())
    assert record.audit_seed == 9314 and record.audit_draw == draw
    assert record.in_audit_sample == sampled
    assert record.status == (RecordStatus.AUDIT if sampled else RecordStatus.FINAL)
    assert (record.final_acceptability, record.final_grounding) == (A, FULL)


def test_split_labels_put_the_record_in_the_adjudication_queue():
    domain = DomainFactory(slug="supply_chain")
    record = AnswerRecordFactory(question__domain=domain)
    one, two, three = qualified_annotators(domain, 3)
    claim_and_label(one, **GOOD)
    claim_and_label(two, **{**GOOD, "grounding": PART})
    claim_and_label(three, **BAD)
    record.refresh_from_db()
    assert (record.status, record.adjudication_reason, record.final_acceptability) == (
        RecordStatus.NEEDS_ADJUDICATION,
        AdjudicationReason.NO_MAJORITY,
        "",
    )


def test_triage_record_is_final_after_one_label_unless_spot_checked():
    domain = DomainFactory(slug="supply_chain")
    records = [
        AnswerRecordFactory(question__domain=domain, tier=Tier.TRIAGE, labels_required=1)
        for _ in range(30)
    ]
    (annotator,) = qualified_annotators(domain, 1)
    for _ in records:
        claim_and_label(annotator)
    statuses = {r.pk: r for r in type(records[0]).objects.all()}
    checked = [r for r in statuses.values() if r.spot_check]
    assert all(r.spot_check_seed == 1003 and r.spot_check_week for r in statuses.values())
    assert all(r.labels_required == 2 and r.status == RecordStatus.LABELING for r in checked)
    assert all(
        r.status == RecordStatus.FINAL and r.final_source == FinalSource.SINGLE
        for r in statuses.values()
        if not r.spot_check
    )
