"""Re-routing open cases under the rules in force, and promoting TRIAGE cases to GOLD (DESIGN.md
§7, seed 003, issue 6 items 1–2).

**Open cases** (the only ones a re-route touches; finished cases keep their tier for good):

* a triple in ``pending_review`` — its current revision is still collecting its reviews;
* a production answer record in ``labeling`` — it is still collecting labels.

Everything else is final or waiting on a person, and keeps the tier it was routed with: gold,
dropped, split, retired or revoked triples; triples in discussion or needing re-review (their next
revision is created with the tier they hold); answer records that are final, with a lead
(adjudication, audit sample) or adjudicated; calibration records. Cases a lead promoted by hand
(``routing_rule == "promoted"``) are never re-routed: a person decided their tier.

**Demotion GOLD → TRIAGE never drops a given or claimed review/label.** It is applied only while at
most one reviewer/annotator is assigned (the TRIAGE requirement); the case then needs one, and a
review/label already given counts at once (the triple resolves, the record settles, through the
protocol's own services). A GOLD case with two or more assignments is *held*: the preview lists
it with the reason and it stays GOLD under its old rule.

**Promotion TRIAGE → GOLD** (lead or admin, with a reason) of a triple in ``pending_review`` or
``gold``, or of a production answer record in ``labeling`` or ``final``. Earlier reviews/labels
count; the case needs the rest (2 reviews, 3 labels) and gets them through the normal queues:

* a TRIAGE triple that already became gold on one review goes back to ``pending_review`` for the
  missing review (resolution, gold_at cleared); if its revision was drawn for the weekly
  spot-check, the spot-check review (given or still to come) is an independent, blind second review
  of the same revision and becomes its second GOLD review (the draw and the audit event keep the
  record of it);
* a final TRIAGE answer record returns to ``labeling`` and its final label is cleared; the outcome
  is decided again over all its labels once the third lands.

Each changed case gets one audit event (``rerouted`` / ``promoted``) with its before and after.
Every service locks the rows it changes (``select_for_update``) and is atomic.
"""

import hashlib
import json
import uuid
from dataclasses import dataclass, field, replace

from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import GoldsetError
from goldset.models import (
    AdjudicationReason,
    AnswerRecord,
    Label,
    RecordStatus,
    Review,
    ReviewAssignment,
    RoutingRules,
    Tier,
    Triple,
    TripleRevision,
    TripleState,
)
from goldset.rules.display import display
from goldset.rules.tiers import (
    PROMOTABLE_RECORD_STATUSES,
    PROMOTABLE_TRIPLE_STATES,
    RECORD,
    TRIPLE,
    required_for,
)
from goldset.rules.triple_states import transition
from goldset.selectors.promotion import filter_promotable, matching_ids
from goldset.services.agreement import schedule_agreement_recompute
from goldset.services.labeling import add_domain_slots, plan_settlement
from goldset.services.labeling import settle_record as settle_answer_record
from goldset.services.resolution import (
    awaits_human_verification,
    resolution_outcome,
    resolve_revision,
)
from goldset.services.routing import decide_tier, get_active_rules
from workbench.roles import Role, has_role
from workbench.services.audit import record_event

PROMOTED_RULE = "promoted"
MAX_REASON = 500


class PreviewChanged(GoldsetError):
    """The open cases or the rules changed between the preview and its confirmation."""

    def __init__(self, preview: "ReroutePreview"):
        self.preview = preview
        super().__init__(
            "The cases or the rules changed since this preview: nothing was applied. "
            "Here is the new preview; check it and confirm again."
        )


class BatchChanged(GoldsetError):
    """The cases matching a batch filter changed between showing and confirming it."""


# ---------------------------------------------------------------- re-route preview


