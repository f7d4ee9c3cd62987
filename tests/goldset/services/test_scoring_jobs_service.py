"""Scoring jobs: whole-file validation, scoring with the library, idempotent re-delivery,
failure and retry. Tasks run in-process (eager) here; tests/goldset/worker has the real worker."""

import json
import subprocess
import sys

import pytest

from goldset.exceptions import GoldsetError
from goldset.models import JobStatus, ScoreAggregate, ScoreQueryResult, ScoringJob
from goldset.services.freeze import store_frozen_version
from goldset.services.scoring_jobs import (
    RunRejected,
    create_scoring_job,
    default_resamples,
    recover_orphaned_jobs,
    retry_scoring_job,
    run_scoring_job,
    strata_csv,
)
from tests.factories import gold_row_for, make_gold_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(12)
    rows = [gold_row_for(bv, triple_id=f"Q-{i:03d}") for i, bv in enumerate(versions)]
    frozen = store_frozen_version(rows=rows, actor=admin_user)
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


def trec_run(version, *, skip=(), wrong_first=()):
    lines = []
    blocks = version.blocks
    for i, block in enumerate(blocks):
        qid = f"Q-{i:03d}"
        if qid in skip:
            continue
        ranked = (
            [blocks[(i + 1) % len(blocks)], block]
            if qid in wrong_first
            else [block, blocks[(i + 3) % len(blocks)]]
        )
        lines += [f"{qid} Q0 {doc} {r + 1} {10 - r}.5 sys" for r, doc in enumerate(ranked)]
    return ("\n".join(lines) + "\n").encode()


def create(version, data, admin_user, name="run.trec", **kw):
    return create_scoring_job(
        version=version, name="bm25", data=data, filename=name, actor=admin_user, **kw
    )


