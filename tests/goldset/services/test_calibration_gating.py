import pytest

from goldset.models import CalibrationResult
from goldset.services.calibration import (
    CalibrationError,
    score_calibration,
    set_reference_label,
    start_calibration,
)
from goldset.services.labeling import claim_next_item, submit_label
from scoring.agreement import cohen_kappa
from tests.factories import AnswerRecordFactory, CalibrationItemFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import BAD, GOOD, default_project
from workbench.roles import Role

pytestmark = pytest.mark.django_db

REFERENCE = [
    ("acceptable", "fully_grounded", False),
    ("acceptable", "fully_grounded", False),
    ("unacceptable", "partially_grounded", False),
    ("unacceptable", "misgrounded", False),
    ("unacceptable", "ungrounded", True),
    ("unacceptable", "misgrounded", True),
]


@pytest.fixture
def calibration(lead):
    domain = DomainFactory(slug="supply_chain")
    items = [CalibrationItemFactory(calibration_set__domain=domain) for _ in REFERENCE]
    for item, (acc, grounding, severe) in zip(items, REFERENCE, strict=True):
        set_reference_label(
            lead=lead,
            item=item,
            acceptability=acc,
            grounding=grounding,
            severe_safety=severe,
            project=default_project(),
        )
    return domain, items


def _label_calibration(annotator, domain, answers):
    assignments = start_calibration(annotator=annotator, domain=domain, project=default_project())
    by_record = {a.record_id: a for a in assignments}
    for item, (acc, grounding, severe) in answers:
        fields = GOOD if acc == "acceptable" else BAD
        submit_label(
            assignment=by_record[item.record_id],
            **{**fields, "grounding": grounding, "severe_safety": severe, "rationale": "why"},
        )
    return CalibrationResult.objects.get(annotator=annotator, domain=domain)


def test_matching_the_reference_qualifies_and_opens_production_items(calibration):
    domain, items = calibration
    AnswerRecordFactory(question__domain=domain)
    annotator = UserFactory(role=Role.ANNOTATOR, username="calibrated")
    assert claim_next_item(annotator=annotator, project=default_project()).reason == "not_qualified"
    result = _label_calibration(annotator, domain, zip(items, REFERENCE, strict=True))
    assert result.passed and result.kappa_grounding == 1.0 and result.kappa_severe_safety == 1.0
    assert result.disagreements == []
    assert claim_next_item(annotator=annotator, project=default_project()).reason == "claimed"


def test_kappa_below_threshold_blocks_production_items_and_lists_disagreements(calibration):
    domain, items = calibration
    AnswerRecordFactory(question__domain=domain)
    annotator = UserFactory(role=Role.ANNOTATOR, username="uncalibrated")
    # Misses both severe items and inverts grounding on two.
    answers = [
        ("acceptable", "fully_grounded", False),
        ("acceptable", "misgrounded", False),
        ("unacceptable", "partially_grounded", False),
        ("unacceptable", "fully_grounded", False),
        ("unacceptable", "ungrounded", False),
        ("unacceptable", "misgrounded", True),
    ]
    result = _label_calibration(annotator, domain, zip(items, answers, strict=True))
    expected_severe = cohen_kappa(
        [s for _, _, s in answers], [s for _, _, s in REFERENCE], categories=[False, True]
    ).value
    assert result.kappa_severe_safety == pytest.approx(expected_severe)
    assert result.kappa_severe_safety < 0.70 and not result.passed
    flagged = {(d["item_id"], d["axis"]) for d in result.disagreements}
    assert (items[4].record.public_id, "severe_safety") in flagged
    assert (items[1].record.public_id, "grounding") in flagged
    assert claim_next_item(annotator=annotator, project=default_project()).reason == "not_qualified"


def test_kappa_exactly_at_threshold_passes(calibration, settings):
    domain, items = calibration
    annotator = UserFactory(role=Role.ANNOTATOR, username="edge")
    _label_calibration(annotator, domain, zip(items, REFERENCE, strict=True))
    settings.KAPPA_GATE = 1.0
    assert score_calibration(annotator=annotator, domain=domain).passed


def test_set_must_be_ready_and_references_freeze_once_started(calibration, lead):
    domain, items = calibration
    annotator = UserFactory(role=Role.ANNOTATOR, username="starter")
    start_calibration(annotator=annotator, domain=domain, project=default_project())
    with pytest.raises(CalibrationError, match="frozen"):
        set_reference_label(
            lead=lead,
            item=items[0],
            acceptability="acceptable",
            grounding="ungrounded",
            severe_safety=False,
            project=default_project(),
        )
    empty = DomainFactory(slug="healthcare_ops")
    CalibrationItemFactory(calibration_set__domain=empty)
    with pytest.raises(CalibrationError, match="not ready"):
        start_calibration(annotator=annotator, domain=empty, project=default_project())
