"""Personal API tokens: the page (shown once, revoke), hashed storage, scopes, expiry, last use,
per-token rate limits, an audit event per use, and the role table through a read-only token."""

import datetime as dt

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from tests.goldset.api.test_api import (
    ENDPOINTS,
    PROBLEM,
    WRITE_ENDPOINTS,
    empty_body,
    url_for,
)
from workbench.models import ApiToken, AuditEvent
from workbench.services.api_tokens import create_api_token
from workbench.services.rate_limits import reset_cache_outage

pytestmark = pytest.mark.django_db


@pytest.fixture
def fresh_rate_limits():
    cache.clear()
    reset_cache_outage()
    yield
    cache.clear()


def bearer(raw):
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def test_the_token_page_answers_each_role_and_anonymous_goes_to_login(
    client, client_for, annotator, lead, admin_user
):
    assert client.get(reverse("api_tokens")).status_code == 302
    for user in (annotator, lead, admin_user):
        assert client_for(user).get(reverse("api_tokens")).status_code == 200


def test_a_created_token_is_shown_once_and_stored_only_as_a_hash(client_for, lead):
    page = client_for(lead)
    response = page.post(
        reverse("api_tokens"), {"name": "ci", "scope": "read", "expires_in_days": 30}
    )
    assert response.status_code == 200
    raw = response.context["created"]
    assert raw.startswith("gst_") and raw.encode() in response.content
    token = ApiToken.objects.get(user=lead)
    assert token.digest != raw and raw not in token.digest
    assert not ApiToken.objects.filter(digest__contains=raw.split("_")[-1]).exists()
    assert token.expires_at > timezone.now() + dt.timedelta(days=29)
    again = page.get(reverse("api_tokens"))
    assert raw.encode() not in again.content
    assert token.prefix.encode() in again.content


def test_an_invalid_form_is_422_and_creates_nothing(client_for, lead):
    response = client_for(lead).post(reverse("api_tokens"), {"name": "", "scope": "root"})
    assert response.status_code == 422
    assert not ApiToken.objects.exists()


def test_a_token_call_is_audited_and_sets_last_use(client, lead, fresh_rate_limits):
    token, raw = create_api_token(user=lead, name="ci")
    response = client.get(reverse("api:versions"), **bearer(raw))
    assert response.status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None
    event = AuditEvent.objects.get(verb="api_token_used")
    assert event.actor == lead and event.detail["path"] == "/api/v1/versions/"


def test_revoked_expired_and_unknown_tokens_are_401_with_a_bearer_challenge(
    client, client_for, lead, annotator, fresh_rate_limits
):
    revoked, raw_revoked = create_api_token(user=lead, name="old")
    assert client_for(lead).post(reverse("api_token_revoke", args=[revoked.pk])).status_code == 302
    expired, raw_expired = create_api_token(user=lead, name="short", expires_in_days=1)
    ApiToken.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - dt.timedelta(1))
    for raw in (raw_revoked, raw_expired, "gst_nothing_here", "not-a-token"):
        response = client.get(reverse("api:versions"), **bearer(raw))
        assert response.status_code == 401
        assert response["Content-Type"] == PROBLEM
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_nobody_revokes_someone_elses_token(client_for, lead, annotator):
    token, _ = create_api_token(user=lead, name="mine")
    response = client_for(annotator).post(reverse("api_token_revoke", args=[token.pk]))
    assert response.status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_a_read_token_cannot_write_and_a_write_token_can(client, admin_user, fresh_rate_limits):
    _, read = create_api_token(user=admin_user, name="r", scope="read")
    _, write = create_api_token(user=admin_user, name="w", scope="write")
    body = {"version": 1, "run": [{"query_id": "Q"}]}
    refused = client.post(
        reverse("api:jobs"), body, content_type="application/json", **bearer(read)
    )
    assert refused.status_code == 403
    assert refused["Content-Type"] == PROBLEM
    allowed = client.post(
        reverse("api:jobs"), body, content_type="application/json", **bearer(write)
    )
    assert allowed.status_code == 422  # past authentication and scope: v1 does not exist
    assert "not frozen" in allowed.json()["detail"]


def test_each_token_has_its_own_rate_limit(client, lead, settings, fresh_rate_limits):
    settings.API_TOKEN_RATE = "3/min"
    _, first = create_api_token(user=lead, name="a")
    _, second = create_api_token(user=lead, name="b")
    codes = [client.get(reverse("api:domains"), **bearer(first)).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    limited = client.get(reverse("api:domains"), **bearer(first))
    assert limited["Content-Type"] == PROBLEM and "Retry-After" in limited
    assert client.get(reverse("api:domains"), **bearer(second)).status_code == 200


def test_the_role_table_holds_through_a_read_only_token(
    client, lead, annotator, admin_user, api_objects, fresh_rate_limits
):
    """A read token reaches exactly what its user reaches for reading, and writes nothing:
    every write endpoint answers it 403 (or what the role table answers first)."""
    for user, column in ((annotator, 3), (lead, 4), (admin_user, 5)):
        _, raw = create_api_token(user=user, name=f"ro-{user.pk}", scope="read")
        for row in ENDPOINTS:
            url = url_for(row[0], row[1], api_objects)
            assert client.get(url, **bearer(raw)).status_code == row[column], (user, row[0])
        for row in WRITE_ENDPOINTS:
            response = client.post(
                url_for(row[0], row[1], api_objects), **empty_body(row[0]), **bearer(raw)
            )
            assert response.status_code == 403, (user, row[0], response.content[:200])
            assert response["Content-Type"] == PROBLEM
