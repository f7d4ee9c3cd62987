"""Review assignment and blind, independent review (seed 000 step 2, DESIGN.md §5.2, §7).

GOLD revisions need two reviewers, TRIAGE revisions one — plus a second, spot-check review for
the seeded weekly 10 % draw. Reviewers pull work: :func:`claim_next_assignment` hands out the
oldest revision still short of reviewers. It is race-free: the reviewer's user row is locked
(one claim per reviewer at a time), candidate revisions are taken with
``SELECT … FOR UPDATE SKIP LOCKED`` (two reviewers never wait on or take the same slot), and the
unique constraints on (revision, slot) and (revision, reviewer) reject whatever slips through on
databases without row locks (SQLite), in which case the next candidate is tried.
"""

import datetime as dt
import math
import random
import secrets
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from goldset.conf import curation_setting, tunable
from goldset.exceptions import GoldsetError
from goldset.models import (
    DecisionKind,
    DisagreementCategory,
    EntailmentDirection,
    Flag,
    Review,
    ReviewAssignment,
    ReviewSkip,
    SpotCheckDraw,
    Tier,
    TripleRevision,
    TripleState,
    Verdict,
)
from goldset.rules.labeling import undo_closed
from goldset.rules.tiers import SPOT_CHECK_REVIEWS
from goldset.rules.time_on_item import ItemTiming
from goldset.selectors.curation import claimable_revisions, open_assignments
from goldset.selectors.guidelines import TRIPLE_REVIEW, get_guideline_in_force
from goldset.services.agreement import schedule_agreement_recompute
from goldset.services.agreement_sources import TRIPLES
from goldset.services.locking import submit_transaction
from goldset.services.resolution import lock_triple, reopen_after_spot_check, resolve_revision
from goldset.services.text_limits import check_text_length
from goldset.services.time_on_item import flag_if_fast, timing_fields
from workbench.services.audit import record_event

CLAIM_ATTEMPTS = 5
REVIEW_BATCH = 32


def _open_batch(*, project, after: tuple | None, limit: int) -> list[tuple]:
    """The next ``limit`` revisions of ``project`` short of reviewers, oldest first, after the
    keyset ``after``: a walk of the ``revision_open_slots`` partial index, never a scan of all
    revisions."""
    rows = TripleRevision.objects.filter(assigned_count__lt=F("reviewers_needed"), project=project)
    if after is not None:
        rows = rows.filter(created_at__gte=after[0]).exclude(created_at=after[0], pk__lte=after[1])
    return list(rows.order_by("created_at", "id").values_list("created_at", "pk")[:limit])


def claim_next_review(*, project, reviewer) -> ReviewAssignment | None:
    """The review queue's claim under the name the daily loop calls (see
    :func:`claim_next_assignment`)."""
    return claim_next_assignment(project=project, reviewer=reviewer)


@transaction.atomic
def claim_next_assignment(*, project, reviewer) -> ReviewAssignment | None:
    """Give ``reviewer`` their next review in ``project``, or ``None`` when nothing is left for
    them there.

    With the project's ``MAX_OPEN_ASSIGNMENTS`` unsubmitted assignments already (in the
    project), the oldest of those is
    returned instead of a new one. Never hands a reviewer their own triple, a revision they
    already hold, or (with ``FRESH_REVIEWERS_ON_REVISION``) a later revision of a triple they
    reviewed; never assigns more reviewers than the revision needs.

    Candidates come in bounded batches from the open-slots index (oldest first); within a batch
    the eligible ones are locked with SKIP LOCKED (the oldest locked one is waited for when all
    are taken), so the cost does not grow with the number of revisions."""
    get_user_model().objects.select_for_update().filter(pk=reviewer.pk).first()
    most = curation_setting("MAX_OPEN_ASSIGNMENTS", project=project)
    held = list(open_assignments(project=project, reviewer=reviewer)[:most])
    if len(held) >= most:
        return held[0]
    skipped: list[int] = []
    after = None
    attempts = 0
    while attempts < CLAIM_ATTEMPTS:
        batch = _open_batch(project=project, after=after, limit=REVIEW_BATCH)
        if not batch:
            return None
        candidates = claimable_revisions(project=project, reviewer=reviewer).filter(
            pk__in=[pk for _, pk in batch if pk not in skipped]
        )
        revision = candidates.select_for_update(skip_locked=True, of=("self",)).first()
        if revision is None:
            # Every candidate is locked by another claim right now: wait for the oldest one;
            # its slot count is re-checked on the committed row once the lock is ours.
            revision = candidates.select_for_update(of=("self",)).first()
        if revision is None:
            after = batch[-1]
            continue
        slot = revision.assigned_count + 1
        try:
            with transaction.atomic():
                assignment = ReviewAssignment.objects.create(
                    revision=revision,
                    reviewer=reviewer,
                    slot=slot,
                    spot_check=revision.spot_check and slot == 2,
                )
                TripleRevision.objects.filter(pk=revision.pk).update(assigned_count=slot)
        except IntegrityError:
            # Only reachable without row locks (SQLite): someone took this slot; try the next.
            skipped.append(revision.pk)
            attempts += 1
            continue
        record_event(
            actor=reviewer,
            verb="review_assigned",
            obj=revision,
            detail={"slot": slot, "spot_check": assignment.spot_check},
        )
        return assignment
    return None


