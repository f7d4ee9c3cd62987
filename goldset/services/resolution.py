"""Resolution of reviewed revisions and every later state change of a triple (seed 000 step 3,
DESIGN.md §4–§5). Each transition is one service that locks the triple row, checks the state it
starts from, and writes an audit event:

* both GOLD reviewers confirm → ``gold`` (resolution consensus); TRIAGE: one confirm → ``gold``;
* exactly one flag (or the single TRIAGE flag) → ``in_discussion`` between the author and the
  flagging reviewer, ending in :func:`revise_triple`, :func:`drop_triple` or :func:`split_triple`;
* both GOLD reviewers flag → ``dropped`` plus a :class:`QualityTrackerEntry`;
* a new block version → ``needs_rereview`` (:func:`mark_superseded_pins`), then
  :func:`repin_triple` or :func:`retire_triple` by a lead (who may do the same to a gold triple
  pinned to superseded text with a reason).

LLM-generated triples reach ``gold`` only once a human has verified them.
"""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import (
    BlockVersion,
    DiscussionMessage,
    QualityTrackerEntry,
    Resolution,
    Review,
    Source,
    Tier,
    Triple,
    TripleRevision,
    TripleState,
    Verdict,
    WebhookEvent,
)
from goldset.rules.tiers import TRIPLE, required_for
from goldset.rules.triple_states import transition
from goldset.rules.versions import is_superseded
from goldset.selectors.curation import (
    is_author_or_lead,
    may_discuss,
    newest_block_version,
    newest_versions,
)
from goldset.services.notifications import (
    notify_discussion_opened,
    notify_discussion_reply,
    notify_revised,
)
from goldset.services.text_limits import check_text_length
from goldset.services.triples import create_triple, new_revision, superseded_detail
from goldset.services.webhooks import emit, triple_resolved_data, wants
from workbench.services.audit import record_event


def lock_triple(triple: Triple | int) -> Triple:
    pk = triple.pk if isinstance(triple, Triple) else triple
    return Triple.objects.select_for_update().get(pk=pk)


def _set_state(triple: Triple, state: str, *, actor, verb: str, **detail) -> None:
    before = transition(triple, state)
    triple.save()
    record_event(
        actor=actor,
        verb=verb,
        obj=triple,
        detail={"from": before, "to": state, **detail},
    )


def _required_reason(reason: str, action: str) -> str:
    """Irreversible moves (drop, retire) carry a reason: refused without one."""
    reason = (reason or "").strip()
    if not reason:
        raise GoldsetError(f"Say why you {action} this triple: a reason is required.")
    check_text_length("reason", reason)
    return reason


def _require_state(triple: Triple, *states: str) -> None:
    if triple.state not in states:
        wanted = " or ".join(TripleState(s).label.lower() for s in states)
        raise GoldsetError(
            f"{triple.external_id} is {triple.get_state_display().lower()}, not {wanted}."
        )


def _gold(triple: Triple, revision: TripleRevision, *, actor) -> None:
    if triple.tier == Tier.TRIAGE:
        triple.resolution = Resolution.SINGLE_REVIEW
    elif Review.objects.filter(
        revision__triple=triple, revision__number__lt=revision.number, verdict=Verdict.FLAG
    ).exists():
        triple.resolution = Resolution.REVISED_CONSENSUS
    else:
        triple.resolution = Resolution.CONSENSUS
    triple.gold_at = timezone.now()
    _set_state(
        triple,
        TripleState.GOLD,
        actor=actor,
        verb="triple_gold",
        revision=revision.number,
        resolution=triple.resolution,
    )


def awaits_human_verification(triple: Triple) -> bool:
    return triple.source == Source.LLM_GENERATED and triple.human_verified_by_id is None


def resolution_outcome(
    *, tier: str, verdicts: list[str], awaiting_human: bool, required: int | None = None
) -> str | None:
    """The state the protocol gives a pending revision of a ``tier`` triple with these
    (non-spot-check) verdicts: ``None`` while reviews are missing; all confirm → ``gold``, or
    still ``pending_review`` when an LLM-generated triple awaits its human verification; every
    one of two or more reviewers flags → ``dropped``; otherwise → ``in_discussion``. Pure: the
    re-route preview uses it to say which cases resolve at once. ``required``: the reviews the
    revision needs (fixed with the project's count when it was created or re-routed), else the
    installation's count for ``tier``."""
    if len(verdicts) < (required or required_for(TRIPLE, tier)):
        return None
    flags = sum(1 for v in verdicts if v == Verdict.FLAG)
    if not flags:
        return TripleState.PENDING_REVIEW if awaiting_human else TripleState.GOLD
    if flags == len(verdicts) and len(verdicts) >= 2:
        return TripleState.DROPPED
    return TripleState.IN_DISCUSSION


