"""``manage.py score_run --calibration NAME:VERSION`` scores an answer log with a succeeded PCS
calibration; an unknown or unfinished calibration, or one given for a retrieval run, exits 2."""

import json

import pytest
from django.core.management import CommandError, call_command

from goldset.models import JobStatus, ScoringJob
from goldset.services.freeze import store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus
from tests.goldset.run_calibration_support import (
    answer_log,
    make_answer_version,
    make_calibrations,
)

pytestmark = pytest.mark.django_db


def test_an_answer_log_is_scored_with_the_named_calibration(
    make_user, tmp_path, capsys, django_capture_on_commit_callbacks
):
    calibrations = make_calibrations()
    version, record = make_answer_version(make_user)
    path = tmp_path / "answers.jsonl"
    path.write_bytes(answer_log(record))
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "score_run", str(path), "--version", str(version.number), "--calibration", "q2:1"
        )
    out = json.loads(capsys.readouterr().out)
    job = ScoringJob.objects.get(pk=out["job"])
    assert job.calibration == calibrations["succeeded"]
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.summary["configuration"] == "q2 v1"


@pytest.mark.parametrize(
    ("label", "expected"),
    [("q9:1", "no calibration q9:1"), ("q2", "no calibration q2"), ("q2:2", "has not succeeded")],
    ids=["unknown", "no-version", "failed"],
)
def test_a_bad_calibration_exits_2_and_creates_no_job(make_user, tmp_path, label, expected):
    make_calibrations()
    version, record = make_answer_version(make_user)
    path = tmp_path / "answers.jsonl"
    path.write_bytes(answer_log(record))
    with pytest.raises(CommandError) as refused:
        call_command(
            "score_run", str(path), "--version", str(version.number), "--calibration", label
        )
    assert refused.value.returncode == 2 and expected in str(refused.value)
    assert not ScoringJob.objects.exists()


def test_a_retrieval_run_with_a_calibration_exits_2_naming_the_field(admin_user, tmp_path):
    make_calibrations()
    blocks = make_gold_corpus(2)
    version = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(blocks)],
        actor=admin_user,
    )
    path = tmp_path / "run.trec"
    path.write_text(
        "".join(f"Q-{i} Q0 {bv.block.block_id} 1 2.0 s\n" for i, bv in enumerate(blocks))
    )
    with pytest.raises(CommandError) as refused:
        call_command(
            "score_run", str(path), "--version", str(version.number), "--calibration", "q2:1"
        )
    assert refused.value.returncode == 2
    assert "calibration: a PCS calibration applies to answer logs only" in str(refused.value)
    assert not ScoringJob.objects.exists()