def _clean_review(verdict, flags, direction, category) -> set[str]:
    if verdict not in Verdict.values:
        raise GoldsetError("Choose a verdict: confirm or flag.")
    flags = set(flags)
    unknown = flags - set(Flag.values)
    if unknown:
        raise GoldsetError(f"Unknown flag(s): {', '.join(sorted(unknown))}.")
    if direction and direction not in EntailmentDirection.values:
        raise GoldsetError(f"Unknown entailment direction {direction!r}.")
    if category and category not in DisagreementCategory.values:
        raise GoldsetError(f"Unknown disagreement category {category!r}.")
    if verdict == Verdict.FLAG and not flags:
        raise GoldsetError(
            "A flag must name what is wrong: question unrealistic, wrong source block or "
            "answer not entailed."
        )
    if verdict == Verdict.CONFIRM and (flags or direction):
        raise GoldsetError("A confirmation cannot carry flags; choose flag instead.")
    if direction and Flag.ANSWER_NOT_ENTAILED not in flags:
        raise GoldsetError("Understated/overstated qualifies the 'answer not entailed' flag.")
    return flags


@submit_transaction("review")
def submit_review(
    *,
    reviewer,
    revision: TripleRevision,
    verdict: str,
    flags=(),
    entailment_direction: str = "",
    disagreement_category: str = "",
    comment: str = "",
    timing: ItemTiming | None = None,
) -> Review:
    """Record ``reviewer``'s verdict on ``revision`` and resolve it when the last review lands.

    Locks the triple row (resolution sees every review). The author can never review; the
    reviewer must hold an assignment. Idempotent: a second submit by the same reviewer changes
    nothing and returns the first review. Raises GoldsetError for invalid input or a revision
    that no longer takes reviews. Records the time on item (from the later of the assignment and
    ``timing.opened_at``), the triple-review guideline in force, and a FastDecision when it was
    faster than the tier's threshold."""
    triple = lock_triple(revision.triple_id)
    if reviewer.pk == triple.author_id:
        raise GoldsetError("The author cannot review their own triple.")
    existing = Review.objects.filter(revision=revision, reviewer=reviewer).first()
    if existing is not None:
        return existing
    assignment = ReviewAssignment.objects.filter(revision=revision, reviewer=reviewer).first()
    if assignment is None:
        raise GoldsetError("This revision is not assigned to you.")
    revision = TripleRevision.objects.get(pk=revision.pk)
    takes_reviews = triple.current_revision_id == revision.pk and (
        triple.state == TripleState.PENDING_REVIEW
        or (assignment.spot_check and triple.state == TripleState.GOLD)
    )
    if not takes_reviews:
        raise GoldsetError(
            f"This revision no longer takes reviews (the triple is {triple.get_state_display().lower()})."
        )
    flags = _clean_review(verdict, flags, entailment_direction, disagreement_category)
    check_text_length("comment", comment)
    review = Review.objects.create(
        assignment=assignment,
        revision=revision,
        reviewer=reviewer,
        verdict=verdict,
        question_unrealistic=Flag.QUESTION_UNREALISTIC in flags,
        wrong_source_block=Flag.WRONG_SOURCE_BLOCK in flags,
        answer_not_entailed=Flag.ANSWER_NOT_ENTAILED in flags,
        entailment_direction=entailment_direction,
        disagreement_category=disagreement_category,
        comment=comment.strip(),
        spot_check=assignment.spot_check,
        guideline=get_guideline_in_force(domain_id=triple.domain_id, task=TRIPLE_REVIEW),
        **timing_fields(claimed_at=assignment.assigned_at, timing=timing),
    )
    flag_if_fast(
        project=triple.project,
        decision=review,
        kind=DecisionKind.REVIEW,
        annotator_id=reviewer.pk,
        tier=triple.tier,
    )
    assignment.completed_at = review.submitted_at
    assignment.save(update_fields=["completed_at"])
    record_event(
        actor=reviewer,
        verb="review_submitted",
        obj=revision,
        detail={"review_id": review.pk, "verdict": verdict, "spot_check": review.spot_check},
    )
    if review.spot_check:
        reopen_after_spot_check(review=review, actor=reviewer)
    else:
        resolve_revision(triple=triple, revision=revision, actor=reviewer)
    schedule_agreement_recompute(
        project_id=triple.project_id,
        dirty={
            "protocol": TRIPLES,
            "tier": triple.tier,
            "task_type": triple.task_type,
            "domain_id": triple.domain_id,
            "at": review.submitted_at,
            "annotator_id": reviewer.pk,
        },
    )
    return review