def resolve_revision(*, triple: Triple, revision: TripleRevision, actor) -> str:
    """Apply the protocol once every needed (non-spot-check) review of the current revision is in
    (:func:`resolution_outcome` decides).

    The caller holds ``triple``'s row lock. Returns the triple's state afterwards; does nothing
    (and is safe to call again) while reviews are missing or the triple left ``pending_review``."""
    if triple.state != TripleState.PENDING_REVIEW or triple.current_revision_id != revision.pk:
        return triple.state
    reviews = list(revision.reviews.filter(spot_check=False).select_related("reviewer"))
    outcome = resolution_outcome(
        tier=triple.tier,
        verdicts=[r.verdict for r in reviews],
        awaiting_human=awaits_human_verification(triple),
        required=None if revision.spot_check else revision.reviewers_needed,
    )
    if outcome is None:
        return triple.state
    flagged = [r for r in reviews if r.verdict == Verdict.FLAG]
    if outcome == TripleState.PENDING_REVIEW:
        record_event(
            actor=actor,
            verb="triple_awaiting_human_verification",
            obj=triple,
            detail={"revision": revision.number},
        )
    elif outcome == TripleState.GOLD:
        _gold(triple, revision, actor=actor)
    elif outcome == TripleState.DROPPED:
        _drop_on_double_flag(triple, revision, reviews, actor=actor)
    else:
        _set_state(
            triple,
            TripleState.IN_DISCUSSION,
            actor=actor,
            verb="triple_discussion_opened",
            revision=revision.number,
            flagged_by=[r.reviewer.username for r in flagged],
        )
        notify_discussion_opened(
            triple=triple,
            revision=revision,
            flagged_by=[r.reviewer_id for r in flagged],
            actor=actor,
        )
    if outcome != TripleState.PENDING_REVIEW and wants(
        WebhookEvent.TRIPLE_RESOLVED, project=triple.project_id
    ):
        data = triple_resolved_data(triple, revision, verdicts=[r.verdict for r in reviews])
        emit(WebhookEvent.TRIPLE_RESOLVED, data, project=triple.project)
    return triple.state


def _drop_on_double_flag(triple, revision, reviews, *, actor) -> None:
    flags: dict[str, int] = {}
    for review in reviews:
        for name in review.flags:
            flags[name] = flags.get(name, 0) + 1
    entry = QualityTrackerEntry.objects.create(
        project_id=triple.project_id,
        triple=triple,
        revision=revision,
        author_id=triple.author_id,
        flags=flags,
        categories=sorted({r.disagreement_category for r in reviews if r.disagreement_category}),
        comments=[r.comment for r in reviews if r.comment],
    )
    entry.reviewers.set([r.reviewer for r in reviews])
    _set_state(
        triple,
        TripleState.DROPPED,
        actor=actor,
        verb="triple_dropped_both_flagged",
        revision=revision.number,
        quality_entry=entry.pk,
        flags=flags,
    )


@transaction.atomic
def reopen_after_spot_check(*, review: Review, actor) -> str:
    """A spot-check reviewer flagged a TRIAGE gold triple: it goes to discussion, never silently
    staying gold. Called inside :func:`submit_review`'s transaction."""
    triple = lock_triple(review.revision.triple_id)
    if (
        review.verdict == Verdict.FLAG
        and triple.state == TripleState.GOLD
        and triple.current_revision_id == review.revision_id
    ):
        triple.resolution, triple.gold_at = "", None
        _set_state(
            triple,
            TripleState.IN_DISCUSSION,
            actor=actor,
            verb="triple_spot_check_flagged",
            revision=review.revision.number,
        )
        notify_discussion_opened(
            triple=triple, revision=review.revision, flagged_by=[review.reviewer_id], actor=actor
        )
    return triple.state


