"""Import jobs always end: the reconciler requeues an import whose worker was lost (stale
heartbeat), fails it with a message once its attempts are used, re-sends a queued import whose
message is gone, and an attempt that was taken over cannot record its result."""

import datetime as dt
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from goldset.models import Document, ImportJob, ImportStatus, OutboxMessage
from goldset.rules.jobs import IMPORT_OUTBOX_KIND, import_dedupe_key
from goldset.services.import_jobs import reconcile_imports, run_import_job, submit_import
from tests.clock import stop_the_clock
from tests.factories import DomainFactory, default_project

pytestmark = pytest.mark.django_db


def corpus_upload(n=2):
    lines = "".join(
        json.dumps(
            {
                "document_id": f"doc-r{i}",
                "title": f"Doc {i}",
                "domain": "federal_it",
                "authority": 0.5,
                "blocks": [{"block_id": f"blk-r{i}", "versions": [{"text": f"t {i}"}]}],
            }
        )
        + "\n"
        for i in range(n)
    )
    return SimpleUploadedFile("m.jsonl", lines.encode())


@pytest.fixture
def queued(admin_user, django_capture_on_commit_callbacks):
    DomainFactory(slug="federal_it")
    with django_capture_on_commit_callbacks(execute=False):
        return submit_import(
            project=default_project(), kind="corpus", upload=corpus_upload(), actor=admin_user
        ).job


def ago(seconds):
    return timezone.now() - dt.timedelta(seconds=seconds)


def lose_worker(job, *, attempts, heartbeat_age):
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportStatus.RUNNING,
        worker="w1@host",
        attempts=attempts,
        heartbeat_at=ago(heartbeat_age),
    )


def test_a_lost_import_is_requeued_and_then_imports_once(queued, settings):
    settings.JOB_STALE_SECONDS = 60
    lose_worker(queued, attempts=1, heartbeat_age=30)
    assert reconcile_imports()["requeued"] == []  # a fresh heartbeat: still working
    lose_worker(queued, attempts=1, heartbeat_age=300)
    OutboxMessage.objects.all().delete()
    summary = reconcile_imports()
    queued.refresh_from_db()
    assert summary["requeued"] == [queued.pk] and queued.status == ImportStatus.QUEUED
    assert "w1@host was lost" in queued.message
    assert OutboxMessage.objects.filter(
        kind=IMPORT_OUTBOX_KIND, dedupe_key=import_dedupe_key(queued.pk), done_at__isnull=True
    ).exists()
    job = run_import_job(job_id=queued.pk)
    assert job.status == ImportStatus.SUCCEEDED and job.attempts == 2
    assert Document.objects.count() == 2


def test_an_import_that_used_its_attempts_fails_with_a_message(queued, settings):
    settings.JOB_STALE_SECONDS = 60
    settings.JOB_MAX_ATTEMPTS = 3
    lose_worker(queued, attempts=3, heartbeat_age=300)
    assert reconcile_imports()["failed"] == [queued.pk]
    queued.refresh_from_db()
    assert queued.status == ImportStatus.FAILED
    assert "All 3 attempts are used" in queued.message and queued.finished_at is not None
    assert Document.objects.count() == 0


def test_a_queued_import_whose_message_is_gone_is_sent_again(queued, settings):
    settings.OUTBOX_REDISPATCH_SECONDS = 30
    OutboxMessage.objects.all().delete()  # the broker lost it, and the outbox row is done
    assert reconcile_imports()["redispatched"] == []  # not waiting long enough yet
    ImportJob.objects.filter(pk=queued.pk).update(created_at=ago(120))
    assert reconcile_imports()["redispatched"] == [queued.pk]
    assert OutboxMessage.objects.filter(dedupe_key=import_dedupe_key(queued.pk)).count() == 1
    assert reconcile_imports()["redispatched"] == []  # its message is open: nothing to send


def test_an_attempt_that_was_taken_over_stores_nothing(queued, monkeypatch):
    from goldset.services import import_jobs

    real_claim = import_jobs._claim

    def claim_then_lose_it(job_id, worker):
        job = real_claim(job_id, worker)
        # the reconciler gives this attempt up and a second attempt starts meanwhile
        ImportJob.objects.filter(pk=job_id).update(attempts=job.attempts + 1)
        return job

    monkeypatch.setattr(import_jobs, "_claim", claim_then_lose_it)
    run_import_job(job_id=queued.pk)
    queued.refresh_from_db()
    assert queued.status == ImportStatus.RUNNING  # left to the attempt that holds it
    assert Document.objects.count() == 0


def test_the_job_page_shows_the_heartbeat_and_says_when_a_worker_was_lost(
    queued, settings, client_for, admin_user, monkeypatch
):
    settings.JOB_STALE_SECONDS = 60
    stop_the_clock(monkeypatch)  # the page prints the age the test set, however slow it renders
    client = client_for(admin_user)
    url = reverse("imports:job", args=[queued.pk])
    lose_worker(queued, attempts=1, heartbeat_age=12)
    page = client.get(url).content.decode()
    assert "Last heartbeat 12 s ago from w1@host" in page and "presumed lost" not in page
    lose_worker(queued, attempts=1, heartbeat_age=300)
    assert "presumed lost" in client.get(url, headers={"HX-Request": "true"}).content.decode()
    reconcile_imports()
    # Requeued, then claimed by another worker: the page still says what happened.
    ImportJob.objects.filter(pk=queued.pk).update(
        status=ImportStatus.RUNNING, worker="w2@host", attempts=2, heartbeat_at=ago(1)
    )
    fragment = client.get(
        url, headers={"HX-Request": "true", "HX-Target": "import-progress"}
    ).content.decode()
    assert "Attempt 1 on worker w1@host was lost" in fragment
    assert "Requeued by the reconciler" in fragment and "from w2@host" in fragment
