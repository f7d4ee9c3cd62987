"""How workers, beat and the reconciler are supervised in docker compose and configured."""

from pathlib import Path

import yaml
from django.conf import settings

from workbench.celery import app

ROOT = Path(__file__).resolve().parent.parent.parent


def test_compose_restarts_every_service_checks_the_worker_and_runs_one_beat():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert {name: spec.get("restart") for name, spec in services.items()} == {
        name: "unless-stopped" for name in ("db", "redis", "web", "worker", "beat")
    }
    assert "inspect ping" in " ".join(services["worker"]["healthcheck"]["test"])
    assert services["beat"]["command"].startswith("celery -A workbench beat")
    assert "deploy" not in services["beat"]  # one beat: never scaled
    assert "check_beat" in " ".join(services["beat"]["healthcheck"]["test"])


def test_beat_schedules_the_reconciler_and_publishing_never_hangs(db):
    # Celery's Django fix-up runs the system checks, which ask SQLite about JSON support.
    app.loader.import_default_modules()
    schedule = settings.CELERY_BEAT_SCHEDULE["reconcile-jobs"]
    assert schedule["task"] == "goldset.reconcile" and schedule["task"] in app.tasks
    assert schedule["schedule"] == settings.RECONCILE_INTERVAL_SECONDS
    assert settings.CELERY_BROKER_CONNECTION_TIMEOUT <= 2
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["socket_connect_timeout"] <= 2
