"""The job page tells the truth about a job's worker (heartbeat age, lost workers, requeues) and
lets an admin cancel or retry a stuck job; uploads and freezes are idempotent; the diff page
verifies checksums; the agreement dashboard marks stale figures."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from goldset.models import ImportJob, JobStatus, ScoringJob
from goldset.services.freeze import store_frozen_version
from goldset.services.import_jobs import run_import_job
from goldset.services.scoring_jobs import create_scoring_job
from tests.clock import stop_the_clock
from tests.factories import default_project, gold_row_for, make_gold_corpus
from tests.goldset.web.test_exports_pages import run_file, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(6)
    frozen = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(versions)],
        actor=admin_user,
    )
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


def make_job(version, **fields):
    return ScoringJob.objects.create(
        project_id=version.project_id,
        version=version,
        name="x",
        kind="retrieval",
        run_format="trec",
        run_filename="r",
        run_sha256="0",
        run_size=0,
        **fields,
    )


def ago(seconds):
    return timezone.now() - dt.timedelta(seconds=seconds)


@pytest.mark.parametrize("action", ["exports:cancel", "exports:retry"])
def test_cancel_and_retry_answer_each_role(
    client, client_for, annotator, lead, admin_user, version, action
):
    job = make_job(version, status=JobStatus.FAILED, error="boom")
    url = reverse(action, args=[job.pk])
    assert client.post(url).status_code == 302 and "/login/" in client.post(url)["Location"]
    assert client_for(annotator).post(url).status_code == 403
    assert client_for(lead).post(url).status_code == 403
    assert client_for(admin_user).get(url).status_code == 405
    assert client_for(admin_user).post(reverse(action, args=[job.pk + 999])).status_code == 404
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED  # nobody but the admin changed anything


def test_a_running_job_shows_its_heartbeat_age_and_only_cancel(
    client_for, admin_user, version, settings, monkeypatch
):
    settings.JOB_STALE_SECONDS = 60
    stop_the_clock(monkeypatch)  # the page prints the age the test set, however slow it renders
    job = make_job(version, status=JobStatus.RUNNING, worker="w1@host", heartbeat_at=ago(4))
    admin = client_for(admin_user)
    html = admin.get(reverse("exports:job", args=[job.pk])).content.decode()
    assert "Last heartbeat 4 s ago" in html and "presumed lost" not in html
    assert 'id="job-cancel"' in html and 'id="job-retry"' not in html
    partial = admin.get(
        reverse("exports:job", args=[job.pk]), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="job-progress"
    ).content.decode()
    assert partial.lstrip().startswith('<section id="job-progress"') and "Last heartbeat" in partial


def test_a_stuck_job_says_its_worker_is_presumed_lost_and_can_be_retried(
    client_for, admin_user, version, settings, django_capture_on_commit_callbacks, monkeypatch
):
    settings.JOB_STALE_SECONDS = 60
    stop_the_clock(monkeypatch)
    admin = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=False):
        job = create_scoring_job(
            version=version,
            name="bm25",
            data=run_file(version).read(),
            filename="run.trec",
            actor=admin_user,
        )
    ScoringJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, worker="w1@host", attempts=1, heartbeat_at=ago(200), claim="c"
    )
    html = admin.get(reverse("exports:job", args=[job.pk])).content.decode()
    assert "Last heartbeat 200 s ago" in html
    assert "no heartbeat for more than 60 s: the worker is presumed lost" in html
    assert 'id="job-retry"' in html and 'id="job-cancel"' in html
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(reverse("exports:retry", args=[job.pk]))
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2, job.error
    html = admin.get(reverse("exports:job", args=[job.pk])).content.decode()
    assert "Retried by admin-test" in html and 'id="job-retry"' not in html


def test_a_requeued_job_says_which_worker_was_lost(client_for, admin_user, version):
    job = make_job(
        version,
        status=JobStatus.QUEUED,
        queued_at=timezone.now(),
        notice="Attempt 1 on worker w1@host was lost: no heartbeat since 2026-11-22 10:00:00 UTC "
        "(staleness window 120 s). Requeued by the reconciler at 2026-11-22 10:02:30 UTC.",
        attempts=1,
    )
    html = client_for(admin_user).get(reverse("exports:job", args=[job.pk])).content.decode()
    assert 'id="job-notices"' in html and "Attempt 1 on worker w1@host was lost" in html
    assert "Waiting for a worker" in html and 'id="job-retry"' not in html


def test_cancelling_a_queued_job_from_the_page(client_for, admin_user, version):
    job = make_job(version, status=JobStatus.QUEUED, queued_at=timezone.now())
    admin = client_for(admin_user)
    response = admin.post(reverse("exports:cancel", args=[job.pk]), follow=True)
    assert "is cancelled; you can retry it" in response.content.decode()
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    again = admin.post(reverse("exports:cancel", args=[job.pk]), follow=True)
    assert again.status_code == 200 and "already cancelled" in again.content.decode()


def test_the_same_run_uploaded_twice_shows_the_first_job_with_a_message(
    client_for, admin_user, version, django_capture_on_commit_callbacks
):
    admin = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=False):
        first = upload(admin, version, run_file(version))
        again = upload(admin, version, run_file(version))
        renamed = upload(admin, version, run_file(version), name="again")
        for job in ImportJob.objects.order_by("pk"):
            run_import_job(job_id=job.pk)
    assert first.status_code == again.status_code == renamed.status_code == 302
    assert first["Location"] == again["Location"]  # the same file: the same import job
    assert ScoringJob.objects.count() == 1  # renamed, it is still the same run: the same job
    page = admin.get(renamed["Location"]).content.decode()
    assert 'id="run-reused"' in page
    scoring_job = ScoringJob.objects.get()
    assert reverse("exports:job", args=[scoring_job.pk]) in page


def test_the_diff_page_verifies_checksums(client_for, admin_user, version):
    versions = make_gold_corpus(2)
    store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"N-{i}") for i, bv in enumerate(versions)],
        actor=admin_user,
    )
    admin = client_for(admin_user)
    ok = admin.get(reverse("exports:diff"), {"a": 1, "b": 2})
    assert ok.status_code == 200
    from django.db import connection

    with connection.cursor() as cursor:  # tamper behind the triggers' back
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "UPDATE goldset_goldversionrow SET line = replace(line, 'Q', 'X') "
            "WHERE triple_id = 'Q-1'"
        )
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = origin")
    tampered = admin.get(reverse("exports:diff"), {"a": 1, "b": 2})
    assert tampered.status_code == 500
    assert "row Q-1 of gold version v1 failed its integrity check" in tampered.content.decode()
