"""Pairwise review (issue 30, DESIGN.md §18): create a task, claim the next pair, judge it,
undo, skip, adjudicate a split. The same protocol as answer labels (``services.labeling``),
one home for each rule:

* the draw of pairs, the sides per reviewer, the outcome and the rationale rule:
  ``goldset.rules.pairwise``; reviewers per pair by tier: ``goldset.rules.tiers.required_for``
  (the project's labels per item of the tier); who may adjudicate: ``goldset.selectors.pairwise``
  (``adjudicable_pairs``); the severe-safety notion: ``goldset.rules.probe_labels``.
* Claims are race-free as for labels: the reviewer's user row is locked (one claim at a time per
  reviewer), pairs are locked with ``SELECT … FOR UPDATE SKIP LOCKED``, and the unique
  constraints (pair, reviewer) and (pair, slot) hold on every database.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import CrossProjectReference, GoldsetError
from goldset.models import (
    DECISIVE,
    AnswerRecord,
    GoldVersion,
    PairAdjudication,
    PairAssignment,
    PairCalibrationAnswer,
    PairFinalSource,
    PairJudgment,
    PairSkip,
    PairStatus,
    PairwiseDesign,
    PairwisePair,
    PairwiseTask,
    Preference,
    Strength,
    Tier,
)
from goldset.rules.labeling import undo_closed
from goldset.rules.pairwise import (
    CHOICES,
    MAX_COMPARISONS_PER_QUESTION,
    RATIONALE_MESSAGES,
    decide_pair_outcome,
    draw_pairs,
    preference_from_choice,
    rationale_rule,
)
from goldset.rules.tiers import RECORD, required_for
from goldset.rules.time_on_item import ItemTiming
from goldset.selectors.pairwise import (
    PAIR_LEADS,
    absolute_labels,
    adjudicable_pairs,
    is_pair_qualified,
    left_for,
    open_pairs,
)
from goldset.services.exports import version_question_ids
from goldset.services.locking import submit_transaction
from goldset.services.time_on_item import timing_fields
from workbench.roles import Role, roles_in
from workbench.services.audit import record_event

CANDIDATE_BATCH = 50


class PairwiseRejected(GoldsetError):
    """A task, judgment or adjudication breaks a rule; ``field`` names the input at fault."""

    def __init__(self, message: str, *, field: str | None = None, rule: str = ""):
        self.field = field
        self.rule = rule
        super().__init__(message)


class PairUndoRefused(GoldsetError):
    pass


class PairSkipRefused(GoldsetError):
    """A skip refused; ``field`` names the input at fault (``reason``) when one is."""

    def __init__(self, message: str, *, field: str | None = None):
        self.field = field
        super().__init__(message)


# ---------------------------------------------------------------- tasks


@transaction.atomic
def create_pairwise_task(
    *,
    project,
    actor,
    name: str,
    runs,
    design: str,
    seed: int,
    tier: str,
    comparisons_per_question: int | None = None,
    gold_version: GoldVersion | None = None,
) -> PairwiseTask:
    """Create a task of ``project`` comparing ``runs`` (two or more, of two or more systems, of
    the project) on the questions at least two of them answered, and draw its pairs with
    ``seed`` (``goldset.rules.pairwise.draw_pairs``: the same seed and records give the same
    pairs, A/B order and queue order). With ``gold_version`` (a frozen version of the project,
    as ``goldset.services.version_tags.resolve_version`` finds it from a number or tag), only
    the questions that version holds are compared (its PROBE question file,
    ``exports.version_question_ids``). Reviewers per pair: the project's labels per item of
    ``tier``. Raises PairwiseRejected (nothing stored) naming the field; audited."""
    if roles_in(actor, project).isdisjoint(PAIR_LEADS):
        raise PairwiseRejected("Only a lead or an admin creates pairwise tasks.")
    name = (name or "").strip()
    if not name:
        raise PairwiseRejected("Name the task.", field="name")
    if PairwiseTask.objects.filter(project=project, name=name).exists():
        raise PairwiseRejected(f"A task named {name!r} exists already.", field="name")
    if design not in PairwiseDesign.values:
        raise PairwiseRejected("Choose a design.", field="design")
    if design == PairwiseDesign.BALANCED:
        if not comparisons_per_question or not (
            1 <= comparisons_per_question <= MAX_COMPARISONS_PER_QUESTION
        ):
            raise PairwiseRejected(
                f"A balanced design needs 1–{MAX_COMPARISONS_PER_QUESTION} comparisons per "
                "question.",
                field="comparisons_per_question",
            )
    else:
        comparisons_per_question = None
    if tier not in Tier.values:
        raise PairwiseRejected("Choose a tier.", field="tier")
    if not isinstance(seed, int) or seed < 0:
        raise PairwiseRejected("The seed is a whole number, 0 or more.", field="seed")
    runs = list(runs)
    if any(run.project_id != project.pk for run in runs):
        raise CrossProjectReference("A run of another project cannot be compared here.")
    if gold_version is not None and gold_version.project_id != project.pk:
        raise CrossProjectReference("A gold version of another project cannot be used here.")
    in_version = None
    if gold_version is not None:
        if not gold_version.sealed:
            raise PairwiseRejected(
                f"Gold version v{gold_version.number} is not frozen yet.", field="gold_version"
            )
        try:
            in_version = version_question_ids(gold_version)
        except GoldsetError as exc:
            raise PairwiseRejected(str(exc), field="gold_version") from exc
    runs = sorted({run.pk: run for run in runs}.values(), key=lambda r: r.run_id)
    if len({run.system_id for run in runs}) < 2:
        raise PairwiseRejected("Choose runs of at least two systems.", field="runs")
    if len(runs) != len({run.system_id for run in runs}):
        raise PairwiseRejected("Choose one run per system.", field="runs")
    records = AnswerRecord.objects.filter(
        project=project, run__in=runs, is_calibration=False
    ).values_list("pk", "public_id", "run__system_id", "question_id", "question__question_id")
    answers: dict[str, dict[str, str]] = {}
    keys: dict[str, tuple[int, int]] = {}  # record key → (record pk, question pk)
    for pk, public_id, system_id, question_pk, question_id in records:
        if in_version is not None and question_id not in in_version:
            continue  # a question the task's gold version does not hold
        answers.setdefault(question_id, {})[f"system:{system_id}"] = public_id
        keys[public_id] = (pk, question_pk)
    answers = {q: have for q, have in answers.items() if len(have) >= 2}
    if not answers and gold_version is not None:
        raise PairwiseRejected(
            f"These runs share no question of gold version v{gold_version.number}: there is "
            "nothing to compare.",
            field="gold_version",
        )
    if not answers:
        raise PairwiseRejected(
            "These runs share no question: there is nothing to compare.", field="runs"
        )
    drawn = draw_pairs(
        seed=seed,
        systems=[f"system:{run.system_id}" for run in runs],
        answers=answers,
        comparisons_per_question=comparisons_per_question,
    )
    reviewers = required_for(RECORD, tier, project=project)
    task = PairwiseTask.objects.create(
        project=project,
        name=name,
        gold_version=gold_version,
        design=design,
        comparisons_per_question=comparisons_per_question,
        seed=seed,
        tier=tier,
        reviewers_per_pair=reviewers,
        created_by=actor,
    )
    task.runs.set(runs)
    PairwisePair.objects.bulk_create(
        [
            PairwisePair(
                project=project,
                task=task,
                question_id=keys[d.a][1],
                record_a_id=keys[d.a][0],
                record_b_id=keys[d.b][0],
                position=d.position,
                queue_rank=d.queue_rank,
                reviewers_required=reviewers,
            )
            for d in drawn
        ]
    )
    record_event(
        actor=actor,
        verb="pairwise_task_created",
        obj=task,
        detail={
            "pairs": len(drawn),
            "seed": seed,
            "design": design,
            "runs": len(runs),
            "gold_version": gold_version.number if gold_version else None,
        },
    )
    return task


# ---------------------------------------------------------------- claims


class _NotClaimed(Exception):
    """Raised inside a savepoint to roll it back (and release its row lock)."""


def _try_claim(reviewer, pk: int, *, skip_locked: bool) -> PairAssignment | None:
    try:
        with transaction.atomic():
            pair = (
                PairwisePair.objects.select_for_update(skip_locked=skip_locked, of=("self",))
                .select_related("task", "question", "record_a", "record_b")
                .filter(pk=pk, status=PairStatus.JUDGING)
                .filter(assigned_count__lt=F("reviewers_required"))
                .first()
            )
            if pair is None:
                raise _NotClaimed
            slot = pair.assigned_count + 1
            assignment = PairAssignment.objects.create(
                pair=pair, reviewer=reviewer, slot=slot, left=left_for(pair, reviewer.pk)
            )
            PairwisePair.objects.filter(pk=pair.pk).update(assigned_count=slot)
            record_event(actor=reviewer, verb="pair_claimed", obj=pair, detail={"slot": slot})
            return assignment
    except (_NotClaimed, IntegrityError):
        return None


def _calibrated_by(reviewer):
    """The reviewer's calibration answers on the two answers of the outer pair (either side):
    a reviewer who judged them as a calibration pair, and was then shown the lead's reference,
    is never asked to judge them again as a real pair."""
    same = Q(item__record_a=OuterRef("record_a"), item__record_b=OuterRef("record_b"))
    swapped = Q(item__record_a=OuterRef("record_b"), item__record_b=OuterRef("record_a"))
    return PairCalibrationAnswer.objects.filter(same | swapped, reviewer=reviewer)


@transaction.atomic
def claim_next_pair(*, project, reviewer) -> PairAssignment | None:
    """The reviewer's open pair of ``project``, else the next pair in the seeded queue order
    with an open slot that they neither hold nor skipped; None when there is none. Locks the
    reviewer's user row, then candidates one at a time with SKIP LOCKED (retried with a
    blocking lock, so "none" is never an artefact of contention). None too for a reviewer who
    has not passed the project's calibration pairs (``is_pair_qualified``)."""
    if Role.ANNOTATOR.value not in roles_in(reviewer, project):
        return None
    if not is_pair_qualified(project=project, reviewer=reviewer):
        return None
    get_user_model().objects.select_for_update().filter(pk=reviewer.pk).first()
    current = (
        PairAssignment.objects.filter(
            reviewer=reviewer, completed_at__isnull=True, pair__project=project
        )
        .order_by("claimed_at", "id")
        .first()
    )
    if current is not None:
        return current
    mine = PairAssignment.objects.filter(pair_id=OuterRef("pk"), reviewer=reviewer)
    skipped = PairSkip.objects.filter(pair_id=OuterRef("pk"), reviewer=reviewer)
    candidates = list(
        open_pairs(project=project)
        .exclude(Exists(mine))
        .exclude(Exists(skipped))
        .exclude(Exists(_calibrated_by(reviewer)))
        .order_by("queue_rank", "id")
        .values_list("pk", flat=True)[:CANDIDATE_BATCH]
    )
    for skip_locked in (True, False):
        for pk in candidates:
            assignment = _try_claim(reviewer, pk, skip_locked=skip_locked)
            if assignment is not None:
                return assignment
    return None


