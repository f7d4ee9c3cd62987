"""Issue 14: a failed calibration is not a dead end. The annotator asks for a retake, a lead
grants or declines it with a reason (audited), and a grant starts a fresh draw of the set
(unseen items first, reproducible from the recorded seed) scored by the unchanged pass rule."""

import pytest

from goldset.models import (
    CalibrationItem,
    CalibrationResult,
    CalibrationRetake,
    LabelAssignment,
    Notification,
    NotificationKind,
    RetakeStatus,
)
from goldset.rules.calibration import check_set_ready, draw_retake, offer_for
from goldset.services.calibration import (
    CalibrationError,
    decide_retake,
    request_retake,
    start_calibration,
)
from tests.factories import UserFactory
from tests.goldset.answers_helpers import default_project
from tests.goldset.inbox_support import (
    add_items,
    calibration_domain,
    fail_calibration,
    label_pending,
)
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def domain(lead):
    return calibration_domain(lead)


def test_a_failed_calibration_tells_the_annotator_and_passing_does_not(annotator, lead, domain):
    fail_calibration(annotator, domain)
    (note,) = Notification.objects.filter(recipient=annotator)
    assert note.kind == NotificationKind.CALIBRATION_FAILED
    assert domain.name in note.text and "retake" in note.text
    assert note.link.startswith("/p/default/answers/calibration/")
    other = UserFactory(role=Role.ANNOTATOR, username="passes")
    start_calibration(annotator=other, domain=domain, project=default_project())
    assert label_pending(other, domain, right=True).passed
    assert not Notification.objects.filter(recipient=other).exists()


def test_only_a_failed_calibration_can_be_retaken_and_asking_twice_is_one_request(
    annotator, lead, domain
):
    with pytest.raises(CalibrationError, match="did not pass"):
        request_retake(annotator=annotator, domain=domain)
    fail_calibration(annotator, domain)
    first = request_retake(annotator=annotator, domain=domain, message="I misread the scale.")
    again = request_retake(annotator=annotator, domain=domain, message="Please!")
    assert first.pk == again.pk and CalibrationRetake.objects.count() == 1
    (note,) = Notification.objects.filter(recipient=lead)
    assert note.kind == NotificationKind.RETAKE_REQUESTED
    assert note.text == f"ann-test asks to retake the {domain.name} calibration."
    assert AuditEvent.objects.filter(verb="calibration_retake_requested").count() == 1


def test_a_decision_needs_a_reason_and_a_decline_is_audited_and_told(annotator, lead, domain):
    fail_calibration(annotator, domain)
    retake = request_retake(annotator=annotator, domain=domain)
    with pytest.raises(CalibrationError, match="reason"):
        decide_retake(lead=lead, retake=retake, grant=False, reason="  ")
    decide_retake(lead=lead, retake=retake, grant=False, reason="Label ten more items first.")
    retake.refresh_from_db()
    assert (retake.status, retake.decided_by, retake.reason) == (
        RetakeStatus.DECLINED,
        lead,
        "Label ten more items first.",
    )
    event = AuditEvent.objects.get(verb="calibration_retake_declined")
    assert event.actor == lead and event.detail["reason"] == "Label ten more items first."
    told = Notification.objects.get(recipient=annotator, kind=NotificationKind.RETAKE_DECIDED)
    assert "declined" in told.text and "Label ten more items first." in told.text
    assert CalibrationResult.objects.get(annotator=annotator, domain=domain).passed is False
    with pytest.raises(CalibrationError, match="already answered"):
        decide_retake(lead=lead, retake=retake, grant=True, reason="Changed my mind.")
    # declined: the annotator may ask again
    assert request_retake(annotator=annotator, domain=domain).pk != retake.pk


