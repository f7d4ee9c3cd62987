"""A large retrieval job split into pieces (goldset.services.scoring_chunks) gives exactly the
figures of the same job scored in one process: per-query rows, aggregates, breakdowns and the
bootstrap intervals. In-process here (the job's worker does every piece); the two-worker run is
in tests/goldset/worker/test_scoring_split_worker.py."""

import pytest
from django.urls import reverse

from goldset.models import JobStatus, ScoreAggregate, ScoreQueryResult, ScoringChunk
from goldset.services import scoring_chunks
from goldset.services.scoring_jobs import create_scoring_job, run_scoring_job
from tests.goldset.worker.test_scoring_jobs_worker import big_version, run_bytes

pytestmark = pytest.mark.django_db


def figures(job):
    aggregates = {
        (a.stratum, a.metric): (a.value, a.ci_low, a.ci_high, a.n)
        for a in ScoreAggregate.objects.filter(job=job)
    }
    rows = {
        r.query_id: (r.metrics, r.retrieved, r.primary, r.domain, r.task_type)
        for r in ScoreQueryResult.objects.filter(job=job)
    }
    return aggregates, rows


def test_a_split_job_has_exactly_the_figures_of_the_same_job_in_one_process(
    admin_user, settings, client_for
):
    version = big_version(700, 90, admin_user)
    data = run_bytes(650, 90)  # 50 gold queries without any run row
    single = create_scoring_job(
        version=version,
        name="one",
        data=data,
        filename="run.trec",
        actor=admin_user,
        resamples=300,
    )
    run_scoring_job(job_id=single.pk, worker="w1@host")

    settings.SCORING_SPLIT_MIN_QUERIES, settings.SCORING_CHUNK_QUERIES = 500, 160
    assert scoring_chunks.should_split(n_queries=700)
    split = create_scoring_job(
        version=version,
        name="split",
        data=data + b"\n",
        filename="run2.trec",
        actor=admin_user,
        resamples=300,
    )
    split = run_scoring_job(job_id=split.pk, worker="w1@host")
    single.refresh_from_db()
    assert single.status == split.status == JobStatus.SUCCEEDED, (single.error, split.error)
    assert "split" not in single.summary
    assert split.summary["split"]["pieces"] == {"evaluate": 5, "bootstrap": 6}
    assert split.summary["split"]["workers"] == ["w1@host"]
    assert figures(split) == figures(single)
    assert split.summary["ci"] == single.summary["ci"]
    assert split.summary["aggregate"] == single.summary["aggregate"]
    assert not ScoringChunk.objects.filter(job=split).exists()  # the pieces' inputs are dropped
    page = client_for(admin_user).get(reverse("exports:job", args=[split.pk])).content.decode()
    assert "5 pieces of per-query measures and 6 bootstrap intervals, done by w1@host" in page


def test_a_piece_that_fails_fails_the_job_with_its_message(admin_user, settings, monkeypatch):
    version = big_version(300, 40, admin_user)
    settings.SCORING_SPLIT_MIN_QUERIES, settings.SCORING_CHUNK_QUERIES = 100, 100
    job = create_scoring_job(
        version=version,
        name="x",
        data=run_bytes(300, 40),
        filename="run.trec",
        actor=admin_user,
        resamples=100,
    )

    def broken(chunk):
        raise MemoryError("piece too large for this worker")

    monkeypatch.setitem(scoring_chunks.PIECES, "bootstrap", broken)
    job = run_scoring_job(job_id=job.pk, worker="w1@host")
    assert job.status == JobStatus.FAILED
    assert "MemoryError: piece too large for this worker" in job.error
    assert not ScoringChunk.objects.filter(job=job).exists()


def test_a_piece_held_by_a_lost_worker_is_taken_back_and_one_of_an_old_attempt_is_not(
    admin_user, settings
):
    version = big_version(300, 40, admin_user)
    settings.SCORING_SPLIT_MIN_QUERIES, settings.SCORING_CHUNK_QUERIES = 100, 100
    job = create_scoring_job(
        version=version,
        name="x",
        data=run_bytes(300, 40),
        filename="run.trec",
        actor=admin_user,
        resamples=100,
    )
    job.status, job.claim, job.worker = JobStatus.RUNNING, "attempt-1", "w1@host"
    job.save()
    ScoringChunk.objects.create(
        job=job,
        claim="attempt-1",
        kind="evaluate",
        index=0,
        inputs=b"",
        status="running",
        worker="gone@host",
        heartbeat_at="2020-01-01T00:00:00Z",
    )
    ScoringChunk.objects.create(
        job=job, claim="attempt-0", kind="evaluate", index=1, inputs=b"", status="queued"
    )
    taken = scoring_chunks._claim_piece(
        job_id=job.pk, claim="attempt-1", kind="evaluate", index=None, worker="w2@host"
    )
    assert taken is not None and taken.index == 0 and taken.worker == "w2@host"
    assert (
        scoring_chunks._claim_piece(
            job_id=job.pk, claim="attempt-0", kind="evaluate", index=None, worker="w2@host"
        )
        is None
    ), "a piece of an attempt that no longer holds the job is never done"
