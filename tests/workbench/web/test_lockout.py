"""One lockout for every password form: the workbench login and the Django admin's login count
into the same database counters, per account and per (account, address), with the address taken
through the trusted-proxy setting; one address is slowed down, never locks others out; every
attempt is audited; all of it works with the cache (Redis) down."""

import datetime as dt

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.factories import TEST_PASSWORD
from workbench.models import AuditEvent, LoginThrottle, ThrottleScope

pytestmark = pytest.mark.django_db

ADMIN_LOGIN = "/django-admin/login/"


def main_login(client, username, password, **extra):
    return client.post(reverse("login"), {"username": username, "password": password}, **extra)


def admin_login(client, username, password, **extra):
    return client.post(
        ADMIN_LOGIN,
        {"username": username, "password": password, "next": "/django-admin/"},
        **extra,
    )


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_failures_on_the_admin_form_count_toward_the_main_login_lock(client, admin_user):
    for _ in range(3):
        assert main_login(client, admin_user.username, "wrong").status_code == 200
    for _ in range(2):
        assert admin_login(client, admin_user.username, "wrong").status_code == 200
    locked = main_login(client, admin_user.username, TEST_PASSWORD)
    assert locked.status_code == 429 and not logged_in(client)
    assert "Too many failed attempts" in locked.content.decode()


def test_a_locked_account_cannot_log_in_through_the_admin_form(client, admin_user):
    for _ in range(5):
        main_login(client, admin_user.username, "wrong")
    response = admin_login(client, admin_user.username, TEST_PASSWORD)
    assert response.status_code == 200 and not logged_in(client)
    assert client.get("/django-admin/").status_code == 302  # still anonymous: sent to log in
    event = AuditEvent.objects.filter(verb="login_locked").get()
    assert event.detail["form"] == "admin" and event.detail["username"] == admin_user.username


def test_every_attempt_on_both_forms_is_audited(client, admin_user):
    admin_login(client, admin_user.username, "wrong")
    admin_login(client, admin_user.username, TEST_PASSWORD)
    assert logged_in(client)
    client.logout()
    main_login(client, admin_user.username, "wrong")
    main_login(client, admin_user.username, TEST_PASSWORD)
    events = list(
        AuditEvent.objects.filter(verb__startswith="login")
        .order_by("id")
        .values_list("verb", "detail__form", "detail__address")
    )
    assert events == [
        ("login_failed", "admin", "127.0.0.1"),
        ("login", "admin", "127.0.0.1"),
        ("login_failed", "login", "127.0.0.1"),
        ("login", "login", "127.0.0.1"),
    ]


def test_the_lock_is_per_account_and_address_another_address_still_gets_in(annotator):
    attacker, owner = Client(REMOTE_ADDR="203.0.113.7"), Client(REMOTE_ADDR="198.51.100.2")
    for _ in range(5):
        main_login(attacker, annotator.username, "wrong")
    assert main_login(attacker, annotator.username, TEST_PASSWORD).status_code == 429
    assert main_login(owner, annotator.username, TEST_PASSWORD).status_code == 302


def test_failures_spread_over_addresses_slow_those_addresses_down_on_the_account(
    annotator, settings
):
    settings.LOGIN_ACCOUNT_MAX_FAILURES = 6
    guessers = [Client(REMOTE_ADDR=f"203.0.113.{n + 1}") for n in range(6)]
    for guesser in guessers:
        assert main_login(guesser, annotator.username, "wrong").status_code == 200
    # each address failed only once (below the per-address lock), yet the account's count
    # makes the next attempt from any of them wait, with the right password too
    slowed = main_login(guessers[0], annotator.username, TEST_PASSWORD)
    assert slowed.status_code == 429 and not logged_in(guessers[0])
    assert "Too many failed attempts on this account" in slowed.content.decode()
    assert AuditEvent.objects.filter(verb="login_throttled").count() == 1
    # once the delay has run out (moved into the past here), they may try again
    LoginThrottle.objects.filter(scope=ThrottleScope.ACCOUNT).update(
        blocked_until=timezone.now() - dt.timedelta(seconds=1)
    )
    assert main_login(guessers[0], annotator.username, TEST_PASSWORD).status_code == 302


def test_an_attacker_with_four_addresses_cannot_lock_an_admin_out(admin_user):
    """Issue 24: four addresses reached the per-account lock (20 failures) and locked any account,
    admins included, for 15 minutes. Now each attacker address is locked and the account slowed
    down for them, while the owner signs in from a fresh address."""
    attackers = [Client(REMOTE_ADDR=f"203.0.113.{n + 10}") for n in range(4)]
    for _ in range(8):  # past both the per-address lock (5) and the account's count (20)
        for attacker in attackers:
            main_login(attacker, admin_user.username, "wrong")
    assert LoginThrottle.objects.get(scope=ThrottleScope.ACCOUNT).failures >= 20
    for attacker in attackers:
        refused = main_login(attacker, admin_user.username, TEST_PASSWORD)
        assert refused.status_code == 429 and not logged_in(attacker)
    owner = Client(REMOTE_ADDR="198.51.100.77")
    assert main_login(owner, admin_user.username, TEST_PASSWORD).status_code == 302
    assert logged_in(owner)
    owner_admin = Client(REMOTE_ADDR="198.51.100.78")  # the admin's own form too
    assert admin_login(owner_admin, admin_user.username, TEST_PASSWORD).status_code == 302


