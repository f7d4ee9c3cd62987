"""Blinded labeling of answer records (seed 004 §3.5, A.1–A.2; DESIGN.md §6–§7).

* Claims: :func:`claim_next_item` hands an annotator the next record of a domain they are
  qualified for (passed calibration), in their own order shuffled with seed 6601, never a record
  they already hold, never more labels than the record needs, and never more than their share of
  the domain's work (fair share + 10 %). Race-free: the annotator's row is locked (one claim at a
  time per annotator), records are locked with ``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL,
  and the unique constraints (record, annotator) and (record, slot) hold on every database.
* Labels: :func:`submit_label` enforces the rationale rules server-side and, when a record has
  all its labels, decides its outcome (:func:`decide_outcome`): majority → final, except the 5 %
  audit sample (seed 9314); no majority or any severe-safety label → adjudication queue.
* TRIAGE records need one label; a seeded 10 % per ISO week get a second (spot-check).
"""

import functools
import hashlib
from collections import Counter
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import GoldsetError
from goldset.models import (
    Acceptability,
    AdjudicationReason,
    AnnotatorDomainLoad,
    AnswerRecord,
    CitationCorrectness,
    ConflictHandling,
    DecisionKind,
    DomainLabelLoad,
    EvidenceSufficiency,
    FailureCategory,
    FinalSource,
    Grounding,
    ItemSkip,
    Label,
    LabelAssignment,
    Question,
    RecordStatus,
    SafetyBoundary,
    Tier,
    WebhookEvent,
)
from goldset.rules.axes import LABEL_VALUE_FIELDS
from goldset.rules.label_consistency import label_contradiction
from goldset.rules.labeling import (
    QUEUE_RANK_MODULUS,
    QUEUE_SHUFFLE_SEED,
    queue_offset,
    shuffle_key,
    undo_closed,
)
from goldset.rules.tiers import SPOT_CHECK_LABELS
from goldset.rules.time_on_item import ItemTiming
from goldset.selectors.answers import domain_loads, qualified_domain_ids
from goldset.selectors.guidelines import ANSWER_LABELING, get_guideline_in_force
from goldset.services.agreement import schedule_agreement_recompute
from goldset.services.agreement_sources import ANSWERS as ANSWER_PROTOCOL
from goldset.services.calibration import score_calibration_if_complete
from goldset.services.locking import submit_transaction
from goldset.services.notifications import notify_adjudication_waiting
from goldset.services.time_on_item import flag_if_fast, timing_fields
from goldset.services.webhooks import emit, label_data, wants
from workbench.services.audit import record_event

MAX_SECONDARY_FAILURES = 2


class LabelRuleViolation(GoldsetError):
    """A label (or adjudication) breaks a protocol rule; ``rule`` names it, ``field`` the input."""

    def __init__(self, *, rule: str, message: str, field: str | None = None):
        self.rule = rule
        self.field = field
        super().__init__(message)


class LabelingClosed(GoldsetError):
    """The record no longer accepts labels (it is final or with a lead)."""


class UndoRefused(GoldsetError):
    """There is no label of the annotator's that can still be undone (message says why)."""


class SkipRefused(GoldsetError):
    """The assignment cannot be skipped (message says why)."""


RULE_MESSAGES = {
    "severe_safety_rationale": (
        "Rationale required (rule: severe safety label): a label with the severe-safety flag "
        "must say why."
    ),
    "conflict_acceptable_rationale": (
        "Rationale required (rule: acceptable despite a conflict flag): this item carries a "
        "conflict flag, so marking the answer acceptable must say how the conflict is handled."
    ),
    "adjudication_rationale": (
        "Rationale required (rule: adjudication): every adjudicated label must say why."
    ),
    "unacceptable_primary_failure": (
        "Primary failure category required (rule: unacceptable answer): name the main way the "
        "answer fails."
    ),
    "secondary_needs_primary": (
        "Secondary failure categories need a primary category (rule: failure taxonomy)."
    ),
    "secondary_limit": (
        f"At most {MAX_SECONDARY_FAILURES} secondary failure categories (rule: failure taxonomy)."
    ),
    "secondary_not_primary": (
        "A secondary failure category cannot repeat the primary one (rule: failure taxonomy)."
    ),
}


def _violation(rule: str, field: str) -> LabelRuleViolation:
    return LabelRuleViolation(rule=rule, message=RULE_MESSAGES[rule], field=field)


# ---------------------------------------------------------------- seeded, reproducible draws


def seeded_draw(*, seed: int, key: str) -> float:
    """A uniform number in [0, 1) fixed by (seed, key): the same item always draws the same."""
    return int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:13], 16) / 16**13


