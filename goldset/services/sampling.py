"""Sampling rules (issue 28): which received traces become answer records.

Rules are data per project, edited by admins (:func:`create_sampling_rule`,
:func:`update_sampling_rule`; each change bumps the rule's version and writes an audit event with
the values before and after, as routing rules do). They are never deleted: a rule is disabled.

When the mapping has a complete trace, :meth:`SamplingPass.sample` — the one place the decision is
made — evaluates the project's enabled rules in order (position, then id):

* ``percentage``: the trace is taken when ``sha256("<seed>:<trace id>")`` read as a fraction of
  2**64 is below the percentage: the same seed selects the same traces on a replay;
* ``feedback``: a user's thumbs-down on the trace (an attribute or a later feedback span);
* ``judge``: two evaluations of the trace disagree, or one's confidence is below the threshold;
* ``uncertainty``: ``goldset.uncertainty`` at or above the threshold;
* ``domain`` / ``task_type``: the trace's domain or task type (its ``goldset.*`` attributes, else
  those of the question it answers, else the project's only domain and ``rag_synthesis``);
* ``new_question``: no gold question of the project is a near-duplicate (same normalised text,
  or character-trigram Jaccard similarity at or above the threshold).

The first matching rule with room under its daily cap (per UTC day) samples the trace: it becomes
an answer record routed by the routing rules, with the rule recorded on the trace and the record.
A matching rule whose cap is reached counts the trace as *capped*; when every matching rule is
capped the trace is ``capped``. A trace no rule matches is ``dropped``. Both keep their spans: a
span arriving later (a thumbs-down) or an evaluator output imported later has the trace sampled
again. A trace is counted once against a rule's cap on a day: mapped again that day, it does not
count as capped again for the rules that counted it (``ReceivedTrace.capped_rules``). A project without any sampling
rule samples every trace (``sampled_by = "all"``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Collection
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import (
    Domain,
    Question,
    SamplingDayCount,
    SamplingRule,
    SamplingRuleKind,
    TaskType,
    TraceStatus,
    Triple,
    TripleRevision,
    TripleState,
)
from goldset.traces.mapping import TraceRecord
from goldset.traces.signals import QuestionIndex, TraceSignals, trace_signals
from goldset.traces.stored import TraceFacts, question_id_for
from workbench.services.audit import record_event

SAMPLED_BY_ALL = "all"
DEFAULT_NEW_QUESTION_THRESHOLD = Decimal("0.8")
Kind = SamplingRuleKind
EDITABLE = ("name", "kind", "percentage", "seed", "threshold", "value", "daily_cap", "position")


class SamplingRuleRefused(GoldsetError):
    """A sampling rule's change breaks a rule; ``field`` names the input at fault (the message
    starts with it), or is empty when no one field is (an unknown rule, a change that changes
    nothing). The pages put the message on that field, the API names it in ``errors`` (422),
    the command in its exit-2 message."""

    def __init__(self, message: str, *, field: str = ""):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


# ---------------------------------------------------------------------------------------------
# Rules as data


def _check_rule(*, project, kind, percentage, threshold, value) -> tuple:
    """The rule's (percentage, threshold, value) as stored, or SamplingRuleRefused naming the
    field."""
    if kind not in Kind.values:
        raise SamplingRuleRefused(f"{kind!r} is not one of {', '.join(Kind.values)}", field="kind")
    if kind == Kind.PERCENTAGE:
        if percentage is None or not Decimal(0) <= Decimal(percentage) <= Decimal(100):
            raise SamplingRuleRefused(
                "a percentage rule needs a number from 0 to 100", field="percentage"
            )
    else:
        percentage = None
    if threshold is not None and not Decimal(0) <= Decimal(threshold) <= Decimal(1):
        raise SamplingRuleRefused("expected a number from 0 to 1", field="threshold")
    if kind == Kind.UNCERTAINTY and threshold is None:
        raise SamplingRuleRefused(
            "an uncertainty rule needs its threshold (0–1)", field="threshold"
        )
    if kind == Kind.NEW_QUESTION and threshold is None:
        threshold = DEFAULT_NEW_QUESTION_THRESHOLD
    if kind not in (Kind.UNCERTAINTY, Kind.NEW_QUESTION, Kind.JUDGE):
        threshold = None
    value = (value or "").strip()
    if kind == Kind.DOMAIN:
        if not Domain.objects.filter(project=project, slug=value).exists():
            raise SamplingRuleRefused(f"no domain {value!r} in this project", field="value")
    elif kind == Kind.TASK_TYPE:
        if value not in TaskType.values:
            raise SamplingRuleRefused(
                f"{value!r} is not one of {', '.join(TaskType.values)}", field="value"
            )
    else:
        value = ""
    return percentage, threshold, value


def _decimal(value) -> str | None:
    return None if value is None else str(Decimal(value).quantize(Decimal("0.001")))


def rule_snapshot(rule: SamplingRule) -> dict:
    return {
        "name": rule.name,
        "kind": rule.kind,
        "percentage": _decimal(rule.percentage),
        "seed": rule.seed,
        "threshold": _decimal(rule.threshold),
        "value": rule.value,
        "daily_cap": rule.daily_cap,
        "position": rule.position,
        "enabled": rule.enabled,
        "version": rule.version,
    }


@transaction.atomic
def create_sampling_rule(
    *,
    project,
    actor,
    name: str,
    kind: str,
    percentage: Decimal | None = None,
    seed: int = 0,
    threshold: Decimal | None = None,
    value: str = "",
    daily_cap: int | None = None,
    position: int = 0,
    note: str = "",
) -> SamplingRule:
    """Create an enabled rule of ``project`` (version 1) and record ``sampling_rule_created``.
    Raises SamplingRuleRefused naming the field for a value the kind cannot take or a name in
    use."""
    percentage, threshold, value = _check_rule(
        project=project, kind=kind, percentage=percentage, threshold=threshold, value=value
    )
    if SamplingRule.objects.filter(project=project, name=name).exists():
        raise SamplingRuleRefused(f"a sampling rule named {name!r} already exists", field="name")
    rule = SamplingRule.objects.create(
        project=project,
        name=name,
        kind=kind,
        percentage=percentage,
        seed=seed,
        threshold=threshold,
        value=value,
        daily_cap=daily_cap,
        position=position,
        note=note,
        created_by=actor,
    )
    record_event(
        actor=actor,
        verb="sampling_rule_created",
        obj=rule,
        project=project,
        detail={**rule_snapshot(rule), "note": note},
    )
    return rule


@transaction.atomic
def update_sampling_rule(
    *, project, actor, rule_id: int, note: str = "", **changes
) -> SamplingRule:
    """Change ``rule_id`` of ``project`` (any of ``EDITABLE`` and ``enabled``); the next version,
    with ``sampling_rule_changed`` recording before and after. Traces already sampled keep the
    rule they were sampled by. Locks the rule's row. Raises SamplingRuleRefused for an unknown
    rule, a bad value (naming the field), or a change that changes nothing."""
    rule = SamplingRule.objects.select_for_update().filter(project=project, pk=rule_id).first()
    if rule is None:
        raise SamplingRuleRefused("No such sampling rule in this project.")
    unknown = set(changes) - set(EDITABLE) - {"enabled"}
    if unknown:
        raise SamplingRuleRefused("not a field of a sampling rule", field=sorted(unknown)[0])
    before = rule_snapshot(rule)
    wanted = {key: changes.get(key, getattr(rule, key)) for key in (*EDITABLE, "enabled")}
    wanted["percentage"], wanted["threshold"], wanted["value"] = _check_rule(
        project=project,
        kind=wanted["kind"],
        percentage=wanted["percentage"],
        threshold=wanted["threshold"],
        value=wanted["value"],
    )
    if (
        wanted["name"] != rule.name
        and SamplingRule.objects.filter(project=project, name=wanted["name"]).exists()
    ):
        raise SamplingRuleRefused(
            f"a sampling rule named {wanted['name']!r} already exists", field="name"
        )
    for key, new in wanted.items():
        setattr(rule, key, new)
    after = rule_snapshot(rule)
    if {k: v for k, v in after.items() if k != "version"} == {
        k: v for k, v in before.items() if k != "version"
    }:
        raise SamplingRuleRefused("This is the rule as it is; nothing was changed.")
    rule.version += 1
    rule.note = note or rule.note
    rule.save()
    record_event(
        actor=actor,
        verb="sampling_rule_changed",
        obj=rule,
        project=project,
        detail={"before": before, "after": rule_snapshot(rule), "note": note},
    )
    return rule


# ---------------------------------------------------------------------------------------------
# The decision


def sampling_day(now: dt.datetime | None = None) -> dt.date:
    """The UTC day whose counters a trace mapped at ``now`` (default: now) counts against."""
    return (now or timezone.now()).astimezone(dt.UTC).date()


def percentage_draw(seed: int, trace_id: str) -> float:
    """The trace's draw in [0, 1) under ``seed``: the same for the same seed and trace id."""
    digest = hashlib.sha256(f"{seed}:{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class SamplingDecision:
    status: str  # TraceStatus.MAPPED (sampled), DROPPED or CAPPED
    rule: SamplingRule | None  # the rule that sampled it (None: "all", or not sampled)
    sampled_by: str  # the rule's name, "all", or for a capped trace its first matching rule
    capped: tuple[int, ...] = ()  # ids of matching rules whose cap was reached

    @property
    def sampled(self) -> bool:
        return self.status == TraceStatus.MAPPED


@dataclass
class _Trace:
    trace_id: str
    question: str
    question_id: str
    facts: TraceFacts
    signals: TraceSignals
    known: tuple | None = None  # (task_type, domain slug) of the question it answers, if any
    domain: str = ""
    task_type: str = ""


@dataclass
class SamplingPass:
    """The sampling of one mapping batch of ``project`` at ``now``: loads the enabled rules and
    locks their counters of the UTC day (so caps hold across concurrent batches; the lock lasts
    until the batch commits). Use :meth:`sample` per complete trace, :meth:`release` when its
    record could not be stored, :meth:`save` before the batch commits."""

    project: object
    now: object
    rules: list = field(init=False)
    any_rule: bool = field(init=False)
    day: dt.date = field(init=False)  # the UTC day whose counters the pass counts against
    _counts: dict = field(init=False, default_factory=dict)
    _gold: QuestionIndex | None = field(init=False, default=None)
    _only_domain: str | None = field(init=False, default=None)
    _touched: set = field(init=False, default_factory=set)

    def __post_init__(self):
        rules = list(SamplingRule.objects.filter(project=self.project).order_by("position", "id"))
        self.any_rule = bool(rules)
        self.rules = [r for r in rules if r.enabled]
        self.day = day = sampling_day(self.now)
        if self.rules:
            SamplingDayCount.objects.bulk_create(
                [SamplingDayCount(rule=r, day=day) for r in self.rules], ignore_conflicts=True
            )
            self._counts = {
                c.rule_id: c
                for c in SamplingDayCount.objects.select_for_update()
                .filter(rule__in=self.rules, day=day)
                .order_by("rule_id")
            }

    def sample(
        self, *, record: TraceRecord, spans, facts: TraceFacts, counted: Collection[int] = ()
    ) -> SamplingDecision:
        """Decide whether the complete trace ``record`` (with its received ``spans`` and
        ``goldset.*`` facts) is sampled, and by which rule; counts it against that rule's cap
        for the day (and as capped on matching rules without room, except the rules in
        ``counted``, which counted it as capped on :attr:`day` already: a trace mapped again
        is counted once)."""
        if not self.any_rule:
            return SamplingDecision(TraceStatus.MAPPED, None, SAMPLED_BY_ALL)
        trace = _Trace(
            trace_id=record.trace_id,
            question=record.question,
            question_id=facts.question_id or question_id_for(record.question),
            facts=facts,
            signals=trace_signals(spans),
        )
        matching = [rule for rule in self.rules if self._matches(rule, trace)]
        capped = []
        for rule in matching:
            count = self._counts[rule.pk]
            if rule.daily_cap is not None and count.sampled >= rule.daily_cap:
                if rule.pk not in counted:
                    count.capped += 1
                    self._touched.add(rule.pk)
                capped.append(rule.pk)
                continue
            count.sampled += 1
            self._touched.add(rule.pk)
            return SamplingDecision(TraceStatus.MAPPED, rule, rule.name, tuple(capped))
        if capped:
            first = next(r for r in matching if r.pk == capped[0])
            return SamplingDecision(TraceStatus.CAPPED, None, first.name, tuple(capped))
        return SamplingDecision(TraceStatus.DROPPED, None, "")

    def release(self, decision: SamplingDecision) -> None:
        """The sampled trace's record could not be stored: it does not count against the cap."""
        if decision.rule is not None:
            self._counts[decision.rule.pk].sampled -= 1

    def save(self) -> None:
        touched = [self._counts[pk] for pk in sorted(self._touched)]
        if touched:
            SamplingDayCount.objects.bulk_update(touched, ["sampled", "capped"])
        self._touched.clear()

    # -- the kinds of rule

    def _matches(self, rule: SamplingRule, trace: _Trace) -> bool:
        kind = rule.kind
        if kind == Kind.PERCENTAGE:
            return percentage_draw(rule.seed, trace.trace_id) * 100 < float(rule.percentage)
        if kind == Kind.FEEDBACK:
            return trace.signals.thumbs_down
        if kind == Kind.JUDGE:
            if trace.signals.judges_disagree:
                return True
            lowest = trace.signals.lowest_confidence()
            return rule.threshold is not None and lowest is not None and lowest < rule.threshold
        if kind == Kind.UNCERTAINTY:
            u = trace.facts.uncertainty
            return u is not None and Decimal(repr(u)) >= rule.threshold
        if kind == Kind.DOMAIN:
            return self._domain(trace) == rule.value
        if kind == Kind.TASK_TYPE:
            return self._task_type(trace) == rule.value
        if kind == Kind.NEW_QUESTION:
            return not self._gold_index().has_near_duplicate(
                trace.question, threshold=float(rule.threshold)
            )
        return False

    def _known(self, trace: _Trace) -> tuple:
        if trace.known is None:
            trace.known = (
                Question.objects.filter(project=self.project, question_id=trace.question_id)
                .values_list("task_type", "domain__slug")
                .first()
            ) or ("", "")
        return trace.known

    def _domain(self, trace: _Trace) -> str:
        if trace.facts.domain:
            return trace.facts.domain
        known = self._known(trace)[1]
        if known:
            return known
        if self._only_domain is None:
            slugs = list(
                Domain.objects.filter(project=self.project).values_list("slug", flat=True)[:2]
            )
            self._only_domain = slugs[0] if len(slugs) == 1 else ""
        return self._only_domain

    def _task_type(self, trace: _Trace) -> str:
        return trace.facts.task_type or self._known(trace)[0] or TaskType.RAG_SYNTHESIS.value

    def _gold_index(self) -> QuestionIndex:
        if self._gold is None:
            question = TripleRevision.objects.filter(pk=OuterRef("current_revision_id")).values(
                "question"
            )[:1]
            texts = (
                Triple.objects.filter(project=self.project, state=TripleState.GOLD)
                .annotate(text=Subquery(question))
                .values_list("text", flat=True)
            )
            self._gold = QuestionIndex(t for t in texts.iterator(chunk_size=2000) if t)
        return self._gold
