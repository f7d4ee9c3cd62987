"""Evaluator outputs that arrive after their trace (issue 28): an evaluator-output import may name a
trace (``trace_id``) instead of an answer record. A trace that was dropped or capped and is still
kept (``OTLP_DROPPED_KEEP_DAYS``) takes the output as an evaluation of its own and is sampled
again — as when a feedback span arrives later — so the judge rule sees disagreement or low
confidence among the trace's evaluations and the imported ones; it becomes an answer record in
the tier the routing rules choose, with the rule recorded, within the rule's daily cap, and the
output becomes its record's. After the keep window the trace is gone: the output is refused and
the trace is not sampled. Everything through the real import and mapping services."""

import datetime as dt
import json
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from goldset.exceptions import ImportRejected
from goldset.models import (
    AnswerRecord,
    EvaluatorImport,
    EvaluatorOutput,
    ReceivedSpan,
    ReceivedTrace,
    SamplingDayCount,
)
from goldset.services.evaluators import create_evaluator, import_evaluator_outputs
from goldset.services.sampling import create_sampling_rule
from goldset.services.traces import evaluation_span_id, map_pending_traces, reconcile_traces
from tests.factories import DomainFactory, UserFactory, default_project
from tests.goldset.sampling_support import pipeline, send, trace_id_of

pytestmark = pytest.mark.django_db
INLINE_PASS = {"gen_ai.evaluation.name": "inline", "gen_ai.evaluation.score.value": 0.9}
INLINE_UNSURE = {"gen_ai.evaluation.name": "inline", "goldset.judge.confidence": 0.1}


@pytest.fixture
def project():
    DomainFactory(slug="controls")
    return default_project()


@pytest.fixture
def judge(project):
    return create_evaluator(project=project, name="late-judge", version="1", kind="llm_judge")


@pytest.fixture
def judges_rule(project):
    return create_sampling_rule(
        project=project,
        actor=UserFactory(username="sampler"),
        name="judges",
        kind="judge",
        threshold=Decimal("0.6"),
    )


def outputs(*lines) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def trace(spans) -> ReceivedTrace:
    return ReceivedTrace.objects.get(trace_id=trace_id_of(spans))


def test_a_later_output_samples_a_dropped_trace_into_the_routed_tier(project, judge, judges_rule):
    disagree = pipeline(
        "Who signs off the audit?", **INLINE_PASS, **{"goldset.task_type": "factual_qa"}
    )
    unsure = pipeline("Which logs are kept?", **INLINE_PASS)
    agree = pipeline("How are accounts reviewed?", **INLINE_PASS)
    assert send(project, disagree, unsure, agree)["dropped"] == 3  # one judge, no doubt yet

    summary = import_evaluator_outputs(
        evaluator=judge,
        source=outputs(
            {"trace_id": trace_id_of(disagree), "score": 0.1,
             "labels": {"acceptability": "unacceptable"}},
            {"trace_id": trace_id_of(unsure), "score": 0.8, "confidence": 0.3},
            {"trace_id": trace_id_of(agree), "score": 0.95, "unsafe_probability": 0.01},
        ),
    )  # fmt: skip
    assert (summary.records, summary.traces) == (3, 3)
    assert {trace(t).status for t in (disagree, unsure, agree)} == {"pending"}
    assert not EvaluatorOutput.objects.exists()  # no record yet: kept with the traces

    assert map_pending_traces(project_id=project.pk) == {
        "mapped": 2, "incomplete": 0, "rejected": 0, "dropped": 1, "capped": 0,
    }  # fmt: skip
    sampled = trace(disagree)
    assert (sampled.status, sampled.sampled_by, sampled.sampling_rule) == (
        "mapped",
        "judges",
        judges_rule,
    )
    record = sampled.record
    # routed as the routing rules say (factual_qa → GOLD), the rule on the record too
    assert (record.tier, record.routing_rule) == ("tier_b", "task_type:factual_qa")
    assert record.extra["trace"]["sampled_by"] == "judges"
    assert (trace(unsure).status, trace(unsure).sampled_by) == ("mapped", "judges")
    assert (trace(agree).status, trace(agree).record) == ("dropped", None)
    # the outputs are now the records' (the evaluator report reads them)
    kept = {o.record_id: o for o in EvaluatorOutput.objects.filter(evaluator=judge)}
    assert set(kept) == {record.pk, trace(unsure).record_id}
    assert kept[record.pk].labels == {"acceptability": "unacceptable"}
    assert kept[record.pk].score == 0.1
    assert kept[record.pk].source == EvaluatorImport.objects.get()
    (count,) = SamplingDayCount.objects.filter(rule=judges_rule)
    assert (count.sampled, count.capped) == (2, 0)


def test_daily_caps_hold_for_traces_a_later_output_samples(project, judge, judges_rule):
    judges_rule.daily_cap = 1
    judges_rule.save()
    first, second = pipeline("First?", **INLINE_PASS), pipeline("Second?", **INLINE_PASS)
    send(project, first, second)
    source = outputs(*({"trace_id": trace_id_of(t), "score": 0.05} for t in (first, second)))
    import_evaluator_outputs(evaluator=judge, source=source)
    summary = map_pending_traces(project_id=project.pk)
    assert (summary["mapped"], summary["capped"]) == (1, 1)
    assert AnswerRecord.objects.filter(project=project).count() == 1
    (count,) = SamplingDayCount.objects.filter(rule=judges_rule)
    assert (count.sampled, count.capped) == (1, 1)
    # the same file again: the mapped trace's output is its record's, the capped trace is
    # looked at again and not counted twice
    again = import_evaluator_outputs(evaluator=judge, source=source)
    assert (again.records, again.traces) == (2, 1)
    assert map_pending_traces(project_id=project.pk)["capped"] == 1
    count.refresh_from_db()
    assert (count.sampled, count.capped) == (1, 1)
    assert EvaluatorOutput.objects.filter(evaluator=judge).count() == 1