# ---------------------------------------------------------------- judgments


def check_pair_decision(
    *, pair: PairwisePair, preference: str, strength: str, rationale: str, adjudication=False
) -> tuple[str, str]:
    """Validate one judgment or adjudication of ``pair`` (preference relative to A/B); returns
    the cleaned (strength, rationale) or raises PairwiseRejected naming the field and rule."""
    if preference not in Preference.values:
        raise PairwiseRejected(
            "Choose: A better, B better, tie or both unacceptable.", field="choice"
        )
    strength = strength or ""
    if preference in DECISIVE:
        if strength not in Strength.values:
            raise PairwiseRejected(
                "Say how much better: slightly or clearly.", field="strength", rule="strength"
            )
    elif strength:
        raise PairwiseRejected(
            "A strength goes only with a preference for one answer.", field="strength"
        )
    rationale = (rationale or "").strip()
    limit = settings.FREE_TEXT_MAX_CHARS
    if len(rationale) > limit:
        raise PairwiseRejected(
            f"rationale: {len(rationale):,} characters; at most {limit:,} are allowed.",
            field="rationale",
        )
    if not rationale:
        if adjudication:
            rule = "adjudication"
        else:
            labels = absolute_labels([pair.record_a_id, pair.record_b_id])
            rule = rationale_rule(
                preference=preference,
                label_a=labels[pair.record_a_id],
                label_b=labels[pair.record_b_id],
            )
        if rule is not None:
            raise PairwiseRejected(RATIONALE_MESSAGES[rule], field="rationale", rule=rule)
    return strength, rationale


