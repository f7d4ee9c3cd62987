"""The release report's pairwise section (issue 30): beside Table 5, a pairwise task's ranking
(systems by id, as Table 5), win rates with CIs, agreement and position bias, and the decision
rule's statement whether pairwise results agree with the PCS decision — in the stored JSON,
the self-contained HTML, the report page and the release_report command."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from goldset.demo.seed import seed_demo
from goldset.exceptions import CrossProjectReference
from goldset.models import GoldVersion, ReleaseReport, Run
from goldset.services.release_reports import create_release_report, pairwise_section
from tests.factories import default_project
from tests.goldset.pairwise_support import judge_next, make_task, reviewers
from tests.goldset.project_support import other_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings, lead):
    settings.GOLDSET_EVALUATOR_RESAMPLES = 200
    seed_demo(password="pairwise-release-1")
    runs = list(
        Run.objects.filter(project=default_project(), records__is_calibration=False).distinct()
    )
    task = make_task(
        runs, actor=lead, name="Release pairs", design="balanced", comparisons_per_question=1
    )
    for person in reviewers(3, prefix="pw-rel"):
        for _ in range(6):
            judge_next(person, "a")
    return runs, task


def test_the_command_and_the_page_show_the_pairwise_section(
    demo, tmp_path, capsys, client_for, admin_user
):
    runs, task = demo
    out = tmp_path / "report.html"
    args = ["--gold-version", "2", "--html", str(out), "--pairwise-task", task.name]
    for run in runs:
        args += ["--run", run.run_id]
    call_command("release_report", *args)
    payload = json.loads(capsys.readouterr().out)
    section = payload["pairwise"]
    table_5 = {s["system_id"] for s in payload["systems"]}
    assert section["task"] == "Release pairs"
    assert {r["system"] for r in section["analysis"]["ranking"]} <= table_5
    assert section["agrees"] in (True, False, None)
    assert section["statement"].startswith(("Pairwise results", "All compared systems"))
    html = out.read_text()
    assert 'id="pairwise-section"' in html and section["statement"] in html
    page = client_for(admin_user).get(reverse("evaluators:release", args=[payload["id"]]))
    assert 'id="pairwise-decision"' in page.content.decode()
    with pytest.raises(CommandError) as exc:
        call_command(
            "release_report",
            "--gold-version",
            "2",
            "--run",
            runs[0].run_id,
            "--pairwise-task",
            "nope",
        )
    assert exc.value.returncode == 2
    assert ReleaseReport.objects.count() == 1


def test_another_projects_task_is_refused(demo):
    runs, task = demo
    other = other_project(slug="pw-release-other")
    version = GoldVersion.objects.filter(project=default_project(), number=2).get()
    task.project = other  # as if the task were the other project's
    with pytest.raises(CrossProjectReference):
        create_release_report(
            project=default_project(), version=version, run_ids=[runs[0].run_id], pairwise_task=task
        )


def test_the_statement_follows_table_5s_decisions(demo):
    _, task = demo
    ranking = pairwise_section(task, systems=[])["analysis"]["ranking"]
    best, worst = ranking[0]["system"], ranking[-1]["system"]
    agree = pairwise_section(
        task,
        systems=[
            {"system_id": best, "release": True, "pcs": {"value": 70.0}},
            {"system_id": worst, "release": False, "pcs": {"value": 50.0}},
        ],
    )
    assert agree["agrees"] is True and agree["conflicts"] == []
    disagree = pairwise_section(
        task,
        systems=[
            {"system_id": best, "release": False, "pcs": {"value": 50.0}},
            {"system_id": worst, "release": True, "pcs": {"value": 70.0}},
        ],
    )
    assert disagree["agrees"] is False and disagree["conflicts"] == [[worst, best]]
    assert f"{best} over {worst}" in disagree["statement"]
