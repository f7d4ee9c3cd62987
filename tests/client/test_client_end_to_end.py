"""The typed client (``client/goldset_client``) against a live server on PostgreSQL with a real
Celery worker on Redis: a token made on the token page, answers pushed, a version frozen (and
frozen again: nothing new), a run scored with its release gate, the version downloaded and its
checksum checked; the same through the async client (its helpers: ``push_questions``,
``push_answers``, ``latest_version``, ``score_run`` by tag, ``wait_for_import``,
``wait_for_job``, with progress); and the CLI's exit code when the release gate fails."""

import hashlib
import json
import os
import subprocess
import sys

import pytest
from django.urls import reverse
from goldset_client import (
    AsyncGoldsetClient,
    GoldsetClient,
    ImportRejected,
    Progress,
    Unprocessable,
)

from goldset.models import AnswerRecord, GoldVersion, ScoringJob
from tests.client._loop import run_in_own_loop
from tests.conftest import ROOT
from tests.factories import BlockFactory, BlockVersionFactory, DocumentFactory, DomainFactory
from tests.goldset.curation_support import review, write_triple
from workbench.roles import Role

pytestmark = [pytest.mark.worker, pytest.mark.postgres]
SYSTEM = "hybrid_rrf_v2"
QUESTION = {
    "question_id": "sc-route-0184",
    "domain": "supply_chain",
    "task_family": "routing_policy",
    "question": "Can operations approve air expedite under the standard routing guide?",
    "flags": ["conflict"],
    "gold_evidence": [
        {"passage_id": "nw-memo-s2", "role": "regional_exception", "label": "sufficient"}
    ],
}


def answer(**over):
    return {
        "run_id": "rag-2026-11-23",
        "system_id": SYSTEM,
        "question_id": "sc-route-0184",
        "answer": "Yes, operations may approve it.",
        "retrieved_passages": [{"passage_id": "route-guide-s4", "rank": 1}],
        "citations": ["route-guide-s4"],
        "latency_ms": 900,
        **over,
    }


@pytest.fixture
def curated(make_user, postgres):
    """A small corpus, one gold triple (two confirming reviews) and an admin."""
    domain = DomainFactory(slug="supply_chain")
    for block_id, text in [
        ("route-guide-s4", "Operations may approve expedite."),
        ("nw-memo-s2", "Northwest lanes need budget-control approval for air expedite."),
    ]:
        block = BlockFactory(block_id=block_id, document=DocumentFactory(domain=domain))
        pinned = BlockVersionFactory(block=block, version=1, text=text)
    author, r1, r2 = (make_user(Role.ANNOTATOR, username=u) for u in ("au", "rv1", "rv2"))
    triple = write_triple(author, version=pinned)
    review(r1, triple)
    review(r2, triple)
    return make_user(Role.ADMIN, username="ci-admin")


def token_from_page(client_for, user) -> str:
    page = client_for(user).post(
        reverse("api_tokens"), {"name": "ci", "scope": "write", "expires_in_days": 30}
    )
    assert page.status_code == 200
    return page.context["created"]


def test_push_freeze_score_and_download_through_the_client(
    curated, client_for, live_server, celery_worker_process, tmp_path
):
    token = token_from_page(client_for, curated)
    with GoldsetClient(live_server.url, token, poll_interval=0.2) as gs:
        assert gs.latest_version() is None
        assert gs.push_questions([QUESTION]).status == "succeeded"
        pushed = gs.push_answers([answer()])
        assert pushed.status == "succeeded" and pushed.summary["records_created"] == 1
        with pytest.raises(ImportRejected) as rejected:
            gs.push_answers([answer(run_id="r2"), {"run_id": "r2", "system_id": SYSTEM}])
        assert rejected.value.line == 2 and rejected.value.field
        assert AnswerRecord.objects.count() == 1  # nothing of the rejected file

        frozen = gs.freeze(note="from CI")
        assert frozen.created and frozen.version.number == 1
        again = gs.freeze(note="from CI")
        assert not again.created and again.version.number == 1
        assert GoldVersion.objects.count() == 1
        assert gs.latest_version().number == 1

        run = tmp_path / "answers.jsonl"
        run.write_text(json.dumps(answer()) + "\n")
        result = gs.score_run("latest", run, name="nightly", timeout=120)
        assert result.status == "succeeded" and result.kind == "answers"
        gate = result.release_gate
        assert gate is not None and set(gate.systems) == {SYSTEM}
        assert gate.passed == gate.systems[SYSTEM].release
        assert gate.passed == (not gate.reasons)
        assert result.metric("mean_pcs", f"system:{SYSTEM}") is not None
        assert ScoringJob.objects.get(pk=result.job_id).worker  # scored by the real worker

        with pytest.raises(ImportRejected) as bad_run:
            gs.score_run(1, (json.dumps(answer(question_id="nope")) + "\n").encode(), timeout=60)
        assert bad_run.value.line == 1 and "nope" in bad_run.value.errors[0].message
        with pytest.raises(Unprocessable) as not_frozen:
            gs.score_run(7, run, timeout=30)
        assert "v7 is not frozen" in not_frozen.value.detail

        done = gs.download_version(1, "gold_jsonl", tmp_path)
        body = done.path.read_bytes()
        assert hashlib.sha256(body).hexdigest() == done.sha256
        stored = GoldVersion.objects.get(number=1).files.get(format="gold_jsonl")
        assert done.sha256 == stored.sha256 and done.path.name == stored.filename
        assert json.loads(body.splitlines()[0])["metadata"]["domain"] == "supply_chain"