@dataclass(frozen=True)
class RerouteRow:
    kind: str
    pk: int
    case: str  # triple external_id or answer record public_id (never system, run or model)
    domain: str
    task_type: str
    from_tier: str
    from_rule: str
    from_version: int
    to_tier: str
    to_rule: str
    to_version: int
    assigned: int
    given: int
    required_now: int
    required_after: int
    held_reason: str = ""
    # What applying does at once with the reviews/labels already given: the state (triple) or
    # status (record) it settles in — "gold", "in_discussion", "final", "needs_adjudication",
    # "audit", … — or "spot_check" (drawn for a second look); "" when it keeps collecting.
    resolves_to: str = ""
    resolves: str = ""  # the same, in words, for the preview page

    @property
    def held(self) -> bool:
        return bool(self.held_reason)

    @property
    def finalises(self) -> bool:
        """Applying settles the case for good (gold, dropped, final): no more reviews/labels."""
        return self.resolves_to in FINAL_OUTCOMES

    @property
    def from_tier_label(self) -> str:
        return Tier(self.from_tier).label

    @property
    def to_tier_label(self) -> str:
        return Tier(self.to_tier).label

    def key(self) -> list:
        return [self.kind, self.pk, self.from_tier, self.from_rule, self.from_version]

    def fingerprint(self) -> list:
        return [
            *self.key(),
            self.to_tier,
            self.to_rule,
            self.required_after,
            self.held,
            self.resolves_to,
        ]


@dataclass(frozen=True)
class ReroutePreview:
    rules_version: int
    open_cases: int
    changes: list[RerouteRow] = field(default_factory=list)
    held: list[RerouteRow] = field(default_factory=list)

    @property
    def resolving(self) -> list[RerouteRow]:
        """The changing cases that resolve (or are drawn for a spot-check) when applied."""
        return [r for r in self.changes if r.resolves_to]

    @property
    def token(self) -> str:
        """Identifies exactly this preview: the rules version and every listed row."""
        payload = [self.rules_version, [r.fingerprint() for r in (*self.changes, *self.held)]]
        return hashlib.sha256(json.dumps(payload).encode()).hexdigest()


def _open_triples(project):
    given = Count(
        "current_revision__reviews", filter=Q(current_revision__reviews__spot_check=False)
    )
    return (
        Triple.objects.filter(
            project=project, state=TripleState.PENDING_REVIEW, current_revision__isnull=False
        )
        .exclude(routing_rule=PROMOTED_RULE)
        .select_related("domain", "current_revision")
        .annotate(given=given)
        .order_by("pk")
    )


def _open_records(project):
    return (
        AnswerRecord.objects.filter(
            project=project, status=RecordStatus.LABELING, is_calibration=False
        )
        .exclude(routing_rule=PROMOTED_RULE)
        .select_related("question__domain")
        .annotate(
            n_assigned=Count(
                "assignments", filter=Q(assignments__is_calibration=False), distinct=True
            ),
            n_given=Count("labels", distinct=True),
        )
        .order_by("pk")
    )


def _row(kind, pk, case, domain, task_type, current, decision, assigned, given, required_now):
    """One open case whose tier would change, or None when it stays."""
    tier, rule, version = current
    if decision.tier == tier:
        return None
    needed = required_for(kind, decision.tier)
    held = ""
    if decision.tier == Tier.TRIAGE and assigned > needed:
        what = "reviewers" if kind == TRIPLE else "annotators"
        held = (
            f"{assigned} {what} already assigned; demoting would leave a claimed "
            f"{'review' if kind == TRIPLE else 'label'} without a slot, so it stays GOLD."
        )
    return RerouteRow(
        kind=kind,
        pk=pk,
        case=case,
        domain=domain,
        task_type=task_type,
        from_tier=tier,
        from_rule=rule,
        from_version=version,
        to_tier=decision.tier,
        to_rule=decision.rule,
        to_version=decision.rules_version,
        assigned=assigned,
        given=given,
        required_now=required_now,
        required_after=required_now if held else max(needed, given),
        held_reason=held,
    )


