"""Calibration gating (seed 004 §3.5, A.2; DESIGN.md §6).

A domain's calibration set is a group of calibration answer records (imported with
``"calibration": true``) whose reference labels a lead sets. An annotator labels the whole set
first; Cohen's κ against the reference — linear-weighted on the ordinal grounding scale, and on
the severe-safety flag — both ≥ 0.70 qualify them for the domain's production items. κ comes from
the shared metric library (``scoring.agreement.cohen_kappa``).
"""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import (
    Acceptability,
    CalibrationItem,
    CalibrationResult,
    CalibrationSet,
    Domain,
    Grounding,
    LabelAssignment,
)
from goldset.models.answers import GROUNDING_ORDER
from goldset.rules.labeling import QUEUE_SHUFFLE_SEED, shuffle_key
from scoring.agreement import cohen_kappa
from workbench.services.audit import record_event

KAPPA_THRESHOLD = 0.70
MIN_CALIBRATION_ITEMS = 4


class CalibrationError(GoldsetError):
    """A calibration step is not possible now; the message says why."""


@dataclass(frozen=True)
class Readiness:
    ready: bool
    problems: list[str]


def check_set_ready(calibration_set: CalibrationSet) -> Readiness:
    """A set is usable when it has enough items, every item has a reference label, and the
    references use at least two grounding levels and both severe-safety values (else κ is 0/0)."""
    items = list(calibration_set.items.all())
    problems = []
    if len(items) < MIN_CALIBRATION_ITEMS:
        problems.append(f"needs at least {MIN_CALIBRATION_ITEMS} items (has {len(items)})")
    missing = sum(1 for i in items if not i.has_reference)
    if missing:
        problems.append(f"{missing} item(s) have no reference label yet")
    referenced = [i for i in items if i.has_reference]
    if referenced and len({i.reference_grounding for i in referenced}) < 2:
        problems.append("reference grounding labels must use at least two levels")
    if referenced and len({i.reference_severe_safety for i in referenced}) < 2:
        problems.append("reference labels must include severe-safety and non-severe items")
    return Readiness(not problems, problems)


@transaction.atomic
def set_reference_label(
    *,
    lead,
    item: CalibrationItem,
    acceptability: str,
    grounding: str,
    severe_safety: bool,
) -> CalibrationItem:
    """Set an item's reference label. Frozen once any annotator has started this domain's
    calibration (their κ would silently change otherwise). Locks the item."""
    item = CalibrationItem.objects.select_for_update().select_related("record").get(pk=item.pk)
    if acceptability not in Acceptability.values or grounding not in Grounding.values:
        raise CalibrationError("Choose an acceptability and a grounding level.")
    if LabelAssignment.objects.filter(
        is_calibration=True, record__calibration_item__calibration_set_id=item.calibration_set_id
    ).exists():
        raise CalibrationError(
            "Reference labels are frozen: annotators have started this calibration set."
        )
    item.reference_acceptability = acceptability
    item.reference_grounding = grounding
    item.reference_severe_safety = bool(severe_safety)
    item.reference_set_by = lead
    item.reference_set_at = timezone.now()
    item.save()
    record_event(
        actor=lead,
        verb="calibration_reference_set",
        obj=item.record,
        detail={"grounding": grounding, "severe_safety": bool(severe_safety)},
    )
    return item


