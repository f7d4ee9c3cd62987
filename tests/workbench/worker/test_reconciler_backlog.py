"""The reconciler cannot be starved (issue 24): with 1,000 tasks queued behind a busy worker on
the default queue, work the broker lost is published again by the reconciler — beat sends it to
its own queue, where its own worker takes it at once. Then that worker is killed and the very
next /health/ report says the reconcile queue has no worker.

Before, the reconciler went to the default queue with an expiry of one interval: behind such a
backlog every pass expired unrun, and lost work waited until the backlog drained."""

import json
import os

import pytest
import redis
from django.db import transaction

from goldset.models import OutboxMessage
from goldset.rules.jobs import AGREEMENT_OUTBOX_KIND
from goldset.services import outbox
from goldset.services.agreement import RECOMPUTE_TASK
from tests.goldset.worker.test_job_faults import answers_ping, broker
from tests.waiting import wait_until
from tests.workbench.worker.holding_app import hold
from tests.workbench.worker.processes import start_beat, start_worker, stop_group, worker_env
from workbench.services.health import check_workers

pytestmark = [pytest.mark.worker, pytest.mark.postgres]

BACKLOG = 1000
FAST = {"RECONCILE_INTERVAL_SECONDS": "2", "OUTBOX_REDISPATCH_SECONDS": "4"}


def queued_tasks(client: redis.Redis, queue: str, task: str) -> list[bytes]:
    """The raw messages of ``task`` waiting on ``queue`` (kombu keeps a queue as a Redis list)."""
    return [
        raw for raw in client.lrange(queue, 0, -1) if json.loads(raw)["headers"]["task"] == task
    ]


def test_lost_work_is_published_again_behind_a_thousand_queued_tasks(
    transactional_db, own_redis, tmp_path, settings
):
    for name, value in FAST.items():
        setattr(settings, name, int(value))
    env = worker_env(own_redis.url, **FAST)
    host = f"backlog-{os.getpid()}@{os.uname().nodename}"
    client = redis.Redis.from_url(own_redis.url)
    procs = []
    with broker(own_redis.url), open(tmp_path / "processes.log", "wb") as log:
        try:
            # As in docker-compose.yml: the jobs worker (here also taking webhooks, so every
            # queue has a worker) and the reconciler's own worker; one beat.
            jobs = start_worker(
                env, f"jobs-{host}", log, "-Q", "celery,webhooks", "--concurrency=1"
            )
            reconciler = start_worker(
                env, f"reconciler-{host}", log, "-Q", "reconcile", "--concurrency=1"
            )
            procs += [jobs, reconciler]
            for node in (f"jobs-{host}", f"reconciler-{host}"):
                wait_until(lambda node=node: answers_ping(node), timeout=90, what=node)
            for _ in range(BACKLOG):
                hold.apply_async((str(tmp_path), "backlog"))
            wait_until(
                (tmp_path / "backlog.started").exists, timeout=60, what="the jobs worker busy"
            )
            assert client.llen("celery") == BACKLOG - 1

            with transaction.atomic():  # published to the broker when this commits
                message = outbox.enqueue(kind=AGREEMENT_OUTBOX_KIND, dedupe_key="lost-in-test")
            message.refresh_from_db()
            assert message.dispatched_at is not None and message.attempts == 1
            (lost,) = queued_tasks(client, "celery", RECOMPUTE_TASK)
            assert client.lrem("celery", 0, lost) == 1  # the broker lost it
            assert client.llen("celery") == BACKLOG - 1

            procs.append(start_beat(env, tmp_path / "beat-schedule", log))  # every 2 s
            wait_until(
                lambda: OutboxMessage.objects.filter(pk=message.pk, attempts=2).exists(),
                timeout=120,
                what="the reconciler to publish the lost message again",
            )
            message.refresh_from_db()
            assert message.last_error == "published but never picked up; published again"
            assert len(queued_tasks(client, "celery", RECOMPUTE_TASK)) == 1
            assert client.llen("celery") >= BACKLOG - 1  # the backlog never moved
            assert not (tmp_path / "backlog.done").exists()

            assert check_workers().ok
            stop_group(reconciler, kill=True)
            report = check_workers()
            assert not report.ok and "no worker consumes the reconcile queue" in report.detail
        finally:
            (tmp_path / "backlog.release").touch()
            for proc in procs:
                stop_group(proc)
