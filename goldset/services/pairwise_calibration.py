"""Pairwise qualification (issue 30): a project's calibration pairs — two answers to one
question with a lead's reference preference — which a reviewer judges blind before they judge
real pairs, as annotators calibrate before labeling (``goldset.services.calibration``).

One home for each rule: readiness and the pass rule (Cohen κ against the references ≥ the
project's ``KAPPA_GATE``) are ``goldset.rules.pairwise.pair_calibration_problems`` and
``score_pair_calibration``; "is this reviewer qualified" is
``goldset.selectors.pairwise.is_pair_qualified``, which ``claim_next_pair`` and the API ask.
A reviewer who already passed stays qualified when pairs are added later (as for labels); a lead
resets a failed attempt (:func:`reset_pair_calibration`) so the reviewer can retake it."""

from django.contrib.auth import get_user_model
from django.db import transaction

from goldset.conf import tunable
from goldset.exceptions import CrossProjectReference
from goldset.models import (
    PairCalibrationAnswer,
    PairCalibrationItem,
    PairQualification,
    PairStatus,
    PairwisePair,
    Preference,
)
from goldset.rules.pairwise import (
    CHOICES,
    choice_from_preference,
    pair_calibration_problems,
    preference_from_choice,
    score_pair_calibration,
)
from goldset.selectors.pairwise import CHOICE_DISPLAY, PAIR_LEADS, calibration_left_for
from goldset.services.pairwise import PairwiseRejected
from workbench.roles import Role, roles_in
from workbench.services.audit import record_event


@transaction.atomic
def add_calibration_pair(
    *, project, actor, pair: PairwisePair, reference: str | None = None
) -> PairCalibrationItem:
    """Make ``pair`` (a decided pair of ``project``) a calibration pair of the project, its
    reference the given preference (relative to A/B) or else the pair's final preference.
    Leads and admins only; a pair already in the set is returned unchanged (idempotent);
    audited as ``pair_calibration_added``. Raises PairwiseRejected naming the field."""
    if roles_in(actor, project).isdisjoint(PAIR_LEADS):
        raise PairwiseRejected("Only a lead or an admin adds calibration pairs.")
    if pair.project_id != project.pk:
        raise CrossProjectReference("A pair of another project cannot calibrate this one.")
    existing = PairCalibrationItem.objects.filter(
        project=project, record_a_id=pair.record_a_id, record_b_id=pair.record_b_id
    ).first()
    if existing is not None:
        return existing
    if reference is None:
        if pair.status not in (PairStatus.FINAL, PairStatus.ADJUDICATED):
            raise PairwiseRejected(
                "Only a decided pair has a preference to use as the reference.", field="reference"
            )
        reference = pair.final_preference
    if reference not in Preference.values:
        raise PairwiseRejected(
            "The reference is one of: a, b, tie, both_unacceptable.", field="reference"
        )
    item = PairCalibrationItem.objects.create(
        project=project,
        question_id=pair.question_id,
        record_a_id=pair.record_a_id,
        record_b_id=pair.record_b_id,
        reference=reference,
        source_pair=pair,
        created_by=actor,
    )
    record_event(actor=actor, verb="pair_calibration_added", obj=item)
    return item


