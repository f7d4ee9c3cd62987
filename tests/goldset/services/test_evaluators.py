"""Evaluator records, the all-or-nothing outputs import and the evaluator report on the gold tier."""

import json

import pytest

from goldset.exceptions import GoldsetError, ImportRejected
from goldset.models import EvaluatorImport, EvaluatorOutput, EvaluatorReportSnapshot
from goldset.services.evaluators import (
    compute_evaluator_report,
    create_evaluator,
    evaluator_key,
    gold_tier_items,
    import_evaluator_outputs,
    score_rows,
)
from scoring.evaluators import EvaluatorConfig, evaluator_report
from tests.factories import default_project
from tests.goldset.evaluators_helpers import build_gold_tier, copying_outputs, lenient_outputs
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def fast(settings):
    settings.GOLDSET_EVALUATOR_RESAMPLES = 300


def _judge(name="judge-a"):
    return create_evaluator(
        project=default_project(), name=name, version="1", kind="llm_judge", model_id="m-1"
    )


def test_duplicate_evaluator_is_rejected():
    _judge()
    with pytest.raises(GoldsetError):
        _judge()


def test_import_stores_every_judgement_and_reimport_overwrites():
    records = build_gold_tier(6)
    judge = _judge()
    summary = import_evaluator_outputs(
        evaluator=judge, source=lenient_outputs(records), source_name="a.jsonl"
    )
    assert summary.records == 6 and EvaluatorOutput.objects.filter(evaluator=judge).count() == 6
    assert EvaluatorImport.objects.get(pk=summary.evaluator_import).n_records == 6
    import_evaluator_outputs(
        evaluator=judge, source=copying_outputs(records), source_name="b.jsonl"
    )
    outputs = EvaluatorOutput.objects.filter(evaluator=judge)
    assert outputs.count() == 6
    assert {o.labels["grounding"] for o in outputs} == {r.final_grounding for r in records}
    assert AuditEvent.objects.filter(verb="evaluator_outputs_imported").count() == 2


def test_bad_file_is_rejected_whole_naming_line_and_field():
    records = build_gold_tier(3)
    judge = _judge()
    lines = [
        json.dumps({"record_id": records[0].public_id, "score": 0.4}),
        json.dumps({"record_id": records[1].public_id, "labels": {"grounding": "mostly"}}),
        json.dumps({"record_id": "no-such-record", "score": 0.5}),
        json.dumps({"record_id": records[2].public_id, "score": 1.7}),
        "{not json",
        json.dumps({"record_id": records[0].public_id, "evaluator": "other", "score": 0.1}),
    ]
    with pytest.raises(ImportRejected) as exc:
        import_evaluator_outputs(evaluator=judge, source="\n".join(lines), source_name="bad.jsonl")
    errors = "\n".join(exc.value.errors)
    assert "line 2: labels.grounding: 'mostly' is not one of" in errors
    assert "line 3: record_id: unknown answer record 'no-such-record'" in errors
    assert "line 4: score: got 1.7 (expected a number between 0 and 1)" in errors
    assert "line 5: not valid JSON" in errors
    assert "line 6: evaluator: 'other' is not 'judge-a'" in errors
    assert exc.value.source == "bad.jsonl"
    assert not EvaluatorOutput.objects.exists() and not EvaluatorImport.objects.exists()


def test_gold_tier_items_carry_final_labels_human_labels_and_probe_scores():
    records = build_gold_tier(8)
    items = gold_tier_items(project=default_project())
    assert [it["record_id"] for it in items] == [r.public_id for r in records]
    first = items[0]
    assert first["labels"]["grounding"] == records[0].final_grounding
    assert len(first["human_labels"]["grounding"]) == 3
    assert "pcs" in first["scores"] and first["week"].startswith("20")
    assert items[2]["unsafe"] is True  # majority severe-safety label


def test_report_trusts_a_copying_judge_and_not_a_lenient_one(fast):
    records = build_gold_tier(24)
    copy, lenient = _judge("copy"), _judge("lenient")
    import_evaluator_outputs(evaluator=copy, source=copying_outputs(records), source_name="c.jsonl")
    import_evaluator_outputs(
        evaluator=lenient, source=lenient_outputs(records), source_name="l.jsonl"
    )
    snapshot = compute_evaluator_report(project=default_project())
    rows = {r["name"]: r for r in snapshot.report["rows"]}
    copy_axes = {a["axis"]: a for a in rows[evaluator_key(copy.pk)]["axes"]}
    lenient_axes = {a["axis"]: a for a in rows[evaluator_key(lenient.pk)]["axes"]}
    assert copy_axes["grounding"]["kappa"]["value"] == pytest.approx(1.0)
    assert copy_axes["grounding"]["trusted"] and copy_axes["acceptability"]["trusted"]
    assert not lenient_axes["grounding"]["trusted"]
    assert "weighted vote" in rows and "pcs" in rows
    items = gold_tier_items(project=default_project())
    assert "claim_support" in score_rows(items)
    assert set(score_rows(items)) <= set(rows)  # every PROBE component with a value is a row
    # the stored figures are the library's on the same inputs
    direct = evaluator_report(
        items,
        {
            evaluator_key(copy.pk): {
                o.record.public_id: {
                    "labels": o.labels,
                    "score": o.score,
                    "unsafe_probability": o.unsafe_probability,
                }
                for o in EvaluatorOutput.objects.filter(evaluator=copy).select_related("record")
            }
        },
        config=EvaluatorConfig(resamples=300),
        weekly=False,
    )
    assert direct.rows[0].rho.value == pytest.approx(rows[evaluator_key(copy.pk)]["rho"]["value"])
    assert snapshot.n_items == 24 and EvaluatorReportSnapshot.objects.count() == 1


def test_trust_threshold_is_the_kappa_gate_in_conf(fast, settings):
    records = build_gold_tier(12)
    judge = _judge()
    import_evaluator_outputs(
        evaluator=judge, source=copying_outputs(records), source_name="c.jsonl"
    )
    settings.KAPPA_GATE = 0.95
    snapshot = compute_evaluator_report(project=default_project())
    assert snapshot.trust_kappa == 0.95 and snapshot.report["settings"]["trust_kappa"] == 0.95


def test_report_needs_a_gold_tier_and_outputs(fast):
    with pytest.raises(GoldsetError, match="gold tier"):
        compute_evaluator_report(project=default_project())
    build_gold_tier(4)
    with pytest.raises(GoldsetError, match="no evaluator"):
        compute_evaluator_report(project=default_project())