def test_after_the_keep_window_the_trace_is_gone_and_not_sampled_again(
    project, judge, judges_rule, settings
):
    settings.OTLP_DROPPED_KEEP_DAYS = 7
    late, expired = pipeline("Late?", **INLINE_PASS), pipeline("Expired?", **INLINE_PASS)
    send(project, late, expired)
    # the reconciler deletes the spans of traces dropped more than 7 days ago
    ReceivedTrace.objects.filter(trace_id=trace_id_of(expired)).update(
        updated_at=timezone.now() - dt.timedelta(days=8)
    )
    assert reconcile_traces(now=timezone.now())["unsampled_purged"] == 1
    # a trace past the window whose spans the reconciler has not deleted yet is gone too
    ReceivedTrace.objects.filter(trace_id=trace_id_of(late)).update(
        updated_at=timezone.now() - dt.timedelta(days=7, hours=1)
    )
    spans_before = ReceivedSpan.objects.count()
    for spans in (expired, late):
        with pytest.raises(ImportRejected) as refused:
            import_evaluator_outputs(
                evaluator=judge, source=outputs({"trace_id": trace_id_of(spans), "score": 0.0})
            )
        (problem,) = refused.value.problems
        assert (problem.line, problem.field) == (1, "trace_id")
        assert "no longer kept" in problem.message and "7 days" in problem.message
    assert not EvaluatorImport.objects.exists() and ReceivedSpan.objects.count() == spans_before
    assert map_pending_traces(project_id=project.pk)["mapped"] == 0
    assert {trace(t).status for t in (late, expired)} == {"dropped"}
    assert not AnswerRecord.objects.filter(project=project).exists()


def test_a_line_naming_a_trace_is_checked_and_a_bad_file_stores_nothing(
    project, judge, judges_rule
):
    dropped = pipeline("Dropped?", **INLINE_PASS)
    mapped = pipeline("Mapped?", **INLINE_UNSURE)  # sampled at once
    send(project, dropped, mapped)
    record = trace(mapped).record
    rejected_id = "ab" * 16
    ReceivedTrace.objects.create(project=project, trace_id=rejected_id, status="rejected")
    cases = [
        ({"trace_id": "c" * 32, "score": 0.1}, "unknown trace"),
        ({"trace_id": "XYZ", "score": 0.1}, "got 'XYZ'"),
        ({"trace_id": trace_id_of(dropped), "record_id": record.public_id, "score": 0.1},
         "not both"),
        ({"trace_id": rejected_id, "score": 0.1}, "was rejected"),
        ({"trace_id": trace_id_of(dropped), "score": 0.1, "confidence": 2}, None),
    ]  # fmt: skip
    for line, message in cases:
        with pytest.raises(ImportRejected) as refused:
            import_evaluator_outputs(evaluator=judge, source=outputs(line))
        (problem,) = refused.value.problems
        assert problem.field == ("confidence" if message is None else "trace_id")
        assert message is None or message in problem.message, problem.message
    # one record judged twice, by its trace and by its id; one trace twice
    with pytest.raises(ImportRejected) as refused:
        import_evaluator_outputs(
            evaluator=judge,
            source=outputs(
                {"trace_id": trace_id_of(mapped), "score": 0.2},
                {"record_id": record.public_id, "score": 0.3},
                {"trace_id": trace_id_of(dropped), "score": 0.2},
                {"trace_id": trace_id_of(dropped), "score": 0.3},
            ),
        )
    assert [(p.line, p.field) for p in refused.value.problems] == [
        (2, "record_id"),
        (4, "trace_id"),
    ]
    assert not EvaluatorImport.objects.exists() and not EvaluatorOutput.objects.exists()
    assert trace(dropped).status == "dropped"
    assert not ReceivedSpan.objects.filter(span_id=evaluation_span_id(judge.pk)).exists()


def test_the_command_imports_outputs_naming_traces(project, judges_rule, tmp_path):
    dropped = pipeline("Dropped then judged?", **INLINE_PASS)
    mapped = pipeline("Mapped at once?", **INLINE_UNSURE)
    send(project, dropped, mapped)
    file = tmp_path / "late.jsonl"
    file.write_bytes(
        outputs(
            {"trace_id": trace_id_of(mapped), "labels": {"acceptability": "acceptable"}},
            {
                "trace_id": trace_id_of(dropped),
                "score": 0.2,
                "labels": {"acceptability": "unacceptable"},
            },
        )
    )
    call_command(
        "import_evaluator_outputs", str(file), "--evaluator", "cli-judge",
        "--evaluator-version", "2", "--create", stdout=StringIO(),
    )  # fmt: skip
    # the mapped trace's output is its record's at once; the dropped one waits for the mapping
    (output,) = EvaluatorOutput.objects.all()
    assert output.record == trace(mapped).record
    assert map_pending_traces(project_id=project.pk)["mapped"] == 1  # 0.9 against 0.2
    assert trace(dropped).sampled_by == "judges"
    assert EvaluatorOutput.objects.count() == 2
