"""Builders for the inbox and retake tests: a calibration set with references, a failed
attempt, and a triple in discussion — all through the real services."""

from goldset.models import CalibrationItem, CalibrationResult, CalibrationSet, LabelAssignment
from goldset.services.calibration import set_reference_label, start_calibration
from goldset.services.labeling import submit_label
from tests.factories import CalibrationItemFactory, DomainFactory
from tests.goldset.answers_helpers import BAD, GOOD, default_project
from tests.goldset.curation_support import review, write_triple

REFERENCE = [
    ("acceptable", "fully_grounded", False),
    ("acceptable", "fully_grounded", False),
    ("unacceptable", "partially_grounded", False),
    ("unacceptable", "misgrounded", False),
    ("unacceptable", "ungrounded", True),
    ("unacceptable", "misgrounded", True),
]


def calibration_domain(lead, *, slug="supply_chain", references=REFERENCE):
    domain = DomainFactory(slug=slug)
    add_items(lead, domain, references)
    return domain


def add_items(lead, domain, references=REFERENCE):
    calibration_set, _ = CalibrationSet.objects.get_or_create(
        project_id=domain.project_id, domain=domain
    )
    items = []
    for acc, grounding, severe in references:
        item = CalibrationItemFactory(calibration_set=calibration_set)
        items.append(
            set_reference_label(
                lead=lead,
                item=item,
                acceptability=acc,
                grounding=grounding,
                severe_safety=severe,
                project=default_project(),
            )
        )
    return items


def label_pending(annotator, domain, *, right: bool) -> CalibrationResult | None:
    """Label every open calibration item of the annotator: as the reference (a pass) or all
    "fully grounded, not severe" (a fail)."""
    refs = {
        i.record_id: (i.reference_acceptability, i.reference_grounding, i.reference_severe_safety)
        for i in CalibrationItem.objects.filter(calibration_set__domain=domain)
    }
    pending = LabelAssignment.objects.filter(
        annotator=annotator,
        is_calibration=True,
        completed_at__isnull=True,
        record__question__domain=domain,
    )
    for a in pending:
        acc, grounding, severe = refs[a.record_id]
        if right:
            fields = {**(GOOD if acc == "acceptable" else BAD), "grounding": grounding}
            fields.update(severe_safety=severe, rationale="why")
        else:
            fields = {**GOOD, "rationale": "why"}
        submit_label(assignment=a, **fields)
    return CalibrationResult.objects.filter(annotator=annotator, domain=domain).first()


def fail_calibration(annotator, domain) -> CalibrationResult:
    start_calibration(annotator=annotator, domain=domain, project=default_project())
    result = label_pending(annotator, domain, right=False)
    assert result is not None and not result.passed
    return result


def flagged_triple(author, reviewers, **fields):
    """A GOLD triple one reviewer confirmed and one flagged: it is in discussion."""
    triple = write_triple(author, **fields)
    review(reviewers[0], triple, "confirm")
    review(reviewers[1], triple, "flag", flags=["answer_not_entailed"], comment="Not entailed.")
    triple.refresh_from_db()
    return triple