FINAL_OUTCOMES = (
    TripleState.GOLD,
    TripleState.DROPPED,
    RecordStatus.FINAL,
)
TRIPLE_OUTCOMES = {
    TripleState.GOLD: "becomes gold at once",
    TripleState.IN_DISCUSSION: "goes to discussion at once (its review flagged it)",
    TripleState.DROPPED: "is dropped at once (every reviewer flagged it)",
}
RECORD_OUTCOMES = {
    RecordStatus.FINAL: "is final at once",
    RecordStatus.NEEDS_ADJUDICATION: "goes to adjudication at once",
    RecordStatus.AUDIT: "goes to the audit sample at once",
}


def _triple_outcome(row: RerouteRow, verdicts: list[str], awaiting_human: bool) -> RerouteRow:
    state = resolution_outcome(
        tier=row.to_tier,
        verdicts=verdicts,
        awaiting_human=awaiting_human,
        required=row.required_after,
    )
    if state not in TRIPLE_OUTCOMES:
        return row
    words = TRIPLE_OUTCOMES[state]
    if state == TripleState.GOLD and row.to_tier == Tier.TRIAGE:
        words += " (TRIAGE single review)"
    return replace(row, resolves_to=state, resolves=words)


def _record_outcome(
    row: RerouteRow, record: AnswerRecord, labels: list, now, *, project
) -> RerouteRow:
    plan = plan_settlement(
        project=project,
        public_id=record.public_id,
        tier=row.to_tier,
        spot_check_seed=record.spot_check_seed,
        labels_required=row.required_after,
        labels=labels,
        now=now,
    )
    if plan.drawn:
        return replace(
            row,
            resolves_to="spot_check",
            resolves=f"is drawn for the {plan.spot_check_week} spot-check: waits for a 2nd label",
        )
    if not plan.status:
        return row
    words = RECORD_OUTCOMES[plan.status]
    if plan.outcome.reason:
        words += f" ({AdjudicationReason(plan.outcome.reason).label.lower()})"
    elif plan.outcome.source:
        words += f" ({display(plan.outcome.source)})"
    return replace(row, resolves_to=plan.status, resolves=words)


def _with_outcomes(
    changes: list[RerouteRow], triples: dict, records: dict, *, project
) -> list[RerouteRow]:
    """Name what applying does at once to each change whose given reviews/labels suffice under
    the new tier — the protocol's own decisions (``resolution_outcome``, ``plan_settlement``).
    At most two queries, whatever the number of cases."""
    due = [r for r in changes if r.given and r.given >= r.required_after]
    triple_ids = [r.pk for r in due if r.kind == TRIPLE]
    record_ids = [r.pk for r in due if r.kind == RECORD]
    verdicts: dict[int, list[str]] = {pk: [] for pk in triple_ids}
    if triple_ids:
        for triple_id, verdict in Review.objects.filter(
            revision__triple_id__in=triple_ids,
            revision_id=F("revision__triple__current_revision_id"),
            spot_check=False,
        ).values_list("revision__triple_id", "verdict"):
            verdicts[triple_id].append(verdict)
    labels: dict[int, list] = {pk: [] for pk in record_ids}
    if record_ids:
        for record_id, *label in Label.objects.filter(record_id__in=record_ids).values_list(
            "record_id", "acceptability", "grounding", "severe_safety"
        ):
            labels[record_id].append(tuple(label))
    now = timezone.now()
    out = []
    for row in changes:
        if row.kind == TRIPLE and row.pk in verdicts:
            t = triples[row.pk]
            row = _triple_outcome(row, verdicts[row.pk], awaits_human_verification(t))
        elif row.kind == RECORD and row.pk in labels:
            row = _record_outcome(row, records[row.pk], labels[row.pk], now, project=project)
        out.append(row)
    return out


