"""On the demo: the two judges, the evaluator report, and the import_evaluator_outputs,
calibrate_pcs and release_report commands (exit 2 with line and field on bad input)."""

import json

import pytest
from django.core.management import CommandError, call_command

from goldset.demo.seed import seed_demo
from goldset.models import Evaluator, EvaluatorOutput, EvaluatorReportSnapshot, ReleaseReport, Run
from goldset.selectors.evaluators import get_evaluator_report_for
from goldset.services.evaluators import gold_tier_records
from tests.factories import default_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings):
    settings.GOLDSET_EVALUATOR_RESAMPLES = 300
    seed_demo(password="evaluators-demo-1")


def test_demo_ships_an_aligned_and_a_biased_judge(demo, lead):
    judges = {e.name: e for e in Evaluator.objects.all()}
    assert set(judges) == {"judge-aligned", "judge-lenient"}
    n = gold_tier_records(project=default_project()).count()
    assert n > 0
    for judge in judges.values():
        assert EvaluatorOutput.objects.filter(evaluator=judge).count() == n
    report = get_evaluator_report_for(project=default_project(), user=lead)
    rows = {r["display"]: r for r in report["rows"]}
    assert {"Evaluator A", "Evaluator B", "weighted vote"} <= set(rows)
    aligned = {a["axis"]: a for a in rows["Evaluator A"]["axes"]}
    lenient = {a["axis"]: a for a in rows["Evaluator B"]["axes"]}
    assert aligned["acceptability"]["kappa"]["value"] > lenient["acceptability"]["kappa"]["value"]
    assert not lenient["grounding"]["trusted"]
    assert EvaluatorReportSnapshot.objects.count() == 1
    seed_demo(password=None)  # idempotent
    assert Evaluator.objects.count() == 2


def test_import_command_accepts_a_file_and_rejects_a_bad_one_with_exit_2(demo, tmp_path, capsys):
    record = gold_tier_records(project=default_project()).first()
    good = tmp_path / "judge.jsonl"
    good.write_text(json.dumps({"record_id": record.public_id, "score": 0.4}) + "\n")
    call_command(
        "import_evaluator_outputs",
        str(good),
        "--evaluator",
        "cli-judge",
        "--evaluator-version",
        "1",
        "--create",
    )
    assert json.loads(capsys.readouterr().out)["records"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"record_id": record.public_id, "unsafe_probability": -1}) + "\n")
    with pytest.raises(CommandError) as exc:
        call_command(
            "import_evaluator_outputs",
            str(bad),
            "--evaluator",
            "cli-judge",
            "--evaluator-version",
            "1",
        )
    assert exc.value.returncode == 2
    assert "line 1: unsafe_probability: got -1 (expected a number between 0 and 1)" in str(
        exc.value
    )
    with pytest.raises(CommandError) as exc:
        call_command(
            "import_evaluator_outputs",
            str(good),
            "--evaluator",
            "nobody",
            "--evaluator-version",
            "1",
        )
    assert exc.value.returncode == 2


def test_release_report_command_writes_json_and_html(demo, tmp_path, capsys):
    runs = list(
        Run.objects.filter(records__is_calibration=False)
        .distinct()
        .values_list("run_id", flat=True)
    )
    out = tmp_path / "report.html"
    args = ["--gold-version", "2", "--html", str(out), "--resamples", "200"]
    for run in runs:
        args += ["--run", run]
    call_command("release_report", *args)
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["systems"]) == 3
    assert [a["variant"] for a in payload["ablation"]][0] == "Full PCS"
    assert all(row["recorded"] for row in payload["checklist"][:3])
    assert out.read_text().count("<svg") == 2
    assert ReleaseReport.objects.count() == 1
    with pytest.raises(CommandError) as exc:
        call_command("release_report", "--gold-version", "99", "--run", runs[0])
    assert exc.value.returncode == 2


def test_calibrate_command_queues_a_version(demo, capsys, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("calibrate_pcs", "--name", "cli")
    out = json.loads(capsys.readouterr().out)
    assert out["calibration"] == "cli v1"