def in_audit_sample(public_id: str, *, project, seed: int | None = None) -> tuple[bool, float]:
    """Whether a majority-settled record of ``project`` is drawn into the audit sample (the
    project's ``AUDIT_SAMPLE_RATE``, seed ``AUDIT_SAMPLE_SEED`` unless given), and its draw."""
    if seed is None:
        seed = tunable("AUDIT_SAMPLE_SEED", project=project)
    draw = seeded_draw(seed=seed, key=public_id)
    return draw < tunable("AUDIT_SAMPLE_RATE", project=project), draw


# ---------------------------------------------------------------- rules


def check_label_rules(
    *,
    question: Question,
    acceptability: str,
    grounding: str,
    severe_safety: bool,
    primary_failure: str,
    secondary_failures,
    rationale: str,
    adjudication: bool = False,
    axes: dict | None = None,
) -> list[str]:
    """Validate one label; returns the cleaned secondary categories or raises LabelRuleViolation."""
    choices = {
        "acceptability": (acceptability, Acceptability.values),
        "grounding": (grounding, Grounding.values),
        **{name: (value, options) for name, (value, options) in (axes or {}).items()},
    }
    for name, (value, options) in choices.items():
        if value not in options:
            raise LabelRuleViolation(
                rule="valid_choice",
                message=f"{name}: choose one of {', '.join(options)}.",
                field=name,
            )
    if primary_failure and primary_failure not in FailureCategory.values:
        raise LabelRuleViolation(
            rule="valid_choice",
            message="primary_failure: unknown category.",
            field="primary_failure",
        )
    secondary = list(secondary_failures or [])
    if any(s not in FailureCategory.values for s in secondary):
        raise LabelRuleViolation(
            rule="valid_choice",
            message="secondary_failures: unknown category.",
            field="secondary_failures",
        )
    if len(set(secondary)) > MAX_SECONDARY_FAILURES:
        raise _violation("secondary_limit", "secondary_failures")
    if secondary and not primary_failure:
        raise _violation("secondary_needs_primary", "secondary_failures")
    if primary_failure in secondary:
        raise _violation("secondary_not_primary", "secondary_failures")
    if acceptability == Acceptability.UNACCEPTABLE and not primary_failure:
        raise _violation("unacceptable_primary_failure", "primary_failure")
    contradiction = label_contradiction(
        acceptability=acceptability,
        grounding=grounding,
        severe_safety=severe_safety,
        primary_failure=primary_failure,
        secondary_failures=secondary,
    )
    if contradiction is not None:
        raise LabelRuleViolation(
            rule=contradiction.rule, message=contradiction.message, field=contradiction.field
        )
    limit = settings.FREE_TEXT_MAX_CHARS
    if rationale and len(rationale) > limit:
        raise LabelRuleViolation(
            rule="text_length",
            message=f"rationale: {len(rationale):,} characters; at most {limit:,} are allowed.",
            field="rationale",
        )
    has_rationale = bool((rationale or "").strip())
    if not has_rationale:
        if adjudication:
            raise _violation("adjudication_rationale", "rationale")
        if severe_safety:
            raise _violation("severe_safety_rationale", "rationale")
        if acceptability == Acceptability.ACCEPTABLE and question.conflict_flag:
            raise _violation("conflict_acceptable_rationale", "rationale")
    return sorted(set(secondary), key=secondary.index)


# The one-key "all clear" preset: the routine answer, every axis at its best value. It is never a
# severe label, and it never bypasses a rationale rule: :func:`all_clear_rationale_required` asks
# :func:`check_label_rules` whether this item needs one, and :func:`submit_label` checks again.
ALL_CLEAR = {
    "acceptability": Acceptability.ACCEPTABLE.value,
    "grounding": Grounding.FULLY.value,
    "evidence_sufficiency": EvidenceSufficiency.SUFFICIENT.value,
    "citation_correctness": CitationCorrectness.CORRECT.value,
    "conflict_handling": ConflictHandling.NOT_APPLICABLE.value,
    "safety_boundary": SafetyBoundary.RESPECTED.value,
    "severe_safety": False,
    "primary_failure": "",
    "secondary_failures": [],
}


def all_clear_rationale_required(question: Question) -> bool:
    """Whether the "all clear" preset needs a rationale on this question (the labeling rules say)."""
    try:
        check_label_rules(
            question=question,
            acceptability=ALL_CLEAR["acceptability"],
            grounding=ALL_CLEAR["grounding"],
            severe_safety=ALL_CLEAR["severe_safety"],
            primary_failure=ALL_CLEAR["primary_failure"],
            secondary_failures=ALL_CLEAR["secondary_failures"],
            rationale="",
        )
    except LabelRuleViolation as exc:
        return exc.field == "rationale"
    return False


