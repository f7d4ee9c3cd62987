from datetime import timedelta

import pytest
from django.utils import timezone

from goldset.models import ItemSkip, Label, LabelAssignment, RecordStatus
from goldset.selectors.answers import count_skips_by_annotator, get_undoable_label
from goldset.services.labeling import (
    ALL_CLEAR,
    SkipRefused,
    UndoRefused,
    all_clear_rationale_required,
    check_label_rules,
    claim_next_item,
    skip_item,
    submit_label,
    undo_last_label,
)
from tests.factories import AnswerRecordFactory, DomainFactory, QuestionFactory
from tests.goldset.answers_helpers import GOOD, claim_and_label, qualified_annotators
from tests.goldset.project_support import default_project
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def domain():
    return DomainFactory(slug="supply_chain")


def test_all_clear_preset_is_never_severe_and_passes_the_rules_without_rationale(domain):
    plain = QuestionFactory(domain=domain, conflict_flag=False)
    assert ALL_CLEAR["severe_safety"] is False and ALL_CLEAR["acceptability"] == "acceptable"
    assert all_clear_rationale_required(plain) is False
    check_label_rules(
        question=plain,
        rationale="",
        **{
            k: v
            for k, v in ALL_CLEAR.items()
            if k
            in {
                "acceptability",
                "grounding",
                "severe_safety",
                "primary_failure",
                "secondary_failures",
            }
        },
    )


def test_all_clear_on_a_conflict_flagged_item_needs_the_rationale(domain):
    flagged = QuestionFactory(domain=domain, conflict_flag=True)
    assert all_clear_rationale_required(flagged) is True


def test_undo_withdraws_the_last_label_reopens_the_item_and_releases_the_next_claim(domain):
    AnswerRecordFactory(question__domain=domain)
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    label = claim_and_label(annotator)
    following = claim_next_item(annotator=annotator).assignment
    assert get_undoable_label(annotator=annotator) == label

    reopened = undo_last_label(annotator=annotator)

    assert reopened.record_id == label.record_id and reopened.completed_at is None
    assert not Label.objects.exists()
    assert not LabelAssignment.objects.filter(pk=following.pk).exists()
    assert claim_next_item(annotator=annotator).assignment.pk == reopened.pk
    event = AuditEvent.objects.get(verb="label_undone")
    assert event.actor == annotator and event.detail["released"] == [following.record.public_id]


def test_undo_is_refused_after_the_window(domain, settings):
    settings.LABEL_UNDO_WINDOW_SECONDS = 120
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    label = claim_and_label(annotator)
    Label.objects.filter(pk=label.pk).update(created_at=timezone.now() - timedelta(seconds=121))
    assert get_undoable_label(annotator=annotator) is None
    with pytest.raises(UndoRefused, match="2 min"):
        undo_last_label(annotator=annotator)
    assert Label.objects.count() == 1


def test_undo_is_refused_once_the_item_is_resolved(domain):
    record = AnswerRecordFactory(question__domain=domain)
    annotators = qualified_annotators(domain, record.labels_required)
    for annotator in annotators:
        claim_and_label(annotator)
    record.refresh_from_db()
    assert record.status != RecordStatus.LABELING
    with pytest.raises(UndoRefused, match="already resolved"):
        undo_last_label(annotator=annotators[-1])


def test_undo_with_nothing_to_undo_is_refused(domain):
    (annotator,) = qualified_annotators(domain, 1)
    with pytest.raises(UndoRefused):
        undo_last_label(annotator=annotator)


def test_skip_frees_the_slot_is_counted_and_never_offers_the_item_again(domain):
    first = AnswerRecordFactory(question__domain=domain)
    second = AnswerRecordFactory(question__domain=domain)
    one, two = qualified_annotators(domain, 2)
    assignment = claim_next_item(annotator=one).assignment
    skipped = assignment.record

    skip = skip_item(assignment=assignment, reason="  outside my expertise ")

    assert skip.reason == "outside my expertise"
    assert not LabelAssignment.objects.filter(annotator=one).exists()
    following = claim_next_item(annotator=one).assignment
    assert following.record_id != skipped.pk and {first.pk, second.pk} >= {following.record_id}
    assert count_skips_by_annotator([one.pk, two.pk], project=default_project()) == {one.pk: 1}
    assert AuditEvent.objects.get(verb="skipped").detail["reason"] == "outside my expertise"
    # the freed slot is open to the others
    taken = {claim_next_item(annotator=two).assignment.record_id}
    submit_label(assignment=LabelAssignment.objects.get(annotator=two), **GOOD)
    taken.add(claim_next_item(annotator=two).assignment.record_id)
    assert skipped.pk in taken
    assert ItemSkip.objects.count() == 1


def test_skip_needs_a_reason_and_an_unlabeled_production_claim(domain):
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    assignment = claim_next_item(annotator=annotator).assignment
    with pytest.raises(SkipRefused, match="reason"):
        skip_item(assignment=assignment, reason="  ")
    submit_label(assignment=assignment, **GOOD)
    with pytest.raises(SkipRefused, match="undo"):
        skip_item(assignment=assignment, reason="changed my mind")
    assert not ItemSkip.objects.exists()


def test_skipping_a_lower_slot_keeps_slots_contiguous_so_the_next_claim_succeeds(domain):
    record = AnswerRecordFactory(question__domain=domain)
    one, two, three = qualified_annotators(domain, 3)
    first = claim_next_item(annotator=one).assignment
    second = claim_next_item(annotator=two).assignment
    assert (first.slot, second.slot) == (1, 2)
    skip_item(assignment=first, reason="conflict of interest")
    second.refresh_from_db()
    record.refresh_from_db()
    assert (second.slot, record.assigned_count) == (1, 1)
    third = claim_next_item(annotator=three).assignment
    assert (third.record_id, third.slot) == (record.pk, 2)
    assert claim_next_item(annotator=one).assignment is None
