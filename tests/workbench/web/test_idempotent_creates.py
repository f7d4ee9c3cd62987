"""Issue 24: double-clicking "create token" or "register endpoint" created two. A page form's
hidden token and an API request's Idempotency-Key now create once."""

import re
import threading

import pytest
from django.db import connection
from django.urls import reverse

from goldset.models import WebhookEndpoint, WebhookEvent
from workbench.models import ApiToken, AuditEvent
from workbench.services.api_tokens import create_api_token


def form_token(page) -> str:
    match = re.search(r'name="form_token" value="([^"]+)"', page.content.decode())
    assert match, "the form carries a hidden form token"
    return match.group(1)


@pytest.mark.django_db
def test_a_double_submitted_token_form_creates_one_token(client_for, lead):
    page = client_for(lead)
    token = form_token(page.get(reverse("api_tokens")))
    data = {"name": "ci", "scope": "read", "expires_in_days": 30, "form_token": token}
    first = page.post(reverse("api_tokens"), data)
    second = page.post(reverse("api_tokens"), data)
    assert first.status_code == second.status_code == 200
    assert ApiToken.objects.filter(user=lead).count() == 1
    assert first.context["created"].startswith("gst_")
    assert second.context["created"] is None  # the plaintext was in the first answer only
    assert "already submitted" in second.content.decode()
    assert AuditEvent.objects.filter(verb="api_token_created").count() == 1
    # the answer carries a fresh form: submitting it creates a second token
    again = {**data, "form_token": form_token(first)}
    assert again["form_token"] != token
    page.post(reverse("api_tokens"), again)
    assert ApiToken.objects.filter(user=lead).count() == 2


@pytest.mark.django_db
def test_one_form_token_is_one_users_own(client_for, lead, annotator):
    """The same token value from two users creates one each (keys are per user)."""
    for user in (lead, annotator):
        client_for(user).post(
            reverse("api_tokens"), {"name": "x", "scope": "read", "form_token": "same"}
        )
    assert ApiToken.objects.count() == 2


@pytest.mark.django_db
def test_a_double_submitted_endpoint_form_registers_one_endpoint(client_for, admin_user, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    page = client_for(admin_user)
    token = form_token(page.get(reverse("webhooks:endpoints")))
    data = {
        "url": "http://127.0.0.1:9/hook",
        "events": [WebhookEvent.GOLD_VERSION_FROZEN],
        "enabled": "on",
        "form_token": token,
    }
    first = page.post(reverse("webhooks:endpoints"), data)
    second = page.post(reverse("webhooks:endpoints"), data)
    assert first.status_code == second.status_code == 200
    assert WebhookEndpoint.objects.count() == 1
    assert first.context["secret"] == second.context["secret"] != ""
    assert first.context["created"].pk == second.context["created"].pk


@pytest.mark.django_db(transaction=True)
def test_simultaneous_submits_of_one_form_create_one_token(postgres, lead):
    """Two requests at once (two connections, so PostgreSQL): the second waits for the first's
    row."""
    start = threading.Barrier(4)
    results, errors = [], []

    def submit():
        try:
            start.wait()
            results.append(create_api_token(user=lead, name="ci", form_token="double-click"))
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert ApiToken.objects.filter(user=lead).count() == 1
    assert len({token.pk for token, _ in results}) == 1
    assert sum(raw is not None for _, raw in results) == 1  # one answer holds the plaintext
