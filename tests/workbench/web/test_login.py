import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from tests.factories import TEST_PASSWORD
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=False)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def login(client, username, password):
    return client.post(reverse("login"), {"username": username, "password": password})


def test_login_sends_the_user_home_and_records_an_audit_event(client, annotator, fresh_cache):
    response = login(client, annotator.username, TEST_PASSWORD)
    assert response.status_code == 302 and response["Location"] == reverse("home")
    event = AuditEvent.objects.get(verb="login")
    assert event.actor == annotator and len(event.request_id) == 32


def test_login_follows_a_safe_next_but_not_an_external_one(client, annotator, fresh_cache):
    response = client.post(
        reverse("login") + "?next=/corpus/",
        {"username": annotator.username, "password": TEST_PASSWORD, "next": "/corpus/"},
    )
    assert response["Location"] == "/corpus/"
    client.post(reverse("logout"))
    response = client.post(
        reverse("login"),
        {
            "username": annotator.username,
            "password": TEST_PASSWORD,
            "next": "https://evil.example/",
        },
    )
    assert response["Location"] == reverse("home")


def test_wrong_password_re_renders_the_form_with_an_error(client, annotator, fresh_cache):
    response = login(client, annotator.username, "wrong")
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()
    assert AuditEvent.objects.filter(verb="login_failed").count() == 1


def test_login_is_locked_after_five_failures_even_with_the_right_password(
    client, annotator, settings, fresh_cache
):
    settings.LOGIN_MAX_FAILURES = 5
    for _ in range(5):
        assert login(client, annotator.username, "wrong").status_code == 200
    locked = login(client, annotator.username, TEST_PASSWORD)
    assert locked.status_code == 429
    assert "Too many failed attempts" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    assert AuditEvent.objects.filter(verb="login_locked").count() == 1


def test_lockout_counts_usernames_case_insensitively(client, annotator, fresh_cache):
    for i in range(5):
        login(client, annotator.username.upper() if i % 2 else annotator.username, "wrong")
    assert login(client, annotator.username, TEST_PASSWORD).status_code == 429


def test_a_success_before_the_limit_resets_the_username_counter(client, annotator, fresh_cache):
    for _ in range(4):
        login(client, annotator.username, "wrong")
    assert login(client, annotator.username, TEST_PASSWORD).status_code == 302
    client.post(reverse("logout"))
    for _ in range(4):
        login(client, annotator.username, "wrong")
    assert login(client, annotator.username, TEST_PASSWORD).status_code == 302


def test_logout_needs_post(client_for, annotator):
    c = client_for(annotator)
    assert c.get(reverse("logout")).status_code == 405
    assert c.post(reverse("logout")).status_code == 302
    assert c.get(reverse("home")).status_code == 302


def test_pages_carry_a_nonce_csp_and_no_inline_script(client_for, annotator):
    response = client_for(annotator).get(reverse("home"))
    policy = response["Content-Security-Policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy).group(1)
    assert "script-src 'self' 'nonce-" in policy and "unsafe-inline" not in policy
    html = response.content.decode()
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts and all('src="' in s for s in scripts)
    assert all(f'nonce="{nonce}"' in s for s in scripts)
    assert 'hx-headers=\'{"X-CSRFToken": "' in html