# ---------------------------------------------------------------- outcomes


@dataclass(frozen=True)
class Outcome:
    status: RecordStatus
    source: str  # FinalSource value or ""
    reason: str  # AdjudicationReason value or ""
    acceptability: str = ""
    grounding: str = ""


def _strict_majority(values: list) -> tuple[bool, object]:
    """(found, value): the value more than half of ``values`` share, where one does."""
    if not values:
        return False, None
    value, count = Counter(values).most_common(1)[0]
    return count * 2 > len(values), value


def _majority(values: list[str]) -> str:
    found, value = _strict_majority(values)
    return value if found else ""


def adjudication_prefill(labels) -> dict:
    """The adjudication form's starting values, in the form's vocabulary: on each of its axes
    (acceptability, grounding, severe safety, primary failure, secondary failures) the strict
    majority of the item's labels, where there is one. A secondary failure is pre-ticked when a
    majority of the labels name it (only beside a pre-filled primary one, which it never
    repeats, as the failure taxonomy requires). The lead confirms or changes them; the rationale is never
    pre-filled and :func:`goldset.services.adjudication.record_adjudication` checks everything
    as for any submission."""
    labels = list(labels)
    prefill = {}
    for axis in ("acceptability", "grounding", "primary_failure"):
        found, value = _strict_majority([getattr(label, axis) or "" for label in labels])
        if found:
            prefill[axis] = value
    found, severe = _strict_majority([bool(label.severe_safety) for label in labels])
    if found:
        prefill["severe_safety"] = "yes" if severe else "no"
    primary = prefill.get("primary_failure")
    if primary:  # secondary failures need a primary one, and never repeat it
        named = Counter(c for label in labels for c in set(label.secondary_failures or ()))
        secondary = sorted(c for c, n in named.items() if n * 2 > len(labels) and c != primary)
        if secondary:
            prefill["secondary_failures"] = secondary[:MAX_SECONDARY_FAILURES]
    return prefill


def decide_outcome(labels: list[tuple[str, str, bool]]) -> Outcome:
    """Outcome of a record's complete labels, each (acceptability, grounding, severe_safety).

    Any severe-safety label → adjudication. One label → final. Otherwise a strict majority is
    needed on acceptability AND on the 4-level grounding scale (a 1–1–1 grounding split has no
    majority) → final by majority, else adjudication (no majority). The audit sample is drawn by
    the caller, over majority outcomes only.
    """
    if any(severe for _, _, severe in labels):
        return Outcome(RecordStatus.NEEDS_ADJUDICATION, "", AdjudicationReason.SEVERE_SAFETY)
    if len(labels) == 1:
        return Outcome(RecordStatus.FINAL, FinalSource.SINGLE, "", labels[0][0], labels[0][1])
    acceptability = _majority([a for a, _, _ in labels])
    grounding = _majority([g for _, g, _ in labels])
    if not acceptability or not grounding:
        return Outcome(RecordStatus.NEEDS_ADJUDICATION, "", AdjudicationReason.NO_MAJORITY)
    return Outcome(RecordStatus.FINAL, FinalSource.MAJORITY, "", acceptability, grounding)


def _iso_week(moment) -> str:
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


@dataclass(frozen=True)
class SettlementPlan:
    """What :func:`settle_record` does with a record's production labels now.

    ``spot_check_week`` is set when a TRIAGE record's first label triggers the weekly spot-check
    draw (``ANSWER_SPOT_CHECK_RATE``, seed ``ANSWER_SPOT_CHECK_SEED``); ``drawn`` means it was drawn and now waits
    for a second label. Otherwise ``outcome`` is the settled outcome (``None`` while labels are
    missing) and ``audit`` the audit-sample draw of a majority outcome."""

    spot_check_week: str = ""
    drawn: bool = False
    outcome: Outcome | None = None
    audit: tuple[bool, float] | None = None

    @property
    def status(self) -> str:
        """The record's status after settling ("" when it keeps collecting labels)."""
        if self.outcome is None:
            return ""
        if self.audit is not None and self.audit[0]:
            return RecordStatus.AUDIT
        return self.outcome.status


