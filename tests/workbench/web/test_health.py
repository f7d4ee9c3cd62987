"""/health/: anonymous callers get a cheap, memoised liveness answer that names no host and never
touches the broker; admins and holders of the health token get the detailed report."""

import socket
import threading

import pytest
from django.urls import reverse

from tests.factories import default_project
from workbench.celery import app
from workbench.services.liveness import forget_liveness

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=False)
def fresh_liveness():
    forget_liveness()
    yield
    forget_liveness()


@pytest.fixture
def broker_trap():
    """A socket posing as the broker: it counts connections and hangs up at once."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.1)
    contacts = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            contacts.append(1)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    previous = (app.conf.task_always_eager, app.conf.broker_url)
    app.conf.task_always_eager = False
    app.conf.broker_url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    yield contacts
    app.conf.task_always_eager, app.conf.broker_url = previous
    stop.set()
    thread.join(timeout=5)
    listener.close()


def test_anonymous_health_is_a_liveness_answer_that_never_contacts_the_broker(
    client, broker_trap, fresh_liveness
):
    response = client.get(reverse("health"), {"format": "json"})
    assert response.status_code == 200
    assert response.json() == {"ok": True, "status": "alive"}
    html = client.get(reverse("health"), HTTP_ACCEPT="text/html").content.decode()
    assert "alive" in html and "127.0.0.1" not in html and "redis" not in html
    assert broker_trap == []


def test_the_detailed_report_does_contact_the_broker(client_for, admin_user, broker_trap):
    """The trap is sound: the admin's detailed report does reach it."""
    response = client_for(admin_user).get(reverse("health"), {"format": "json"})
    assert response.status_code == 503
    assert [c["name"] for c in response.json()["checks"][:3]] == ["database", "broker", "worker"]
    assert broker_trap


def test_anonymous_liveness_is_memoised_for_a_few_seconds(
    client, settings, fresh_liveness, django_assert_num_queries
):
    settings.HEALTH_LIVENESS_CACHE_SECONDS = 60
    with django_assert_num_queries(1):
        client.get(reverse("health"), {"format": "json"})
    with django_assert_num_queries(0):
        for _ in range(5):
            assert client.get(reverse("health"), {"format": "json"}).status_code == 200


@pytest.mark.parametrize("role_fixture", ["annotator", "lead"])
def test_non_admins_get_only_liveness(client_for, request, role_fixture, fresh_liveness):
    user = request.getfixturevalue(role_fixture)
    body = client_for(user).get(reverse("health"), {"format": "json"}).json()
    assert body == {"ok": True, "status": "alive"}


def test_admins_get_the_detailed_report_as_json_and_html(client_for, admin_user):
    c = client_for(admin_user)
    body = c.get(reverse("health"), {"format": "json"}).json()
    assert body["ok"] is True
    assert [x["name"] for x in body["checks"]][:3] == ["database", "broker", "worker"]
    html = c.get(reverse("health"), HTTP_ACCEPT="text/html").content.decode()
    assert "System health" in html and "in-process" in html


def test_the_health_token_opens_the_detailed_report(client, settings, fresh_liveness):
    settings.HEALTH_TOKEN = "s3cret-health-token"
    wrong = client.get(reverse("health"), {"format": "json"}, HTTP_X_HEALTH_TOKEN="nope")
    assert "checks" not in wrong.json()
    right = client.get(
        reverse("health"), {"format": "json"}, HTTP_X_HEALTH_TOKEN="s3cret-health-token"
    )
    assert "checks" in right.json()


def test_health_reports_failing_when_the_broker_is_unreachable(client_for, admin_user):
    previous = (app.conf.task_always_eager, app.conf.broker_url)
    app.conf.task_always_eager = False
    app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    try:
        response = client_for(admin_user).get(reverse("health"), HTTP_ACCEPT="application/json")
    finally:
        app.conf.task_always_eager, app.conf.broker_url = previous
    assert response.status_code == 503
    checks = {c["name"]: c for c in response.json()["checks"]}
    assert checks["database"]["ok"] and not checks["broker"]["ok"] and not checks["worker"]["ok"]