def _settle_pair(pair: PairwisePair) -> None:
    """Decide a pair whose judgments are all in (call with the pair locked)."""
    preferences = list(
        PairJudgment.objects.filter(pair=pair).order_by("id").values_list("preference", flat=True)
    )
    if len(preferences) < pair.reviewers_required:
        return
    outcome = decide_pair_outcome(preferences)
    pair.status = outcome.status
    pair.final_preference = outcome.preference
    pair.final_source = outcome.source
    pair.finalized_at = timezone.now() if outcome.preference else None
    pair.save(update_fields=["status", "final_preference", "final_source", "finalized_at"])


@submit_transaction("judgment")
def submit_judgment(
    *,
    assignment: PairAssignment,
    choice: str,
    strength: str = "",
    rationale: str = "",
    timing: ItemTiming | None = None,
) -> PairJudgment:
    """Store the reviewer's judgment of their assigned pair. ``choice`` is what they chose on
    screen ("left", "right", "tie", "both_unacceptable"); it is stored relative to records A/B
    with the side they saw on the left. Locks the pair; a repeated submit stores nothing and
    returns the first judgment; rules as :func:`check_pair_decision` (nothing stored when one
    fails). The last judgment a pair needs decides it (``decide_pair_outcome``: a split goes to
    adjudication). Records server and active time on item; audited as ``pair_judged``."""
    pair = (
        PairwisePair.objects.select_for_update(of=("self",))
        .select_related("task", "question", "record_a", "record_b")
        .get(pk=assignment.pair_id)
    )
    existing = PairJudgment.objects.filter(assignment_id=assignment.pk).first()
    if existing is not None:
        return existing
    if pair.status != PairStatus.JUDGING:
        raise PairwiseRejected("This pair no longer takes judgments.")
    if choice not in CHOICES:
        raise PairwiseRejected(
            "Choose: A (left) better, B (right) better, tie or both unacceptable.", field="choice"
        )
    preference = preference_from_choice(choice, left=assignment.left)
    strength, rationale = check_pair_decision(
        pair=pair, preference=preference, strength=strength, rationale=rationale
    )
    judgment = PairJudgment.objects.create(
        assignment=assignment,
        pair=pair,
        reviewer_id=assignment.reviewer_id,
        preference=preference,
        strength=strength,
        rationale=rationale,
        left=assignment.left,
        **timing_fields(claimed_at=assignment.claimed_at, timing=timing),
    )
    assignment.completed_at = timezone.now()
    assignment.save(update_fields=["completed_at"])
    record_event(
        actor=assignment.reviewer, verb="pair_judged", obj=pair, detail={"slot": assignment.slot}
    )
    _settle_pair(pair)
    return judgment