def test_a_valid_run_creates_a_queued_job_dispatched_on_commit(
    version, admin_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = create(version, trec_run(version), admin_user)
    assert job.status == JobStatus.QUEUED and len(callbacks) == 1
    assert job.run_format == "trec" and job.resamples == 10_000 and job.seed == 8821


@pytest.mark.parametrize(
    "data,message",
    [
        (b"Q-000 Q0 blk-x 1\n", "line 1: expected 6 fields"),
        (b"Q-000 Q0 {b0} 1 2.0 s\nQ-999 Q0 {b0} 1 2.0 s\n", "line 2: unknown query id 'Q-999'"),
        (b"Q-000 Q0 {b0} 1 2.0 s\nQ-001 Q0 nope 1 1.0 s\n", "line 2: unknown block id 'nope'"),
        (b"Q-000 Q0 {b0} 1 2.0 s\nQ-000 Q0 {b0} 2 1.0 s\n", "line 2: document"),
        (
            b'{"query_id": "Q-000", "results": [{"doc_id": "{b0}", "score": 1}]}\n{"query_id": "Q-000", "results": []}\n',
            "line 2: query 'Q-000' already appears on line 1",
        ),
        (
            b'{"query_id": "Q-000", "results": [{"doc_id": "{b0}", "score": "high"}]}\n',
            "line 1: results[0].score must be a finite number",
        ),
        (b'{"query_id": "Q-000", "results": [\n', "line 1: invalid JSON"),
        (
            b"OTHER-1 Q0 {b0} 1 2.0 s\n",
            "none of the run's 1 query ids are triples of gold version v1",
        ),
    ],
)
def test_bad_uploads_are_rejected_with_line_numbers_and_create_no_job(
    version, admin_user, data, message
):
    data = data.replace(b"{b0}", version.blocks[0].encode())
    with pytest.raises(RunRejected) as rejected:
        create(version, data, admin_user)
    assert any(message in e for e in rejected.value.errors), rejected.value.errors
    assert not ScoringJob.objects.exists()


def test_a_run_for_another_version_names_the_version_it_belongs_to(version, admin_user):
    bv = make_gold_corpus(1)[0]
    other = store_frozen_version(rows=[gold_row_for(bv, triple_id="ONLY-IN-V2")], actor=admin_user)
    with pytest.raises(RunRejected) as rejected:
        create(version, f"ONLY-IN-V2 Q0 {bv.block.block_id} 1 1.0 s\n".encode(), admin_user)
    assert "was the run made for another version? (they belong to v2)" in rejected.value.errors[0]
    assert other.number == 2


def test_results_equal_the_scoring_cli_on_the_same_files(
    version, admin_user, tmp_path, django_capture_on_commit_callbacks
):
    data = trec_run(version, skip={"Q-004"}, wrong_first={"Q-001", "Q-007"})
    with django_capture_on_commit_callbacks(execute=True):
        job = create(version, data, admin_user, resamples=2000)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.progress == 100, job.error
    assert set(job.stage_timings) >= {
        "load run",
        "load gold version",
        "evaluate",
        "bootstrap",
        "store",
    }
    (tmp_path / "gold.jsonl").write_bytes(version.files.get(format="gold_jsonl").chunks.get().data)
    (tmp_path / "run.trec").write_bytes(data)
    (tmp_path / "strata.csv").write_bytes(strata_csv(job))
    assert job.summary["ci_strata"]["by"] == ["domain", "task_type"]
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "scoring",
            "retrieval",
            "--qrels",
            str(tmp_path / "gold.jsonl"),
            "--run",
            str(tmp_path / "run.trec"),
            "--all-queries",
            "--per-query",
            "--ci",
            "--strata",
            str(tmp_path / "strata.csv"),
            "--resamples",
            "2000",
            "--seed",
            "8821",
            "--k",
            "10",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads(cli.stdout)
    stored = {a.metric: a for a in ScoreAggregate.objects.filter(job=job, stratum="all")}
    assert {m: a.value for m, a in stored.items()} == expected["aggregate"]
    assert {m: [a.ci_low, a.ci_high] for m, a in stored.items()} == expected["ci"]
    per_query = {r.query_id: r.metrics for r in ScoreQueryResult.objects.filter(job=job)}
    assert per_query == expected["per_query"]
    assert per_query["Q-004"]["recall@10"] == 0.0 and per_query["Q-001"]["mrr@10"] == 0.5
    worst = ScoreQueryResult.objects.get(job=job, query_id="Q-004")
    assert worst.retrieved == []
    assert ScoreQueryResult.objects.get(job=job, query_id="Q-001").retrieved[:2] == [
        version.blocks[2],
        version.blocks[1],
    ]
    domains = {a.stratum for a in ScoreAggregate.objects.filter(job=job).exclude(stratum="all")}
    assert domains == {"domain:federal_it", "domain:supply_chain", "task_type:factual_qa"}


def test_a_redelivered_task_does_not_duplicate_results(
    version, admin_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = create(version, trec_run(version), admin_user, resamples=500)
    before = ScoreQueryResult.objects.filter(job=job).count()
    again = run_scoring_job(job_id=job.pk, worker="late@host")
    assert again.status == JobStatus.SUCCEEDED and again.attempts == 1
    assert ScoreQueryResult.objects.filter(job=job).count() == before == 12
    assert ScoreAggregate.objects.filter(job=job, stratum="all").count() == 6


def test_a_failed_job_shows_the_reason_and_can_be_retried(
    version, admin_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        job = create(version, trec_run(version), admin_user, resamples=500)
    # The stored run is corrupted behind the service's back: the job fails with the reason.
    job.run_chunks.update(data=b"Q-000 Q0 x 1 1.0 s\n")
    failed = run_scoring_job(job_id=job.pk, worker="w1@host")
    assert failed.status == JobStatus.FAILED and "does not match its sha256" in failed.error
    with pytest.raises(GoldsetError, match="only a failed job"):
        retry_scoring_job(
            job=ScoringJob.objects.create(
                version=version,
                name="x",
                kind="retrieval",
                run_format="trec",
                run_filename="x",
                run_sha256="x",
                run_size=0,
            ),
            actor=admin_user,
        )
    job.run_chunks.all().delete()
    from goldset.models import ScoringRunChunk

    ScoringRunChunk.objects.create(job=job, index=0, data=trec_run(version))
    with django_capture_on_commit_callbacks(execute=True):
        retry_scoring_job(job=job, actor=admin_user)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2 and job.error == ""


def test_orphaned_running_jobs_are_requeued_once(
    version, admin_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        job = create(version, trec_run(version), admin_user, resamples=500)
    ScoringJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, worker="dead@host", attempts=1
    )
    assert recover_orphaned_jobs(alive_workers={"dead@host"}) == []
    assert recover_orphaned_jobs(alive_workers={"other@host"}) == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2
    assert recover_orphaned_jobs(alive_workers=set()) == []


def test_default_resamples_shrink_only_for_very_large_runs():
    assert default_resamples(5000) == 10_000
    assert default_resamples(100_000) == 500
