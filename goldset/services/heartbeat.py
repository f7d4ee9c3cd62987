"""A worker-side heartbeat: while a job's attempt runs, a thread stamps ``heartbeat_at`` on
the job's row every ``JOB_HEARTBEAT_SECONDS`` on its own database connection, so a long stage
never looks like a lost worker. It dies with the process (SIGKILL, OOM, a hard time limit):
then the heartbeat ages and the reconciler takes the job over. Database errors are survived
(the connection is reopened at the next beat); it stops by itself once the row is no longer
this attempt's (cancelled, taken over, finished)."""

import threading
from collections.abc import Callable

import psycopg
from django.db import InterfaceError, OperationalError, connection
from django.db.models import QuerySet
from django.utils import timezone

from goldset.conf import tunable

# Errors of a database connection that died (terminated, network), not of a statement: Django's,
# and psycopg's own where a COPY runs on the driver's cursor (Django does not wrap those).
TRANSIENT = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


def record_despite_lost_connection(write: Callable[[], None], *, reconnect: bool) -> None:
    """Run ``write``, the transaction that records how a job's attempt ended, even when the
    connection that failed the attempt is dead: reconnect first when ``reconnect`` (or when the
    connection is unusable), and again after a transient error; three tries, 0.5 s and 1 s
    apart. Inside an outer transaction nothing is reconnected and the error propagates."""
    for attempt in range(3):
        if not connection.in_atomic_block and (reconnect or attempt or not connection.is_usable()):
            connection.close()  # the next query opens a fresh connection
        try:
            write()
            return
        except TRANSIENT:
            if connection.in_atomic_block or attempt == 2:
                raise
            threading.Event().wait(0.5 * (attempt + 1))


class Heartbeat(threading.Thread):
    def __init__(self, name: str, rows: Callable[[], QuerySet]):
        super().__init__(name=f"heartbeat-{name}", daemon=True)
        self.rows = rows  # this attempt's row, while it is still this attempt's
        self.halt = threading.Event()

    def run(self) -> None:
        interval = tunable("JOB_HEARTBEAT_SECONDS")
        try:
            while not self.halt.wait(interval):
                try:
                    mine = self.rows().update(heartbeat_at=timezone.now())
                except (OperationalError, InterfaceError):
                    connection.close()
                    continue
                if not mine:
                    return
        finally:
            connection.close()

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=5)
