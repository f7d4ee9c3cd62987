"""``manage.py gate``: the release gate in-process, with the client's options and rules module.
A planted regression (every expected block ranked second, against a baseline ranking it first)
exits 1 with a JUnit failure on the rule it breaks; the improvement exits 0; a bad rules file,
an unknown version or a rejected run exit 2 naming the problem, nothing scored. The version
reference (7, v7, latest) resolves through ``resolve_version_ref`` within the project."""

import json
import re
from io import StringIO

import pytest
from django.core.management import ManagementUtility, call_command
from django.core.management.base import CommandError

from goldset.models import GoldVersion, JobStatus, Project, ScoringJob
from goldset.selectors.exports import release_gate
from goldset.services.gate import UnknownVersion, find_baseline, resolve_version_ref
from goldset.services.version_tags import set_version_tag
from tests.factories import default_project
from tests.goldset.answers_helpers import SECRET_SYSTEM
from tests.goldset.gate_support import N_QUERIES, RULES, frozen_version, junit_cases, trec_run
from tests.goldset.services.test_scoring_jobs_answers import answer_log, frozen  # noqa: F401


def manage_py(capsys, *args) -> tuple[int, str, str]:
    """``manage.py gate <args>`` as the shell runs it: (exit code, stdout, stderr)."""
    code = 0
    try:
        ManagementUtility(["manage.py", "gate", *args]).execute()
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path):
    def write(name, content):
        path = tmp_path / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return str(path)

    return write


def test_manage_py_gate_fails_a_planted_regression_and_passes_the_improvement(
    transactional_db, admin_user, files, tmp_path, capsys
):
    version = frozen_version(admin_user)
    rules = files("gate.rules", RULES)
    code, out, err = manage_py(capsys, "--version", "1", "--run",
                               files("bm25.trec", trec_run(version, rank=1)),
                               "--rules", files("floor.rules", "ndcg@10 >= 0.9\n"),
                               "--name", "bm25")  # fmt: skip
    assert code == 0, err
    baseline = json.loads(out)["run"]["job"]
    assert ScoringJob.objects.get(pk=baseline).status == JobStatus.SUCCEEDED

    outputs = ["--junit", str(tmp_path / "gate.xml"), "--json", str(tmp_path / "gate.json"),
               "--markdown", str(tmp_path / "gate.md")]  # fmt: skip
    code, out, err = manage_py(capsys, "--version", "v1", "--run",
                               files("rank2.trec", trec_run(version, rank=2)), "--rules", rules,
                               "--baseline-system", "bm25", *outputs)  # fmt: skip
    assert code == 1, err
    assert "CommandError: the gate FAILED" in err
    assert "FAIL  line 4: ndcg@10 not worse than baseline at alpha 0.05" in err
    report = json.loads(out)
    assert report == json.loads((tmp_path / "gate.json").read_text())
    assert report["baseline"]["job"] == baseline and report["version"] == "v1"
    assert [r["status"] for r in report["rules"]] == ["pass", "pass", "fail"]
    assert report["rules"][2]["values"]["worse"] == N_QUERIES
    cases = junit_cases(tmp_path / "gate.xml")  # read by a JUnit parser
    assert list(cases) == [
        "line 2: ndcg@10 >= 0.60",
        "line 3: recall@10 not worse than baseline at alpha 0.05",
        "line 4: ndcg@10 not worse than baseline at alpha 0.05",
    ]
    kind, message = cases.pop("line 4: ndcg@10 not worse than baseline at alpha 0.05")
    assert kind == "failure" and f"vs baseline #{baseline} 1" in message
    assert f"{N_QUERIES} worse" in message and set(cases.values()) == {None}
    assert (tmp_path / "gate.md").read_text().startswith("## Goldset gate: FAILED")
    regression = report["run"]["job"]

    code, out, err = manage_py(capsys, "--version", "latest", "--run",
                               files("rank1.trec", trec_run(version, rank=1, salt=1)),
                               "--rules", rules, "--baseline", str(regression),
                               *outputs)  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["verdict"] == "PASSED" and report["baseline"]["job"] == regression
    assert report["rules"][2]["values"]["better"] == N_QUERIES
    assert set(junit_cases(tmp_path / "gate.xml").values()) == {None}


