"""Uploads wait on disk in IMPORT_STORAGE_DIR: the request renames the file Django wrote (hashed
as it arrived) and parses nothing; the worker streams it from there and it is deleted when the
job ends. The same file is the same job; a file over the cap is refused and nothing is kept;
files left behind are swept; a job whose file is gone fails with a message."""

import hashlib
import json
import os
import time

import pytest
from django.contrib.messages import get_messages
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.models import Document, ImportJob, ImportStatus
from goldset.services.import_jobs import (
    UploadRejected,
    reconcile_imports,
    run_import_job,
    submit_import,
)
from tests.factories import DomainFactory, default_project
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


def corpus_bytes(n=3, domain="federal_it") -> bytes:
    return "".join(
        json.dumps(
            {
                "document_id": f"doc-s{i}",
                "title": f"Doc {i}",
                "domain": domain,
                "authority": 0.5,
                "blocks": [{"block_id": f"blk-s{i}", "versions": [{"text": f"text {i}"}]}],
            }
        )
        + "\n"
        for i in range(n)
    ).encode()


@pytest.fixture
def storage(settings, tmp_path):
    settings.IMPORT_STORAGE_DIR = tmp_path
    return tmp_path


def stored(storage, sub="files"):
    folder = storage / sub
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def post(client, data: bytes, name="m.jsonl", **extra):
    return client.post(
        reverse("corpus:import"), {"file": SimpleUploadedFile(name, data), **extra}, follow=True
    )


def test_the_upload_request_stores_the_file_and_parses_nothing_until_the_worker_runs(
    storage, client_for, admin_user, django_capture_on_commit_callbacks
):
    DomainFactory(slug="federal_it")
    data = corpus_bytes()
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=False) as queued_work:
        response = client.post(
            reverse("corpus:import"), {"file": SimpleUploadedFile("m.jsonl", data)}
        )
    assert response.status_code == 302 and len(queued_work) == 1  # the outbox relay, not run
    job = ImportJob.objects.get()
    assert (job.status, job.size, job.sha256) == (
        ImportStatus.QUEUED,
        len(data),
        hashlib.sha256(data).hexdigest(),
    )
    path = storage / job.file_name
    assert path.read_bytes() == data
    # Django's temporary file was renamed into place, not copied and left behind.
    assert stored(storage, "incoming") == [] and stored(storage) == [path.name]
    assert not Document.objects.exists()
    assert list(AuditEvent.objects.values_list("verb", flat=True)) == ["import_submitted"]

    with django_capture_on_commit_callbacks(execute=True):
        job = run_import_job(job_id=job.pk)
    assert job.status == ImportStatus.SUCCEEDED and Document.objects.count() == 3
    assert job.file_name == "" and not path.exists() and stored(storage) == []


def test_the_same_file_is_the_same_job_and_a_rejected_one_gets_the_new_file(
    storage, client_for, admin_user, django_capture_on_commit_callbacks
):
    client = client_for(admin_user)
    data = corpus_bytes(domain="federal_it")
    with django_capture_on_commit_callbacks(execute=False):
        first = post(client, data)
        second = post(client, data)
    assert ImportJob.objects.count() == 1
    assert second.redirect_chain[-1][0] == first.redirect_chain[-1][0]
    texts = [str(m) for m in get_messages(second.wsgi_request)]
    assert any("already submitted" in text for text in texts), texts
    assert len(stored(storage)) == 1  # the second copy was not kept

    with django_capture_on_commit_callbacks(execute=True):
        job = run_import_job(job_id=ImportJob.objects.get().pk)
    assert job.status == ImportStatus.REJECTED and "unknown domain" in str(job.errors)
    assert stored(storage) == []  # a rejected job's file goes too
    DomainFactory(slug="federal_it")
    with django_capture_on_commit_callbacks(execute=False):
        again = post(client, data)
    texts = [str(m) for m in get_messages(again.wsgi_request)]
    assert any("rejected before; it is checked again" in text for text in texts), texts
    job.refresh_from_db()
    assert job.status == ImportStatus.QUEUED and (storage / job.file_name).read_bytes() == data
    with django_capture_on_commit_callbacks(execute=True):
        job = run_import_job(job_id=job.pk)
    assert job.status == ImportStatus.SUCCEEDED and Document.objects.count() == 3
    assert ImportJob.objects.count() == 1 and stored(storage) == []


def test_a_file_over_the_size_cap_is_refused_with_its_size_and_nothing_is_kept(
    storage, settings, client_for, admin_user
):
    settings.IMPORT_MAX_UPLOAD_BYTES = 1000
    DomainFactory(slug="federal_it")
    client = client_for(admin_user)
    response = client.post(
        reverse("corpus:import"), {"file": SimpleUploadedFile("big.jsonl", b"x" * 5000)}
    )
    assert response.status_code == 422
    assert (
        "big.jsonl is 4.9 KiB; the limit for an upload is 1000 bytes." in response.content.decode()
    )
    # The same through the service with a file given in memory (the API's runs): copied, refused.
    with pytest.raises(UploadRejected, match="the limit for an upload is 1000 bytes"):
        submit_import(
            project=default_project(),
            kind="corpus",
            upload=ContentFile(b"y" * 1001, name="c.jsonl"),
            actor=admin_user,
        )
    # Not UTF-8: refused with the line, counted only when it happens.
    bad = corpus_bytes(2) + b'{"document_id": "caf\xe9"}\n'
    response = client.post(reverse("corpus:import"), {"file": SimpleUploadedFile("l.jsonl", bad)})
    assert response.status_code == 422
    assert "l.jsonl, line 3: not valid UTF-8 text" in response.content.decode()
    assert not ImportJob.objects.exists()
    assert stored(storage) == [] and stored(storage, "incoming") == []
    # At the cap is fine.
    settings.IMPORT_MAX_UPLOAD_BYTES = len(corpus_bytes())
    assert post(client, corpus_bytes()).status_code == 200 and ImportJob.objects.count() == 1


def test_files_left_behind_are_swept_and_an_unfinished_jobs_file_is_kept(
    storage, settings, admin_user, django_capture_on_commit_callbacks
):
    settings.IMPORT_ORPHAN_SECONDS = 60
    with django_capture_on_commit_callbacks(execute=False):
        job = submit_import(
            project=default_project(),
            kind="corpus",
            upload=ContentFile(corpus_bytes(), name="m.jsonl"),
            actor=admin_user,
        ).job
    left = [storage / "files" / "lost.upload", storage / "incoming" / "tmpdead.upload.jsonl"]
    fresh = storage / "files" / "just-stored.upload"
    for path in [*left, fresh]:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"{}\n")
    hour_ago = time.time() - 3600
    for path in [*left, storage / job.file_name]:
        os.utime(path, (hour_ago, hour_ago))
    assert reconcile_imports()["files_swept"] == 2
    assert not any(path.exists() for path in left)
    assert (storage / job.file_name).exists() and fresh.exists()


def test_a_job_whose_file_is_gone_fails_with_a_message(
    storage, admin_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        job = submit_import(
            project=default_project(),
            kind="corpus",
            upload=ContentFile(corpus_bytes(), name="m.jsonl"),
            actor=admin_user,
        ).job
    (storage / job.file_name).unlink()
    job = run_import_job(job_id=job.pk)
    assert job.status == ImportStatus.FAILED
    assert "no longer in the import storage directory" in job.message
    assert "submit the file again" in job.message
