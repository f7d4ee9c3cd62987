"""Webhook pages (admins only): register an endpoint and see its secret once, refused targets
as field errors, edit, disable, send a test event, the delivery log (paginated, constant
queries) and its Redeliver button."""

import pytest
from django.urls import reverse

from goldset.models import (
    DeliveryStatus,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from goldset.services import webhooks
from tests.factories import default_project
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db
FROZEN = WebhookEvent.GOLD_VERSION_FROZEN


@pytest.fixture
def allow_private(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True


@pytest.fixture
def endpoint(admin_user, receiver, allow_private):
    endpoint, secret = webhooks.create_webhook_endpoint(
        project=default_project(), actor=admin_user, url=receiver.url, events=[FROZEN]
    )
    receiver.secret = secret
    return endpoint


def make_deliveries(endpoint, n, *, status=DeliveryStatus.FAILED):
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            endpoint=endpoint,
            event_type=FROZEN,
            message_id=f"msg_{endpoint.pk}_{i}",
            payload={"type": FROZEN, "data": {"version": i}},
            status=status,
            attempts=8,
            max_attempts=8,
            last_status_code=500,
            last_error="HTTP 500",
            response_snippet="boom",
        )
        for i in range(n)
    )


def urls(endpoint, delivery):
    return [
        ("get", reverse("webhooks:endpoints")),
        ("get", reverse("webhooks:endpoint", args=[endpoint.pk])),
        ("post", reverse("webhooks:enabled", args=[endpoint.pk])),
        ("post", reverse("webhooks:test", args=[endpoint.pk])),
        ("post", reverse("webhooks:redeliver", args=[delivery.pk])),
    ]


def test_only_admins_reach_the_webhook_pages(client, client_for, annotator, lead, endpoint):
    make_deliveries(endpoint, 1)
    delivery = WebhookDelivery.objects.get()
    for method, url in urls(endpoint, delivery):
        for user in (annotator, lead):
            assert getattr(client_for(user), method)(url).status_code == 403, (user, url)
        anonymous = getattr(client, method)(url)
        assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")
    # nothing changed
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and WebhookDelivery.objects.count() == 1
    assert WebhookEndpoint.objects.get().enabled


def test_admin_registers_an_endpoint_and_sees_its_secret_only_once(
    client_for, admin_user, receiver, allow_private
):
    c = client_for(admin_user)
    page = c.get(reverse("webhooks:endpoints"))
    assert page.status_code == 200 and "No endpoints yet" in page.content.decode()
    response = c.post(
        reverse("webhooks:endpoints"),
        {"url": receiver.url, "events": [FROZEN, "alert.raised"], "description": "CI"},
    )
    endpoint = WebhookEndpoint.objects.get()
    html = response.content.decode()
    assert response.status_code == 200 and 'id="new-secret-value"' in html
    assert endpoint.secret.startswith("whsec_") and endpoint.secret in html
    assert endpoint.events == [FROZEN, "alert.raised"] and endpoint.created_by == admin_user
    for url in (reverse("webhooks:endpoints"), reverse("webhooks:endpoint", args=[endpoint.pk])):
        again = c.get(url).content.decode()
        assert endpoint.secret not in again and receiver.url in again
    assert AuditEvent.objects.filter(verb="webhook_endpoint_created").count() == 1