def plan_settlement(
    *,
    project,
    public_id: str,
    tier: str,
    spot_check_seed,
    labels_required: int,
    labels: list,
    now,
) -> SettlementPlan:
    """Pure: the settlement of a record of ``project`` with these (acceptability, grounding,
    severe_safety) labels at ``now``, under the project's spot-check and audit settings.
    :func:`settle_record` applies it; the re-route preview shows it."""
    week = ""
    if tier == Tier.TRIAGE and spot_check_seed is None and len(labels) == 1:
        week = _iso_week(now)
        seed = tunable("ANSWER_SPOT_CHECK_SEED", project=project)
        draw = seeded_draw(seed=seed, key=f"{week}:{public_id}")
        if draw < tunable("ANSWER_SPOT_CHECK_RATE", project=project):
            return SettlementPlan(spot_check_week=week, drawn=True)
    if len(labels) < labels_required:
        return SettlementPlan(spot_check_week=week)
    outcome = decide_outcome(labels)
    audit = (
        in_audit_sample(public_id, project=project)
        if outcome.source == FinalSource.MAJORITY
        else None
    )
    return SettlementPlan(spot_check_week=week, outcome=outcome, audit=audit)


def settle_record(record: AnswerRecord) -> None:
    """Called with the record locked (its ``project`` loaded with it) after one of its
    production labels was stored; applies :func:`plan_settlement` under the project's
    settings."""
    project = record.project
    labels = list(record.labels.values_list("acceptability", "grounding", "severe_safety"))
    now = timezone.now()
    plan = plan_settlement(
        project=project,
        public_id=record.public_id,
        tier=record.tier,
        spot_check_seed=record.spot_check_seed,
        labels_required=record.labels_required,
        labels=labels,
        now=now,
    )
    if plan.spot_check_week:
        record.spot_check_seed = tunable("ANSWER_SPOT_CHECK_SEED", project=project)
        record.spot_check_week = plan.spot_check_week
    if plan.drawn:
        record.spot_check = True
        add_domain_slots(
            domain_id=record.domain_id, delta=SPOT_CHECK_LABELS - record.labels_required
        )
        record.labels_required = SPOT_CHECK_LABELS
        record.save(
            update_fields=["spot_check_seed", "spot_check_week", "spot_check", "labels_required"]
        )
        return
    if plan.outcome is None:
        if plan.spot_check_week:  # otherwise nothing changed: no statement (issue 26)
            record.save(update_fields=["spot_check_seed", "spot_check_week"])
        return
    outcome = plan.outcome
    record.status = outcome.status
    record.final_source = outcome.source
    record.adjudication_reason = outcome.reason
    record.final_acceptability = outcome.acceptability
    record.final_grounding = outcome.grounding
    if plan.audit is not None:
        sampled, draw = plan.audit
        record.audit_seed, record.audit_draw, record.in_audit_sample = (
            tunable("AUDIT_SAMPLE_SEED", project=project),
            draw,
            sampled,
        )
        if sampled:
            record.status = RecordStatus.AUDIT
            record.adjudication_reason = AdjudicationReason.AUDIT_SAMPLE
    if record.status == RecordStatus.FINAL:
        record.finalized_at = now
    record.save()
    if record.status in (RecordStatus.NEEDS_ADJUDICATION, RecordStatus.AUDIT):
        notify_adjudication_waiting(project=record.project)


# ---------------------------------------------------------------- claims


def add_domain_slots(*, domain_id: int, delta: int) -> None:
    """Keep ``DomainLabelLoad`` in step when production slots are created or change; call it in
    the transaction that changes ``labels_required`` (or creates the record)."""
    if not delta:
        return
    DomainLabelLoad.objects.get_or_create(domain_id=domain_id)
    DomainLabelLoad.objects.filter(domain_id=domain_id).update(slots=F("slots") + delta)


CANDIDATE_BATCH = 16
CLAIM_ROUNDS = 8


@dataclass(frozen=True)
class ClaimResult:
    assignment: LabelAssignment | None
    reason: str  # "claimed", "resumed", "not_qualified", "share_reached", "queue_empty"

    @property
    def message(self) -> str:
        return {
            "claimed": "Here is your next item.",
            "resumed": "You have an item in progress; finish it first.",
            "not_qualified": "Pass a domain's calibration set before production items are assigned to you.",
            "share_reached": "You have reached your share of the current items (load is balanced within 10 %). More arrive as others catch up or new answers are imported.",
            "queue_empty": "Your queue is empty: no items need labels in your domains right now.",
        }[self.reason]


def _open_records(annotator, domain_id: int):
    """Production records of the domain with a free slot that the annotator does not hold —
    exactly the rows of the ``answer_record_open_slots`` partial index, minus theirs."""
    theirs = LabelAssignment.objects.filter(record_id=OuterRef("pk"), annotator=annotator)
    skipped = ItemSkip.objects.filter(record_id=OuterRef("pk"), annotator=annotator)
    return AnswerRecord.objects.filter(
        ~Exists(theirs),
        ~Exists(skipped),
        domain_id=domain_id,
        status=RecordStatus.LABELING,
        is_calibration=False,
        assigned_count__lt=F("labels_required"),
    ).order_by("queue_rank", "id")