def test_a_grant_starts_a_fresh_draw_of_unseen_items_from_a_recorded_seed(annotator, lead, domain):
    fail_calibration(annotator, domain)
    first_items = set(
        LabelAssignment.objects.filter(annotator=annotator).values_list("record_id", flat=True)
    )
    add_items(lead, domain)  # the pool grows: six items the annotator never saw
    retake = request_retake(annotator=annotator, domain=domain)
    decide_retake(lead=lead, retake=retake, grant=True, reason="Go ahead.")
    retake.refresh_from_db()
    assert retake.status == RetakeStatus.GRANTED and retake.attempt == 2
    assert retake.draw_seed is not None and len(retake.drawn_items) == 6
    drawn = set(
        LabelAssignment.objects.filter(annotator=annotator).values_list("record_id", flat=True)
    )
    assert len(drawn) == 6 and drawn.isdisjoint(first_items)
    assert not LabelAssignment.objects.filter(
        annotator=annotator, completed_at__isnull=False
    ).exists()
    # the failed attempt is kept on the request, and cleared
    assert retake.previous_attempt["result"]["passed"] is False
    assert len(retake.previous_attempt["labels"]) == 6
    assert not CalibrationResult.objects.filter(annotator=annotator, domain=domain).exists()
    # reproducible: the recorded seed and the pool give the same draw, a usable set
    pool = offer_for(domain.calibration_set, CalibrationItem.objects.select_related("record"))
    again = draw_retake(pool.items, seen_record_ids=first_items, size=6, seed=retake.draw_seed)
    assert [i.record.public_id for i in again] == retake.drawn_items
    assert check_set_ready(domain.calibration_set, again).ready
    assert AuditEvent.objects.get(verb="calibration_retake_started").detail["fresh"] == 6
    told = Notification.objects.get(recipient=annotator, kind=NotificationKind.RETAKE_DECIDED)
    assert "granted" in told.text
    # the same pass rule scores the new attempt
    result = label_pending(annotator, domain, right=True)
    assert result.passed and result.n_items == 6 and result.threshold == 0.70


def test_when_the_pool_has_no_unseen_items_the_draw_reorders_the_same_set(annotator, lead, domain):
    fail_calibration(annotator, domain)
    before = list(
        LabelAssignment.objects.filter(annotator=annotator)
        .order_by("shuffle_key")
        .values_list("record_id", flat=True)
    )
    retake = request_retake(annotator=annotator, domain=domain)
    decide_retake(lead=lead, retake=retake, grant=True, reason="Once more.")
    after = list(
        LabelAssignment.objects.filter(annotator=annotator)
        .order_by("shuffle_key")
        .values_list("record_id", flat=True)
    )
    assert sorted(after) == sorted(before) and after != before
    result = label_pending(annotator, domain, right=False)
    assert result.passed is False  # a second failure can be retaken again
    second = request_retake(annotator=annotator, domain=domain)
    decide_retake(lead=lead, retake=second, grant=True, reason="Last try.")
    second.refresh_from_db()
    assert second.attempt == 3 and second.draw_seed != retake.draw_seed


def test_a_draw_smaller_than_the_pool_stays_a_usable_set():
    """Pure rule: whatever the seed, a draw brings both severe-safety values and two grounding
    levels when the pool has them, and prefers unseen items."""

    class Item:
        def __init__(self, pk, grounding, severe):
            self.pk = self.record_id = pk
            self.reference_grounding, self.reference_severe_safety = grounding, severe
            self.reference_acceptability = "acceptable"
            self.has_reference = True

    pool = [Item(pk, "fully_grounded", False) for pk in range(1, 11)]
    pool += [Item(11, "ungrounded", True)]
    for seed in range(30):
        drawn = draw_retake(pool, seen_record_ids={1, 2}, size=4, seed=seed)
        assert len(drawn) == 4 and {1, 2}.isdisjoint(i.pk for i in drawn)
        assert {i.reference_severe_safety for i in drawn} == {False, True}
        assert len({i.reference_grounding for i in drawn}) == 2
        assert draw_retake(pool, seen_record_ids={1, 2}, size=4, seed=seed) == drawn