def test_the_async_client_pushes_freezes_and_scores_by_tag_waiting_with_progress(
    curated, client_for, live_server, celery_worker_process, tmp_path
):
    token = token_from_page(client_for, curated)
    run = tmp_path / "answers.jsonl"
    run.write_text(json.dumps(answer()) + "\n")
    progress = []

    async def flow():
        async with AsyncGoldsetClient(live_server.url, token, poll_interval=0.2) as gs:
            assert await gs.latest_version() is None
            questions = await gs.push_questions([QUESTION], progress=progress.append)
            assert questions.status == "succeeded"
            pushed = await gs.push_answers([answer()])
            assert pushed.status == "succeeded" and pushed.summary["records_created"] == 1
            with pytest.raises(ImportRejected) as rejected:
                await gs.push_answers([answer(run_id="r2"), {"run_id": "r2", "system_id": SYSTEM}])
            assert rejected.value.line == 2
            frozen = await gs.freeze(note="async")
            assert (await gs.latest_version()).number == frozen.version.number == 1
            await gs.set_tag("release-2026q4", 1, note="async")

            scored = await gs.score_run("release-2026q4", run, name="nightly", timeout=120,
                                        progress=progress.append)  # fmt: skip
            assert (scored.status, scored.version, scored.kind) == ("succeeded", 1, "answers")
            assert scored.release_gate is not None and set(scored.release_gate.systems) == {SYSTEM}

            # the waits on their own: queued without waiting, then waited for
            again = json.loads(run.read_text())
            again["latency_ms"] += 1  # another file
            queued = await gs.submit_run("release-2026q4", (json.dumps(again) + "\n").encode())
            imported = await gs.wait_for_import(queued.id, timeout=120)
            job = await gs.wait_for_job(int(imported.summary["scoring_job"]), timeout=120,
                                        progress=progress.append)  # fmt: skip
            assert job.status == "succeeded" and job.version == 1 and job.job_id != scored.job_id
            bad = await gs.push_answers(b'{"run_id": "r3"}\n', wait=False)
            with pytest.raises(ImportRejected):
                await gs.wait_for_import(bad.id, timeout=60)
            return scored, job

    scored, job = run_in_own_loop(flow())
    assert ScoringJob.objects.get(pk=scored.job_id).worker  # scored by the real worker
    assert ScoringJob.objects.filter(pk__in=[scored.job_id, job.job_id]).count() == 2
    assert set(ScoringJob.objects.values_list("version__number", flat=True)) == {1}
    stages = {p.stage for p in progress}
    assert {"upload", "import", "scoring"} <= stages
    assert Progress("scoring", 100, 100) in progress


def test_the_cli_fails_the_build_when_the_release_gate_fails(
    curated, client_for, live_server, celery_worker_process, tmp_path
):
    token = token_from_page(client_for, curated)
    with GoldsetClient(live_server.url, token, poll_interval=0.2) as gs:
        gs.push_questions([QUESTION])
        gs.freeze()
    run = tmp_path / "run.jsonl"
    # Cites the superseded general guide and misses the governing exception: blocked.
    run.write_text(json.dumps(answer()) + "\n")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "client"),
        "GOLDSET_URL": live_server.url,
        "GOLDSET_TOKEN": token,
    }
    command = [sys.executable, "-m", "goldset_client", "--timeout", "120", "score"]
    gated = subprocess.run(
        [*command, "--version", "latest", "--run", str(run), "--fail-on-gate"],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert gated.returncode == 1, gated.stderr
    assert "release gate FAILED" in gated.stderr
    report = json.loads(gated.stdout)
    assert report["release_gate"]["passed"] is False and report["version"] == 1
    # Without --fail-on-gate the same verdict is reported and the step succeeds.
    plain = subprocess.run(
        [*command, "--version", "1", "--run", str(run)],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["job"] == report["job"]  # the same run: the same job
    # An API error (no such version) is exit 2 with the problem on stderr.
    missing = subprocess.run(
        [*command, "--version", "7", "--run", str(run)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert missing.returncode == 2 and json.loads(missing.stderr)["status"] == 422
