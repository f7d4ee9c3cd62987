"""Issue 24: the API without Redis (the throttle read the cache: every call answered 500) and a
rate limit that holds under concurrency (650 requests from 8 threads all got 200)."""

import threading

import pytest
from django.core.cache import cache
from django.urls import reverse

from goldset.models import ImportJob
from tests.goldset.api.test_api import PROBLEM
from workbench.services import rate_limits
from workbench.services.api_tokens import create_api_token
from workbench.services.rate_limits import hit_rate_limit, reset_cache_outage


def bearer(raw):
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


@pytest.fixture
def redis_cache(own_redis, settings):
    """The default cache is a private Redis this test may stop."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": own_redis.url,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    reset_cache_outage()
    cache.set("probe", 1)
    assert cache.get("probe") == 1  # the cache really is this Redis
    yield own_redis
    reset_cache_outage()


def hammer(*, key: str, requests: int, threads: int, limit: int) -> list[bool]:
    """``requests`` counted for ``key`` from ``threads`` threads started together."""
    per_thread = [requests // threads + (i < requests % threads) for i in range(threads)]
    start = threading.Barrier(threads)
    results: list[bool] = []
    lock = threading.Lock()

    def run(n):
        start.wait()
        mine = [hit_rate_limit(key=key, limit=limit, window_seconds=3600).allowed for _ in range(n)]
        with lock:
            results.extend(mine)

    workers = [threading.Thread(target=run, args=(n,)) for n in per_thread]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return results


def test_650_requests_from_8_threads_let_exactly_600_through_on_redis(redis_cache):
    results = hammer(key="token-650", requests=650, threads=8, limit=600)
    assert len(results) == 650
    assert results.count(True) == 600


def test_650_requests_from_8_threads_let_exactly_600_through_in_process(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    reset_cache_outage()
    cache.clear()
    results = hammer(key="token-650", requests=650, threads=8, limit=600)
    assert results.count(True) == 600


def test_the_window_ends_and_a_refusal_says_when(redis_cache):
    first = hit_rate_limit(key="short", limit=1, window_seconds=30)
    refused = hit_rate_limit(key="short", limit=1, window_seconds=30)
    assert first.allowed and not refused.allowed
    assert 0 < refused.retry_after <= 30
    redis_cache_client = cache._cache.get_client("x", write=True)
    assert 0 < redis_cache_client.ttl(rate_limits.KEY_PREFIX + "short") <= 30  # it expires


@pytest.mark.django_db
def test_the_api_reads_and_writes_while_redis_is_down(
    client, admin_user, version, redis_cache, django_capture_on_commit_callbacks
):
    _, raw = create_api_token(user=admin_user, name="ci", scope="write")
    assert client.get(reverse("api:versions"), **bearer(raw)).status_code == 200
    redis_cache.stop()
    with pytest.raises(Exception):  # noqa: B017 - whatever redis-py raises when down
        cache.get("probe")
    read = client.get(reverse("api:versions"), **bearer(raw))
    assert read.status_code == 200, read.content[:300]
    run = [
        {"query_id": f"Q-{i}", "results": [{"doc_id": version.blocks[i], "score": 1.0}]}
        for i in range(6)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        write = client.post(
            reverse("api:jobs"),
            {"version": 1, "name": "bm25", "k": 10, "run": run},
            content_type="application/json",
            **bearer(raw),
        )
    assert write.status_code == 202, write.content[:300]
    assert ImportJob.objects.filter(kind="run").count() == 1
    again = client.get(write["Location"], **bearer(raw))  # the cache is not asked again
    assert again.status_code == 200


@pytest.mark.django_db
def test_the_api_refuses_past_the_limit_with_retry_after_on_redis(
    client, lead, settings, redis_cache
):
    settings.API_TOKEN_RATE = "2/min"
    _, raw = create_api_token(user=lead, name="ci")
    codes = [client.get(reverse("api:domains"), **bearer(raw)).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    limited = client.get(reverse("api:domains"), **bearer(raw))
    assert limited["Content-Type"] == PROBLEM
    assert 1 <= int(limited["Retry-After"]) <= 60