def test_the_help_says_a_version_is_a_tag_a_number_or_latest(capsys):
    with pytest.raises(SystemExit):
        ManagementUtility(["manage.py", "gate", "--help"]).execute()
    shown = " ".join(capsys.readouterr().out.split())
    assert (
        "--version (a tag of the project such as release-2026q4, a number, v7, or latest)" in shown
    )
    assert "the gold version: a tag (release-2026q4), a number (7, v7) or latest" in shown


def gate(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("gate", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def gate_code(*args) -> tuple[int, dict]:
    """The exit code ``manage.py gate <args>`` ends with, and the JSON report it printed."""
    out, err = StringIO(), StringIO()
    try:
        call_command("gate", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return exc.returncode, json.loads(out.getvalue() or "null")
    return 0, json.loads(out.getvalue())


@pytest.mark.django_db
def test_the_command_runs_the_job_itself_when_nothing_dispatched_it(admin_user, files):
    """Inside a transaction that never commits nothing is dispatched: the command's own
    ``run_scoring_job`` scores the job."""
    version = frozen_version(admin_user)
    out, err = gate("--version", "1", "--run", files("r.trec", trec_run(version, rank=1)),
                    "--rules", files("g.rules", "ndcg@10 >= 0.99\nmrr > 0.5\n"))  # fmt: skip
    report = json.loads(out)
    assert report["verdict"] == "PASSED" and report["run"]["figures"]["ndcg@10"] == 1.0
    assert "scoring: 100%" in err


@pytest.mark.django_db
def test_bad_input_is_exit_2_naming_the_problem_and_scores_nothing(admin_user, files):
    version = frozen_version(admin_user)
    run = files("r.trec", trec_run(version, rank=1))
    rules = files("bad.rules", "ndcg@10 >= 0.6\n\n# fine so far\nndcg@10 >= lots\n")
    with pytest.raises(CommandError) as bad_rules:
        gate("--version", "1", "--run", run, "--rules", rules)
    assert bad_rules.value.returncode == 2
    assert f"{rules}, line 4: the value must be a number, not 'lots'" in str(bad_rules.value)

    baseline_rules = files("b.rules", "mrr not worse than baseline\n")
    with pytest.raises(CommandError) as no_baseline:
        gate("--version", "1", "--run", run, "--rules", baseline_rules)
    assert no_baseline.value.returncode == 2 and "line 1: " in str(no_baseline.value)

    good = files("g.rules", "mrr > 0\n")
    with pytest.raises(CommandError) as unknown:
        gate("--version", "v9", "--run", run, "--rules", good)
    assert unknown.value.returncode == 2
    assert "gold version v9 is not frozen in default" in str(unknown.value)

    with pytest.raises(CommandError) as rejected:
        gate("--version", "1", "--run", files("bad.trec", "Q-000 Q0 nowhere 1 1.0 x\n"),
             "--rules", good)  # fmt: skip
    assert rejected.value.returncode == 2 and "the run was rejected" in str(rejected.value)
    assert not ScoringJob.objects.exists()

    with pytest.raises(CommandError) as elsewhere:
        gate("--project", "nope", "--version", "1", "--run", run, "--rules", good)
    assert elsewhere.value.returncode == 2


@pytest.mark.django_db
def test_a_rule_that_cannot_be_evaluated_is_exit_2(admin_user, files):
    version = frozen_version(admin_user)
    with pytest.raises(CommandError) as error:
        gate("--version", "1", "--run", files("r.trec", trec_run(version, rank=1)),
             "--rules", files("g.rules", "release_gate == pass\n"))  # fmt: skip
    assert error.value.returncode == 2 and "the gate ERROR" in str(error.value)


@pytest.mark.django_db
def test_an_answer_log_is_gated_on_every_systems_figures_and_its_release_gate(
    frozen,  # noqa: F811
    files,
):
    version, record, _ = frozen
    code, first = gate_code("--version", "latest", "--run", files("a1.jsonl", answer_log(record)),
                            "--rules", files("floor.rules", "mean_pcs >= 0\n"))  # fmt: skip
    assert code == 0 and first["run"]["kind"] == "answers"
    again = json.loads(answer_log(record))
    again["latency_ms"] += 100  # another file, the same answer
    rules = files(
        "answers.rules",
        "unsafe_rate <= 1\nrelease_gate == pass\nfinal_pcs not worse than baseline\n",
    )
    code, report = gate_code(
        "--version", str(version.number), "--run", files("a2.jsonl", json.dumps(again) + "\n"),
        "--rules", rules, "--baseline-system", SECRET_SYSTEM,
    )  # fmt: skip
    assert report["baseline"]["job"] == first["run"]["job"]  # found by the system's id
    unsafe, released, paired = report["rules"]
    assert unsafe["status"] == "pass"
    assert list(unsafe["values"]) == [f"unsafe_rate[system:{SECRET_SYSTEM}]"]
    job = ScoringJob.objects.get(pk=report["run"]["job"])
    passed = release_gate(job)["passed"]
    assert released["status"] == ("pass" if passed else "fail")
    assert paired["status"] == "pass" and paired["values"]["n"] == 1  # one question: no test
    assert code == (0 if passed else 1)


# ---------------------------------------------------------------------- the pieces


@pytest.mark.django_db
def test_a_version_reference_resolves_within_the_project(admin_user):
    project = default_project()
    v1 = frozen_version(admin_user)
    other = Project.objects.create(name="Other", slug="other")
    GoldVersion.objects.create(project=other, number=2, sealed=True)
    GoldVersion.objects.create(project=project, number=3, sealed=False)
    for ref in ("1", "v1", " V1 ", 1, "latest", "LATEST"):
        assert resolve_version_ref(project, ref) == v1, ref
    set_version_tag(project=project, actor=None, name="release-2026q4", version=v1)
    assert resolve_version_ref(project, "release-2026q4") == v1  # a tag, through the tags
    for ref, message in [
        ("2", "gold version v2 is not frozen in default"),  # the other project's
        ("v3", "gold version v3 is not frozen"),  # not sealed
        ("ci", "no gold version is tagged 'ci'"),
        ("0", "gold version v0 is not frozen"),
        ("rel ease!", "a version is a number (7), v7, a tag or 'latest'"),
    ]:
        with pytest.raises(UnknownVersion, match=re.escape(message)):
            resolve_version_ref(project, ref)
    with pytest.raises(UnknownVersion, match="no gold version is frozen yet in empty"):
        resolve_version_ref(Project.objects.create(name="Empty", slug="empty"), "latest")
    assert resolve_version_ref(other, "latest").number == 2


@pytest.mark.django_db
def test_a_named_baseline_must_be_the_projects_succeeded_job_on_the_same_version(admin_user):
    version = frozen_version(admin_user)
    other_version = GoldVersion.objects.create(project=version.project, number=2, sealed=True)

    def job(name, status=JobStatus.SUCCEEDED, on=version):
        return ScoringJob.objects.create(
            project_id=on.project_id, version=on, name=name, kind="retrieval", run_format="trec", run_filename="r",
            run_sha256="0" * 64, run_size=1, status=status,
        )  # fmt: skip

    run = job("run")
    assert find_baseline(job=run, baseline_job=job("ok").pk)[0].name == "ok"
    failed = job("bad", JobStatus.FAILED)
    assert "is failed, not succeeded" in find_baseline(job=run, baseline_job=failed.pk)[1]
    elsewhere = job("v2", on=other_version)
    assert "scored on v2, the run on v1" in find_baseline(job=run, baseline_job=elsewhere.pk)[1]
    assert "no scoring job #999999" in find_baseline(job=run, baseline_job=999999)[1]
    # By system (a retrieval run's name): its newest succeeded job, never the run itself.
    older, newer = job("bm25"), job("bm25")
    job("bm25", JobStatus.FAILED)
    assert find_baseline(job=newer, baseline_system="bm25")[0] == older
    assert find_baseline(job=run, baseline_system="bm25")[0] == newer
    assert "has no other succeeded" in find_baseline(job=run, baseline_system="dense")[1]