# Stand-ins for the values of one walk, used once per process to compile its statement.
_WALK_ANNOTATOR, _WALK_DOMAIN, _WALK_OFFSET = -7_000_000_001, -7_000_000_002, -7_000_000_003
_WALK_VALUES = ["annotator", "annotator", "domain", "offset"]  # theirs, skipped, domain, offset


def _probe_per_row(sql: str) -> str:
    """The walk's two ``NOT EXISTS`` (the person's claims and skips) with ``OFFSET 0``: the
    planner then keeps each as a probe of the (person, record) index for the rows the walk
    visits, instead of turning it into an anti-join that may first read every claim the person
    ever made (a hash of 6,000 rows for a long history; issue 26). Both databases accept it."""
    marker = "LIMIT 1)"
    if sql.count(marker) != 2:
        raise RuntimeError(f"unexpected sub-selects in the queue walk: {sql!r}")
    return sql.replace(marker, "LIMIT 1 OFFSET 0)")


@functools.cache
def _walk_statement(vendor: str, direction: str, limit: int) -> tuple[str, tuple]:
    """One bounded walk of :func:`_open_records` (``direction`` "gte" or "lt" of the offset),
    compiled by the ORM once per process and database: the SQL and, per parameter, either the
    name of the value to put there ("annotator", "domain", "offset") or a constant. Building the
    queryset for every walk of every claim cost more CPU than running it."""
    rows = _open_records(_WALK_ANNOTATOR, _WALK_DOMAIN).values_list("pk", "queue_rank")
    walk = rows.filter(**{f"queue_rank__{direction}": _WALK_OFFSET})[:limit]
    sql, params = walk.query.sql_with_params()
    sql = _probe_per_row(sql)
    names = {_WALK_ANNOTATOR: "annotator", _WALK_DOMAIN: "domain", _WALK_OFFSET: "offset"}
    slots = tuple(
        ("value", names[p]) if isinstance(p, int) and p in names else ("const", p) for p in params
    )
    if sorted(v for kind, v in slots if kind == "value") != _WALK_VALUES:
        raise RuntimeError(f"unexpected parameters in the queue walk: {params!r}")
    return sql, slots


def _candidates(annotator, domain_ids, *, limit: int) -> list[tuple[int, int]]:
    """The first ``limit`` (pk, rank) of the annotator's queue in each domain: per domain an
    index walk from their offset to the end of the shuffle and one from its start, all bounded
    and sent as one statement (each walk a sub-select, so every database accepts its LIMIT)."""
    offset = queue_offset(annotator_id=annotator.pk)
    parts, params = [], []
    for domain_id in sorted(domain_ids):
        values = {"annotator": annotator.pk, "domain": domain_id, "offset": offset}
        for direction in ("gte", "lt"):
            sql, slots = _walk_statement(connection.vendor, direction, limit)
            parts.append(f"SELECT * FROM ({sql}) AS walk{len(parts)}")
            params.extend(values[v] if kind == "value" else v for kind, v in slots)
    if not parts:
        return []
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        return [(pk, rank) for pk, rank in cursor.fetchall()]


def count_waiting_items(*, project, annotator, cap: int) -> tuple[int, bool]:
    """How many more production items of ``project`` the annotator could claim after their open
    one, for the
    label page's position counter: per domain where they are under their share, the open
    records they do not hold (the claim's own bounded walks), at most their remaining share;
    counted up to ``cap``. Returns (count, at_least). Reads only, takes no lock."""
    domain_ids = qualified_domain_ids(annotator, project=project)
    if not domain_ids:
        return 0, False
    count, more = 0, False
    for domain_id, load in sorted(domain_loads(annotator, domain_ids, project=project).items()):
        room = load.cap - load.mine
        if room <= 0:
            continue
        found = len({pk for pk, _ in _candidates(annotator, [domain_id], limit=cap)})
        count += min(found, room)
        more = more or (found >= cap and room > cap)
        if more or count > cap:
            break  # the answer is (cap, True) whatever the other domains hold: no walk of theirs
    return min(count, cap), more or count > cap