# ---------------------------------------------------------------- undo and skip


class ReviewUndoRefused(GoldsetError):
    """There is no review of the reviewer's that can still be undone (message says why)."""


class ReviewSkipRefused(GoldsetError):
    """The assignment cannot be skipped (message says why)."""


def _release_review_claim(assignment: ReviewAssignment) -> None:
    """Give an unreviewed claim's slot back to the pool; call with its triple locked.

    Claims number slots 1..``assigned_count`` (the next claim takes ``assigned_count + 1``), so
    the holder of the highest slot moves down into the freed one before the counter drops."""
    revision = TripleRevision.objects.select_for_update().get(pk=assignment.revision_id)
    freed = assignment.slot
    assignment.delete()
    if freed != revision.assigned_count:
        ReviewAssignment.objects.filter(revision=revision, slot=revision.assigned_count).update(
            slot=freed
        )
    TripleRevision.objects.filter(pk=revision.pk, assigned_count__gt=0).update(
        assigned_count=F("assigned_count") - 1
    )


REVIEW_FIELDS = (
    "verdict",
    "entailment_direction",
    "disagreement_category",
    "comment",
)


@transaction.atomic
def undo_last_review(*, project, reviewer) -> ReviewAssignment:
    """Withdraw the reviewer's last review in ``project`` and reopen its assignment.

    Allowed within the project's ``REVIEW_UNDO_WINDOW_SECONDS`` of the submit while the revision is unresolved
    (its triple still pending review on it, not every needed review in; never a spot-check);
    raises ReviewUndoRefused otherwise. Locks the reviewer row and the triple. A revision claimed
    since (the auto-advanced next one, not yet reviewed) is released to the pool, so the reviewer
    holds one open review: the reopened one. Audited as ``review_undone`` with the withdrawn
    values; the returned assignment carries them as ``withdrawn`` (a dict in the review form's
    vocabulary) so the page can refill the form."""
    get_user_model().objects.select_for_update().filter(pk=reviewer.pk).first()
    last = (
        Review.objects.filter(reviewer=reviewer, revision__triple__project=project)
        .select_related("assignment", "revision")
        .order_by("-submitted_at", "-id")
        .first()
    )
    if last is None:
        raise ReviewUndoRefused("You have no review to undo.")
    closed = undo_closed(
        submitted_at=last.submitted_at,
        now=timezone.now(),
        window_seconds=tunable("REVIEW_UNDO_WINDOW_SECONDS", project=project),
    )
    if closed:
        raise ReviewUndoRefused(closed)
    triple = lock_triple(last.revision.triple_id)
    revision = last.revision
    given = Review.objects.filter(revision=revision, spot_check=False).count()
    if (
        last.spot_check
        or triple.state != TripleState.PENDING_REVIEW
        or triple.current_revision_id != revision.pk
        or given >= revision.reviewers_needed
    ):
        raise ReviewUndoRefused(
            "That triple is already resolved; your review can no longer be undone."
        )
    withdrawn = {name: getattr(last, name) for name in REVIEW_FIELDS}
    withdrawn["flags"] = list(last.flags)
    assignment = last.assignment
    last.delete()
    assignment.completed_at = None
    assignment.save(update_fields=["completed_at"])
    released = []
    for claim in (
        ReviewAssignment.objects.filter(
            reviewer=reviewer,
            completed_at__isnull=True,
            review__isnull=True,
            revision__triple__project=project,
        )
        .exclude(pk=assignment.pk)
        .select_related("revision__triple")
    ):
        released.append(claim.revision.triple.external_id)
        _release_review_claim(claim)
    record_event(
        actor=reviewer,
        verb="review_undone",
        obj=revision,
        detail={"slot": assignment.slot, "withdrawn": withdrawn, "released": released},
    )
    schedule_agreement_recompute(project_id=triple.project_id)
    assignment.withdrawn = withdrawn
    return assignment


@transaction.atomic
def skip_review(*, assignment: ReviewAssignment, reason: str) -> ReviewSkip:
    """Hand an unreviewed claim back to the pool with a reason.

    The slot is freed at once (the assignment is deleted) and the skip is recorded, so the
    revision is never offered to this reviewer again and skips are counted per reviewer. Raises
    ReviewSkipRefused for an empty reason or a reviewed assignment. Audited as
    ``review_skipped``."""
    reason = (reason or "").strip()
    if not reason:
        raise ReviewSkipRefused("Say why you skip this review (a reason is required).")
    triple = lock_triple(assignment.revision.triple_id)
    if Review.objects.filter(assignment_id=assignment.pk).exists():
        raise ReviewSkipRefused("You already reviewed this revision; use undo instead.")
    skip, _ = ReviewSkip.objects.get_or_create(
        revision_id=assignment.revision_id,
        reviewer_id=assignment.reviewer_id,
        defaults={"reason": reason[:200]},
    )
    slot = assignment.slot
    _release_review_claim(assignment)
    record_event(
        actor=assignment.reviewer,
        verb="review_skipped",
        obj=assignment.revision,
        detail={"slot": slot, "reason": skip.reason, "triple": triple.external_id},
    )
    return skip


