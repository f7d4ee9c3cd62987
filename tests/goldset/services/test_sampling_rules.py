"""Sampling rules (issue 28): evaluated when a trace is complete, in one place
(goldset.services.sampling.SamplingPass.sample); the first matching rule with room under its daily
cap samples the trace into the routed labeling queue with the rule recorded; the rest are dropped
or capped and counted. Traces come from the real OpenTelemetry SDK, through the receiver's
service."""

import datetime as dt
import json
from decimal import Decimal

import pytest
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import (
    AnswerRecord,
    Domain,
    ReceivedSpan,
    ReceivedTrace,
    SamplingDayCount,
    SamplingRule,
    Triple,
    TripleState,
)
from goldset.services.sampling import create_sampling_rule, percentage_draw, update_sampling_rule
from goldset.services.traces import reconcile_traces
from goldset.services.triples import create_triple
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    DomainFactory,
    UserFactory,
    default_project,
)
from tests.goldset.sampling_support import later_feedback, pipeline, send, trace_id_of
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    DomainFactory(slug="controls")
    return default_project()


@pytest.fixture
def admin(project):
    return UserFactory(username="sampler")


def rule(project, admin, name, kind, **fields):
    return create_sampling_rule(project=project, actor=admin, name=name, kind=kind, **fields)


def statuses(project) -> dict[str, tuple[str, str]]:
    return {
        t.trace_id: (t.status, t.sampled_by) for t in ReceivedTrace.objects.filter(project=project)
    }


def test_without_rules_every_trace_is_sampled_as_all(project):
    assert send(project, pipeline())["mapped"] == 1
    assert ReceivedTrace.objects.get().sampled_by == "all"


def test_a_percentage_rule_selects_the_same_traces_on_a_replay(project, admin):
    rule(project, admin, "tenth", "percentage", percentage=Decimal("30"), seed=4242)
    traces = [pipeline(f"How are system accounts reviewed, case {n}?") for n in range(40)]
    summary = send(project, *traces)
    first = {t for t, (status, _) in statuses(project).items() if status == "mapped"}
    assert summary["mapped"] == len(first) and summary["dropped"] == 40 - len(first)
    assert 0 < len(first) < 40
    # the selection is the recorded seed's: sha256("<seed>:<trace id>") below 30 %
    assert first == {trace_id_of(t) for t in traces if percentage_draw(4242, trace_id_of(t)) < 0.3}

    # a replay: the same traces into another project with the same rule select the same traces
    other = default_project().__class__.objects.create(name="Replay", slug="replay")
    DomainFactory(slug="controls", project=other)
    rule(other, admin, "tenth", "percentage", percentage=Decimal("30"), seed=4242)
    send(other, *traces)
    assert {t for t, (s, _) in statuses(other).items() if s == "mapped"} == first
    # a re-sent batch creates nothing and changes no decision
    assert send(project, *traces)["mapped"] == 0
    assert AnswerRecord.objects.filter(project=project).count() == len(first)


def test_feedback_samples_a_thumbs_down_and_a_later_feedback_span_samples_a_dropped_trace(
    project, admin
):
    rule(project, admin, "unhappy", "feedback")
    down = pipeline("Who reviews audit records?", **{"goldset.feedback": "thumbs_down"})
    up = pipeline("Who manages accounts?", **{"goldset.feedback": "thumbs_up"})
    plain = pipeline()
    send(project, down, up, plain)
    assert statuses(project) == {
        trace_id_of(down): ("mapped", "unhappy"),
        trace_id_of(up): ("dropped", ""),
        trace_id_of(plain): ("dropped", ""),
    }
    # the user of the plain trace gives a thumbs-down later, from another process
    assert send(project, later_feedback(plain, **{"user.feedback": -1}))["mapped"] == 1
    trace = ReceivedTrace.objects.get(trace_id=trace_id_of(plain))
    assert (trace.status, trace.sampled_by, trace.sampling_rule.name) == (
        "mapped",
        "unhappy",
        "unhappy",
    )
    assert trace.record.extra["trace"]["sampled_by"] == "unhappy"