def preview_reroute(*, project, rules: RoutingRules | None = None) -> ReroutePreview:
    """Every open case of ``project`` whose tier would change under ``rules`` (default: the
    project's rules in force), naming the ones that resolve at once when applied
    (``RerouteRow.resolves``).

    Changes nothing. Two queries for the cases however many there are (plus one for the rules,
    and two for the given reviews/labels of cases that would resolve)."""
    rules = rules or get_active_rules(project=project)
    changes, held, n_open = [], [], 0
    triples, records = {}, {}
    for t in _open_triples(project):
        triples[t.pk] = t
        n_open += 1
        decision = decide_tier(
            rules=rules,
            task_type=t.task_type,
            uncertainty=t.model_uncertainty,
            adversarial=t.adversarial,
            domain=t.domain.slug,
        )
        row = _row(
            TRIPLE,
            t.pk,
            t.external_id,
            t.domain.slug,
            t.task_type,
            (t.tier, t.routing_rule, t.rules_version),
            decision,
            t.current_revision.assigned_count,
            t.given,
            t.current_revision.reviewers_needed,
        )
        if row is not None:
            (held if row.held else changes).append(row)
    for r in _open_records(project):
        records[r.pk] = r
        n_open += 1
        q = r.question
        decision = decide_tier(
            rules=rules,
            task_type=q.task_type,
            uncertainty=r.uncertainty if r.uncertainty is not None else q.uncertainty,
            adversarial=q.adversarial,
            domain=q.domain.slug,
        )
        row = _row(
            RECORD,
            r.pk,
            r.public_id,
            q.domain.slug,
            q.task_type,
            (r.tier, r.routing_rule, r.rules_version),
            decision,
            r.n_assigned,
            r.n_given,
            r.labels_required,
        )
        if row is not None:
            (held if row.held else changes).append(row)
    changes = _with_outcomes(changes, triples, records, project=project)
    return ReroutePreview(rules.version, n_open, changes, held)


