"""An import whose database connection is terminated mid-task (a failover, an admin's
pg_terminate_backend), while validating or inside its write transaction, is requeued like a
scoring job (the handler reconnects first, the attempt is counted) and imported exactly once;
one that loses its connection on every attempt fails with a message after JOB_MAX_ATTEMPTS,
with nothing stored and its file kept, so it can be retried."""

import json

import psycopg
import pytest
from django.core.files.base import ContentFile
from django.db import connection, transaction

from goldset.imports.storage import path_of
from goldset.models import Document, ImportJob, ImportStatus, OutboxMessage, ScoringJob
from goldset.rules.jobs import import_dedupe_key
from goldset.services import import_jobs, scoring_jobs
from goldset.services.freeze import store_frozen_version
from goldset.services.import_jobs import retry_import_job, run_import_job, submit_import
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DomainFactory,
    default_project,
    gold_row_for,
)
from workbench.models import AuditEvent

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def manifest(n: int) -> bytes:
    return "".join(
        json.dumps(
            {
                "document_id": f"cut-{i}",
                "title": f"Document {i}",
                "domain": "federal_it",
                "authority": 0.5,
                "blocks": [{"block_id": f"cut-blk-{i}", "versions": [{"text": f"text {i}"}]}],
            }
        )
        + "\n"
        for i in range(n)
    ).encode()


def terminate(pid: int) -> None:
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        dbname=db["NAME"],
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def submitted(data: bytes, actor):
    with transaction.atomic():  # queued, not run at commit: each test runs it below
        job = submit_import(
            project=default_project(),
            kind="corpus",
            upload=ContentFile(data, name="cut.jsonl"),
            actor=actor,
        ).job
        OutboxMessage.objects.filter(dedupe_key=import_dedupe_key(job.pk)).delete()
    return job


def cut_connection_at(monkeypatch, stage: str, *, times: int) -> list:
    """Terminate the import's own database connection the first ``times`` times an attempt
    reports ``stage``; returns the list of attempts cut."""
    real_writer = import_jobs._progress_writer
    cuts: list[int] = []

    def writer(job_id, attempt, *relay):
        write = real_writer(job_id, attempt, *relay)

        def progress(reached, percent):
            if reached == stage and len(cuts) < times and attempt not in cuts:
                cuts.append(attempt)
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    terminate(cursor.fetchone()[0])
            write(reached, percent)

        return progress

    monkeypatch.setattr(import_jobs, "_progress_writer", writer)
    return cuts


def verbs(job) -> list[str]:
    return list(
        AuditEvent.objects.filter(object_id=str(job.pk), verb__startswith="import_")
        .order_by("id")
        .values_list("verb", flat=True)
    )


@pytest.mark.parametrize("stage", ["validating", "writing"])
def test_a_connection_terminated_mid_import_requeues_it_and_it_is_imported_once(
    stage, postgres, admin_user, monkeypatch
):
    DomainFactory(slug="federal_it")
    job = submitted(manifest(5000), admin_user)
    cuts = cut_connection_at(monkeypatch, stage, times=1)
    run_import_job(job_id=job.pk)  # nothing escapes; the requeued attempt runs at commit (eager)
    if ImportJob.objects.get(pk=job.pk).status == ImportStatus.QUEUED:
        run_import_job(job_id=job.pk)  # as the relayed message would on a real worker
    ended = ImportJob.objects.get(pk=job.pk)
    assert cuts == [1]
    assert ended.status == ImportStatus.SUCCEEDED and ended.attempts == 2
    assert "lost its database connection" in ended.message, ended.message
    assert Document.objects.count() == 5000
    assert verbs(job).count("import_requeued") == 1
    assert verbs(job).count("import_succeeded") == 1
    assert not any(v in ("import_failed", "import_rejected") for v in verbs(job))


def test_an_import_losing_its_connection_on_every_attempt_fails_with_a_message(
    postgres, admin_user, monkeypatch, settings
):
    settings.JOB_MAX_ATTEMPTS = 3
    DomainFactory(slug="federal_it")
    data = manifest(3000)
    job = submitted(data, admin_user)
    stored = path_of(job.file_name)
    cuts = cut_connection_at(monkeypatch, "validating", times=99)
    for _ in range(3):
        if ImportJob.objects.get(pk=job.pk).status == ImportStatus.QUEUED:
            run_import_job(job_id=job.pk)
    ended = ImportJob.objects.get(pk=job.pk)
    assert cuts == [1, 2, 3]
    assert ended.status == ImportStatus.FAILED and ended.attempts == 3
    assert "lost its database connection" in ended.message
    assert "All 3 attempts are used" in ended.message, ended.message
    assert Document.objects.count() == 0
    assert verbs(job).count("import_requeued") == 2 and verbs(job).count("import_failed") == 1
    assert stored.exists() and ended.file_name  # kept for a retry
    monkeypatch.undo()
    retry_import_job(job=ended, actor=admin_user)
    if ImportJob.objects.get(pk=job.pk).status == ImportStatus.QUEUED:
        run_import_job(job_id=job.pk)
    again = ImportJob.objects.get(pk=job.pk)
    assert again.status == ImportStatus.SUCCEEDED and again.attempts == 4
    assert Document.objects.count() == 3000 and not stored.exists()


def test_a_connection_terminated_while_a_run_is_stored_by_copy_requeues_the_import(
    postgres, admin_user, monkeypatch
):
    """The store stage of a run is a binary COPY on psycopg's own cursor: its error is
    psycopg's, not Django's wrapper, and the job failed although attempts remained. It is a
    lost connection like any other now: requeued, then imported once."""
    domain = DomainFactory(slug="federal_it")
    version = BlockVersionFactory(block=BlockFactory(block_id="blk-1", document__domain=domain))
    store_frozen_version(rows=[gold_row_for(version, triple_id="Q-0")], actor=admin_user)
    with transaction.atomic():
        job = submit_import(
            project=default_project(),
            kind="run",
            upload=ContentFile(b"Q-0 Q0 blk-1 1 0.9 sys\n", name="cut.trec"),
            actor=admin_user,
            options={"version": 1, "name": "cut", "k": 10},
        ).job
        OutboxMessage.objects.filter(dedupe_key=import_dedupe_key(job.pk)).delete()
    real_store = scoring_jobs.store_run_chunks
    cuts: list[int] = []

    def store(scoring_job, path):
        if not cuts:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                cuts.append(cursor.fetchone()[0])
            terminate(cuts[0])
        return real_store(scoring_job, path)

    monkeypatch.setattr(scoring_jobs, "store_run_chunks", store)
    run_import_job(job_id=job.pk)  # nothing escapes; the requeued attempt runs at commit (eager)
    if ImportJob.objects.get(pk=job.pk).status == ImportStatus.QUEUED:
        run_import_job(job_id=job.pk)  # as the relayed message would on a real worker
    ended = ImportJob.objects.get(pk=job.pk)
    assert len(cuts) == 1
    assert ended.status == ImportStatus.SUCCEEDED and ended.attempts == 2, ended.message
    assert "lost its database connection" in ended.message and "AdminShutdown" in ended.message
    assert ScoringJob.objects.count() == 1
    assert verbs(job).count("import_requeued") == 1 and "import_failed" not in verbs(job)
