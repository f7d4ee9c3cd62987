"""``goldset gate`` (the client's CLI, in its own process) against the live test server with a
real token: a planted regression (a run ranking every expected block second, against a baseline
ranking it first) fails with exit 1 and a JUnit failure on the rule it breaks; the improvement
(the other way round) passes with exit 0; a bad rules file is exit 2 naming the line, before
anything is uploaded; a baseline that cannot be found is exit 2 saying why; ``score_run``,
``goldset score`` and ``goldset gate`` name the version by a tag. The JUnit file is
read back by a JUnit parser (``junitparser``), as a CI's test report reads it."""

import json
import os
import subprocess
import sys

import pytest
from django.core.cache import cache
from goldset_client import GoldsetClient

from goldset.models import GoldVersion, ScoringJob
from goldset.services.version_tags import set_version_tag
from tests.conftest import ROOT
from tests.goldset.gate_support import N_QUERIES, RULES, frozen_version, junit_cases, trec_run
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token

pytestmark = pytest.mark.postgres


@pytest.fixture
def world(make_user, transactional_db, settings, tmp_path):
    settings.API_TOKEN_RATE = "100000/min"
    cache.clear()
    admin = make_user(Role.ADMIN, username="gate-admin")
    version = frozen_version(admin)
    _, token = create_api_token(user=admin, name="ci", scope="write")
    rules = tmp_path / "gate.rules"
    rules.write_text(RULES)
    return {"version": version, "token": token, "rules": rules}