# ---------------------------------------------------------------- TRIAGE weekly spot-check


def select_spot_checks(eligible_ids, *, seed: int, rate: Decimal) -> list[int]:
    """The pure, reproducible draw: ceil(rate × n) of the sorted ids, sampled with ``seed``."""
    pool = sorted(eligible_ids)
    if not pool:
        return []
    k = min(len(pool), math.ceil(Decimal(len(pool)) * Decimal(str(rate))))
    return sorted(random.Random(seed).sample(pool, k))


def week_bounds(iso_year: int, iso_week: int) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(dt.date.fromisocalendar(iso_year, iso_week, 1), dt.time(), dt.UTC)
    return start, start + dt.timedelta(days=7)


def eligible_for_spot_check(*, project, iso_year: int, iso_week: int) -> list[int]:
    """TRIAGE revisions of ``project`` that became gold on a review submitted in that ISO
    week."""
    start, end = week_bounds(iso_year, iso_week)
    return sorted(
        TripleRevision.objects.filter(
            triple__project=project,
            triple__tier=Tier.TRIAGE,
            triple__state=TripleState.GOLD,
            triple__current_revision_id=F("id"),
            spot_check=False,
            reviews__spot_check=False,
            reviews__submitted_at__gte=start,
            reviews__submitted_at__lt=end,
        )
        .values_list("pk", flat=True)
        .distinct()
    )


@transaction.atomic
def draw_spot_checks(
    *, project, iso_year: int, iso_week: int, actor, seed: int | None = None
) -> SpotCheckDraw:
    """Draw ``project``'s spot-check sample of the week once, at the project's
    ``SPOT_CHECK_RATE``, with a recorded seed (random when not given).

    The selected revisions need a second reviewer (slot 2, flagged spot-check) and show up in
    reviewers' queues. Raises GoldsetError when that week was already drawn."""
    if SpotCheckDraw.objects.filter(project=project, iso_year=iso_year, iso_week=iso_week).exists():
        raise GoldsetError(f"The spot-check for {iso_year}-W{iso_week:02d} was already drawn.")
    seed = secrets.randbelow(2**31) if seed is None else int(seed)
    rate = Decimal(str(curation_setting("SPOT_CHECK_RATE", project=project)))
    eligible = eligible_for_spot_check(project=project, iso_year=iso_year, iso_week=iso_week)
    selected = select_spot_checks(eligible, seed=seed, rate=rate)
    for revision in TripleRevision.objects.select_for_update().filter(pk__in=selected):
        revision.spot_check, revision.reviewers_needed = True, SPOT_CHECK_REVIEWS
        revision.save(update_fields=["spot_check", "reviewers_needed"])
    draw = SpotCheckDraw.objects.create(
        project=project,
        iso_year=iso_year,
        iso_week=iso_week,
        seed=seed,
        rate=rate,
        eligible_revision_ids=eligible,
        selected_revision_ids=selected,
        drawn_by=actor,
    )
    record_event(
        actor=actor,
        verb="spot_check_drawn",
        obj=draw,
        detail={"seed": seed, "eligible": len(eligible), "selected": selected},
    )
    return draw


def current_iso_week(now: dt.datetime | None = None) -> tuple[int, int]:
    year, week, _ = (now or timezone.now()).isocalendar()
    return year, week


@transaction.atomic
def release_review_claims_of(*, reviewer) -> int:
    """Hand every unreviewed claim ``reviewer`` holds back to the pool (a person deprovisioned
    or deactivated). Triples are locked in id order (as a skip locks them); idempotent. One
    ``review_claim_released`` audit event per revision. Returns how many were released."""
    reviewed = Review.objects.filter(assignment_id=OuterRef("pk"))
    claims = list(
        ReviewAssignment.objects.filter(reviewer=reviewer, completed_at__isnull=True)
        .exclude(Exists(reviewed))
        .select_related("revision")
        .order_by("revision__triple_id", "pk")
    )
    for claim in claims:
        lock_triple(claim.revision.triple_id)
        _release_review_claim(claim)
        record_event(
            actor=None,
            verb="review_claim_released",
            obj=claim.revision,
            detail={"reviewer_id": reviewer.pk, "reason": "deprovisioned"},
        )
    return len(claims)