@transaction.atomic
def verify_llm_triple(*, triple: Triple, verifier) -> Triple:
    """Record a human's verification of an LLM-generated triple; if its reviews already agree it
    becomes gold now. Idempotent: an already verified triple is returned unchanged."""
    triple = lock_triple(triple)
    if triple.source != Source.LLM_GENERATED:
        raise GoldsetError("Only LLM-generated triples need a separate human verification.")
    if triple.human_verified_by_id is not None:
        return triple
    triple.human_verified_by, triple.human_verified_at = verifier, timezone.now()
    triple.save(update_fields=["human_verified_by", "human_verified_at", "updated_at"])
    record_event(actor=verifier, verb="triple_human_verified", obj=triple)
    resolve_revision(triple=triple, revision=triple.current_revision, actor=verifier)
    return triple


# ---------------------------------------------------------------- discussion outcomes


@transaction.atomic
def post_message(*, triple: Triple, author, body: str) -> DiscussionMessage:
    """Add to a triple's discussion thread (author, flagging reviewers, leads only)."""
    triple = lock_triple(triple)
    _require_state(triple, TripleState.IN_DISCUSSION)
    if not may_discuss(user=author, triple=triple):
        raise GoldsetError(
            "Only the author, a flagging reviewer or a lead can join this discussion."
        )
    body = body.strip()
    check_text_length("message", body)
    if not body:
        raise GoldsetError("The message is empty.")
    message = DiscussionMessage.objects.create(
        triple=triple, revision_id=triple.current_revision_id, author=author, body=body
    )
    record_event(
        actor=author,
        verb="discussion_message_posted",
        obj=triple,
        detail={"message_id": message.pk},
    )
    notify_discussion_reply(triple=triple, message=message)
    return message


def _require_author_or_lead(user, triple: Triple, what: str) -> None:
    if not is_author_or_lead(user=user, triple=triple):
        raise GoldsetError(f"Only the author or a lead can {what} this triple.")


@transaction.atomic
def revise_triple(
    *,
    triple: Triple,
    actor,
    question: str,
    block_version: BlockVersion,
    expected_answer: str,
    superseded_reason: str = "",
) -> TripleRevision:
    """Discussion → revise: a new revision re-enters review with fresh reviewers. A pin to a
    superseded block version needs ``superseded_reason`` (``triples.check_pin``)."""
    triple = lock_triple(triple)
    _require_state(triple, TripleState.IN_DISCUSSION)
    _require_author_or_lead(actor, triple, "revise")
    previous = triple.current_revision
    revision = new_revision(
        triple=triple,
        question=question,
        block_version=block_version,
        expected_answer=expected_answer,
        actor=actor,
        superseded_reason=superseded_reason,
    )
    triple.resolution = ""
    _set_state(
        triple,
        TripleState.PENDING_REVIEW,
        actor=actor,
        verb="triple_revised",
        revision=revision.number,
        block_version_id=block_version.pk,
        **superseded_detail(revision),
    )
    notify_revised(triple=triple, previous=previous, revision=revision, actor=actor)
    return revision


@transaction.atomic
def drop_triple(*, triple: Triple, actor, reason: str = "") -> Triple:
    """Discussion → drop (author, a flagging reviewer or a lead), with a reason (required,
    recorded in the ``triple_dropped`` audit event): a drop cannot be undone."""
    triple = lock_triple(triple)
    _require_state(triple, TripleState.IN_DISCUSSION)
    if not may_discuss(user=actor, triple=triple):
        raise GoldsetError("Only the author, a flagging reviewer or a lead can drop this triple.")
    reason = _required_reason(reason, "drop")
    triple.resolution = ""
    _set_state(
        triple,
        TripleState.DROPPED,
        actor=actor,
        verb="triple_dropped",
        reason=reason,
    )
    return triple


@dataclass(frozen=True)
class SplitPart:
    question: str
    block_version: BlockVersion
    expected_answer: str
    superseded_reason: str = ""  # needed when block_version is superseded (check_pin)


