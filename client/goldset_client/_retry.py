"""When to try a request again: on 429 and 503 (after ``Retry-After`` when the server sends
one, else an exponential backoff with jitter) and on connection errors. Every call the client
makes may be retried: GETs are idempotent, and every write (POST, PUT, PATCH, DELETE) carries an
``Idempotency-Key`` (the API answers a repeat with the first answer and changes nothing). A
write tried again after a timeout may arrive while its first try is still being answered: the
API's 409 "still running" for that key is tried again too (:func:`key_still_running`), and
the next try gets the first answer: such tries spend no retry, they wait for the first try
(:class:`FirstTryWait`) as long as the client waits for any answer (its timeout)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` in all (1: never retry); waits ``backoff`` × 2ⁿ (at most ``max_backoff``)
    with jitter; a ``Retry-After`` longer than ``max_retry_after`` is not waited for (the error
    is raised at once, carrying it)."""

    attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0
    statuses: frozenset[int] = frozenset({429, 503})

    def wait(self, attempt: int, retry_after: str | None = None) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None to give up."""
        if attempt >= self.attempts:
            return None
        told = parse_retry_after(retry_after)
        if told is not None:
            return told if told <= self.max_retry_after else None
        base = min(self.backoff * 2 ** (attempt - 1), self.max_backoff)
        return base / 2 + random.uniform(0, base / 2)


NO_RETRY = RetryPolicy(attempts=1)


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds (RFC 9110: delay-seconds or an HTTP-date)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


@dataclass
class FirstTryWait:
    """How a write waits for its first try while the server is still answering it (409 "still
    running"): polls with the policy's backoff for up to ``patience`` seconds from the first
    such answer — the client's timeout, the time it gives any answer; the first try's answer may
    take that long again (seen at load 15: a label whose first try outlived the 60 s timeout,
    then three quick retries all found it running). Never with a policy that does not retry."""

    patience: float
    started: float | None = None
    polls: int = 0

    def next_wait(self, policy: RetryPolicy) -> float | None:
        """Seconds before asking again, or None to give up."""
        now = time.monotonic()
        if self.started is None:
            self.started = now
        left = self.patience - (now - self.started)
        if policy.attempts <= 1 or left <= 0:
            return None
        self.polls += 1
        base = min(policy.backoff * 2 ** (self.polls - 1), policy.max_backoff)
        return min(base / 2 + random.uniform(0, base / 2), left)


def key_still_running(response, *, sent_key: bool) -> bool:
    """Whether ``response`` is the API's 409 for a request whose Idempotency-Key (sent) names a
    first try the server is still answering: not a conflict of the object's state, so trying
    again later gets the first answer."""
    if response.status_code != 409 or not sent_key:
        return False
    try:
        detail = response.json().get("detail", "")
    except ValueError:
        return False
    return isinstance(detail, str) and "Idempotency-Key is still running" in detail
