"""The anonymous answer of ``/health/``: is this web process alive and can it reach its database?

It costs one ``SELECT 1`` at most every ``HEALTH_LIVENESS_CACHE_SECONDS`` per process (the answer
is memoised in the process, not in the cache, so a Redis outage cannot slow it down or break it),
names no host, and never touches the broker or pings workers: that is the detailed report's job
(``workbench.services.health.run_health_checks``), for admins and holders of the health token.
"""

import threading
import time

from django.conf import settings
from django.db import connection

_lock = threading.Lock()
_memo: dict[str, object] = {"at": None, "ok": False}


def _database_answers() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        return False
    return True


def check_liveness() -> dict:
    """``{"ok": bool, "status": "alive" | "failing"}``, memoised for a few seconds."""
    ttl = settings.HEALTH_LIVENESS_CACHE_SECONDS
    now = time.monotonic()
    with _lock:
        at = _memo["at"]
        if at is None or now - at >= ttl:
            _memo["ok"], _memo["at"] = _database_answers(), now
        ok = bool(_memo["ok"])
    return {"ok": ok, "status": "alive" if ok else "failing"}


def forget_liveness() -> None:
    """Drop the memoised answer (tests, and after a deploy hook wants a fresh check)."""
    with _lock:
        _memo["at"] = None
