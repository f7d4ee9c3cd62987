"""Brute-force protection shared by every password form (the workbench login and the Django
admin's login both authenticate through :class:`workbench.auth.ThrottledModelBackend`).

Failures are counted in the database, in a window of ``LOGIN_LOCKOUT_SECONDS``:

* per (account, address): ``LOGIN_MAX_FAILURES`` failures lock that account *from that address*
  (the per-address limit on one account);
* per account, from any address: after ``LOGIN_ACCOUNT_MAX_FAILURES`` failures each further
  attempt must wait an exponentially growing delay (at most ``LOGIN_ACCOUNT_MAX_DELAY_SECONDS``),
  but only from addresses that have themselves failed on this account in the window. A guess
  spread over many addresses is slowed down, yet an attacker with a few addresses cannot lock
  the owner (an admin included) out: a fresh address is never delayed by the account's count
  (OWASP ASVS 2.2.1, a soft lockout without CAPTCHA). A hard per-account lock, which four
  addresses could trigger, no longer exists;
* per address: after ``LOGIN_ADDRESS_SLOWDOWN_AFTER`` failures each further attempt from the
  address must wait an exponentially growing delay (at most ``LOGIN_ADDRESS_MAX_DELAY_SECONDS``).
  One address never locks accounts out: it is only slowed down, so a noisy neighbour behind the
  same proxy costs others seconds, not a lockout.

A locked or throttled attempt never reaches the password check. Nothing here touches the cache.
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from workbench.models import LoginThrottle, ThrottleScope


class LoginRefused(Exception):
    """An attempt refused before its password was checked."""

    def __init__(self, *, until: datetime):
        super().__init__(until)
        self.until = until

    @property
    def retry_after(self) -> int:
        return max(1, int((self.until - timezone.now()).total_seconds() + 0.999))


class LoginLocked(LoginRefused):
    """Too many failures for this account from this address."""


class LoginThrottled(LoginRefused):
    """Too many failures from this address, or on this account from addresses that failed on
    it: wait before the next attempt."""


class AccountThrottled(LoginThrottled):
    """Too many failures on this account, this address among them: wait before the next one."""


@dataclass(frozen=True)
class _Key:
    scope: str
    key: str


def _keys(username: str, address: str) -> tuple[_Key, _Key, _Key]:
    account = hashlib.sha256(username.strip().lower().encode()).hexdigest()
    return (
        _Key(ThrottleScope.ACCOUNT, account),
        _Key(ThrottleScope.ACCOUNT_ADDRESS, f"{account}|{address}"),
        _Key(ThrottleScope.ADDRESS, address),
    )


def check_login_allowed(*, username: str, address: str) -> None:
    """Raise :class:`LoginLocked` or :class:`LoginThrottled` when an attempt must be refused."""
    now = timezone.now()
    account, pair, addr = _keys(username, address)
    rows = {
        (r.scope, r.key): r
        for r in LoginThrottle.objects.filter(
            scope__in=[account.scope, pair.scope, addr.scope],
            key__in=[account.key, pair.key, addr.key],
        )
    }
    pair_row = rows.get((pair.scope, pair.key))
    if pair_row and pair_row.blocked_until and pair_row.blocked_until > now:
        raise LoginLocked(until=pair_row.blocked_until)
    account_row = rows.get((account.scope, account.key))
    window = timedelta(seconds=settings.LOGIN_LOCKOUT_SECONDS)
    failed_here = (
        pair_row is not None
        and pair_row.failures > 0
        and now - pair_row.window_started_at <= window
    )
    if (
        failed_here
        and account_row
        and account_row.blocked_until
        and account_row.blocked_until > now
    ):
        raise AccountThrottled(until=account_row.blocked_until)
    addr_row = rows.get((addr.scope, addr.key))
    if addr_row and addr_row.blocked_until and addr_row.blocked_until > now:
        raise LoginThrottled(until=addr_row.blocked_until)


def _delay(failures: int, after: int, cap: int) -> int:
    """Seconds to wait after the ``failures``-th failure once ``after`` were allowed: 1, 2, 4…"""
    return min(2 ** min(failures - after, 16), cap)


def lock_counter(*, scope: str, key: str, now: datetime) -> LoginThrottle:
    """The counter row of (scope, key), created if absent, locked until the transaction ends."""
    try:
        with transaction.atomic():
            row, _ = LoginThrottle.objects.select_for_update().get_or_create(
                scope=scope, key=key, defaults={"window_started_at": now}
            )
    except IntegrityError:  # a concurrent first failure created it
        row = LoginThrottle.objects.select_for_update().get(scope=scope, key=key)
    return row


@transaction.atomic
def record_login_failure(*, username: str, address: str) -> None:
    """Count one failed attempt in the three scopes (row locks make concurrent failures count)."""
    now = timezone.now()
    window = timedelta(seconds=settings.LOGIN_LOCKOUT_SECONDS)
    for k in _keys(username, address):
        row = lock_counter(scope=k.scope, key=k.key, now=now)
        if now - row.window_started_at > window and not (
            row.blocked_until and row.blocked_until > now
        ):
            row.failures, row.window_started_at, row.blocked_until = 0, now, None
        row.failures += 1
        if k.scope == ThrottleScope.ACCOUNT_ADDRESS:
            if row.failures >= settings.LOGIN_MAX_FAILURES:
                row.blocked_until = now + window
        elif k.scope == ThrottleScope.ACCOUNT:
            if row.failures >= settings.LOGIN_ACCOUNT_MAX_FAILURES:
                delay = _delay(
                    row.failures,
                    settings.LOGIN_ACCOUNT_MAX_FAILURES,
                    settings.LOGIN_ACCOUNT_MAX_DELAY_SECONDS,
                )
                row.blocked_until = now + timedelta(seconds=delay)
        elif row.failures >= settings.LOGIN_ADDRESS_SLOWDOWN_AFTER:
            delay = _delay(
                row.failures,
                settings.LOGIN_ADDRESS_SLOWDOWN_AFTER,
                settings.LOGIN_ADDRESS_MAX_DELAY_SECONDS,
            )
            row.blocked_until = now + timedelta(seconds=delay)
        row.save(update_fields=["failures", "window_started_at", "blocked_until"])


@transaction.atomic
def record_login_success(*, username: str, address: str) -> None:
    """A correct password from an address clears that (account, address) counter only: failures
    from elsewhere still count toward the account's lock."""
    _, pair, _ = _keys(username, address)
    LoginThrottle.objects.filter(scope=pair.scope, key=pair.key).delete()