def _lock_open_cases(project) -> RoutingRules:
    """Lock ``project``'s rules in force and every open case's rows of the project, in
    primary-key order. Claims and review/label submissions on those rows wait until the
    re-route commits."""
    in_force = RoutingRules.objects.select_for_update().filter(project=project)
    rules = in_force.order_by("-version").first()
    if rules is None:
        get_active_rules(project=project)
        rules = in_force.order_by("-version").first()
    triple_ids = list(
        Triple.objects.select_for_update()
        .filter(project=project, state=TripleState.PENDING_REVIEW)
        .exclude(routing_rule=PROMOTED_RULE)
        .order_by("pk")
        .values_list("pk", "current_revision_id")
    )
    list(
        TripleRevision.objects.select_for_update()
        .filter(pk__in=[rev for _, rev in triple_ids if rev])
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    list(
        AnswerRecord.objects.select_for_update()
        .filter(project=project, status=RecordStatus.LABELING, is_calibration=False)
        .exclude(routing_rule=PROMOTED_RULE)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return rules


@transaction.atomic
def apply_reroute(*, project, actor, token: str) -> ReroutePreview:
    """Apply exactly ``project``'s preview identified by ``token`` (admins only).

    Locks the rules and the open cases, recomputes the preview and compares tokens: when anything
    changed (a rules edit, a claim, a review or label, a new or finished case) nothing is applied
    and :class:`PreviewChanged` carries the new preview. Otherwise every changing (non-held) case
    gets its new tier, rule, rules version and requirement, one ``rerouted`` audit event, and —
    when the reviews/labels it already has now suffice — is resolved/settled by the protocol's
    own services. Not idempotent by design: a second confirm of the same token finds a different
    preview (those cases no longer change) and raises PreviewChanged."""
    if not has_role(actor, Role.ADMIN):
        raise GoldsetError("Only an admin can re-route cases.")
    rules = _lock_open_cases(project)
    preview = preview_reroute(project=project, rules=rules)
    if preview.token != token:
        raise PreviewChanged(preview)
    for row in preview.changes:
        if row.kind == TRIPLE:
            _reroute_triple(row, actor=actor)
        else:
            _reroute_record(row, actor=actor)
    if preview.changes:
        schedule_agreement_recompute(project_id=rules.project_id)
    return preview


def _event_detail(row: RerouteRow, required_key: str) -> dict:
    return {
        "case": row.case,
        "before": {
            "tier": row.from_tier,
            "routing_rule": row.from_rule,
            "rules_version": row.from_version,
            required_key: row.required_now,
        },
        "after": {
            "tier": row.to_tier,
            "routing_rule": row.to_rule,
            "rules_version": row.to_version,
            required_key: row.required_after,
        },
        "assigned": row.assigned,
        "given": row.given,
    }


def _reroute_triple(row: RerouteRow, *, actor) -> None:
    triple = Triple.objects.get(pk=row.pk)
    revision = TripleRevision.objects.get(pk=triple.current_revision_id)
    triple.tier, triple.routing_rule, triple.rules_version = (
        row.to_tier,
        row.to_rule,
        row.to_version,
    )
    triple.save(update_fields=["tier", "routing_rule", "rules_version", "updated_at"])
    revision.reviewers_needed = row.required_after
    revision.save(update_fields=["reviewers_needed"])
    record_event(
        actor=actor,
        verb="rerouted",
        obj=triple,
        detail=_event_detail(row, "reviewers_needed"),
    )
    if row.given >= row.required_after:
        resolve_revision(triple=triple, revision=revision, actor=actor)


def _reroute_record(row: RerouteRow, *, actor) -> None:
    record = AnswerRecord.objects.select_related("question", "project").get(pk=row.pk)
    record.tier, record.routing_rule, record.rules_version = (
        row.to_tier,
        row.to_rule,
        row.to_version,
    )
    if not record.is_calibration:
        add_domain_slots(
            domain_id=record.domain_id, delta=row.required_after - record.labels_required
        )
    record.labels_required = row.required_after
    record.save(update_fields=["tier", "routing_rule", "rules_version", "labels_required"])
    record_event(
        actor=actor,
        verb="rerouted",
        obj=record,
        detail=_event_detail(row, "labels_required"),
    )
    if row.given and row.given >= row.required_after:
        settle_answer_record(record)


# ---------------------------------------------------------------- promotion TRIAGE → GOLD


def _check_promoter(actor) -> None:
    if not has_role(actor, Role.LEAD, Role.ADMIN):
        raise GoldsetError("Only a lead or an admin can promote cases to GOLD.")


def _clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise GoldsetError("reason: say why this case is promoted to GOLD (it is recorded).")
    if len(reason) > MAX_REASON:
        raise GoldsetError(f"reason: at most {MAX_REASON} characters.")
    return reason


def _promote_triple_locked(triple: Triple, *, actor, reason, rules_version, batch):
    if triple.tier != Tier.TRIAGE:
        raise GoldsetError(f"{triple.external_id} is already GOLD.")
    if triple.state not in PROMOTABLE_TRIPLE_STATES:
        raise GoldsetError(
            f"{triple.external_id} is {triple.get_state_display().lower()}; only a TRIAGE triple "
            "pending review or gold can be promoted (its next revision takes the tier it holds)."
        )
    revision = TripleRevision.objects.select_for_update().get(pk=triple.current_revision_id)
    before = {
        "tier": triple.tier,
        "routing_rule": triple.routing_rule,
        "rules_version": triple.rules_version,
        "state": triple.state,
        "resolution": triple.resolution,
        "reviewers_needed": revision.reviewers_needed,
        "spot_check": revision.spot_check,
    }
    spot_check_counted = revision.spot_check
    if spot_check_counted:
        ReviewAssignment.objects.filter(revision=revision, spot_check=True).update(spot_check=False)
        Review.objects.filter(revision=revision, spot_check=True).update(spot_check=False)
        revision.spot_check = False
    gold_reviews = required_for(TRIPLE, Tier.GOLD, project=triple.project)
    revision.reviewers_needed = gold_reviews
    revision.save(update_fields=["reviewers_needed", "spot_check"])
    triple.tier, triple.routing_rule, triple.rules_version = Tier.GOLD, PROMOTED_RULE, rules_version
    if triple.state == TripleState.GOLD:
        transition(triple, TripleState.PENDING_REVIEW)
        triple.resolution, triple.gold_at = "", None
    triple.save()
    given = revision.reviews.filter(spot_check=False).count()
    record_event(
        actor=actor,
        verb="promoted",
        obj=triple,
        detail={
            "case": triple.external_id,
            "reason": reason,
            "batch": batch,
            "before": before,
            "after": {
                "tier": triple.tier,
                "routing_rule": triple.routing_rule,
                "rules_version": triple.rules_version,
                "state": triple.state,
                "reviewers_needed": gold_reviews,
            },
            "reviews_given": given,
            "spot_check_review_counted": spot_check_counted,
        },
    )
    if given >= gold_reviews:
        resolve_revision(triple=triple, revision=revision, actor=actor)
    return triple


def _promote_record_locked(record: AnswerRecord, *, actor, reason, rules_version, batch):
    if record.is_calibration:
        raise GoldsetError(f"{record.public_id} is a calibration item, not a production case.")
    if record.tier != Tier.TRIAGE:
        raise GoldsetError(f"{record.public_id} is already GOLD.")
    if record.status not in PROMOTABLE_RECORD_STATUSES:
        raise GoldsetError(
            f"{record.public_id} is {record.get_status_display().lower()}; only a TRIAGE record "
            "collecting labels or final can be promoted."
        )
    before = {
        "tier": record.tier,
        "routing_rule": record.routing_rule,
        "rules_version": record.rules_version,
        "status": record.status,
        "labels_required": record.labels_required,
        "final_acceptability": record.final_acceptability,
        "final_grounding": record.final_grounding,
        "final_source": record.final_source,
    }
    record.tier, record.routing_rule, record.rules_version = Tier.GOLD, PROMOTED_RULE, rules_version
    gold_labels = required_for(RECORD, Tier.GOLD, project=record.project)
    if not record.is_calibration:
        add_domain_slots(domain_id=record.domain_id, delta=gold_labels - record.labels_required)
    record.labels_required = gold_labels
    if record.status == RecordStatus.FINAL:
        record.status = RecordStatus.LABELING
        record.final_acceptability = record.final_grounding = record.final_source = ""
        record.finalized_at = None
    record.save()
    record_event(
        actor=actor,
        verb="promoted",
        obj=record,
        detail={
            "case": record.public_id,
            "reason": reason,
            "batch": batch,
            "before": before,
            "after": {
                "tier": record.tier,
                "routing_rule": record.routing_rule,
                "rules_version": record.rules_version,
                "status": record.status,
                "labels_required": gold_labels,
            },
            "labels_given": record.labels.count(),
        },
    )
    return record


@transaction.atomic
def promote_triple(*, actor, triple: Triple, reason: str) -> Triple:
    """Promote one TRIAGE triple to GOLD (lead or admin; ``reason`` required). Locks the triple
    and its current revision. Raises GoldsetError when it is not a promotable TRIAGE triple."""
    _check_promoter(actor)
    reason = _clean_reason(reason)
    triple = Triple.objects.select_for_update().get(pk=triple.pk)
    result = _promote_triple_locked(
        triple,
        actor=actor,
        reason=reason,
        rules_version=get_active_rules(project=triple.project_id).version,
        batch="",
    )
    schedule_agreement_recompute(project_id=triple.project_id)
    return result


@transaction.atomic
def promote_answer_record(*, actor, record: AnswerRecord, reason: str) -> AnswerRecord:
    """Promote one TRIAGE answer record to GOLD (lead or admin; ``reason`` required). Locks the
    record. Raises GoldsetError when it is not a promotable TRIAGE record."""
    _check_promoter(actor)
    reason = _clean_reason(reason)
    record = AnswerRecord.objects.select_for_update().get(pk=record.pk)
    result = _promote_record_locked(
        record,
        actor=actor,
        reason=reason,
        rules_version=get_active_rules(project=record.project_id).version,
        batch="",
    )
    schedule_agreement_recompute(project_id=record.project_id)
    return result


def batch_token(kind: str, ids) -> str:
    """Identifies the exact set of cases a batch confirmation promotes."""
    return hashlib.sha256(json.dumps([kind, sorted(ids)]).encode()).hexdigest()


@dataclass(frozen=True)
class BatchPreview:
    """The cases one batch promotion of a filter promotes now: the first
    ``PROMOTION_BATCH_MAX`` matching by id; ``more`` when others match beyond them (the next
    batch promotes those)."""

    kind: str
    ids: list[int]
    more: bool

    @property
    def count(self) -> int:
        return len(self.ids)

    @property
    def token(self) -> str:
        return batch_token(self.kind, self.ids)


def preview_batch(
    *, project, kind: str, domain: str = "", task_type: str = "", source: str = ""
) -> BatchPreview:
    """What :func:`promote_batch` would promote in ``project`` for these filters now (one
    bounded read: at most one more id than the project's batch holds, never every matching
    case)."""
    limit = int(tunable("PROMOTION_BATCH_MAX", project=project))
    ids = matching_ids(
        project=project,
        kind=kind,
        domain=domain,
        task_type=task_type,
        source=source,
        limit=limit + 1,
    )
    return BatchPreview(kind, ids[:limit], len(ids) > limit)


@dataclass(frozen=True)
class BatchResult:
    batch: str
    kind: str
    cases: list[str]


@transaction.atomic
def promote_batch(
    *,
    project,
    actor,
    kind: str,
    reason: str,
    token: str,
    domain: str = "",
    task_type: str = "",
    source: str = "",
) -> BatchResult:
    """Promote ``project``'s TRIAGE cases matching the filters, all or nothing (lead or admin):
    every one, or the first ``PROMOTION_BATCH_MAX`` (the project's) by id when more match (see :func:`preview_batch`;
    the next batch promotes the rest).

    Locks those rows, then checks ``token`` (from :func:`batch_token` over the ids the lead was
    shown): when that set changed, nothing is promoted and BatchChanged is raised. Each case
    gets its own ``promoted`` event sharing one batch id."""
    _check_promoter(actor)
    reason = _clean_reason(reason)
    qs = filter_promotable(
        project=project, kind=kind, domain=domain, task_type=task_type, source=source
    )
    limit = int(tunable("PROMOTION_BATCH_MAX", project=project))
    locked = list(
        qs.select_related("project").select_for_update(of=("self",)).order_by("pk")[:limit]
    )
    if not locked:
        raise BatchChanged("No TRIAGE case matches these filters any more; nothing was promoted.")
    if batch_token(kind, [c.pk for c in locked]) != token:
        raise BatchChanged(
            f"The matching cases changed since you looked ({len(locked)} match now); nothing was "
            "promoted. Check the list again and confirm."
        )
    batch = uuid.uuid4().hex[:12]
    version = get_active_rules(project=project).version
    promote = _promote_triple_locked if kind == TRIPLE else _promote_record_locked
    cases = []
    for case in locked:
        promote(case, actor=actor, reason=reason, rules_version=version, batch=batch)
        cases.append(case.external_id if kind == TRIPLE else case.public_id)
    record_event(
        actor=actor,
        verb="promoted_batch",
        object_type=f"goldset.{'triple' if kind == TRIPLE else 'answerrecord'}",
        object_id=batch,
        project=project,
        detail={
            "reason": reason,
            "filters": {"domain": domain, "task_type": task_type, "source": source},
            "cases": cases,
        },
    )
    for project_id in sorted({case.project_id for case in locked}):
        schedule_agreement_recompute(project_id=project_id)
    return BatchResult(batch, kind, cases)
