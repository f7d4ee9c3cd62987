"""How workers, beat and the reconciler are supervised in docker compose and configured."""

from pathlib import Path

import yaml
from django.conf import settings

from goldset.services.agreement import RECOMPUTE_TASK
from goldset.services.import_jobs import RUN_IMPORT_TASK
from goldset.services.scoring_jobs import SCORE_RUN_TASK
from workbench.celery import app

ROOT = Path(__file__).resolve().parent.parent.parent
WORKERS = ("worker", "reconciler", "webhooks")


def _queues(command: str) -> set[str]:
    args = command.split()
    return set(args[args.index("-Q") + 1].split(","))


def test_compose_restarts_every_service_checks_the_worker_and_runs_one_beat():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert {name: spec.get("restart") for name, spec in services.items()} == {
        name: "unless-stopped"
        for name in ("db", "redis", "web", "worker", "reconciler", "webhooks", "beat")
    }
    for worker in WORKERS:
        assert "inspect ping" in " ".join(services[worker]["healthcheck"]["test"])
        assert services[worker]["environment"]["WORKER_NODE"] == worker
        assert f"--hostname {worker}@%h" in services[worker]["command"]
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


def test_each_queue_has_its_compose_worker_and_the_reconciler_runs_alone():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    consumed = {worker: _queues(services[worker]["command"]) for worker in WORKERS}
    assert consumed == {"worker": {"celery"}, "reconciler": {"reconcile"}, "webhooks": {"webhooks"}}
    assert set().union(*consumed.values()) == {q.name for q in settings.CELERY_TASK_QUEUES}
    # `make worker` (one worker for everything) consumes every queue too.
    make_worker = (ROOT / "Makefile").read_text().split("\nworker:")[1].splitlines()[1]
    assert _queues(make_worker) == {q.name for q in settings.CELERY_TASK_QUEUES}


def test_the_reconciler_and_webhooks_are_routed_to_their_queues_and_never_expire(db):
    from goldset.rules.jobs import RECONCILE_TASK
    from goldset.rules.webhooks import DELIVER_TASK

    app.loader.import_default_modules()
    router = app.amqp.router
    assert router.route({}, RECONCILE_TASK)["queue"].name == "reconcile"
    assert router.route({}, DELIVER_TASK)["queue"].name == "webhooks"
    for job_task in (SCORE_RUN_TASK, RUN_IMPORT_TASK, RECOMPUTE_TASK):
        assert job_task in app.tasks
        assert router.route({}, job_task)["queue"].name == "celery"
    assert "expires" not in settings.CELERY_BEAT_SCHEDULE["reconcile-jobs"].get("options", {})
