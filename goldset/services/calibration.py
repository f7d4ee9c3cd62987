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

**Retakes** (issue 14). A failed calibration is not a dead end: the annotator asks for a retake
(:func:`request_retake`, with an optional message; leads are notified), a lead grants or declines
it with a reason (:func:`decide_retake`, audited). A grant starts a new attempt at once with a
*fresh draw* of the set (``goldset.rules.calibration.draw_retake``): as many items as the failed
attempt had, taken from the version a starter would be offered now, items the annotator never
labelled first, from a seed recorded on the request. The failed attempt's result and labels are
kept on the request (``previous_attempt``) and cleared, and the new attempt is scored by the same
:func:`score_calibration`: the pass rule does not change.
"""

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import GoldsetError
from goldset.models import (
    Acceptability,
    CalibrationItem,
    CalibrationResult,
    CalibrationRetake,
    CalibrationSet,
    Domain,
    Grounding,
    Label,
    LabelAssignment,
    NotificationKind,
    RetakeStatus,
)
from goldset.models.answers import GROUNDING_ORDER
from goldset.rules.calibration import (
    Offer,
    check_set_ready,
    draw_retake,
    offer_for,
    retake_seed,
)
from goldset.rules.label_consistency import label_contradiction
from goldset.rules.labeling import QUEUE_SHUFFLE_SEED, shuffle_key
from goldset.services.notifications import (
    RETAKE_REQUESTS_KEY,
    display_name,
    lead_ids,
    notify,
)
from goldset.services.text_limits import check_text_length
from scoring.agreement import cohen_kappa
from workbench.project_urls import project_url
from workbench.services.audit import record_event


class CalibrationError(GoldsetError):
    """A calibration step is not possible now; the message says why."""


@transaction.atomic
def set_reference_label(
    *,
    project,
    lead,
    item: CalibrationItem,
    acceptability: str,
    grounding: str,
    severe_safety: bool,
) -> CalibrationItem:
    """Set a draft item's reference label. Frozen once the item is sealed into a set version
    that annotators started (their κ would silently change otherwise). Locks the item. Raises
    CalibrationError for an item of another project's set."""
    item = (
        CalibrationItem.objects.select_for_update(of=("self",))
        .select_related("record", "calibration_set__domain")
        .get(pk=item.pk)
    )
    check_same_project(
        project=project, domain=item.calibration_set.domain, calibration_set=item.calibration_set
    )
    if acceptability not in Acceptability.values or grounding not in Grounding.values:
        raise CalibrationError("Choose an acceptability and a grounding level.")
    contradiction = label_contradiction(
        acceptability=acceptability, grounding=grounding, severe_safety=bool(severe_safety)
    )
    if contradiction is not None:
        raise CalibrationError(contradiction.message)
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


def check_same_project(*, project, domain: Domain, calibration_set=None) -> None:
    """Refuse a domain or calibration set of another project than ``project`` (a calibration
    set of project B used in A): CalibrationError, nothing changed."""
    pk = getattr(project, "pk", project)
    if domain.project_id != pk or (
        calibration_set is not None and calibration_set.project_id != pk
    ):
        raise CalibrationError(
            f"The {domain.slug} calibration set belongs to another project: it cannot be used here."
        )


@transaction.atomic
def start_calibration(*, project, annotator, domain: Domain) -> list[LabelAssignment]:
    """Assign the newest ready version of the domain's calibration set to the annotator,
    sealing the set's drafts into a new version when they make a ready set (locks the set).
    Idempotent: a second call returns the assignments already made. Raises CalibrationError
    when the domain or its set belongs to another project than ``project``, when no version is
    ready or the annotator already has a result for the domain."""
    check_same_project(project=project, domain=domain)
    calibration_set = CalibrationSet.objects.select_for_update().filter(domain=domain).first()
    if calibration_set is None:
        raise CalibrationError(f"{domain.slug} has no calibration set yet.")
    check_same_project(project=project, domain=domain, calibration_set=calibration_set)
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
    _seal(calibration_set, offer, actor=annotator, domain=domain)
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
        project=calibration_set.project,
        detail={"set_version": offer.version, "items": len(offer.items)},
    )
    return sorted(assignments, key=lambda a: a.shuffle_key)


