"""Fixed-window request counters for the API's rate limit, atomic across threads and processes.

A window opens at the first request of a key and lasts ``window_seconds``; at most ``limit``
requests are allowed in it. On Redis one ``MULTI`` sets the counter with its expiry if absent
(``SET NX EX``) and increments it (``INCR``, which keeps the expiry), so concurrent requests each
get their own number: 650 requests from 8 threads against ``600/min`` let exactly 600 through
(DRF's own throttle reads, appends and writes back a list, and lost every concurrent update).
Other cache backends (the embedded default's in-process cache) use ``add`` and ``incr``, atomic
within the process.

The cache is a guard, not the source of truth: when it is unreachable the request is allowed
(fail open, logged) and the cache is not asked again for ``CACHE_RETRY_SECONDS``, so an outage of
Redis costs each API request nothing instead of a 500 (the CI uploads the outbox exists for
keep working). The lockout of password forms does not rely on this: it counts in the database.
"""

import logging
import threading
import time
from dataclasses import dataclass

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

CACHE_RETRY_SECONDS = 5.0
KEY_PREFIX = "goldset:rate:"

_down_until = 0.0
_down_lock = threading.Lock()


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    count: int  # this request's number in the window (0 when the cache was not asked)
    retry_after: float  # seconds until the window ends (when refused)


def _count_on_redis(key: str, window_seconds: int) -> tuple[int, float]:
    client = caches["default"]._cache.get_client(key, write=True)  # the backend's redis-py client
    pipe = client.pipeline(transaction=True)
    pipe.set(key, 0, ex=window_seconds, nx=True)
    pipe.incr(key)
    pipe.pttl(key)
    _, count, pttl = pipe.execute()
    return int(count), max(pttl, 0) / 1000


def _count_in_cache(key: str, window_seconds: int) -> tuple[int, float]:
    cache = caches["default"]
    now = time.time()
    cache.add(f"{key}:start", now, timeout=window_seconds)
    for _ in range(3):
        cache.add(key, 0, timeout=window_seconds)
        try:
            count = cache.incr(key)
            break
        except ValueError:  # the window ended between add and incr: open the next one
            continue
    else:
        count = 1
    started = cache.get(f"{key}:start") or now
    return int(count), max(0.0, started + window_seconds - now)


def hit_rate_limit(*, key: str, limit: int, window_seconds: int) -> RateDecision:
    """Count one request for ``key``; allowed when it is among the first ``limit`` of its window.
    Never raises for a cache outage: the request is allowed (see the module's docstring)."""
    global _down_until
    if time.monotonic() < _down_until:
        return RateDecision(allowed=True, count=0, retry_after=0.0)
    full_key = KEY_PREFIX + key
    try:
        if isinstance(caches["default"], RedisCache):
            count, remaining = _count_on_redis(full_key, window_seconds)
        else:
            count, remaining = _count_in_cache(full_key, window_seconds)
    except (RedisError, OSError) as exc:
        with _down_lock:
            _down_until = time.monotonic() + CACHE_RETRY_SECONDS
        logger.warning("Rate limit not applied: the cache is unreachable (%s)", exc)
        return RateDecision(allowed=True, count=0, retry_after=0.0)
    return RateDecision(allowed=count <= limit, count=count, retry_after=remaining)


def reset_cache_outage() -> None:
    """Ask the cache again at the next request (after an outage, and in tests)."""
    global _down_until
    with _down_lock:
        _down_until = 0.0
