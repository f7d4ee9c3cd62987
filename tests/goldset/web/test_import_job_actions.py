"""Import jobs can be cancelled and retried by the user who started them (or an admin), on the
job page (htmx and plain) and through the API, with the service the scoring jobs' pages use as
their model: a running import stops at its next batch and stores nothing; a failed or cancelled
one is retried from its kept file, or the user is told to upload it again."""

import datetime as dt
import json
import threading

import pytest
from django.core.files.base import ContentFile
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from goldset.exceptions import GoldsetError
from goldset.imports.storage import path_of
from goldset.models import Document, ImportJob, ImportStatus, OutboxMessage
from goldset.rules.jobs import import_dedupe_key
from goldset.services import import_jobs
from goldset.services.import_jobs import (
    cancel_import_job,
    reconcile_imports,
    retry_import_job,
    run_import_job,
    submit_import,
)
from tests.factories import DomainFactory, default_project
from workbench.roles import Role

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "import-progress"}


def manifest(n: int, prefix: str = "doc") -> bytes:
    return "".join(
        json.dumps(
            {
                "document_id": f"{prefix}-{i}",
                "title": f"Document {i}",
                "domain": "federal_it",
                "authority": 0.5,
                "blocks": [{"block_id": f"{prefix}-blk-{i}", "versions": [{"text": f"t {i}"}]}],
            }
        )
        + "\n"
        for i in range(n)
    ).encode()


def queued_import(actor, *, n: int = 3, prefix: str = "doc") -> ImportJob:
    """A submitted import whose message is not relayed (this test runs or acts on it)."""
    with transaction.atomic():
        job = submit_import(
            project=default_project(),
            kind="corpus",
            upload=ContentFile(manifest(n, prefix), name="c.jsonl"),
            actor=actor,
        ).job
        OutboxMessage.objects.filter(dedupe_key=import_dedupe_key(job.pk)).delete()
    return job


@pytest.fixture
def domain():
    return DomainFactory(slug="federal_it")


def failed_import(actor) -> ImportJob:
    job = queued_import(actor)
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportStatus.FAILED, message="boom", finished_at=timezone.now(), attempts=1
    )
    job.refresh_from_db()
    return job


# ---------------------------------------------------------------- who may act (page)


