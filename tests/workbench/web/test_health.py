import pytest
from django.urls import reverse

from workbench.celery import app

pytestmark = pytest.mark.django_db


def test_health_is_ok_in_the_embedded_mode_as_json_and_html(client):
    response = client.get(reverse("health"), {"format": "json"})
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert [c["name"] for c in body["checks"]] == ["database", "broker", "worker", "jobs", "beat"]
    html = client.get(reverse("health"), HTTP_ACCEPT="text/html").content.decode()
    assert "System health" in html and "in-process" in html


def test_health_reports_failing_when_the_broker_is_unreachable(client):
    previous = (app.conf.task_always_eager, app.conf.broker_url)
    app.conf.task_always_eager = False
    app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    try:
        response = client.get(reverse("health"), HTTP_ACCEPT="application/json")
    finally:
        app.conf.task_always_eager, app.conf.broker_url = previous
    assert response.status_code == 503
    checks = {c["name"]: c for c in response.json()["checks"]}
    assert checks["database"]["ok"] and not checks["broker"]["ok"] and not checks["worker"]["ok"]


def test_health_reports_stale_jobs_and_a_missing_beat(client, admin_user, settings):
    import datetime as dt

    from django.utils import timezone

    from goldset.models import JobStatus, ReconcilerRun, ScoringJob
    from goldset.services.freeze import store_frozen_version
    from tests.factories import gold_row_for, make_gold_corpus

    settings.JOB_STALE_SECONDS = 60
    settings.RECONCILE_INTERVAL_SECONDS = 30
    bv = make_gold_corpus(1)[0]
    version = store_frozen_version(rows=[gold_row_for(bv, triple_id="T1")], actor=admin_user)
    job = ScoringJob.objects.create(
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
