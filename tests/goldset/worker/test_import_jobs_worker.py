"""An upload page's import runs in a real Celery worker on Redis and PostgreSQL: the request
returns at once with a queued job, the worker imports it, and the page then shows the result."""

import json
import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.models import Document, Domain, ImportJob, ImportStatus

pytestmark = pytest.mark.worker


def wait_until(predicate, *, timeout, what):
    pause = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        pause.wait(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_a_corpus_upload_is_imported_by_the_worker(celery_worker_process, client_for, admin_user):
    Domain.objects.create(slug="federal_it", name="Federal IT")
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

    def finished():
        job.refresh_from_db()
        return job.finished

    wait_until(finished, timeout=120, what="the import job to finish")
    assert job.status == ImportStatus.SUCCEEDED, (job.message, job.errors)
    assert job.worker.startswith(celery_worker_process.worker_name.split("@")[0])
    assert Document.objects.count() == 2500 and job.summary["documents_created"] == 2500
    page = client.get(response.url).content.decode()
    assert "documents_created" in page and "hx-trigger" not in page
