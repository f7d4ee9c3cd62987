"""Scoring jobs: whole-file validation, scoring with the library, idempotent re-delivery,
failure and retry. Tasks run in-process (eager) here; tests/goldset/worker has the real worker."""

import datetime as dt
import json
import subprocess
import sys

import pytest
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import (
    JobStatus,
    OutboxMessage,
    ReconcilerRun,
    ScoreAggregate,
    ScoreQueryResult,
    ScoringJob,
)
from goldset.services.freeze import store_frozen_version
from goldset.services.jobs import reconcile
from goldset.services.scoring_jobs import (
    RunRejected,
    cancel_scoring_job,
    create_scoring_job,
    default_resamples,
    reconcile_scoring_jobs,
    retry_scoring_job,
    run_scoring_job,
    strata_csv,
)
from tests.factories import default_project, gold_row_for, make_gold_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(12)
    rows = [gold_row_for(bv, triple_id=f"Q-{i:03d}") for i, bv in enumerate(versions)]
    frozen = store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
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
    other = store_frozen_version(
        project=default_project(), rows=[gold_row_for(bv, triple_id="ONLY-IN-V2")], actor=admin_user
    )
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
    with pytest.raises(GoldsetError, match="only a failed, cancelled or stuck job"):
        retry_scoring_job(
            job=ScoringJob.objects.create(
                project_id=version.project_id,
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


def _running(job, *, worker, seconds_ago, attempts=1):
    ScoringJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING,
        worker=worker,
        claim="old-claim",
        attempts=attempts,
        heartbeat_at=timezone.now() - dt.timedelta(seconds=seconds_ago),
    )


def test_a_running_job_without_heartbeat_is_requeued_once_by_the_reconciler_whatever_the_worker(
    version, admin_user, settings, django_capture_on_commit_callbacks
):
    settings.JOB_STALE_SECONDS = 60
    with django_capture_on_commit_callbacks(execute=False):
        job = create(version, trec_run(version), admin_user, resamples=500)
    _running(job, worker="w1@host", seconds_ago=30)
    assert reconcile_scoring_jobs()["requeued"] == []  # heartbeat within the window: alive
    _running(job, worker="w1@host", seconds_ago=61)
    with django_capture_on_commit_callbacks(execute=True):
        assert reconcile_scoring_jobs()["requeued"] == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2, job.error
    assert "Attempt 1 on worker w1@host was lost: no heartbeat since" in job.notice
    assert "Requeued by the reconciler" in job.notice
    assert reconcile_scoring_jobs() == {"requeued": [], "failed": [], "redispatched": []}


def test_a_job_lost_on_its_last_attempt_fails_with_a_message_and_can_be_retried(
    version, admin_user, settings, django_capture_on_commit_callbacks
):
    settings.JOB_STALE_SECONDS = 60
    with django_capture_on_commit_callbacks(execute=False):
        job = create(version, trec_run(version), admin_user, resamples=500)
    assert job.max_attempts == 3
    _running(job, worker="w1@host", seconds_ago=600, attempts=3)
    assert reconcile_scoring_jobs()["failed"] == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.finished_at is not None
    assert "All 3 attempts are used; retry the job" in job.error
    with django_capture_on_commit_callbacks(execute=True):
        retry_scoring_job(job=job, actor=admin_user)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 4 and job.max_attempts == 6
    assert "Retried by admin-test" in job.notice


def test_a_redelivered_task_takes_over_a_stale_job_even_under_the_same_worker_name(
    version, admin_user, settings, django_capture_on_commit_callbacks
):
    settings.JOB_STALE_SECONDS = 60
    with django_capture_on_commit_callbacks(execute=False):
        job = create(version, trec_run(version), admin_user, resamples=500)
    _running(job, worker="w1@host", seconds_ago=5)
    fresh = run_scoring_job(job_id=job.pk, worker="w1@host")
    assert fresh.status == JobStatus.RUNNING and fresh.attempts == 1  # a live attempt holds it
    _running(job, worker="w1@host", seconds_ago=120)
    done = run_scoring_job(job_id=job.pk, worker="w1@host")
    assert done.status == JobStatus.SUCCEEDED and done.attempts == 2
    assert "Taken over by w1@host" in done.notice
    assert ScoreQueryResult.objects.filter(job=job).count() == 12


def test_a_cancelled_attempt_stops_and_writes_nothing_and_the_job_can_be_retried(
    version, admin_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        job = create(version, trec_run(version), admin_user, resamples=500)
    _running(job, worker="w1@host", seconds_ago=1)
    cancelled = cancel_scoring_job(job=job, actor=admin_user)
    assert cancelled.status == JobStatus.CANCELLED and cancelled.finished
    assert "Cancelled by admin-test" in cancelled.notice
    with pytest.raises(GoldsetError, match="already cancelled"):
        cancel_scoring_job(job=job, actor=admin_user)
    # The old attempt's next progress write finds its claim gone and stops.
    from goldset.services.scoring_jobs import JobAbandoned, _Progress

    with pytest.raises(JobAbandoned):
        _Progress(job.pk, "old-claim").step(50)
    assert not ScoreQueryResult.objects.filter(job=job).exists()
    with django_capture_on_commit_callbacks(execute=True):
        retry_scoring_job(job=job, actor=admin_user)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error


def test_a_live_running_job_cannot_be_retried_but_a_stuck_one_can(
    version, admin_user, settings, django_capture_on_commit_callbacks
):
    settings.JOB_STALE_SECONDS = 60
    with django_capture_on_commit_callbacks(execute=False):
        job = create(version, trec_run(version), admin_user, resamples=500)
    _running(job, worker="w1@host", seconds_ago=5)
    with pytest.raises(GoldsetError, match="its worker is alive"):
        retry_scoring_job(job=job, actor=admin_user)
    _running(job, worker="w1@host", seconds_ago=90)
    with django_capture_on_commit_callbacks(execute=True):
        retry_scoring_job(job=job, actor=admin_user)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2


def test_a_queued_job_whose_message_is_gone_is_dispatched_again(
    version, admin_user, settings, django_capture_on_commit_callbacks
):
    settings.OUTBOX_REDISPATCH_SECONDS = 60
    with django_capture_on_commit_callbacks(execute=False):
        job = create(version, trec_run(version), admin_user, resamples=500)
    # The message was published, then lost by the broker (Redis restarted without persistence).
    message = OutboxMessage.objects.get(kind="scoring.run")
    long_ago = timezone.now() - dt.timedelta(seconds=300)
    OutboxMessage.objects.filter(pk=message.pk).update(
        dispatched_at=long_ago, available_at=long_ago, created_at=long_ago
    )
    ScoringJob.objects.filter(pk=job.pk).update(queued_at=long_ago)
    with django_capture_on_commit_callbacks(execute=True):
        summary = reconcile()
    assert summary["outbox"]["lost_messages"] == 1 and summary["outbox"]["published"] == 1
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 1
    # A queued job with no message at all (dispatch failed after commit) is dispatched too.
    with django_capture_on_commit_callbacks(execute=False):
        other = create(version, trec_run(version, skip={"Q-001"}), admin_user, resamples=500)
    OutboxMessage.objects.filter(dedupe_key=f"scoring-job:{other.pk}").update(
        started_at=long_ago, done_at=long_ago
    )
    ScoringJob.objects.filter(pk=other.pk).update(queued_at=long_ago)
    with django_capture_on_commit_callbacks(execute=True):
        assert reconcile()["scoring"]["redispatched"] == [other.pk]
    other.refresh_from_db()
    assert other.status == JobStatus.SUCCEEDED
    assert ReconcilerRun.objects.get().finished_at is not None


def test_the_same_run_uploaded_twice_gives_the_same_job(
    version, admin_user, django_capture_on_commit_callbacks
):
    data = trec_run(version)
    with django_capture_on_commit_callbacks(execute=False):
        first = create(version, data, admin_user)
        second = create(version, data, admin_user)
    assert first.reused is False and second.reused is True and second.pk == first.pk
    assert ScoringJob.objects.count() == 1
    with django_capture_on_commit_callbacks(execute=False):
        other_k = create(version, data, admin_user, k=5)
    assert other_k.pk != first.pk
    ScoringJob.objects.filter(pk=first.pk).update(status=JobStatus.FAILED)
    with django_capture_on_commit_callbacks(execute=False):
        after_failure = create(version, data, admin_user)
    assert after_failure.pk not in (first.pk, other_k.pk)


def test_default_resamples_shrink_only_for_very_large_runs():
    assert default_resamples(5000) == 10_000
    assert default_resamples(100_000) == 500
