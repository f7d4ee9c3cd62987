"""Calibration gating (seed 004 §3.5, A.2; DESIGN.md §6).

A domain's calibration set is a group of calibration answer records (imported with
``"calibration": true``) whose reference labels a lead sets. An annotator labels the set first;
Cohen's κ against the reference — linear-weighted on the ordinal grounding scale, and on the
severe-safety flag — both ≥ 0.70 qualify them for the domain's production items. κ comes from
the shared metric library (``scoring.agreement.cohen_kappa``).

**Set versions** (issue 12 item 4). Records keep being added to a set after annotators started
it, so a set is handed out in *sealed versions*:

* a new item is a **draft**: its reference label can be set and changed by a lead;
* the first time an annotator starts the set, every draft is **sealed** into the next version
  (``CalibrationItem.set_version``, ``CalibrationSet.version``) — provided the sealed items plus
  the drafts form a ready set (:func:`check_set_ready`); a sealed item's reference is frozen,
  because annotators' κ was computed against it;
* version *v* is every item sealed into versions 1..*v*; an annotator who starts is given the
  newest version (sealing the drafts into a new one when they make a ready set, otherwise the
  newest sealed version — drafts still waiting for a reference never block anyone);
* a result records the version taken (``CalibrationResult.set_version``). Annotators who
  qualified on an earlier version stay qualified: they were measured against the reference they
  were given, and a later version only adds items.

So adding items never leaves a domain without a way to qualify: until the new items have their
references, newcomers take the previous version; afterwards, the new one.
"""

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
from goldset.rules.calibration import check_set_ready, offer_for
from goldset.rules.labeling import QUEUE_SHUFFLE_SEED, shuffle_key
from scoring.agreement import cohen_kappa
from workbench.services.audit import record_event

KAPPA_THRESHOLD = 0.70


class CalibrationError(GoldsetError):
    """A calibration step is not possible now; the message says why."""


@transaction.atomic
def set_reference_label(
    *,
    lead,
    item: CalibrationItem,
    acceptability: str,
    grounding: str,
    severe_safety: bool,
) -> CalibrationItem:
    """Set a draft item's reference label. Frozen once the item is sealed into a set version
    that annotators started (their κ would silently change otherwise). Locks the item."""
    item = CalibrationItem.objects.select_for_update().select_related("record").get(pk=item.pk)
    if acceptability not in Acceptability.values or grounding not in Grounding.values:
        raise CalibrationError("Choose an acceptability and a grounding level.")
    if item.set_version is not None:
        raise CalibrationError(
            f"Reference labels are frozen: this item is part of version {item.set_version} of "
            "the calibration set, which annotators have started."
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
    """Assign the newest ready version of the domain's calibration set to the annotator,
    sealing the set's drafts into a new version when they make a ready set (locks the set).
    Idempotent: a second call returns the assignments already made. Raises CalibrationError
    when no version is ready or the annotator already has a result for the domain."""
    calibration_set = CalibrationSet.objects.select_for_update().filter(domain=domain).first()
    if calibration_set is None:
        raise CalibrationError(f"{domain.slug} has no calibration set yet.")
    if CalibrationResult.objects.filter(annotator=annotator, domain=domain).exists():
        raise CalibrationError(f"You already completed the {domain.slug} calibration.")
    existing = list(
        LabelAssignment.objects.filter(
            annotator=annotator,
            is_calibration=True,
            record__calibration_item__calibration_set=calibration_set,
        )
    )
    if existing:
        return sorted(existing, key=lambda a: a.shuffle_key)
    offer = offer_for(calibration_set, calibration_set.items.select_related("record"))
    if offer is None:
        readiness = check_set_ready(calibration_set)
        raise CalibrationError(
            f"The {domain.slug} calibration set is not ready: {'; '.join(readiness.problems)}."
        )
    if offer.seals:
        CalibrationItem.objects.filter(pk__in=[i.pk for i in offer.seals]).update(
            set_version=offer.version
        )
        calibration_set.version = offer.version
        calibration_set.save(update_fields=["version"])
        record_event(
            actor=annotator,
            verb="calibration_set_version_sealed",
            object_type="domain",
            object_id=domain.slug,
            detail={"version": offer.version, "items": len(offer.items), "new": len(offer.seals)},
        )
    assignments = []
    for item in sorted(offer.items, key=lambda i: i.pk):
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
        detail={"set_version": offer.version, "items": len(offer.items)},
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
    against the reference labels of the items the annotator labelled (the set version they were
    given); store pass/fail, the items that disagree and that version. Overwrites the
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
            "set_version": max((i.set_version or 0 for i, _ in pairs), default=0) or None,
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
            "set_version": result.set_version,
        },
    )
    return result
