"""An import whose database connection is terminated mid-task (a failover, an admin's
pg_terminate_backend), while validating or inside its write transaction, ends once, failed with a message, with nothing of it stored and its file
deleted; the same file submitted again is imported (the error handler reconnects first)."""

import json

import psycopg
import pytest
from django.core.files.base import ContentFile
from django.db import connection, transaction

from goldset.imports.storage import path_of
from goldset.models import Document, ImportJob, ImportStatus, OutboxMessage
from goldset.rules.jobs import import_dedupe_key
from goldset.services import import_jobs
from goldset.services.import_jobs import run_import_job, submit_import
from tests.factories import DomainFactory

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


@pytest.mark.parametrize("stage", ["validating", "writing"])
def test_a_connection_terminated_mid_import_fails_it_once_and_stores_nothing(
    stage, postgres, admin_user, monkeypatch
):
    DomainFactory(slug="federal_it")
    data = manifest(5000)
    with transaction.atomic():  # queued, not run at commit: this test runs it below
        job = submit_import(
            kind="corpus", upload=ContentFile(data, name="cut.jsonl"), actor=admin_user
        ).job
        OutboxMessage.objects.filter(dedupe_key=import_dedupe_key(job.pk)).delete()
    stored = path_of(job.file_name)
    real_writer = import_jobs._progress_writer

    cut_at = stage

    def writer(job_id):
        write = real_writer(job_id)
        cut = []

        def progress(stage, percent):
            if stage == cut_at and not cut:
                cut.append(True)
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    terminate(cursor.fetchone()[0])
            write(stage, percent)

        return progress

    monkeypatch.setattr(import_jobs, "_progress_writer", writer)
    ended = run_import_job(job_id=job.pk)  # nothing escapes
    assert ended.status == ImportStatus.FAILED and ended.attempts == 1
    assert "connection" in ended.message.lower(), ended.message
    assert Document.objects.count() == 0 and not stored.exists()
    monkeypatch.setattr(import_jobs, "_progress_writer", real_writer)
    again = submit_import(kind="corpus", upload=ContentFile(data, name="cut.jsonl"), actor=None)
    assert again.job.pk == job.pk and "checked again" in again.message
    assert ImportJob.objects.get(pk=job.pk).status == ImportStatus.SUCCEEDED
    assert Document.objects.count() == 5000