def test_judge_disagreement_and_low_confidence(project, admin):
    rule(project, admin, "judges", "judge", threshold=Decimal("0.6"))
    disagree = pipeline("Q one?")
    agree = pipeline("Q two?")
    unsure = pipeline("Q three?")
    send(project, disagree, agree, unsure)  # all dropped: no evaluation yet
    evaluation = "gen_ai.evaluation"
    send(
        project,
        later_feedback(
            disagree, **{f"{evaluation}.name": "faithful", f"{evaluation}.score.value": 0.9}
        ),
        later_feedback(
            disagree, **{f"{evaluation}.name": "faithful", f"{evaluation}.score.value": 0.2}
        ),
        later_feedback(agree, **{f"{evaluation}.name": "a", f"{evaluation}.score.label": "pass"}),
        later_feedback(agree, **{f"{evaluation}.name": "b", f"{evaluation}.score.label": "PASS"}),
        later_feedback(
            unsure,
            **{f"{evaluation}.name": "a", f"{evaluation}.score.label": "pass"},
            **{"goldset.judge.confidence": 0.4},
        ),
    )
    assert statuses(project) == {
        trace_id_of(disagree): ("mapped", "judges"),
        trace_id_of(agree): ("dropped", ""),
        trace_id_of(unsure): ("mapped", "judges"),
    }


def test_uncertainty_domain_and_task_type_rules(project, admin):
    DomainFactory(slug="audit", project=project)
    rule(project, admin, "unsure", "uncertainty", threshold=Decimal("0.65"), position=1)
    rule(project, admin, "audit", "domain", value="audit", position=2)
    rule(project, admin, "facts", "task_type", value="factual_qa", position=3)
    high = pipeline("A?", **{"goldset.uncertainty": 0.7, "goldset.domain": "controls"})
    low = pipeline("B?", **{"goldset.uncertainty": 0.2, "goldset.domain": "controls"})
    audit = pipeline("C?", **{"goldset.domain": "audit"})
    factual = pipeline("D?", **{"goldset.domain": "controls", "goldset.task_type": "factual_qa"})
    send(project, high, low, audit, factual)
    assert statuses(project) == {
        trace_id_of(high): ("mapped", "unsure"),
        trace_id_of(low): ("dropped", ""),
        trace_id_of(audit): ("mapped", "audit"),
        trace_id_of(factual): ("mapped", "facts"),
    }
    # the sampled record is routed by the routing rules (factual_qa → GOLD)
    record = ReceivedTrace.objects.get(trace_id=trace_id_of(factual)).record
    assert (record.tier, record.routing_rule) == ("tier_b", "task_type:factual_qa")


def test_new_question_skips_near_duplicates_of_gold_questions(project, admin):
    version = BlockVersionFactory(
        block=BlockFactory(document=DocumentFactory(domain=Domain.objects.get(project=project)))
    )
    triple = create_triple(
        project=project,
        author=admin,
        question="How are system accounts reviewed by the organization?",
        block_version=version,
        expected_answer="Yearly.",
        task_type="factual_qa",
        source="public_rfp",
    )
    Triple.objects.filter(pk=triple.pk).update(state=TripleState.GOLD, resolution="consensus")
    rule(project, admin, "fresh", "new_question", threshold=Decimal("0.7"))
    same = pipeline("  HOW are system accounts reviewed by the organization? ")
    near = pipeline("How are the system accounts reviewed by an organization?")
    new = pipeline("Which passwords must be rotated every ninety days?")
    send(project, same, near, new)
    assert statuses(project) == {
        trace_id_of(same): ("dropped", ""),
        trace_id_of(near): ("dropped", ""),
        trace_id_of(new): ("mapped", "fresh"),
    }


def test_daily_caps_count_capped_traces_and_fall_through_to_the_next_rule(project, admin):
    first = rule(project, admin, "all-of-them", "percentage", percentage=100, daily_cap=2)
    second = rule(project, admin, "unhappy", "feedback", daily_cap=1, position=1)
    traces = [pipeline(f"Question {n}?", **{"goldset.feedback": "down"}) for n in range(5)]
    summary = send(project, *traces)
    assert (summary["mapped"], summary["capped"]) == (3, 2)
    by_rule = [s for s in statuses(project).values()]
    assert sorted(by_rule) == sorted(
        [("mapped", "all-of-them")] * 2 + [("mapped", "unhappy")] + [("capped", "all-of-them")] * 2
    )
    counts = {c.rule_id: (c.sampled, c.capped) for c in SamplingDayCount.objects.all()}
    assert counts == {first.pk: (2, 3), second.pk: (1, 2)}
    assert AnswerRecord.objects.filter(project=project).count() == 3
    # the next UTC day has room again: the capped traces are sampled when they come back
    SamplingDayCount.objects.update(day=dt.date(2000, 1, 1))
    assert send(project, *traces)["mapped"] == 2