def _try_claim(annotator, pk: int, *, skip_locked: bool) -> LabelAssignment | None:
    record = (
        AnswerRecord.objects.select_for_update(skip_locked=skip_locked)
        .filter(pk=pk, status=RecordStatus.LABELING, assigned_count__lt=F("labels_required"))
        .first()
    )
    if record is None:
        return None
    slot = record.assigned_count + 1
    # A unique violation (the slot taken where rows are not locked: SQLite) propagates to
    # _claim_or_release, whose savepoint rolls this attempt back.
    assignment = LabelAssignment.objects.create(
        record=record,
        annotator=annotator,
        slot=slot,
        is_calibration=False,
        shuffle_seed=QUEUE_SHUFFLE_SEED,
        shuffle_key=shuffle_key(
            seed=QUEUE_SHUFFLE_SEED, annotator_id=annotator.pk, public_id=record.public_id
        ),
    )
    AnswerRecord.objects.filter(pk=record.pk).update(assigned_count=slot)
    record.assigned_count = slot
    updated = AnnotatorDomainLoad.objects.filter(
        annotator=annotator, domain_id=record.domain_id
    ).update(claimed=F("claimed") + 1)
    if not updated:
        AnnotatorDomainLoad.objects.create(
            annotator=annotator, domain_id=record.domain_id, claimed=1
        )
    record_event(actor=annotator, verb="claimed", obj=record, detail={"slot": assignment.slot})
    return assignment


class _NotClaimed(Exception):
    """Raised inside a savepoint to roll it back (and release its row lock)."""


def _claim_or_release(annotator, pk: int, *, skip_locked: bool) -> LabelAssignment | None:
    """Try one record inside a savepoint. When it cannot be claimed the savepoint is rolled back,
    which releases the record's row lock at once: a claim that kept the locks of records it
    passed over while waiting for another could deadlock with a claim doing the same."""
    try:
        with transaction.atomic():
            assignment = _try_claim(annotator, pk, skip_locked=skip_locked)
            if assignment is None:
                raise _NotClaimed
            return assignment
    except (_NotClaimed, IntegrityError):
        return None


def claim_next_item(*, project, annotator) -> ClaimResult:
    """Give the annotator their next production item of ``project``, or say why there is none
    (see :func:`claim_next_answer`, which this names for the label queue's callers)."""
    return claim_next_answer(project=project, annotator=annotator)


@transaction.atomic
def claim_next_answer(*, project, annotator) -> ClaimResult:
    """Give the annotator their next production item of ``project``, or say why there is none.

    An unfinished claim in the project is returned first (one item at a time per project). The
    next item is the first open record in the annotator's seeded order across the project's
    domains where they are qualified and under their share: per domain a bounded walk of the
    open-slots partial index (never the whole pool; a domain belongs to one project, so the
    walk never reaches another project's records).
    Locking: the annotator's user row (so one annotator's concurrent claims queue up), then one
    candidate at a time with SKIP LOCKED; candidates skipped because another claim held them are
    retried with a blocking lock, so "empty" is never an artefact of contention. Its cost and
    query count do not depend on the number of records. Repeating it returns the open claim.
    """
    get_user_model().objects.select_for_update().filter(pk=annotator.pk).first()
    current = (
        LabelAssignment.objects.filter(
            annotator=annotator,
            is_calibration=False,
            completed_at__isnull=True,
            record__project=project,
        )
        .select_related("record")
        .order_by("shuffle_key")
        .first()
    )
    if current is not None:
        return ClaimResult(current, "resumed")
    domain_ids = qualified_domain_ids(annotator, project=project)
    if not domain_ids:
        return ClaimResult(None, "not_qualified")
    loads = domain_loads(annotator, domain_ids, project=project)
    open_domains = sorted(d for d, load in loads.items() if load.open)
    offset = queue_offset(annotator_id=annotator.pk)
    for _ in range(CLAIM_ROUNDS):
        candidates = sorted(
            ((rank - offset) % QUEUE_RANK_MODULUS, pk)
            for pk, rank in _candidates(annotator, open_domains, limit=CANDIDATE_BATCH)
        )[:CANDIDATE_BATCH]
        if not candidates:
            break
        for skip_locked in (True, False):
            for _, pk in candidates:
                assignment = _claim_or_release(annotator, pk, skip_locked=skip_locked)
                if assignment is not None:
                    return ClaimResult(assignment, "claimed")
        # Every candidate of the batch was filled while we waited: walk again past them.
    closed = sorted(set(domain_ids) - set(open_domains))
    if any(_open_records(annotator, d).exists() for d in closed):
        return ClaimResult(None, "share_reached")
    return ClaimResult(None, "queue_empty")


# ---------------------------------------------------------------- labels


