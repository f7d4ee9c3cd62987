"""An upload page's import runs in a real Celery worker on Redis and PostgreSQL: the request
returns at once with a queued job, the worker imports it, and the page then shows the result."""

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from goldset.models import (
    Document,
    Domain,
    ImportJob,
    ImportStatus,
    OutboxMessage,
    default_project_id,
)
from goldset.rules.jobs import import_dedupe_key
from goldset.services import outbox
from goldset.services.import_jobs import reconcile_imports, submit_import
from tests.conftest import ROOT, _stop
from tests.factories import default_project
from tests.waiting import wait_until
from workbench.celery import app

pytestmark = pytest.mark.worker


def test_a_corpus_upload_is_imported_by_the_worker(
    celery_worker_process, client_for, admin_user, settings
):
    Domain.objects.create(project_id=default_project_id(), slug="federal_it", name="Federal IT")
    text = "".join(
        json.dumps(
            {
                "document_id": f"doc-{i}",
                "title": f"Document {i}",
                "domain": "federal_it",
                "authority": 0.5,
                "blocks": [{"block_id": f"blk-{i}", "versions": [{"text": f"text {i}"}]}],
            }
        )
        + "\n"
        for i in range(2500)
    )
    client = client_for(admin_user)
    response = client.post(
        reverse("corpus:import"), {"file": SimpleUploadedFile("m.jsonl", text.encode())}
    )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    path = Path(settings.IMPORT_STORAGE_DIR) / job.file_name
    assert job.file_name and job.size == len(text.encode())

    def finished():
        job.refresh_from_db()
        return job.finished

    wait_until(finished, timeout=120, what="the import job to finish")
    assert job.status == ImportStatus.SUCCEEDED, (job.message, job.errors)
    assert job.worker.startswith(celery_worker_process.worker_name.split("@")[0])
    assert Document.objects.count() == 2500 and job.summary["documents_created"] == 2500
    wait_until(lambda: not path.exists(), timeout=30, what="the stored file to be deleted")
    page = client.get(response.url).content.decode()
    # Finished: the progress card stopped polling.
    assert "documents_created" in page and "every 1s" not in page


def test_an_import_whose_message_was_lost_is_reconciled_and_the_worker_finds_its_file(
    celery_worker_process, admin_user, settings
):
    """The upload is stored and committed but its message never reaches the broker; the
    reconciler queues it again and the real worker streams the stored file, then deletes it."""
    Domain.objects.create(project_id=default_project_id(), slug="federal_it", name="Federal IT")
    text = "".join(
        json.dumps(
            {
                "document_id": f"lost-{i}",
                "title": f"Document {i}",
                "domain": "federal_it",
                "authority": 0.5,
                "blocks": [{"block_id": f"lost-blk-{i}", "versions": [{"text": f"text {i}"}]}],
            }
        )
        + "\n"
        for i in range(40)
    )
    with transaction.atomic():
        job = submit_import(
            project=default_project(),
            kind="corpus",
            upload=ContentFile(text.encode(), name="lost.jsonl"),
            actor=admin_user,
        ).job
        # The message is lost before it is published (a broker restart would do the same).
        OutboxMessage.objects.filter(dedupe_key=import_dedupe_key(job.pk)).delete()
    path = Path(settings.IMPORT_STORAGE_DIR) / job.file_name
    assert path.exists()
    ImportJob.objects.filter(pk=job.pk).update(
        created_at=timezone.now() - dt.timedelta(seconds=outbox.redispatch_seconds() + 60)
    )
    assert reconcile_imports()["redispatched"] == [job.pk]

    def finished():
        job.refresh_from_db()
        return job.finished

    wait_until(finished, timeout=120, what="the reconciled import to finish")
    assert job.status == ImportStatus.SUCCEEDED, (job.message, job.errors)
    assert Document.objects.filter(document_id__startswith="lost-").count() == 40
    wait_until(lambda: not path.exists(), timeout=30, what="the stored file to be deleted")
    assert job.file_name == ""


@pytest.fixture
def forget_unacked_messages():
    """The killed worker's message stays unacked in Redis until the broker's visibility
    timeout; drop it so it cannot reach a later test's database."""
    yield
    if os.environ.get("REDIS_URL"):
        with app.connection_for_write() as conn:
            conn.default_channel.client.flushdb()


def test_an_import_on_a_sigkilled_worker_stores_nothing_then_is_imported_once_by_another(
    celery_worker_process, start_worker, admin_user, tmp_path, forget_unacked_messages
):
    """The worker is SIGKILLed in the store stage (seen from here: the relay's progress past
    50 %): its write transaction dies with it, so nothing is stored; its heartbeat ages, the
    reconciler (beat) requeues the job and a new worker imports the whole file once."""
    Domain.objects.create(project_id=default_project_id(), slug="federal_it", name="Federal IT")
    n = 20_000
    text = "".join(
        json.dumps(
            {
                "document_id": f"kill-{i}",
                "title": f"Document {i}",
                "domain": "federal_it",
                "authority": 0.5,
                "blocks": [{"block_id": f"kill-blk-{i}", "versions": [{"text": f"text {i}"}]}],
            }
        )
        + "\n"
        for i in range(n)
    )
    job = submit_import(
        project=default_project(),
        kind="corpus",
        upload=ContentFile(text.encode(), name="kill.jsonl"),
        actor=admin_user,
    ).job
    wait_until(
        lambda: ImportJob.objects.filter(
            pk=job.pk, status=ImportStatus.RUNNING, stage="writing", progress__gt=55
        ).exists(),
        timeout=180,
        what=lambda: f"the store stage past 55 %: {ImportJob.objects.values().get(pk=job.pk)}",
    )
    celery_worker_process.kill()  # SIGKILL: no chance to clean up or requeue
    celery_worker_process.wait(timeout=20)
    first = ImportJob.objects.get(pk=job.pk)
    assert first.status == ImportStatus.RUNNING and first.attempts == 1
    assert not Document.objects.exists()  # the killed attempt's rows died with its transaction

    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "SECRET_KEY": "worker-test-secret",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        # The lost import is recognised by its heartbeat's age; a short window keeps it quick.
        "JOB_STALE_SECONDS": "5",
        "RECONCILE_INTERVAL_SECONDS": "2",
    }
    start_worker(env, "second@%h")
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
            lambda: ImportJob.objects.get(pk=job.pk).finished,
            timeout=300,
            what="the second worker to finish the import",
        )
    finally:
        _stop(beat)
    job.refresh_from_db()
    assert job.status == ImportStatus.SUCCEEDED, (job.message, job.errors)
    assert job.attempts == 2 and job.worker.startswith("second@")
    assert "was lost" in job.message, job.message
    assert Document.objects.count() == n and job.summary["documents_created"] == n