def goldset(live_server, token, tmp_path, *args):
    """``python -m goldset_client --timeout 120 gate <args>`` with the three outputs in
    ``tmp_path``; the finished process."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "client"),
        "GOLDSET_URL": live_server.url,
        "GOLDSET_TOKEN": token,
    }
    outputs = ["--markdown", str(tmp_path / "gate.md"), "--junit", str(tmp_path / "gate.xml"),
               "--json", str(tmp_path / "gate.json")]  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "goldset_client", "--timeout", "120", "gate", *args, *outputs],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def test_the_gate_fails_a_planted_regression_and_passes_the_improvement(
    world, live_server, tmp_path
):
    version = world["version"]
    with GoldsetClient(live_server.url, world["token"], poll_interval=0.2) as gs:
        baseline = gs.score_run(1, trec_run(version, rank=1), name="bm25", timeout=120)
    assert baseline.status == "succeeded" and baseline.metric("ndcg@10") == 1.0

    regression = tmp_path / "rank2.trec"
    regression.write_bytes(trec_run(version, rank=2))
    failed = goldset(live_server, world["token"], tmp_path, "--version", "v1",
                     "--run", str(regression), "--rules", str(world["rules"]),
                     "--baseline-system", "bm25")  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    assert "scoring: 100%" in failed.stderr and "upload: 100%" in failed.stderr
    assert "FAIL  line 4: ndcg@10 not worse than baseline at alpha 0.05" in failed.stderr
    cases = junit_cases(tmp_path / "gate.xml")
    assert list(cases) == [
        "line 2: ndcg@10 >= 0.60",
        "line 3: recall@10 not worse than baseline at alpha 0.05",
        "line 4: ndcg@10 not worse than baseline at alpha 0.05",
    ]
    assert cases["line 2: ndcg@10 >= 0.60"] is None  # 0.63: the threshold alone misses it
    assert cases["line 3: recall@10 not worse than baseline at alpha 0.05"] is None
    kind, drop = cases["line 4: ndcg@10 not worse than baseline at alpha 0.05"]
    assert kind == "failure"
    assert f"vs baseline #{baseline.job_id} 1" in drop and f"{N_QUERIES} worse" in drop
    report = json.loads((tmp_path / "gate.json").read_text())
    assert report == json.loads(failed.stdout)
    candidate = report["run"]["job"]
    assert (report["verdict"], report["exit_code"], report["version"]) == ("FAILED", 1, "v1")
    assert report["baseline"]["job"] == baseline.job_id and candidate != baseline.job_id
    assert report["rules"][2]["values"]["adjusted"] <= 0.05
    markdown = (tmp_path / "gate.md").read_text()
    assert markdown.startswith("## Goldset gate: FAILED")
    assert "| 4 | `ndcg@10 not worse than baseline at alpha 0.05` | ❌ fail |" in markdown

    improvement = tmp_path / "rank1.trec"
    improvement.write_bytes(trec_run(version, rank=1, salt=1))  # another file, ranked first
    passed = goldset(live_server, world["token"], tmp_path, "--version", "latest",
                     "--run", str(improvement), "--rules", str(world["rules"]),
                     "--baseline", str(candidate))  # fmt: skip
    assert passed.returncode == 0, passed.stderr
    assert set(junit_cases(tmp_path / "gate.xml").values()) == {None}
    report = json.loads(passed.stdout)
    assert report["verdict"] == "PASSED" and report["baseline"]["job"] == candidate
    assert report["rules"][2]["values"]["better"] == N_QUERIES
    assert (tmp_path / "gate.md").read_text().startswith("## Goldset gate: PASSED")
    assert ScoringJob.objects.count() == 3


def test_score_run_goldset_score_and_the_gate_take_a_tag(world, live_server, tmp_path):
    version = world["version"]
    set_version_tag(project=version.project, actor=None, name="release-2026q4", version=version)
    # "latest" is now another version: only the tag names v1
    GoldVersion.objects.create(project=version.project, number=2, sealed=True)
    with GoldsetClient(live_server.url, world["token"], poll_interval=0.2) as gs:
        baseline = gs.score_run("release-2026q4", trec_run(version, rank=1), name="bm25",
                                timeout=120)  # fmt: skip
        assert gs.get_version("latest").number == 2
    assert (baseline.status, baseline.version) == ("succeeded", 1)

    improvement = tmp_path / "rank1.trec"
    improvement.write_bytes(trec_run(version, rank=1, salt=1))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "client"), "GOLDSET_URL": live_server.url,
           "GOLDSET_TOKEN": world["token"]}  # fmt: skip
    scored = subprocess.run(
        [sys.executable, "-m", "goldset_client", "--timeout", "120", "score",
         "--version", "release-2026q4", "--run", str(improvement), "--name", "dense"],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["version"] == 1

    regression = tmp_path / "rank2.trec"
    regression.write_bytes(trec_run(version, rank=2))
    failed = goldset(live_server, world["token"], tmp_path, "--version", "release-2026q4",
                     "--run", str(regression), "--rules", str(world["rules"]),
                     "--baseline-system", "bm25")  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    report = json.loads(failed.stdout)
    assert report["version"] == "release-2026q4" and report["run"]["version"] == 1
    assert report["baseline"]["job"] == baseline.job_id
    assert ScoringJob.objects.filter(version=version).count() == 3
    assert not ScoringJob.objects.exclude(version=version).exists()


def test_a_bad_rules_file_is_exit_2_naming_the_line_and_uploads_nothing(
    world, live_server, tmp_path
):
    run = tmp_path / "run.trec"
    run.write_bytes(trec_run(world["version"], rank=1))
    rules = tmp_path / "bad.rules"
    rules.write_text("ndcg@10 >= 0.60\nrecall@10 worse than baseline\n")
    bad = goldset(live_server, world["token"], tmp_path, "--version", "1", "--run", str(run),
                  "--rules", str(rules), "--baseline", "1")  # fmt: skip
    assert bad.returncode == 2
    assert f"{rules}, line 2: a baseline rule reads" in bad.stderr
    no_baseline = goldset(live_server, world["token"], tmp_path, "--version", "1",
                          "--run", str(run), "--rules", str(world["rules"]))  # fmt: skip
    assert no_baseline.returncode == 2
    assert (
        "line 3: 'recall@10 not worse than baseline at alpha 0.05' compares" in no_baseline.stderr
    )
    assert not ScoringJob.objects.exists()
    assert not (tmp_path / "gate.xml").exists()


def test_a_baseline_system_without_jobs_is_exit_2_with_the_reason_in_every_output(
    world, live_server, tmp_path
):
    run = tmp_path / "run.trec"
    run.write_bytes(trec_run(world["version"], rank=1))
    done = goldset(live_server, world["token"], tmp_path, "--version", "1", "--run", str(run),
                   "--rules", str(world["rules"]), "--baseline-system", "dense-v2")  # fmt: skip
    assert done.returncode == 2, done.stderr
    reason = "system 'dense-v2' has no other succeeded scoring job on v1 to compare with"
    report = json.loads(done.stdout)
    assert report["verdict"] == "ERROR" and report["baseline"] is None
    assert [r["status"] for r in report["rules"]] == ["pass", "error", "error"]
    assert report["rules"][1]["detail"] == reason
    assert list(junit_cases(tmp_path / "gate.xml").values()) == [
        None, ("error", reason), ("error", reason),
    ]  # fmt: skip
    assert reason in (tmp_path / "gate.md").read_text()


def test_list_jobs_filters_by_version_system_and_status(world, live_server):
    version = world["version"]
    with GoldsetClient(live_server.url, world["token"], poll_interval=0.2) as gs:
        first = gs.score_run(1, trec_run(version, rank=1), name="bm25", timeout=120)
        second = gs.score_run(1, trec_run(version, rank=2), name="dense", timeout=120)
        assert [j.job_id for j in gs.list_jobs(system="bm25")] == [first.job_id]
        assert [j.job_id for j in gs.list_jobs(version="latest", status="succeeded")] == [
            second.job_id,
            first.job_id,
        ]
        assert list(gs.list_jobs(version="v1", status="failed")) == []