def test_rules_are_audited_validated_and_disabled_not_deleted(project, admin):
    created = rule(project, admin, "tenth", "percentage", percentage=Decimal("10"), seed=7)
    changed = update_sampling_rule(
        project=project, actor=admin, rule_id=created.pk, percentage=Decimal("20"), note="more"
    )
    disabled = update_sampling_rule(project=project, actor=admin, rule_id=created.pk, enabled=False)
    assert (changed.version, disabled.version, disabled.enabled) == (2, 3, False)
    events = AuditEvent.objects.filter(object_id=str(created.pk)).order_by("id")
    assert [e.verb for e in events] == ["sampling_rule_created"] + ["sampling_rule_changed"] * 2
    assert events[1].detail["before"]["percentage"] == "10.000"
    assert events[1].detail["after"]["percentage"] == "20.000"
    with pytest.raises(GoldsetError, match="nothing was changed"):
        update_sampling_rule(project=project, actor=admin, rule_id=created.pk, enabled=False)
    with pytest.raises(GoldsetError, match="^percentage:"):
        rule(project, admin, "bad", "percentage", percentage=Decimal("101"))
    with pytest.raises(GoldsetError, match="^value: no domain"):
        rule(project, admin, "bad", "domain", value="nowhere")
    with pytest.raises(GoldsetError, match="^threshold:"):
        rule(project, admin, "bad", "uncertainty")
    with pytest.raises(GoldsetError, match="^name:"):
        rule(project, admin, "tenth", "feedback")
    # every rule disabled: traces are dropped, not sampled as "all"
    assert send(project, pipeline())["dropped"] == 1
    assert SamplingRule.objects.count() == 1
    assert json.loads(json.dumps(events[0].detail))["seed"] == 7


def test_the_spans_of_unsampled_traces_are_deleted_after_the_days_kept(project, admin, settings):
    settings.OTLP_DROPPED_KEEP_DAYS = 7
    rule(project, admin, "unhappy", "feedback")
    dropped, sampled = pipeline("Kept a week?"), pipeline("Bad?", **{"goldset.feedback": "down"})
    send(project, dropped, sampled)
    now = timezone.now()
    assert reconcile_traces(now=now + dt.timedelta(days=6))["unsampled_purged"] == 0
    summary = reconcile_traces(now=now + dt.timedelta(days=8))
    assert summary["unsampled_purged"] == 1
    assert not ReceivedSpan.objects.filter(trace_id=trace_id_of(dropped)).exists()
    assert ReceivedSpan.objects.filter(trace_id=trace_id_of(sampled)).count() == len(sampled)
    trace = ReceivedTrace.objects.get(trace_id=trace_id_of(dropped))
    assert (trace.status, trace.span_count) == ("dropped", 0)
    # a thumbs-down arriving after that finds no root: too late to sample
    send(project, later_feedback(dropped, **{"goldset.feedback": "down"}))
    assert ReceivedTrace.objects.get(trace_id=trace_id_of(dropped)).status == "incomplete"


def test_a_batch_sent_again_is_not_counted_again_against_the_caps(project, admin):
    first = rule(project, admin, "all-of-them", "percentage", percentage=100, daily_cap=2)
    second = rule(project, admin, "unhappy", "feedback", daily_cap=1, position=1)
    traces = [pipeline(f"Question {n}?", **{"goldset.feedback": "down"}) for n in range(5)]
    send(project, *traces)

    def counts():
        return {c.rule_id: (c.sampled, c.capped) for c in SamplingDayCount.objects.all()}

    before, decided = counts(), statuses(project)
    assert before == {first.pk: (2, 3), second.pk: (1, 2)}
    again = send(project, *traces)  # an exporter's retry: the same trace ids, the same spans
    assert (again["mapped"], again["capped"]) == (0, 2)  # the capped two are looked at again
    assert counts() == before and statuses(project) == decided
    assert AnswerRecord.objects.filter(project=project).count() == 3
    assert ReceivedSpan.objects.count() == sum(len(t) for t in traces)
    # a later span of a capped trace has it mapped again the same day: still counted once
    capped = next(t for t in traces if decided[trace_id_of(t)][0] == "capped")
    assert send(project, later_feedback(capped, **{"user.feedback": -1}))["capped"] == 1
    assert counts() == before
    trace = ReceivedTrace.objects.get(trace_id=trace_id_of(capped))
    assert trace.capped_rules == sorted([first.pk, second.pk])