@pytest.mark.parametrize(
    "url,error",
    [
        ("http://10.0.0.1/hook", "private address"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://localhost:9000/hook", "names this machine"),
        ("not a url", "Enter a valid URL"),
    ],
)
def test_a_refused_target_is_a_field_error_and_nothing_is_stored(
    client_for, admin_user, no_outside_connections, url, error
):
    response = client_for(admin_user).post(
        reverse("webhooks:endpoints"), {"url": url, "events": [FROZEN]}
    )
    assert response.status_code == 422
    assert error in " ".join(response.context["form"].errors["url"])
    assert not WebhookEndpoint.objects.exists() and no_outside_connections == []


def test_admin_edits_disables_and_sends_a_verified_test_event(
    settings, client_for, admin_user, endpoint, receiver, django_capture_on_commit_callbacks
):
    c = client_for(admin_user)
    detail = reverse("webhooks:endpoint", args=[endpoint.pk])
    saved = c.post(
        detail,
        {
            "url": receiver.url,
            "events": ["import.finished"],
            "description": "imports",
            "enabled": "on",
        },
    )
    assert saved.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.events == ["import.finished"] and endpoint.description == "imports"
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    refused = c.post(detail, {"url": "http://192.168.1.9/", "events": [FROZEN], "enabled": "on"})
    assert refused.status_code == 422 and "private address" in refused.content.decode()
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    c.post(reverse("webhooks:enabled", args=[endpoint.pk]), {"enabled": "0"})
    endpoint.refresh_from_db()
    assert not endpoint.enabled
    page = c.post(reverse("webhooks:test", args=[endpoint.pk]), follow=True)
    assert "disabled" in page.content.decode() and not WebhookDelivery.objects.exists()
    c.post(reverse("webhooks:enabled", args=[endpoint.pk]), {"enabled": "1"})
    with django_capture_on_commit_callbacks(execute=True):
        page = c.post(reverse("webhooks:test", args=[endpoint.pk]), follow=True)
    assert "Test event queued" in page.content.decode()
    (request,) = receiver.requests
    assert request.verified and request.payload["type"] == "webhook.test"
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.SUCCEEDED
    assert set(AuditEvent.objects.values_list("verb", flat=True)) >= {
        "webhook_endpoint_updated",
        "webhook_endpoint_disabled",
        "webhook_endpoint_enabled",
        "webhook_test_sent",
    }


def test_redeliver_button_sends_a_failed_delivery_again(
    client_for, admin_user, endpoint, receiver, django_capture_on_commit_callbacks
):
    make_deliveries(endpoint, 1)
    delivery = WebhookDelivery.objects.get()
    c = client_for(admin_user)
    page = c.get(reverse("webhooks:endpoint", args=[endpoint.pk])).content.decode()
    assert reverse("webhooks:redeliver", args=[delivery.pk]) in page and "HTTP 500" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = c.post(reverse("webhooks:redeliver", args=[delivery.pk]))
    assert response["Location"] == reverse("webhooks:endpoint", args=[endpoint.pk])
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempts == 9
    assert receiver.requests[0].verified
    assert receiver.requests[0].headers["webhook-id"] == delivery.message_id
    assert AuditEvent.objects.get(verb="webhook_redelivered").actor == admin_user
    again = c.post(reverse("webhooks:redeliver", args=[delivery.pk]), follow=True)
    assert again.status_code == 200  # a succeeded delivery may be sent once more too


@pytest.mark.parametrize("n", [3, 120])
def test_the_delivery_log_and_the_list_run_constant_queries_and_paginate(
    client_for, admin_user, endpoint, django_assert_num_queries, n
):
    make_deliveries(endpoint, n)
    for i in range(3):
        other, _ = webhooks.create_webhook_endpoint(
            project=default_project(), actor=admin_user, url=f"{endpoint.url}/{i}", events=[FROZEN]
        )
        make_deliveries(other, n)
    c = client_for(admin_user)
    # session, user, roles, the endpoint with its creator, the count, the page
    with django_assert_num_queries(6):
        response = c.get(reverse("webhooks:endpoint", args=[endpoint.pk]))
    assert len(response.context["page"].object_list) == min(n, 50)
    assert response.context["page"].paginator.count == n
    with django_assert_num_queries(4):  # session, user, roles, endpoints with their counts
        listing = c.get(reverse("webhooks:endpoints"))
    assert listing.status_code == 200 and len(listing.context["endpoints"]) == 4
    if n > 50:
        last = c.get(reverse("webhooks:endpoint", args=[endpoint.pk]), {"page": 3})
        assert len(last.context["page"].object_list) == n - 100