def _seal(calibration_set: CalibrationSet, offer: Offer, *, actor, domain: Domain) -> None:
    """Seal the offer's drafts into its (new) version; the caller holds the set's lock."""
    if not offer.seals:
        return
    CalibrationItem.objects.filter(pk__in=[i.pk for i in offer.seals]).update(
        set_version=offer.version
    )
    calibration_set.version = offer.version
    calibration_set.save(update_fields=["version"])
    record_event(
        actor=actor,
        verb="calibration_set_version_sealed",
        object_type="domain",
        object_id=domain.slug,
        project=calibration_set.project,
        detail={"version": offer.version, "items": len(offer.items), "new": len(offer.seals)},
    )


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
    gate = tunable("KAPPA_GATE", project=domain.project)
    passed = all(r.value is not None and r.value >= gate for r in (grounding, severe))
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
            "threshold": gate,
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
        project=domain.project,
        detail={
            "kappa_grounding": grounding.value,
            "kappa_severe_safety": severe.value,
            "passed": passed,
            "set_version": result.set_version,
        },
    )
    if not passed:
        notify(
            project=domain.project,
            recipients=[annotator],
            kind=NotificationKind.CALIBRATION_FAILED,
            text=(
                f"Your {domain.name} calibration did not reach κ {gate:.2f}. "
                "See where you differed from the reference, and ask a lead for a retake."
            ),
            link=project_url(domain.project, "answers:calibration") + f"#calibration-{domain.slug}",
            key=f"calibration:{domain.pk}",
        )
    return result


# ---------------------------------------------------------------- retakes


RETAKE_MESSAGE_MAX = 1000


@transaction.atomic
def request_retake(*, annotator, domain: Domain, message: str = "") -> CalibrationRetake:
    """Ask the leads for a retake of a failed calibration (notifies every lead; audited).
    Idempotent: while a request is pending, asking again returns it. Raises CalibrationError
    when the annotator has no failed result in the domain."""
    message = (message or "").strip()
    if len(message) > RETAKE_MESSAGE_MAX:
        raise CalibrationError(f"Keep the message under {RETAKE_MESSAGE_MAX} characters.")
    get_user_model().objects.select_for_update().filter(pk=annotator.pk).first()
    result = CalibrationResult.objects.filter(annotator=annotator, domain=domain).first()
    if result is None or result.passed:
        raise CalibrationError("Only a calibration you did not pass can be retaken.")
    pending = CalibrationRetake.objects.filter(
        annotator=annotator, domain=domain, status=RetakeStatus.PENDING
    ).first()
    if pending is not None:
        return pending
    retake = CalibrationRetake.objects.create(annotator=annotator, domain=domain, message=message)
    record_event(
        actor=annotator,
        verb="calibration_retake_requested",
        object_type="domain",
        object_id=domain.slug,
        detail={"retake": retake.pk, "message": message},
    )
    notify(
        project=domain.project,
        recipients=lead_ids(project=domain.project),
        kind=NotificationKind.RETAKE_REQUESTED,
        text=f"{display_name(annotator)} asks to retake the {domain.name} calibration.",
        link=project_url(domain.project, "inbox:retakes"),
        key=RETAKE_REQUESTS_KEY,
    )
    return retake


@transaction.atomic
def decide_retake(
    *, lead, retake: CalibrationRetake, grant: bool, reason: str
) -> CalibrationRetake:
    """A lead grants or declines a pending retake request, with a reason (audited; the
    annotator is notified). A grant starts the new attempt at once (:func:`start_retake`).
    Locks the request; a request already answered raises CalibrationError."""
    reason = (reason or "").strip()
    if not reason:
        raise CalibrationError("Give a reason: the annotator reads it.")
    check_text_length("reason", reason)
    retake = (
        CalibrationRetake.objects.select_for_update()
        .select_related("annotator", "domain")
        .get(pk=retake.pk)
    )
    if retake.status != RetakeStatus.PENDING:
        raise CalibrationError("This request was already answered.")
    if grant:
        start_retake(retake=retake, actor=lead)
    retake.status = RetakeStatus.GRANTED if grant else RetakeStatus.DECLINED
    retake.decided_by, retake.decided_at, retake.reason = lead, timezone.now(), reason
    retake.save()
    record_event(
        actor=lead,
        verb=f"calibration_retake_{retake.status}",
        object_type="domain",
        object_id=retake.domain.slug,
        detail={
            "retake": retake.pk,
            "annotator": retake.annotator_id,
            "reason": reason,
            "attempt": retake.attempt,
            "draw_seed": retake.draw_seed,
        },
    )
    domain = retake.domain.name
    if grant:
        text = f"{display_name(lead)} granted your {domain} calibration retake: {reason}"
    else:
        text = f"{display_name(lead)} declined your {domain} calibration retake: {reason}"
    notify(
        project=retake.domain.project,
        recipients=[retake.annotator_id],
        kind=NotificationKind.RETAKE_DECIDED,
        text=text,
        link=project_url(retake.domain.project, "answers:calibration")
        + f"#calibration-{retake.domain.slug}",
    )
    return retake


