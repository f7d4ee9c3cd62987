"""Issue 12 item 4: adding calibration records to a set annotators have started never leaves the
domain without a way to qualify. Drafts get references; newcomers take the newest ready version;
sealed references stay frozen; earlier results stand."""

import importlib

import pytest
from django.apps import apps

from goldset.models import CalibrationItem, CalibrationResult, CalibrationSet, LabelAssignment
from goldset.services.calibration import (
    CalibrationError,
    offer_for,
    set_reference_label,
    start_calibration,
)
from goldset.services.labeling import claim_next_item, submit_label
from tests.factories import AnswerRecordFactory, CalibrationItemFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import BAD, GOOD, default_project
from workbench.models import AuditEvent
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
ADDED = [("acceptable", "partially_grounded", False), ("unacceptable", "ungrounded", True)]


def _reference(lead, item, ref):
    acc, grounding, severe = ref
    return set_reference_label(
        lead=lead,
        item=item,
        acceptability=acc,
        grounding=grounding,
        severe_safety=severe,
        project=default_project(),
    )


@pytest.fixture
def domain(lead):
    domain = DomainFactory(slug="supply_chain")
    items = [CalibrationItemFactory(calibration_set__domain=domain) for _ in REFERENCE]
    for item, ref in zip(items, REFERENCE, strict=True):
        _reference(lead, item, ref)
    return domain


def _annotator(name):
    return UserFactory(role=Role.ANNOTATOR, username=name)


def _refs():
    return {
        i.record_id: (i.reference_acceptability, i.reference_grounding, i.reference_severe_safety)
        for i in CalibrationItem.objects.all()
    }


def _label_everything(annotator, domain):
    """Start and label every given item exactly as the reference: a pass."""
    refs = _refs()
    assignments = start_calibration(annotator=annotator, domain=domain, project=default_project())
    for a in assignments:
        acc, grounding, severe = refs[a.record_id]
        fields = GOOD if acc == "acceptable" else BAD
        submit_label(
            assignment=a,
            **{**fields, "grounding": grounding, "severe_safety": severe, "rationale": "why"},
        )
    return CalibrationResult.objects.get(annotator=annotator, domain=domain), assignments


def _add_items(domain, n=2):
    calibration_set = CalibrationSet.objects.get(domain=domain)
    return [CalibrationItemFactory(calibration_set=calibration_set) for _ in range(n)]


def test_first_start_seals_version_1_and_freezes_its_references(domain, lead):
    result, assignments = _label_everything(_annotator("first"), domain)
    assert len(assignments) == 6 and result.passed and result.set_version == 1
    assert CalibrationSet.objects.get(domain=domain).version == 1
    assert set(CalibrationItem.objects.values_list("set_version", flat=True)) == {1}
    event = AuditEvent.objects.get(verb="calibration_set_version_sealed")
    assert event.detail == {"version": 1, "items": 6, "new": 6}
    with pytest.raises(CalibrationError, match="frozen: this item is part of version 1"):
        _reference(lead, CalibrationItem.objects.first(), ADDED[0])


def test_items_added_after_a_start_are_drafts_a_lead_can_label(domain, lead):
    _label_everything(_annotator("first"), domain)
    added = _add_items(domain)
    for item, ref in zip(added, ADDED, strict=True):
        assert _reference(lead, item, ref).reference_grounding == ref[1]
        assert item.set_version is None
    # a lead may still change a draft's reference until it is handed out
    _reference(lead, added[0], ("unacceptable", "misgrounded", False))


def test_newcomers_take_the_sealed_version_while_drafts_lack_references(domain, lead):
    first, _ = _label_everything(_annotator("first"), domain)
    _add_items(domain)
    calibration_set = CalibrationSet.objects.get(domain=domain)
    offer = offer_for(calibration_set)
    assert (offer.version, len(offer.items), offer.seals) == (1, 6, [])
    second, assignments = _label_everything(_annotator("second"), domain)
    assert len(assignments) == 6 and second.passed and second.set_version == 1
    assert CalibrationSet.objects.get(domain=domain).version == 1
    assert CalibrationItem.objects.filter(set_version__isnull=True).count() == 2


def test_referenced_drafts_form_version_2_for_the_next_starter(domain, lead):
    first, _ = _label_everything(_annotator("first"), domain)
    added = _add_items(domain)
    for item, ref in zip(added, ADDED, strict=True):
        _reference(lead, item, ref)
    third, assignments = _label_everything(_annotator("third"), domain)
    assert len(assignments) == 8 and third.passed and third.n_items == 8
    assert third.set_version == 2
    assert CalibrationSet.objects.get(domain=domain).version == 2
    assert set(CalibrationItem.objects.values_list("set_version", flat=True)) == {1, 2}
    # the first annotator's qualification stands, against the version they took
    first.refresh_from_db()
    assert first.passed and first.set_version == 1
    assert LabelAssignment.objects.filter(annotator__username="first").count() == 6
    # the new annotator now gets production items of the domain
    AnswerRecordFactory(question__domain=domain)
    assert claim_next_item(annotator=third.annotator, project=default_project()).reason == "claimed"


def test_starting_twice_returns_the_same_assignments(domain):
    annotator = _annotator("twice")
    first = start_calibration(annotator=annotator, domain=domain, project=default_project())
    again = start_calibration(annotator=annotator, domain=domain, project=default_project())
    assert [a.pk for a in first] == [a.pk for a in again]
    assert CalibrationSet.objects.get(domain=domain).version == 1


def test_a_set_nobody_can_take_says_why(lead):
    empty = DomainFactory(slug="healthcare_ops")
    CalibrationItemFactory(calibration_set__domain=empty)
    assert offer_for(CalibrationSet.objects.get(domain=empty)) is None
    with pytest.raises(CalibrationError, match="not ready: needs at least 4 items"):
        start_calibration(annotator=_annotator("early"), domain=empty, project=default_project())


def test_the_migration_seals_items_already_handed_out(domain):
    """Data started under the old rule (references frozen for the whole set): handed-out items
    become version 1, items nobody was given become drafts."""
    start_calibration(annotator=_annotator("before"), domain=domain, project=default_project())
    added = _add_items(domain, 1)[0]
    CalibrationItem.objects.update(set_version=None)
    CalibrationSet.objects.update(version=0)
    migration = importlib.import_module("goldset.migrations.0013_integrity_calibration_versions")
    migration.seal_started_items(apps, None)
    assert CalibrationSet.objects.get(domain=domain).version == 1
    assert CalibrationItem.objects.filter(set_version=1).count() == 6
    added.refresh_from_db()
    assert added.set_version is None
