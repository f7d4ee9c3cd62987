"""Health of the three things a working deployment needs: database, broker, a live worker."""

from dataclasses import asdict, dataclass

from django.db import connection

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
    if app.conf.task_always_eager:
        return Check("worker", True, "embedded: tasks run in-process")
    try:
        replies = app.control.ping(timeout=timeout) or []
    except Exception as exc:  # noqa: BLE001
        return Check("worker", False, f"{type(exc).__name__}: {exc}")
    if not replies:
        return Check("worker", False, "no worker answered a ping")
    names = sorted(name for reply in replies for name in reply)
    return Check("worker", True, f"{len(names)} alive: {', '.join(names)}")


def run_health_checks() -> dict:
    checks = [check_database(), check_broker()]
    # Pinging workers needs the broker; without it the answer is already known.
    checks.append(check_workers() if checks[1].ok else Check("worker", False, "broker unreachable"))
    return {"ok": all(c.ok for c in checks), "checks": [asdict(c) for c in checks]}
