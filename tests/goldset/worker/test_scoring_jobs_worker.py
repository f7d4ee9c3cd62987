"""Scoring through a real Celery worker on Redis, and surviving a SIGKILLed worker."""

import json
import os
import subprocess
import sys

import pytest
from django.db import connection

from goldset.models import (
    Block,
    BlockVersion,
    Document,
    Domain,
    JobStatus,
    ScoreAggregate,
    ScoreQueryResult,
    ScoringJob,
    default_project_id,
)
from goldset.services.freeze import store_frozen_version
from goldset.services.scoring_jobs import create_scoring_job, strata_csv
from tests.conftest import ROOT, _stop
from tests.factories import default_project
from tests.waiting import wait_until
from workbench.celery import app

pytestmark = pytest.mark.worker


def big_version(n_queries, n_blocks, admin_user):
    domain = Domain.objects.create(
        project_id=default_project_id(), slug="supply_chain", name="Supply chain"
    )
    doc = Document.objects.create(
        project_id=domain.project_id,
        document_id="doc-big",
        title="Big",
        domain=domain,
        authority="0.9",
    )
    blocks = Block.objects.bulk_create(
        Block(project_id=doc.project_id, block_id=f"b{i:05d}", document=doc, position=i)
        for i in range(n_blocks)
    )
    BlockVersion.objects.bulk_create(
        BlockVersion(block=b, version=1, text=f"text {b.block_id}", sha256=f"{i:064x}")
        for i, b in enumerate(blocks)
    )
    rows = (
        {
            "id": f"q{i:06d}",
            "question": f"question {i}",
            "expected_block": {
                "block_id": f"b{i % n_blocks:05d}",
                "document_id": "doc-big",
                "version": 1,
                "page_range": None,
                "sha256": f"{i % n_blocks:064x}",
            },
            "expected_answer": "a",
            "metadata": {
                "domain": "supply_chain",
                "task_type": "retrieval",
                "tier": "tier_a",
                "source": "synthetic_human_verified",
            },
        }
        for i in range(n_queries)
    )
    return store_frozen_version(project=default_project(), rows=rows, actor=admin_user)


def run_bytes(n_queries, n_blocks):
    lines = []
    for i in range(n_queries):
        for r in range(10):
            block = (i + r * (1 + i % 3)) % n_blocks
            lines.append(f"q{i:06d} Q0 b{block:05d} {r + 1} {20 - r - (i % 7) / 10:.2f} sys")
    return ("\n".join(lines) + "\n").encode()


def cli_result(tmp_path, job, data):
    gold = b"".join(
        bytes(c.data) for c in job.version.files.get(format="gold_jsonl").chunks.order_by("index")
    )
    (tmp_path / "gold.jsonl").write_bytes(gold)
    (tmp_path / "run.trec").write_bytes(data)
    strata = tmp_path / "strata.csv"
    strata.write_bytes(strata_csv(job))
    out = subprocess.run(
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
            "--ci",
            "--strata",
            str(strata),
            "--resamples",
            str(job.resamples),
            "--seed",
            str(job.seed),
            "--per-query",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def assert_equals_cli(job, expected):
    stored = {a.metric: a for a in ScoreAggregate.objects.filter(job=job, stratum="all")}
    assert {m: a.value for m, a in stored.items()} == expected["aggregate"]
    assert {m: [a.ci_low, a.ci_high] for m, a in stored.items()} == expected["ci"]
    assert {r.query_id: r.metrics for r in ScoreQueryResult.objects.filter(job=job)} == expected[
        "per_query"
    ]


def test_a_real_worker_scores_an_upload_with_progress_and_results_equal_to_the_cli(
    celery_worker_process, admin_user, tmp_path
):
    version = big_version(300, 120, admin_user)
    data = run_bytes(300, 120)
    job = create_scoring_job(
        version=version,
        name="bm25",
        data=data,
        filename="run.trec",
        actor=admin_user,
        resamples=1000,
    )
    seen_progress = set()

    def done():
        current = ScoringJob.objects.get(pk=job.pk)
        seen_progress.add(current.progress)
        return current.finished

    wait_until(done, timeout=90, what="the worker to finish the job")
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.progress == 100 and job.attempts == 1 and job.worker.startswith("test-")
    assert 100 in seen_progress
    assert_equals_cli(job, cli_result(tmp_path, job, data))


def test_a_job_on_a_sigkilled_worker_completes_once_on_a_new_worker(
    celery_worker_process, start_worker, admin_user, tmp_path, forget_unacked_messages
):
    n_queries, n_blocks = 6000, 1500
    version = big_version(n_queries, n_blocks, admin_user)
    data = run_bytes(n_queries, n_blocks)
    job = create_scoring_job(
        version=version,
        name="slow",
        data=data,
        filename="run.trec",
        actor=admin_user,
        resamples=10_000,
    )
    wait_until(
        lambda: ScoringJob.objects.filter(
            pk=job.pk, status=JobStatus.RUNNING, stage="bootstrap"
        ).exists(),
        timeout=90,
        what="the first worker to reach the bootstrap stage",
    )
    celery_worker_process.kill()  # SIGKILL: no chance to clean up or requeue
    celery_worker_process.wait(timeout=20)
    first = ScoringJob.objects.get(pk=job.pk)
    assert first.status == JobStatus.RUNNING and first.attempts == 1

    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "SECRET_KEY": "worker-test-secret",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        # The lost job is recognised by its heartbeat's age; a short window keeps the test fast.
        "JOB_STALE_SECONDS": "5",
        "RECONCILE_INTERVAL_SECONDS": "2",
    }
    start_worker(env, "second@%h")
    # Celery beat runs the reconciler, as in docker-compose.yml.
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "workbench", "beat"]
        + ["-s", str(tmp_path / "beat-schedule"), "--loglevel=INFO"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(
            lambda: ScoringJob.objects.get(pk=job.pk).finished,
            timeout=240,
            what="the second worker to finish",
        )
    finally:
        _stop(beat)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.attempts == 2 and job.worker.startswith("second@")
    assert ScoreQueryResult.objects.filter(job=job).count() == n_queries
    assert ScoreAggregate.objects.filter(job=job, stratum="all").count() == 6
    assert_equals_cli(job, cli_result(tmp_path, job, data))


@pytest.fixture
def forget_unacked_messages():
    """The killed worker's message stays unacked in Redis (db of this suite) until the broker's
    visibility timeout; drop it so it cannot reach a later test's database."""
    yield
    if os.environ.get("REDIS_URL"):
        with app.connection_for_write() as conn:
            conn.default_channel.client.flushdb()