@transaction.atomic
def split_triple(*, triple: Triple, actor, parts: list[SplitPart]) -> list[Triple]:
    """Compound claim → N atomic triples (N ≥ 2), each pinned to its own block version and
    entering review on its own; the original closes as ``split``. All or nothing."""
    triple = lock_triple(triple)
    _require_state(triple, TripleState.IN_DISCUSSION)
    _require_author_or_lead(actor, triple, "split")
    if len(parts) < 2:
        raise GoldsetError("A split needs at least two atomic triples.")
    children = [
        create_triple(
            project=triple.project,
            author=triple.author,
            question=part.question,
            block_version=part.block_version,
            expected_answer=part.expected_answer,
            task_type=triple.task_type,
            source=triple.source,
            domain=triple.domain,
            difficulty=triple.difficulty,
            customer=triple.customer,
            adversarial=triple.adversarial,
            model_uncertainty=triple.model_uncertainty,
            llm_verified=triple.human_verified_by_id == triple.author_id,
            parent=triple,
            superseded_reason=part.superseded_reason,
        )
        for part in parts
    ]
    triple.resolution = ""
    _set_state(
        triple,
        TripleState.SPLIT,
        actor=actor,
        verb="triple_split",
        children=[c.external_id for c in children],
    )
    return children


# ---------------------------------------------------------------- block versions


@transaction.atomic
def mark_superseded_pins(*, superseding_version_ids: list[int], actor=None) -> list[int]:
    """Every gold or pending triple whose current revision pins an older version of a block that
    just got a new version becomes ``needs_rereview``. Returns the affected triple ids.
    Called inside :func:`goldset.services.corpus.import_corpus`'s transaction."""
    if not superseding_version_ids:
        return []
    newest = newest_versions(
        BlockVersion.objects.filter(pk__in=superseding_version_ids).values_list(
            "block_id", flat=True
        )
    )
    candidates = (
        Triple.objects.select_for_update(of=("self",))
        .filter(
            state__in=[TripleState.GOLD, TripleState.PENDING_REVIEW],
            current_revision__expected_block_version__block_id__in=newest,
        )
        .select_related("current_revision__expected_block_version")
        .order_by("pk")
    )
    marked = []
    for triple in candidates:
        pinned = triple.current_revision.expected_block_version
        if not is_superseded(pinned=pinned.version, newest=newest[pinned.block_id]):
            continue
        _set_state(
            triple,
            TripleState.NEEDS_REREVIEW,
            actor=actor,
            verb="triple_needs_rereview",
            pinned_version_id=pinned.pk,
            pinned_version=pinned.version,
            newest_version=newest[pinned.block_id],
        )
        marked.append(triple.pk)
    return marked


def _require_rereviewable(triple: Triple) -> BlockVersion:
    """``needs_rereview``, or ``gold`` while pinned to a superseded version (a reasoned
    superseded pin, or a block version added without a corpus import). Returns the newest
    version of the pinned block."""
    _require_state(triple, TripleState.NEEDS_REREVIEW, TripleState.GOLD)
    pinned = triple.current_revision.expected_block_version
    newest = newest_block_version(pinned.block_id)
    if triple.state == TripleState.GOLD and not is_superseded(
        pinned=pinned.version, newest=newest.version
    ):
        raise GoldsetError(
            f"{triple.external_id} is pinned to the current version of its block; "
            "there is nothing to re-review."
        )
    return newest


@transaction.atomic
def repin_triple(*, triple: Triple, actor) -> TripleRevision:
    """Needs re-review (or gold on a superseded pin) → a new revision pinned to the block's
    newest version, re-entering review (fresh reviews; it was not silently moved)."""
    triple = lock_triple(triple)
    newest = _require_rereviewable(triple)
    current = triple.current_revision
    revision = new_revision(
        triple=triple,
        question=current.question,
        block_version=newest,
        expected_answer=current.expected_answer,
        actor=actor,
    )
    triple.resolution, triple.gold_at = "", None
    _set_state(
        triple,
        TripleState.PENDING_REVIEW,
        actor=actor,
        verb="triple_repinned",
        revision=revision.number,
        from_version=current.expected_block_version.version,
        to_version=newest.version,
    )
    return revision


@transaction.atomic
def retire_triple(*, triple: Triple, actor, note: str = "") -> Triple:
    """Needs re-review (or gold on a superseded pin) → retired: it leaves the gold set for
    good, so a reason is required (recorded in the ``triple_retired`` audit event)."""
    triple = lock_triple(triple)
    _require_rereviewable(triple)
    note = _required_reason(note, "retire")
    triple.resolution, triple.gold_at = "", None
    _set_state(triple, TripleState.RETIRED, actor=actor, verb="triple_retired", note=note)
    return triple
