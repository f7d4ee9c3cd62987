"""Health of what a working deployment needs: database, broker, a live worker on every queue,
jobs that move and a beat that runs the reconciler."""

from dataclasses import asdict, dataclass

from django.db import connection
from django.utils import timezone

from goldset.services.jobs import count_stale_jobs, last_reconciler_run, reconcile_interval
from workbench.celery import app


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def check_database() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure means "failing", shown to the operator
        return Check("database", False, f"{type(exc).__name__}: {exc}")
    return Check("database", True, connection.vendor)


def check_broker() -> Check:
    if app.conf.task_always_eager:
        return Check("broker", True, "embedded: tasks run in-process (no broker)")
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # noqa: BLE001
        return Check("broker", False, f"{type(exc).__name__}: {exc}")
    return Check("broker", True, app.conf.broker_url.split("@")[-1])


def check_workers(*, timeout: float = 1.5) -> Check:
    """Every queue (``CELERY_TASK_QUEUES``: jobs, the reconciler, webhooks) has a live worker
    consuming it. Asked of the workers at each call (a broadcast answered within ``timeout``),
    so a worker that died is missing from the very next report."""
    if app.conf.task_always_eager:
        return Check("worker", True, "embedded: tasks run in-process")
    try:
        replies = app.control.inspect(timeout=timeout).active_queues() or {}
    except Exception as exc:  # noqa: BLE001
        return Check("worker", False, f"{type(exc).__name__}: {exc}")
    if not replies:
        return Check("worker", False, "no worker answered")
    names = sorted(replies)
    alive = f"{len(names)} alive: {', '.join(names)}"
    consumed = {queue["name"] for queues in replies.values() for queue in queues or ()}
    missing = [queue.name for queue in app.conf.task_queues or () if queue.name not in consumed]
    if missing:
        return Check(
            "worker", False, f"no worker consumes the {', '.join(missing)} queue ({alive})"
        )
    return Check("worker", True, alive)


def check_jobs() -> Check:
    """Background work that is not moving: running jobs without a heartbeat for longer than
    the staleness window, queued jobs nobody picked up, outbox messages not published."""
    try:
        stale = count_stale_jobs()
    except Exception as exc:  # noqa: BLE001
        return Check("jobs", False, f"{type(exc).__name__}: {exc}")
    problems = []
    if stale["running_stale"]:
        problems.append(f"{stale['running_stale']} running job(s) without a heartbeat")
    if stale["queued_waiting"]:
        problems.append(f"{stale['queued_waiting']} queued job(s) no worker picked up")
    if stale["outbox_oldest_pending"]:
        problems.append(
            f"work waiting to be published since {stale['outbox_oldest_pending']:%H:%M:%S} UTC"
        )
    if problems:
        return Check("jobs", False, "; ".join(problems))
    return Check("jobs", True, "no stale jobs")


def check_beat() -> Check:
    """The periodic reconciler (Celery beat) ran within three intervals."""
    if app.conf.task_always_eager:
        return Check("beat", True, "embedded: work runs in-process, no beat needed")
    try:
        run = last_reconciler_run(trigger="beat")
    except Exception as exc:  # noqa: BLE001
        return Check("beat", False, f"{type(exc).__name__}: {exc}")
    interval = reconcile_interval()
    if run is None or run.finished_at is None:
        return Check("beat", False, "the reconciler has never run from celery beat")
    age = (timezone.now() - run.finished_at).total_seconds()
    if age > 3 * interval:
        return Check(
            "beat",
            False,
            f"the reconciler last ran {age:.0f} s ago (every {interval} s expected): "
            "is `celery -A workbench beat` running?",
        )
    return Check("beat", True, f"the reconciler ran {age:.0f} s ago (every {interval} s)")


def run_health_checks() -> dict:
    checks = [check_database(), check_broker()]
    # Pinging workers needs the broker; without it the answer is already known.
    checks.append(check_workers() if checks[1].ok else Check("worker", False, "broker unreachable"))
    if checks[0].ok:
        checks += [check_jobs(), check_beat()]
    else:
        checks += [
            Check("jobs", False, "database unreachable"),
            Check("beat", False, "database unreachable"),
        ]
    return {"ok": all(c.ok for c in checks), "checks": [asdict(c) for c in checks]}