def test_the_account_delay_grows_with_each_failure_up_to_its_maximum(annotator, settings):
    settings.LOGIN_ACCOUNT_MAX_FAILURES = 2
    settings.LOGIN_ACCOUNT_MAX_DELAY_SECONDS = 4
    delays = []
    for n in range(6):  # a fresh address each time: never refused, every failure counts
        main_login(Client(REMOTE_ADDR=f"192.0.2.{n + 1}"), annotator.username, "wrong")
        row = LoginThrottle.objects.get(scope=ThrottleScope.ACCOUNT)
        delays.append(
            round((row.blocked_until - timezone.now()).total_seconds()) if row.blocked_until else 0
        )
    assert delays == [0, 1, 2, 4, 4, 4]


def test_one_address_is_slowed_down_and_never_locks_other_accounts_out(
    make_user, annotator, settings
):
    settings.LOGIN_ADDRESS_SLOWDOWN_AFTER = 3
    settings.LOGIN_ADDRESS_MAX_DELAY_SECONDS = 1
    noisy = Client(REMOTE_ADDR="203.0.113.50")
    for n in range(3):  # three different accounts guessed from one address
        main_login(noisy, f"guess-{n}", "wrong")
    throttled = main_login(noisy, annotator.username, TEST_PASSWORD)
    assert throttled.status_code == 429
    assert "Too many attempts from your network" in throttled.content.decode()
    assert AuditEvent.objects.filter(verb="login_throttled").count() == 1
    # the victim's own counters never moved: a slowdown, not a lockout
    assert not LoginThrottle.objects.filter(scope=ThrottleScope.ACCOUNT, failures__gt=3).exists()
    # Once the address's slow-down has run out (moved into the past here, not waited for),
    # the same address is let through again.
    slowed = LoginThrottle.objects.filter(blocked_until__isnull=False)
    assert slowed.exists()
    slowed.update(blocked_until=timezone.now() - dt.timedelta(seconds=1))
    status = main_login(noisy, annotator.username, TEST_PASSWORD).status_code
    assert status == 302 and logged_in(noisy)


def test_without_trusted_proxies_a_forged_forwarded_for_header_changes_nothing(annotator):
    client = Client(REMOTE_ADDR="203.0.113.7")
    for n in range(5):
        main_login(client, annotator.username, "wrong", HTTP_X_FORWARDED_FOR=f"10.9.9.{n}")
    response = main_login(client, annotator.username, TEST_PASSWORD, HTTP_X_FORWARDED_FOR="1.2.3.4")
    assert response.status_code == 429


def test_behind_a_trusted_proxy_the_client_address_comes_from_forwarded_for(annotator, settings):
    settings.TRUSTED_PROXY_HOPS = 1
    proxy = "10.0.0.1"  # every request arrives from the proxy
    attacker, owner = Client(REMOTE_ADDR=proxy), Client(REMOTE_ADDR=proxy)
    for n in range(5):
        # the attacker forges a left-most entry; the proxy appends the real address
        forged = f"198.51.100.{n}, 203.0.113.7"
        main_login(attacker, annotator.username, "wrong", HTTP_X_FORWARDED_FOR=forged)
    assert (
        main_login(
            attacker, annotator.username, TEST_PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.7"
        ).status_code
        == 429
    )
    ok = main_login(owner, annotator.username, TEST_PASSWORD, HTTP_X_FORWARDED_FOR="192.0.2.44")
    assert ok.status_code == 302
    addresses = set(
        AuditEvent.objects.filter(verb="login_failed").values_list("detail__address", flat=True)
    )
    assert addresses == {"203.0.113.7"}


def test_lockout_works_with_the_cache_down_and_does_not_open_up(own_redis, annotator, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": own_redis.url,
        }
    }
    cache.set("probe", 1)
    assert cache.get("probe") == 1  # the cache really is this Redis
    own_redis.stop()
    with pytest.raises(Exception):  # noqa: B017 - whatever redis-py raises when down
        cache.get("probe")
    client = Client(REMOTE_ADDR="203.0.113.8")
    for _ in range(5):
        assert main_login(client, annotator.username, "wrong").status_code == 200
    assert main_login(client, annotator.username, TEST_PASSWORD).status_code == 429
    other = Client(REMOTE_ADDR="198.51.100.8")
    assert main_login(other, annotator.username, TEST_PASSWORD).status_code == 302