def _release(assignment: PairAssignment) -> None:
    """Give an unjudged claim's slot back (call with its pair locked): the holder of the highest
    slot moves into the freed one, the count drops."""
    pair = PairwisePair.objects.select_for_update().get(pk=assignment.pair_id)
    freed = assignment.slot
    assignment.delete()
    if freed != pair.assigned_count:
        PairAssignment.objects.filter(pair=pair, slot=pair.assigned_count).update(slot=freed)
    PairwisePair.objects.filter(pk=pair.pk).update(assigned_count=F("assigned_count") - 1)


@transaction.atomic
def undo_last_judgment(*, project, reviewer) -> PairAssignment:
    """Withdraw the reviewer's last judgment in ``project`` and reopen its assignment, while its
    pair still collects judgments and within the project's ``LABEL_UNDO_WINDOW_SECONDS`` (the
    same window as labels). A pair claimed since is released. Raises PairUndoRefused."""
    get_user_model().objects.select_for_update().filter(pk=reviewer.pk).first()
    last = (
        PairJudgment.objects.filter(reviewer=reviewer, pair__project=project)
        .select_related("assignment")
        .order_by("-created_at", "-id")
        .first()
    )
    if last is None:
        raise PairUndoRefused("You have no judgment to undo.")
    closed = undo_closed(
        submitted_at=last.created_at,
        now=timezone.now(),
        window_seconds=tunable("LABEL_UNDO_WINDOW_SECONDS", project=project),
    )
    if closed:
        raise PairUndoRefused(closed)
    pair = PairwisePair.objects.select_for_update().get(pk=last.pair_id)
    if pair.status != PairStatus.JUDGING:
        raise PairUndoRefused("That pair is already decided; its judgment can no longer be undone.")
    assignment = last.assignment
    last.delete()
    assignment.completed_at = None
    assignment.save(update_fields=["completed_at"])
    for claim in PairAssignment.objects.filter(
        reviewer=reviewer, completed_at__isnull=True, pair__project=project
    ).exclude(pk=assignment.pk):
        _release(claim)
    record_event(actor=reviewer, verb="pair_judgment_undone", obj=pair)
    return assignment


