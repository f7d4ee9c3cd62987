"""Issue 24: security events name the client's address and user agent (only password logins named
an address), and refused API tokens leave a trace that an attacker cannot use to flood the log."""

import datetime as dt

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.factories import TEST_PASSWORD
from workbench.models import ApiToken, AuditEvent, LoginThrottle, ThrottleScope
from workbench.services.accounts import sign_in_with_provider
from workbench.services.api_tokens import create_api_token
from workbench.services.rate_limits import reset_cache_outage

pytestmark = pytest.mark.django_db

ADDRESS = "203.0.113.9"
AGENT = "curl/8.5.0 (edges test)"


@pytest.fixture
def browser():
    """A client calling from ADDRESS with a user agent."""
    reset_cache_outage()
    return Client(REMOTE_ADDR=ADDRESS, HTTP_USER_AGENT=AGENT)


def bearer(raw):
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def assert_from_client(event):
    assert event.detail["address"] == ADDRESS, event.detail
    assert event.detail["user_agent"] == AGENT, event.detail


def test_password_logins_and_failures_name_address_and_user_agent(browser, annotator):
    browser.post(reverse("login"), {"username": annotator.username, "password": "wrong"})
    browser.post(reverse("login"), {"username": annotator.username, "password": TEST_PASSWORD})
    assert_from_client(AuditEvent.objects.get(verb="login_failed"))
    login = AuditEvent.objects.get(verb="login")
    assert login.actor == annotator
    assert_from_client(login)


def test_an_oidc_sign_in_names_address_and_user_agent(browser, settings):
    """The sign-in service runs inside the callback request: the event carries its client."""
    from workbench import request_context
    from workbench.roles import Role

    context = request_context.RequestContext(
        request_id="r" * 16, client_address=ADDRESS, user_agent=AGENT
    )
    with request_context.bound(context):
        user = sign_in_with_provider(
            issuer="https://idp.example.org",
            subject="sub-9",
            claims={"preferred_username": "olga"},
            role=Role.LEAD,
            provider="Acme SSO",
            values=["goldset-leads"],
        )
    login = AuditEvent.objects.get(verb="login")
    assert login.actor == user and login.detail["method"] == "oidc"
    assert_from_client(login)


def test_token_creation_and_revocation_name_address_and_user_agent(browser, lead):
    browser.force_login(lead)
    created = browser.post(reverse("api_tokens"), {"name": "ci", "scope": "read"})
    assert created.status_code == 200
    token = ApiToken.objects.get(user=lead)
    assert browser.post(reverse("api_token_revoke", args=[token.pk])).status_code == 302
    for verb in ("api_token_created", "api_token_revoked"):
        event = AuditEvent.objects.get(verb=verb)
        assert event.actor == lead
        assert_from_client(event)


def test_token_use_and_api_writes_name_address_user_agent_and_token(browser, admin_user):
    _, raw = create_api_token(user=admin_user, name="ci", scope="write")
    prefix = raw.split("_")[1]
    assert browser.get(reverse("api:versions"), **bearer(raw)).status_code == 200
    assert not AuditEvent.objects.filter(verb="api_write").exists()  # a read changes nothing
    response = browser.post(reverse("api:jobs"), {}, content_type="application/json", **bearer(raw))
    assert response.status_code == 400  # refused (no fields), and still audited as a call
    used = AuditEvent.objects.filter(verb="api_token_used").first()
    assert_from_client(used)
    write = AuditEvent.objects.get(verb="api_write")
    assert write.actor == admin_user
    assert write.detail | {"address": "", "user_agent": ""} == {
        "method": "POST",
        "path": "/api/v1/jobs/",
        "status": 400,
        "token": prefix,
        "address": "",
        "user_agent": "",
    }
    assert_from_client(write)


def test_an_api_write_through_a_session_is_audited(browser, admin_user):
    browser.force_login(admin_user)
    response = browser.post(reverse("api:version_freeze"), {}, content_type="application/json")
    assert response.status_code == 422
    write = AuditEvent.objects.get(verb="api_write")
    assert write.actor == admin_user and write.detail["token"] == ""
    assert_from_client(write)


def test_300_refused_tokens_leave_one_event_per_address_and_minute_with_the_count(browser, lead):
    revoked, raw = create_api_token(user=lead, name="old")
    ApiToken.objects.filter(pk=revoked.pk).update(revoked_at=timezone.now())
    for i in range(300):
        token = raw if i % 2 else f"gst_guess{i}_x"
        assert browser.get(reverse("api:versions"), **bearer(token)).status_code == 401
    (event,) = AuditEvent.objects.filter(verb="api_token_refused")
    assert event.actor is None and event.detail["refusals"] == 1
    assert event.detail["path"] == "/api/v1/versions/"
    assert_from_client(event)
    assert raw not in str(event.detail)  # never the token itself

    other = Client(REMOTE_ADDR="198.51.100.20")  # another address has its own event
    assert other.get(reverse("api:versions"), **bearer(raw)).status_code == 401
    assert AuditEvent.objects.filter(verb="api_token_refused").count() == 2

    # a minute later the next refusal from the first address reports the 299 kept silent
    LoginThrottle.objects.filter(scope=ThrottleScope.TOKEN_ADDRESS, key=ADDRESS).update(
        blocked_until=timezone.now() - dt.timedelta(seconds=1)
    )
    assert browser.get(reverse("api:versions"), **bearer(raw)).status_code == 401
    latest = AuditEvent.objects.filter(verb="api_token_refused", detail__address=ADDRESS).first()
    assert latest.pk != event.pk and latest.detail["refusals"] == 300
    assert latest.detail["prefix"] == revoked.prefix


def test_webhook_changes_name_address_and_user_agent(browser, admin_user, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    browser.force_login(admin_user)
    response = browser.post(
        reverse("webhooks:endpoints"),
        {"url": "http://127.0.0.1:9/hook", "events": ["gold_version.frozen"], "enabled": "on"},
    )
    assert response.status_code == 200, response.content[:500]
    event = AuditEvent.objects.get(verb="webhook_endpoint_created")
    assert event.actor == admin_user
    assert_from_client(event)