@pytest.mark.parametrize("action", ["imports:cancel", "imports:retry"])
def test_cancel_and_retry_answer_each_role_and_object_scope(
    action, client, client_for, annotator, lead, make_user, admin_user, domain
):
    mine = queued_import(lead) if action == "imports:cancel" else failed_import(lead)
    url = reverse(action, args=[mine.pk])
    anonymous = client.post(url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    assert client_for(annotator).post(url).status_code == 403
    assert client_for(annotator).post(url, **HTMX).status_code == 403
    other_lead = make_user(Role.LEAD)
    assert client_for(other_lead).post(url).status_code == 404
    assert client_for(other_lead).post(url, **HTMX).status_code == 404
    assert client_for(lead).get(url).status_code == 405
    assert client_for(lead).post(reverse(action, args=[mine.pk + 999])).status_code == 404
    assert ImportJob.objects.get(pk=mine.pk).status == mine.status  # nobody changed it yet
    done = client_for(lead).post(url)
    assert done.status_code == 302 and done["Location"] == reverse("imports:job", args=[mine.pk])
    expected = ImportStatus.CANCELLED if action == "imports:cancel" else ImportStatus.QUEUED
    assert ImportJob.objects.get(pk=mine.pk).status == expected


@pytest.mark.parametrize("action", ["imports:cancel", "imports:retry"])
def test_an_admin_may_act_on_anyones_import_with_htmx(action, client_for, lead, admin_user, domain):
    job = queued_import(lead) if action == "imports:cancel" else failed_import(lead)
    response = client_for(admin_user).post(reverse(action, args=[job.pk]), **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and body.lstrip().startswith('<section id="import-progress"')
    assert "<html" not in body
    if action == "imports:cancel":
        assert "The import was cancelled; nothing was imported." in body
        assert 'id="import-retry"' in body and 'id="import-cancel"' not in body
    else:
        assert "Queued" in body and "Retried by" in body and 'id="import-cancel"' in body
    assert response["Vary"] and "HX-Request" in response["Vary"]


def test_the_page_offers_cancel_while_queued_and_retry_once_cancelled(client_for, lead, domain):
    job = queued_import(lead)
    client = client_for(lead)
    page = client.get(reverse("imports:job", args=[job.pk])).content.decode()
    assert 'id="import-cancel"' in page and 'id="import-retry"' not in page
    assert f'action="{reverse("imports:cancel", args=[job.pk])}"' in page
    followed = client.post(reverse("imports:cancel", args=[job.pk]), follow=True)
    text = followed.content.decode()
    assert f"Import #{job.pk} is cancelled" in text and 'id="import-retry"' in text
    again = client.post(reverse("imports:cancel", args=[job.pk]), follow=True).content.decode()
    assert "is already cancelled" in again


def test_a_cancelled_import_whose_file_is_gone_says_to_upload_again(client_for, lead, domain):
    job = queued_import(lead)
    cancel_import_job(job=job, actor=lead)
    path_of(job.file_name).unlink()
    client = client_for(lead)
    page = client.get(reverse("imports:job", args=[job.pk])).content.decode()
    assert "no longer stored: upload the same file again" in page
    assert 'id="import-retry"' not in page
    refused = client.post(reverse("imports:retry", args=[job.pk]), **HTMX).content.decode()
    assert "is no longer stored; upload it again" in refused
    assert ImportJob.objects.get(pk=job.pk).status == ImportStatus.CANCELLED


def test_an_annotator_sees_no_buttons_on_a_job_page(client_for, annotator, domain):
    job = failed_import(annotator)  # e.g. started before their role changed
    page = client_for(annotator).get(reverse("imports:job", args=[job.pk])).content.decode()
    assert "boom" in page and 'id="import-retry"' not in page and 'id="import-cancel"' not in page


# ---------------------------------------------------------------- the API


def api_for(user) -> APIClient:
    api = APIClient()
    if user is not None:
        api.force_authenticate(user)
    return api


@pytest.mark.parametrize("name", ["api:import_cancel", "api:import_retry"])
def test_the_api_cancels_and_retries_with_each_role(
    name, annotator, lead, make_user, admin_user, domain
):
    job = queued_import(lead) if name == "api:import_cancel" else failed_import(lead)
    url = reverse(name, args=[job.pk])
    assert api_for(None).post(url).status_code == 401
    assert api_for(annotator).post(url).status_code == 403
    assert api_for(make_user(Role.LEAD)).post(url).status_code == 404
    assert api_for(lead).get(url).status_code == 405
    answer = api_for(lead).post(url)
    assert answer.status_code == 200
    expected = "cancelled" if name == "api:import_cancel" else "queued"
    assert answer.json()["status"] == expected and answer.json()["id"] == job.pk
    second = api_for(admin_user).post(url)
    if name == "api:import_cancel":
        assert second.status_code == 409 and "already cancelled" in second.json()["detail"]
    else:
        assert second.status_code == 409 and "Only a failed or cancelled" in second.json()["detail"]


def test_the_api_says_to_upload_again_when_the_file_is_gone(lead, domain):
    job = failed_import(lead)
    path_of(job.file_name).unlink()
    answer = api_for(lead).post(reverse("api:import_retry", args=[job.pk]))
    assert answer.status_code == 409 and "upload it again" in answer.json()["detail"]


# ---------------------------------------------------------------- the service


def test_a_succeeded_import_cannot_be_cancelled_or_retried(lead, domain):
    job = queued_import(lead)
    assert run_import_job(job_id=job.pk).status == ImportStatus.SUCCEEDED
    with pytest.raises(GoldsetError, match="already imported"):
        cancel_import_job(job=job, actor=lead)
    with pytest.raises(GoldsetError, match="Only a failed or cancelled import"):
        retry_import_job(job=job, actor=lead)


def test_a_cancelled_queued_import_is_not_run_by_its_message(lead, domain):
    job = queued_import(lead)
    cancel_import_job(job=job, actor=lead)
    assert run_import_job(job_id=job.pk) is None  # the late message finds nothing to claim
    assert Document.objects.count() == 0
    assert path_of(ImportJob.objects.get(pk=job.pk).file_name).exists()


def test_the_file_of_a_failed_import_is_kept_for_the_retry_window_then_deleted(
    lead, domain, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_RETRY_KEEP_SECONDS = 3600
    job = failed_import(lead)
    stored = path_of(job.file_name)
    reconcile_imports(now=timezone.now() + dt.timedelta(seconds=60))
    assert stored.exists()
    with django_capture_on_commit_callbacks(execute=True):
        reconcile_imports(now=timezone.now() + dt.timedelta(seconds=3700))
    assert not stored.exists() and ImportJob.objects.get(pk=job.pk).file_name == ""
    with pytest.raises(GoldsetError, match="upload it again"):
        retry_import_job(job=job, actor=lead)


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_cancelling_a_running_import_stops_it_at_the_next_batch_and_stores_nothing(
    postgres, lead, monkeypatch
):
    DomainFactory(slug="federal_it")
    job = queued_import(lead, n=5000)
    real_writer = import_jobs._progress_writer
    cancelled = []

    def writer(job_id, attempt, *relay):
        write = real_writer(job_id, attempt, *relay)

        def progress(stage, percent):
            if stage == "writing" and not cancelled:
                # Another request cancels while the worker is inside its write transaction.
                def other_request():
                    cancelled.append(cancel_import_job(job=job, actor=lead).status)
                    connection.close()

                thread = threading.Thread(target=other_request)
                thread.start()
                thread.join()
            write(stage, percent)

        return progress

    monkeypatch.setattr(import_jobs, "_progress_writer", writer)
    ended = run_import_job(job_id=job.pk)
    assert cancelled == [ImportStatus.CANCELLED]
    assert ended.status == ImportStatus.CANCELLED and "Cancelled by" in ended.message
    assert Document.objects.count() == 0
    assert path_of(ended.file_name).exists()
    monkeypatch.undo()
    retry_import_job(job=ended, actor=lead)
    if ImportJob.objects.get(pk=job.pk).status == ImportStatus.QUEUED:
        run_import_job(job_id=job.pk)
    again = ImportJob.objects.get(pk=job.pk)
    assert again.status == ImportStatus.SUCCEEDED and Document.objects.count() == 5000
    assert not path_of(ended.file_name).exists()