def test_health_reports_stale_jobs_and_a_missing_beat(client_for, admin_user, settings):
    client = client_for(admin_user)  # the detailed report is for admins
    import datetime as dt

    from django.utils import timezone

    from goldset.models import JobStatus, ReconcilerRun, ScoringJob
    from goldset.services.freeze import store_frozen_version
    from tests.factories import gold_row_for, make_gold_corpus

    settings.JOB_STALE_SECONDS = 60
    settings.RECONCILE_INTERVAL_SECONDS = 30
    bv = make_gold_corpus(1)[0]
    version = store_frozen_version(
        project=default_project(), rows=[gold_row_for(bv, triple_id="T1")], actor=admin_user
    )
    job = ScoringJob.objects.create(
        project_id=version.project_id,
        version=version,
        name="x",
        kind="retrieval",
        run_format="trec",
        run_filename="r",
        run_sha256="0",
        run_size=0,
        status=JobStatus.RUNNING,
        worker="gone@host",
        heartbeat_at=timezone.now() - dt.timedelta(seconds=61),
    )
    checks = {
        c["name"]: c for c in client.get(reverse("health"), {"format": "json"}).json()["checks"]
    }
    assert (
        not checks["jobs"]["ok"]
        and "1 running job(s) without a heartbeat" in checks["jobs"]["detail"]
    )
    ScoringJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now())
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        from workbench.services.health import check_beat, check_jobs

        assert check_jobs().ok
        assert check_beat().detail == "the reconciler has never run from celery beat"
        ReconcilerRun.objects.create(
            trigger="beat",
            started_at=timezone.now() - dt.timedelta(seconds=100),
            finished_at=timezone.now() - dt.timedelta(seconds=95),
        )
        stale_beat = check_beat()
        assert not stale_beat.ok and "is `celery -A workbench beat` running?" in stale_beat.detail
        ReconcilerRun.objects.filter(trigger="beat").update(finished_at=timezone.now())
        assert check_beat().ok
    finally:
        app.conf.task_always_eager = previous


def test_health_counts_queued_and_heartbeatless_imports_and_calibrations(db, settings, admin_user):
    """Imports are what users submit most: one whose message is gone (or whose worker never
    beat) is background work that is not moving, like a scoring job."""
    import datetime as dt

    from django.utils import timezone

    from goldset.models import ImportJob, ImportStatus, PcsCalibration, default_project_id
    from goldset.services.jobs import count_stale_jobs

    settings.JOB_STALE_SECONDS = 60
    settings.OUTBOX_REDISPATCH_SECONDS = 120
    now = timezone.now()

    def job(n, **fields):
        made = ImportJob.objects.create(
            project_id=default_project_id(),
            kind="corpus",
            dedupe_key=f"k{n}",
            filename="f",
            sha256="0",
            size=1,
            **fields,
        )
        ImportJob.objects.filter(pk=made.pk).update(created_at=now - dt.timedelta(seconds=600))
        return made

    waiting = job(1)  # queued ten minutes ago, never picked up
    job(2, heartbeat_at=now - dt.timedelta(seconds=70))  # requeued a moment ago
    silent = job(3, status=ImportStatus.RUNNING)  # claimed, never beat
    assert count_stale_jobs(now=now) == {
        "running_stale": 1,
        "queued_waiting": 1,
        "outbox_oldest_pending": None,
    }
    ImportJob.objects.filter(pk=silent.pk).update(heartbeat_at=now)
    ImportJob.objects.filter(pk=waiting.pk).update(status=ImportStatus.SUCCEEDED)
    assert count_stale_jobs(now=now)["running_stale"] == 0
    assert count_stale_jobs(now=now)["queued_waiting"] == 0
    assert count_stale_jobs(now=now + dt.timedelta(seconds=60))["queued_waiting"] == 1  # requeued
    calibration = PcsCalibration.objects.create(
        project_id=default_project_id(), name="c", version=1, created_by=admin_user
    )
    PcsCalibration.objects.filter(pk=calibration.pk).update(
        created_at=now - dt.timedelta(seconds=600)
    )
    assert count_stale_jobs(now=now)["queued_waiting"] == 1