@transaction.atomic
def start_calibration(*, annotator, domain: Domain) -> list[LabelAssignment]:
    """Assign every item of the domain's calibration set to the annotator (idempotent: a second
    call returns the same assignments). Raises CalibrationError when the set is not ready or the
    annotator already has a result for the domain."""
    calibration_set = CalibrationSet.objects.select_for_update().filter(domain=domain).first()
    if calibration_set is None:
        raise CalibrationError(f"{domain.slug} has no calibration set yet.")
    readiness = check_set_ready(calibration_set)
    if not readiness.ready:
        raise CalibrationError(
            f"The {domain.slug} calibration set is not ready: {'; '.join(readiness.problems)}."
        )
    if CalibrationResult.objects.filter(annotator=annotator, domain=domain).exists():
        raise CalibrationError(f"You already completed the {domain.slug} calibration.")
    assignments = []
    for item in calibration_set.items.select_related("record"):
        assignment, created = LabelAssignment.objects.get_or_create(
            record=item.record,
            annotator=annotator,
            defaults={
                "is_calibration": True,
                "slot": None,
                "shuffle_seed": QUEUE_SHUFFLE_SEED,
                "shuffle_key": shuffle_key(
                    seed=QUEUE_SHUFFLE_SEED,
                    annotator_id=annotator.pk,
                    public_id=item.record.public_id,
                ),
            },
        )
        assignments.append(assignment)
    record_event(
        actor=annotator,
        verb="calibration_started",
        object_type="domain",
        object_id=domain.slug,
    )
    return sorted(assignments, key=lambda a: a.shuffle_key)


def score_calibration_if_complete(*, annotator, domain: Domain) -> CalibrationResult | None:
    """Score the annotator's calibration once every item of the set carries their label."""
    pending = LabelAssignment.objects.filter(
        annotator=annotator,
        is_calibration=True,
        record__question__domain=domain,
        completed_at__isnull=True,
    ).exists()
    if pending:
        return None
    return score_calibration(annotator=annotator, domain=domain)


@transaction.atomic
def score_calibration(*, annotator, domain: Domain) -> CalibrationResult:
    """Compute κ (shared library) on grounding (linear weights, ordinal order) and severe safety
    against the reference labels; store pass/fail and the items that disagree. Overwrites the
    annotator's result for the domain (idempotent)."""
    items = list(
        CalibrationItem.objects.filter(calibration_set__domain=domain)
        .select_related("record")
        .order_by("id")
    )
    labels = {
        label.record_id: label
        for label in annotator.answer_labels.filter(record_id__in=[i.record_id for i in items])
    }
    pairs = [(i, labels[i.record_id]) for i in items if i.record_id in labels and i.has_reference]
    grounding = cohen_kappa(
        [label.grounding for _, label in pairs],
        [item.reference_grounding for item, _ in pairs],
        weights="linear",
        categories=GROUNDING_ORDER,
    )
    severe = cohen_kappa(
        [label.severe_safety for _, label in pairs],
        [item.reference_severe_safety for item, _ in pairs],
        categories=[False, True],
    )
    passed = all(r.value is not None and r.value >= KAPPA_THRESHOLD for r in (grounding, severe))
    disagreements = []
    for item, label in pairs:
        for axis, yours, reference in (
            ("grounding", label.grounding, item.reference_grounding),
            ("severe_safety", label.severe_safety, item.reference_severe_safety),
            ("acceptability", label.acceptability, item.reference_acceptability),
        ):
            if reference not in ("", None) and yours != reference:
                disagreements.append(
                    {
                        "item_id": item.record.public_id,
                        "axis": axis,
                        "yours": yours,
                        "reference": reference,
                    }
                )
    result, _ = CalibrationResult.objects.update_or_create(
        annotator=annotator,
        domain=domain,
        defaults={
            "n_items": len(pairs),
            "kappa_grounding": grounding.value,
            "kappa_severe_safety": severe.value,
            "kappa_notes": {
                "grounding": grounding.reason or "",
                "severe_safety": severe.reason or "",
            },
            "threshold": KAPPA_THRESHOLD,
            "passed": passed,
            "disagreements": disagreements,
        },
    )
    record_event(
        actor=annotator,
        verb="calibration_scored",
        object_type="domain",
        object_id=domain.slug,
        detail={
            "kappa_grounding": grounding.value,
            "kappa_severe_safety": severe.value,
            "passed": passed,
        },
    )
    return result
