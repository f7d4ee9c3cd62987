"""A real `celery worker` process on Redis: it executes a task and /health/ sees it."""

import os

from django.urls import reverse

from workbench.celery import app
from workbench.tasks import ping_task


def test_health_fails_without_a_worker_then_a_real_worker_runs_a_task_and_is_reported_alive(
    transactional_db, client_for, admin_user, start_worker, redis_url
):
    client = client_for(admin_user)  # the detailed report is for admins
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        before = client.get(reverse("health"), {"format": "json"})
        assert before.status_code == 503
        assert {c["name"]: c["ok"] for c in before.json()["checks"]} == {
            "database": True,
            "broker": True,
            "worker": False,
            "jobs": True,
            "beat": False,
        }

        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "workbench.settings",
            "SECRET_KEY": "worker-test",
            "REDIS_URL": redis_url,
        }
        start_worker(env, "health-test@%h")
        assert ping_task.delay().get(timeout=30) == "pong"
        after = client.get(reverse("health"), {"format": "json"})
        checks = {c["name"]: c for c in after.json()["checks"]}
        assert checks["worker"]["ok"] and "health-test@" in checks["worker"]["detail"]
        # The worker alone is not enough: no celery beat runs the reconciler here.
        assert after.status_code == 503 and not checks["beat"]["ok"]
    finally:
        app.conf.task_always_eager = previous
