"""Submits that never turn a held lock into a 500 (issue 24).

A label, review or adjudication submit runs in :func:`submit_transaction`: on PostgreSQL its
transaction waits at most ``SUBMIT_LOCK_TIMEOUT_MS`` for a row another transaction holds (a long
import holding a domain's load row, a lead's bulk action), is rolled back whole when that wait
ends — or when the statement timeout, a deadlock or a serialization failure ends it — and is run
once more; when the second attempt meets the same, :class:`SubmitBusy` says so and nothing of the
submit is stored. Views answer it with 503 and a ``Retry-After`` and keep what the person entered.

Lock order of the settle paths (one order, so two submits cannot deadlock): the person's user
row (claims and undo only), then the item (answer record / triple), then the per-domain load
rows, then the agreement dirty-scope and counter rows the statement triggers write.
"""

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from django.db import OperationalError, connection, transaction

from goldset.conf import tunable

P = ParamSpec("P")
R = TypeVar("R")

# lock_not_available, query_canceled (statement timeout), deadlock_detected, serialization_failure
LOCK_WAIT_SQLSTATES = frozenset({"55P03", "57014", "40P01", "40001"})


class SubmitBusy(Exception):
    """A submit met a lock held elsewhere twice; nothing was stored. Not a ``GoldsetError``: the
    answer is 503 (try again), not a form the person has to correct."""

    retry_after_seconds = 5

    def __init__(self, what: str):
        self.what = what
        super().__init__(
            f"Someone else is changing this item right now, so your {what} was not saved. "
            "What you entered is still in the form: submit it again in a few seconds."
        )


def is_lock_wait(exc: BaseException) -> bool:
    """Whether ``exc`` is a statement ended by waiting on a lock (or by the statement timeout,
    which on a submit is a lock wait in practice: its statements are index lookups); on SQLite,
    the embedded default, a write that outwaited its busy timeout ("database is locked")."""
    cause = getattr(exc, "__cause__", None)
    if getattr(cause, "sqlstate", None) in LOCK_WAIT_SQLSTATES:
        return True
    return connection.vendor == "sqlite" and "database is locked" in str(exc)


def _bound_lock_waits() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('lock_timeout', %s, true)",
                [f"{int(tunable('SUBMIT_LOCK_TIMEOUT_MS'))}ms"],
            )


def submit_transaction(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run the decorated service in its own transaction with bounded lock waits, retried once
    after a lock wait ended it; raises :class:`SubmitBusy` (naming ``what``) after the second.
    Called inside a caller's transaction it runs as a plain ``atomic`` block: the caller owns
    the transaction and its retry."""

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        @wraps(func)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            if connection.in_atomic_block:
                with transaction.atomic():
                    return func(*args, **kwargs)
            for attempt in (1, 2):
                try:
                    with transaction.atomic():
                        _bound_lock_waits()
                        return func(*args, **kwargs)
                except OperationalError as exc:
                    if not is_lock_wait(exc):
                        raise
                    if attempt == 2:
                        raise SubmitBusy(what) from exc
            raise AssertionError("unreachable")

        return run

    return decorate