@transaction.atomic
def skip_pair(*, assignment: PairAssignment, reason: str) -> PairSkip:
    """Hand an unjudged claim back with a reason; the pair is never offered to this reviewer
    again. Raises PairSkipRefused for an empty reason or a judged pair."""
    reason = (reason or "").strip()
    if not reason:
        raise PairSkipRefused("Say why you skip this pair (a reason is required).", field="reason")
    pair = PairwisePair.objects.select_for_update().get(pk=assignment.pair_id)
    if PairJudgment.objects.filter(assignment_id=assignment.pk).exists():
        raise PairSkipRefused("You already judged this pair; use undo instead.")
    skip, _ = PairSkip.objects.get_or_create(
        pair=pair, reviewer_id=assignment.reviewer_id, defaults={"reason": reason[:200]}
    )
    _release(assignment)
    record_event(
        actor=assignment.reviewer, verb="pair_skipped", obj=pair, detail={"reason": skip.reason}
    )
    return skip


# ---------------------------------------------------------------- adjudication


@submit_transaction("adjudication")
def record_pair_adjudication(
    *,
    lead,
    pair: PairwisePair,
    choice: str,
    strength: str = "",
    rationale: str = "",
    timing: ItemTiming | None = None,
) -> PairAdjudication:
    """A lead's final preference on a pair whose reviewers split. ``choice`` is as the lead saw
    the pair (their own seeded sides). Only a pair :func:`adjudicable_pairs` gives this lead and
    still waiting (PairwiseRejected otherwise); a rationale is always required. The pair becomes
    adjudicated with the lead's preference; audited as ``pair_adjudicated``."""
    locked = (
        adjudicable_pairs(user=lead, project=pair.project_id)
        .select_for_update(of=("self",))
        .select_related("task", "question", "record_a", "record_b")
        .filter(pk=pair.pk)
        .first()
    )
    if locked is None or locked.status != PairStatus.NEEDS_ADJUDICATION:
        raise PairwiseRejected("This pair is not waiting for your adjudication.")
    if choice not in CHOICES:
        raise PairwiseRejected(
            "Choose: A (left) better, B (right) better, tie or both unacceptable.", field="choice"
        )
    preference = preference_from_choice(choice, left=left_for(locked, lead.pk))
    strength, rationale = check_pair_decision(
        pair=locked,
        preference=preference,
        strength=strength,
        rationale=rationale,
        adjudication=True,
    )
    adjudication = PairAdjudication.objects.create(
        pair=locked,
        lead=lead,
        preference=preference,
        strength=strength,
        rationale=rationale,
        **timing_fields(claimed_at=None, timing=timing),
    )
    locked.status = PairStatus.ADJUDICATED
    locked.final_preference = preference
    locked.final_source = PairFinalSource.ADJUDICATION
    locked.finalized_at = timezone.now()
    locked.save(update_fields=["status", "final_preference", "final_source", "finalized_at"])
    record_event(actor=lead, verb="pair_adjudicated", obj=locked)
    return adjudication