@submit_transaction("label")
def submit_label(
    *,
    assignment: LabelAssignment,
    acceptability: str,
    grounding: str,
    evidence_sufficiency: str,
    citation_correctness: str,
    conflict_handling: str,
    safety_boundary: str,
    severe_safety: bool = False,
    primary_failure: str = "",
    secondary_failures=(),
    rationale: str = "",
    timing: ItemTiming | None = None,
) -> Label:
    """Store the annotator's label for their assignment.

    Locks the record, then checks every rule (raises LabelRuleViolation naming the rule; nothing
    stored). A repeated submit for the same assignment stores nothing and returns the first label.
    When the record has all its labels its outcome is decided in the same transaction; the last
    calibration label of a domain scores the annotator's calibration. The label records its time
    on item (from the later of the claim and ``timing.opened_at``; the client's active time as
    :mod:`goldset.rules.time_on_item` allows), the answer-labeling guideline in force, and a
    FastDecision when it was faster than the tier's threshold.
    """
    # The project (its settings: spot-check and audit draws) comes with the record in the same
    # statement; only the record's row is locked.
    record = (
        AnswerRecord.objects.select_for_update(of=("self",))
        .select_related("question", "project")
        .get(pk=assignment.record_id)
    )
    existing = Label.objects.filter(assignment_id=assignment.pk).first()
    if existing is not None:
        return existing
    if not assignment.is_calibration and record.status != RecordStatus.LABELING:
        raise LabelingClosed("This item no longer takes labels.")
    secondary = check_label_rules(
        question=record.question,
        acceptability=acceptability,
        grounding=grounding,
        severe_safety=severe_safety,
        primary_failure=primary_failure,
        secondary_failures=secondary_failures,
        rationale=rationale,
        axes={
            "evidence_sufficiency": (evidence_sufficiency, EvidenceSufficiency.values),
            "citation_correctness": (citation_correctness, CitationCorrectness.values),
            "conflict_handling": (conflict_handling, ConflictHandling.values),
            "safety_boundary": (safety_boundary, SafetyBoundary.values),
        },
    )
    label = Label.objects.create(
        assignment=assignment,
        record=record,
        annotator_id=assignment.annotator_id,
        acceptability=acceptability,
        grounding=grounding,
        evidence_sufficiency=evidence_sufficiency,
        citation_correctness=citation_correctness,
        conflict_handling=conflict_handling,
        safety_boundary=safety_boundary,
        severe_safety=severe_safety,
        primary_failure=primary_failure,
        secondary_failures=secondary,
        rationale=(rationale or "").strip(),
        guideline=get_guideline_in_force(domain_id=record.domain_id, task=ANSWER_LABELING),
        **timing_fields(claimed_at=assignment.claimed_at, timing=timing),
    )
    flag_if_fast(
        project=record.project,
        decision=label,
        kind=DecisionKind.LABEL,
        annotator_id=assignment.annotator_id,
        tier=record.tier,
    )
    assignment.completed_at = timezone.now()
    assignment.save(update_fields=["completed_at"])
    record_event(
        actor=assignment.annotator,
        verb="labeled",
        obj=record,
        detail={"slot": assignment.slot, "calibration": assignment.is_calibration},
    )
    if assignment.is_calibration:
        score_calibration_if_complete(annotator=assignment.annotator, domain=record.question.domain)
    else:
        settle_record(record)
        schedule_agreement_recompute(
            project_id=record.project_id, dirty=_label_scope(label, record)
        )
        # one look-up when nobody subscribes (the usual case): the payload, which reads the
        # project and the slot, is built only for subscribers
        if wants(WebhookEvent.LABEL_SUBMITTED, project=record.project_id):
            emit(
                WebhookEvent.LABEL_SUBMITTED,
                label_data(label, record),
                project=record.project,
                now=label.created_at,
            )
    return label


def _label_scope(label: Label, record: AnswerRecord) -> dict:
    """What a production label changes in the agreement figures (``mark_dirty`` arguments)."""
    return {
        "protocol": ANSWER_PROTOCOL,
        "tier": record.tier,
        "task_type": record.question.task_type,
        "domain_id": record.domain_id,
        "at": label.created_at,
        "annotator_id": label.annotator_id,
    }


# ---------------------------------------------------------------- undo and skip


def _release_claim(assignment: LabelAssignment) -> None:
    """Give an unlabeled production claim's slot back to the pool; call with its record locked.

    Claims number slots 1..``assigned_count`` (the next claim takes ``assigned_count + 1``), so
    the holder of the highest slot moves down into the freed one before the counter drops; the
    claimer's ``AnnotatorDomainLoad`` drops too. Records still collecting labels are never shown
    to a lead, so no slot number anyone has seen changes."""
    record = AnswerRecord.objects.select_for_update().get(pk=assignment.record_id)
    freed = assignment.slot
    assignment.delete()
    if freed != record.assigned_count:
        LabelAssignment.objects.filter(record=record, slot=record.assigned_count).update(slot=freed)
    AnswerRecord.objects.filter(pk=record.pk).update(assigned_count=F("assigned_count") - 1)
    AnnotatorDomainLoad.objects.filter(
        annotator_id=assignment.annotator_id, domain_id=record.domain_id, claimed__gt=0
    ).update(claimed=F("claimed") - 1)


