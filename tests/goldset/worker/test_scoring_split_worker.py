"""Scoring spread over workers: two real Celery worker processes on Redis share the pieces of a
large job, and the merged figures equal `python -m scoring` on the same files."""

import os

import pytest
from django.db import connection

from goldset.models import JobStatus, ScoringChunk, ScoringJob
from goldset.services.scoring_jobs import create_scoring_job
from tests.conftest import _require
from tests.goldset.worker.test_scoring_jobs_worker import (
    assert_equals_cli,
    big_version,
    cli_result,
    run_bytes,
    wait_until,
)
from workbench.celery import app

pytestmark = pytest.mark.worker


@pytest.fixture
def two_split_workers(start_worker):
    """Two worker processes (solo pool each) that split jobs of 1,000+ queries in pieces of
    100 queries."""
    _require(bool(os.environ.get("REDIS_URL")), "needs REDIS_URL=redis://…")
    _require(connection.vendor == "postgresql", "the workers share the test database")
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "SECRET_KEY": "worker-test-secret",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "SCORING_SPLIT_MIN_QUERIES": "1000",
        "SCORING_CHUNK_QUERIES": "100",
    }
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        workers = [start_worker(env, "split-a@%h"), start_worker(env, "split-b@%h")]
        yield workers
    finally:
        app.conf.task_always_eager = previous


def test_two_workers_share_a_large_job_and_its_figures_equal_the_cli(
    two_split_workers, admin_user, tmp_path
):
    n_queries, n_blocks = 1500, 400
    version = big_version(n_queries, n_blocks, admin_user)
    data = run_bytes(n_queries - 100, n_blocks)  # 100 gold queries the run does not answer
    job = create_scoring_job(
        version=version,
        name="two workers",
        data=data,
        filename="run.trec",
        actor=admin_user,
        resamples=1000,
    )
    wait_until(
        lambda: ScoringJob.objects.get(pk=job.pk).finished, timeout=180, what="the split job"
    )
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    split = job.summary["split"]
    assert split["pieces"] == {"evaluate": 15, "bootstrap": 6}
    hosts = {name.split("@")[0] for name in split["workers"]}
    assert hosts == {"split-a", "split-b"}, f"both workers did pieces: {split}"
    assert not ScoringChunk.objects.filter(job=job).exists()
    assert_equals_cli(job, cli_result(tmp_path, job, data))