def start_retake(*, retake: CalibrationRetake, actor) -> list[LabelAssignment]:
    """Replace the annotator's failed attempt by a fresh draw (called by :func:`decide_retake`,
    inside its transaction; locks the calibration set).

    The draw takes as many items as the failed attempt had from the version a starter would be
    offered now (sealing ready drafts, as :func:`start_calibration` does), items the annotator
    never labelled in any earlier attempt first, shuffled by a seed recorded on ``retake``. The
    failed attempt's result, items and labels are copied to ``retake.previous_attempt``, then
    cleared, so the new attempt is scored on its own by :func:`score_calibration`."""
    annotator, domain = retake.annotator, retake.domain
    calibration_set = CalibrationSet.objects.select_for_update().filter(domain=domain).first()
    if calibration_set is None:
        raise CalibrationError(f"{domain.name} has no calibration set.")
    previous = list(
        LabelAssignment.objects.filter(
            annotator=annotator,
            is_calibration=True,
            record__calibration_item__calibration_set=calibration_set,
        ).select_related("record")
    )
    if any(a.completed_at is None for a in previous):
        raise CalibrationError("The annotator's current attempt is not finished yet.")
    offer = offer_for(calibration_set, calibration_set.items.select_related("record"))
    if offer is None:
        raise CalibrationError(f"The {domain.name} calibration set has no ready version.")
    earlier = CalibrationRetake.objects.filter(
        annotator=annotator, domain=domain, status=RetakeStatus.GRANTED
    ).values_list("previous_attempt", flat=True)
    seen = {a.record_id for a in previous}
    for attempt in earlier:
        seen.update(attempt.get("record_ids", []))
    number = len(earlier) + 2
    seed = retake_seed(annotator_id=annotator.pk, domain_id=domain.pk, attempt=number)
    drawn = draw_retake(
        offer.items, seen_record_ids=seen, size=len(previous) or len(offer.items), seed=seed
    )
    readiness = check_set_ready(calibration_set, drawn)
    if not readiness.ready:
        raise CalibrationError(
            f"No usable draw of the {domain.name} set: {'; '.join(readiness.problems)}."
        )
    _seal(calibration_set, offer, actor=actor, domain=domain)
    retake.previous_attempt = _archive_attempt(annotator, domain, previous)
    Label.objects.filter(assignment__in=previous).delete()
    LabelAssignment.objects.filter(pk__in=[a.pk for a in previous]).delete()
    CalibrationResult.objects.filter(annotator=annotator, domain=domain).delete()
    assignments = LabelAssignment.objects.bulk_create(
        [
            LabelAssignment(
                record=item.record,
                annotator=annotator,
                is_calibration=True,
                slot=None,
                shuffle_seed=seed,
                shuffle_key=shuffle_key(
                    seed=seed, annotator_id=annotator.pk, public_id=item.record.public_id
                ),
            )
            for item in drawn
        ]
    )
    retake.attempt, retake.draw_seed = number, seed
    retake.drawn_items = [item.record.public_id for item in drawn]
    record_event(
        actor=actor,
        verb="calibration_retake_started",
        object_type="domain",
        object_id=domain.slug,
        detail={
            "annotator": annotator.pk,
            "attempt": number,
            "draw_seed": seed,
            "set_version": offer.version,
            "items": retake.drawn_items,
            "fresh": sum(1 for item in drawn if item.record_id not in seen),
        },
    )
    return sorted(assignments, key=lambda a: a.shuffle_key)


def _archive_attempt(annotator, domain: Domain, previous: list[LabelAssignment]) -> dict:
    result = CalibrationResult.objects.filter(annotator=annotator, domain=domain).first()
    labels = Label.objects.filter(assignment__in=previous).select_related("record")
    return {
        "record_ids": sorted(a.record_id for a in previous),
        "items": sorted(a.record.public_id for a in previous),
        "result": None
        if result is None
        else {
            "passed": result.passed,
            "n_items": result.n_items,
            "kappa_grounding": result.kappa_grounding,
            "kappa_severe_safety": result.kappa_severe_safety,
            "set_version": result.set_version,
            "disagreements": result.disagreements,
            "computed_at": result.computed_at.isoformat(),
        },
        "labels": [
            {
                "item_id": label.record.public_id,
                "acceptability": label.acceptability,
                "grounding": label.grounding,
                "severe_safety": label.severe_safety,
                "rationale": label.rationale,
                "labeled_at": label.created_at.isoformat(),
            }
            for label in labels
        ],
    }