@transaction.atomic
def submit_calibration_answer(
    *, project, reviewer, item: PairCalibrationItem, choice: str
) -> PairCalibrationAnswer:
    """Store the reviewer's judgment of a calibration pair (``choice`` as seen on screen, read
    with their seeded sides). A repeated submit stores nothing and returns the first answer.
    When the reviewer has answered every calibration pair of a ready set, scores the attempt
    (:func:`score_pair_qualification`). Locks the reviewer's user row (one attempt at a time)."""
    if item.project_id != project.pk or Role.ANNOTATOR.value not in roles_in(reviewer, project):
        raise PairwiseRejected("This calibration pair is not yours to judge.")
    get_user_model().objects.select_for_update().filter(pk=reviewer.pk).first()
    existing = PairCalibrationAnswer.objects.filter(item=item, reviewer=reviewer).first()
    if existing is not None:
        return existing
    if PairQualification.objects.filter(project=project, reviewer=reviewer).exists():
        raise PairwiseRejected("Your calibration is already scored.")
    if choice not in CHOICES:
        raise PairwiseRejected(
            "Choose: A (left) better, B (right) better, tie or both unacceptable.", field="choice"
        )
    left = calibration_left_for(item, reviewer.pk)
    answer = PairCalibrationAnswer.objects.create(
        item=item,
        reviewer=reviewer,
        preference=preference_from_choice(choice, left=left),
        left=left,
    )
    record_event(actor=reviewer, verb="pair_calibration_answered", obj=item)
    unanswered = (
        PairCalibrationItem.objects.filter(project=project)
        .exclude(answers__reviewer=reviewer)
        .exists()
    )
    if not unanswered:
        score_pair_qualification(project=project, reviewer=reviewer)
    return answer


@transaction.atomic
def score_pair_qualification(*, project, reviewer) -> PairQualification | None:
    """Score the reviewer's answers against the references of the calibration pairs they
    answered (``goldset.rules.pairwise.score_pair_calibration``; gate: the project's
    ``KAPPA_GATE``); None while the set is not ready. Overwrites the reviewer's result for the
    project (idempotent); audited as ``pair_qualification_scored``."""
    items = list(PairCalibrationItem.objects.filter(project=project).order_by("id"))
    if pair_calibration_problems([i.reference for i in items]):
        return None
    answers = PairCalibrationAnswer.objects.filter(item__project=project, reviewer=reviewer)
    mine = dict(answers.values_list("item_id", "preference"))
    sides = dict(answers.values_list("item_id", "left"))
    scored = [i for i in items if i.pk in mine]
    gate = tunable("KAPPA_GATE", project=project)
    score = score_pair_calibration(
        [mine[i.pk] for i in scored], [i.reference for i in scored], gate=gate
    )
    result, _ = PairQualification.objects.update_or_create(
        project=project,
        reviewer=reviewer,
        defaults={
            "n_items": len(scored),
            "kappa": score.kappa,
            "kappa_note": score.note[:200],
            "threshold": gate,
            "passed": score.passed,
            # as the reviewer saw each pair (their sides), so the page can say where they differ
            "disagreements": [
                {
                    "item_id": i.public_id,
                    "yours": CHOICE_DISPLAY[choice_from_preference(mine[i.pk], left=sides[i.pk])],
                    "reference": CHOICE_DISPLAY[
                        choice_from_preference(i.reference, left=sides[i.pk])
                    ],
                }
                for i in scored
                if mine[i.pk] != i.reference
            ],
        },
    )
    record_event(
        actor=reviewer,
        verb="pair_qualification_scored",
        obj=result,
        detail={"kappa": score.kappa, "passed": score.passed, "n_items": len(scored)},
    )
    return result


@transaction.atomic
def reset_pair_calibration(*, project, actor, reviewer) -> int:
    """A lead clears a reviewer's failed attempt (answers and result) so they can retake the
    calibration pairs; a passed result is kept (PairwiseRejected). Returns the number of answers
    cleared; audited as ``pair_calibration_reset`` with the previous κ."""
    if roles_in(actor, project).isdisjoint(PAIR_LEADS):
        raise PairwiseRejected("Only a lead or an admin grants a retake.")
    result = (
        PairQualification.objects.select_for_update()
        .filter(project=project, reviewer=reviewer)
        .first()
    )
    if result is None:
        raise PairwiseRejected("This reviewer has no scored calibration to reset.")
    if result.passed:
        raise PairwiseRejected("This reviewer passed; there is nothing to retake.")
    cleared, _ = PairCalibrationAnswer.objects.filter(
        item__project=project, reviewer=reviewer
    ).delete()
    record_event(
        actor=actor,
        verb="pair_calibration_reset",
        obj=result,
        detail={"reviewer": reviewer.pk, "kappa": result.kappa, "answers": cleared},
    )
    result.delete()
    return cleared