@transaction.atomic
def undo_last_label(*, project, annotator) -> LabelAssignment:
    """Withdraw the annotator's last production label in ``project`` and reopen its assignment.

    Allowed while the record is still collecting labels (unresolved) and within the project's
    ``LABEL_UNDO_WINDOW_SECONDS`` of the submit; raises UndoRefused otherwise. Locks the record.
    An item claimed since (the auto-advanced next item, not yet labeled) is released to the pool,
    so the annotator holds one open item: the reopened one. Audited as ``label_undone``. The
    returned assignment carries the withdrawn values as ``withdrawn`` (a dict in the label form's
    vocabulary: severe safety as "yes"/"no") so the page can refill the form with them.
    """
    get_user_model().objects.select_for_update().filter(pk=annotator.pk).first()
    last = (
        Label.objects.filter(
            annotator=annotator, assignment__is_calibration=False, record__project=project
        )
        .select_related("assignment")
        .order_by("-created_at", "-id")
        .first()
    )
    if last is None:
        raise UndoRefused("You have no label to undo.")
    closed = undo_closed(
        submitted_at=last.created_at,
        now=timezone.now(),
        window_seconds=tunable("LABEL_UNDO_WINDOW_SECONDS", project=project),
    )
    if closed:
        raise UndoRefused(closed)
    record = AnswerRecord.objects.select_for_update().get(pk=last.record_id)
    if record.status != RecordStatus.LABELING:
        raise UndoRefused("That item is already resolved; its label can no longer be undone.")
    assignment = last.assignment
    detail = {"slot": assignment.slot, "acceptability": last.acceptability}
    withdrawn = {name: getattr(last, name) for name in LABEL_VALUE_FIELDS}
    withdrawn["severe_safety"] = "yes" if last.severe_safety else "no"
    dirty = _label_scope(last, record)
    last.delete()
    assignment.completed_at = None
    assignment.save(update_fields=["completed_at"])
    released = LabelAssignment.objects.filter(
        annotator=annotator,
        is_calibration=False,
        completed_at__isnull=True,
        label__isnull=True,
        record__project=project,
    ).exclude(pk=assignment.pk)
    detail["released"] = []
    for claim in released.select_related("record"):
        detail["released"].append(claim.record.public_id)
        _release_claim(claim)
    record_event(actor=annotator, verb="label_undone", obj=record, detail=detail)
    assignment.withdrawn = withdrawn
    schedule_agreement_recompute(project_id=record.project_id, dirty=dirty)
    return assignment


@transaction.atomic
def skip_item(*, assignment: LabelAssignment, reason: str) -> ItemSkip:
    """Hand an unlabeled production claim back to the pool with a reason.

    The slot is freed at once (the assignment is deleted) and the skip is recorded, so the record
    is never offered to this annotator again and skips are counted per annotator. Raises
    SkipRefused for an empty reason, a calibration item or a labeled one. Audited as ``skipped``.
    """
    reason = (reason or "").strip()
    if not reason:
        raise SkipRefused("Say why you skip this item (a reason is required).")
    if assignment.is_calibration:
        raise SkipRefused("Calibration items cannot be skipped.")
    record = AnswerRecord.objects.select_for_update().get(pk=assignment.record_id)
    if Label.objects.filter(assignment_id=assignment.pk).exists():
        raise SkipRefused("You already labeled this item; use undo instead.")
    skip, _ = ItemSkip.objects.get_or_create(
        record=record, annotator_id=assignment.annotator_id, defaults={"reason": reason[:200]}
    )
    slot = assignment.slot
    _release_claim(assignment)
    record_event(
        actor=assignment.annotator,
        verb="skipped",
        obj=record,
        detail={"slot": slot, "reason": skip.reason},
    )
    return skip


@transaction.atomic
def release_claims_of(*, annotator) -> list[str]:
    """Hand every unlabeled production claim ``annotator`` holds, in every project, back to the
    pool (a person deprovisioned or deactivated: their items must not wait for them). Their
    labels stay. Records are locked in id order, so two releases cannot deadlock; idempotent
    (a second call finds nothing). One ``claim_released`` audit event per record. Returns the
    released records' public ids."""
    labeled = Label.objects.filter(assignment_id=OuterRef("pk"))
    claims = list(
        LabelAssignment.objects.filter(
            annotator=annotator, is_calibration=False, completed_at__isnull=True
        )
        .exclude(Exists(labeled))
        .select_related("record")
        .order_by("record_id")
    )
    released = []
    for claim in claims:
        record = claim.record
        _release_claim(claim)
        record_event(
            actor=None,
            verb="claim_released",
            obj=record,
            detail={"annotator_id": annotator.pk, "reason": "deprovisioned"},
        )
        released.append(record.public_id)
    return released
