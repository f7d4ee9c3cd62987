"""Webhook endpoints through the API (issue 29): admins list, register (the secret in that
answer only; an Idempotency-Key replays it and registers once), read, change (PUT, PATCH) and
delete endpoints through the Webhooks pages' services (target checks, events, audit); every
other role is refused as the access table says, another project's endpoint is a 404."""

import json

import pytest
from django.urls import reverse

from goldset.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from goldset.services import webhooks
from goldset.services.projects import grant_role
from tests.factories import UserFactory, default_project
from tests.goldset.project_support import other_project
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"
HOOK = {"url": "http://127.0.0.1:9/hook", "events": ["label.submitted", "triple.resolved"]}


def send(client, method, url, body, **headers):
    return getattr(client, method)(
        url, json.dumps(body), content_type="application/json", **headers
    )


@pytest.fixture
def private_ok(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True


@pytest.fixture
def outsider():
    user = UserFactory(username="hook-outsider")
    grant_role(project=other_project(slug="hooks-elsewhere"), user=user, role=Role.ADMIN)
    return user


def test_an_admin_registers_reads_changes_and_deletes_an_endpoint(
    client_for, admin_user, private_ok
):
    api = client_for(admin_user)
    created = send(api, "post", reverse("api:webhooks"), {**HOOK, "description": "ci"})
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["secret"].startswith("whsec_") and body["events"] == HOOK["events"]
    assert created["Location"] == reverse("api:webhook", args=[body["id"]])
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret == body["secret"] and endpoint.project == default_project()
    one = api.get(created["Location"]).json()
    assert "secret" not in one and one["description"] == "ci"
    assert [e["id"] for e in api.get(reverse("api:webhooks")).json()["results"]] == [body["id"]]

    put = send(
        api, "put", created["Location"], {"url": "http://127.0.0.1:9/b", "events": ["tag.moved"]}
    )
    assert put.status_code == 200 and put.json()["events"] == ["tag.moved"]
    assert put.json()["description"] == ""  # PUT replaces every field
    patch = send(api, "patch", created["Location"], {"enabled": False})
    assert patch.status_code == 200
    assert (patch.json()["enabled"], patch.json()["url"]) == (False, "http://127.0.0.1:9/b")
    deleted = api.delete(created["Location"])
    assert deleted.status_code == 204 and not WebhookEndpoint.objects.exists()
    assert api.get(created["Location"]).status_code == 404
    verbs = list(
        AuditEvent.objects.filter(verb__startswith="webhook_endpoint_")
        .order_by("pk")
        .values_list("verb", flat=True)
    )
    assert verbs == [
        "webhook_endpoint_created",
        "webhook_endpoint_updated",
        "webhook_endpoint_disabled",  # the enabled switch alone: the page's service
        "webhook_endpoint_deleted",
    ]


def test_a_retried_registration_with_its_idempotency_key_registers_once(
    client_for, admin_user, private_ok
):
    api = client_for(admin_user)
    first = send(api, "post", reverse("api:webhooks"), HOOK, HTTP_IDEMPOTENCY_KEY="hook-1")
    again = send(api, "post", reverse("api:webhooks"), HOOK, HTTP_IDEMPOTENCY_KEY="hook-1")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json() and WebhookEndpoint.objects.count() == 1


def test_a_private_target_is_a_422_naming_the_url_and_registers_nothing(
    client_for, admin_user, no_outside_connections
):
    response = send(client_for(admin_user), "post", reverse("api:webhooks"), HOOK)
    assert response.status_code == 422 and response["Content-Type"] == PROBLEM
    assert response.json()["errors"][0]["field"] == "url"
    assert not WebhookEndpoint.objects.exists() and no_outside_connections == []


@pytest.mark.parametrize(
    "body,field",
    [
        ({**HOOK, "events": ["label.sent"]}, "events"),
        ({**HOOK, "events": []}, "events"),
        ({**HOOK, "url": "not a url"}, "url"),
        ({"events": HOOK["events"]}, "url"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(client_for, admin_user, private_ok, body, field):
    response = send(client_for(admin_user), "post", reverse("api:webhooks"), body)
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM
    assert response.json()["errors"][0]["field"] == field
    assert not WebhookEndpoint.objects.exists()


def test_only_admins_of_the_project_manage_endpoints(
    client, client_for, annotator, lead, admin_user, outsider, private_ok
):
    endpoint, _ = webhooks.create_webhook_endpoint(
        project=default_project(), actor=admin_user, **HOOK
    )
    detail = reverse("api:webhook", args=[endpoint.pk])
    delivery = webhooks.send_test_event(actor=admin_user, endpoint=endpoint)
    for who, expected in [
        (client, 401),
        (client_for(annotator), 403),
        (client_for(lead), 403),
        (client_for(outsider), 404),
    ]:
        for response in (
            who.get(reverse("api:webhooks")),
            send(who, "post", reverse("api:webhooks"), HOOK),
            who.get(detail),
            send(who, "patch", detail, {"enabled": False}),
            who.delete(detail),
            who.get(reverse("api:webhook_deliveries", args=[endpoint.pk])),
            who.post(reverse("api:webhook_test", args=[endpoint.pk])),
            who.post(reverse("api:webhook_redeliver", args=[delivery.pk])),
        ):
            assert response.status_code == expected, (who, response.content[:200])
            assert response["Content-Type"] == PROBLEM
    assert WebhookEndpoint.objects.get().enabled and WebhookEndpoint.objects.count() == 1
    assert WebhookDelivery.objects.count() == 1  # the admin's test event only


def test_another_projects_endpoint_is_a_404(client_for, admin_user, private_ok):
    theirs, _ = webhooks.create_webhook_endpoint(
        project=other_project(slug="hooks-beta"), actor=admin_user, **HOOK
    )
    api = client_for(admin_user)  # an installation admin: a member of both projects
    assert api.get(reverse("api:webhook", args=[theirs.pk])).status_code == 404
    assert api.get(reverse("api:webhooks")).json()["results"] == []
    prefixed = f"/api/v1/projects/hooks-beta/webhooks/{theirs.pk}/"
    assert api.get(prefixed).json()["id"] == theirs.pk


def test_deleting_an_endpoint_drops_its_queued_deliveries(
    client_for, admin_user, private_ok, django_capture_on_commit_callbacks
):
    endpoint, _ = webhooks.create_webhook_endpoint(
        project=default_project(), actor=admin_user, **HOOK
    )
    with django_capture_on_commit_callbacks(execute=False):
        (delivery,) = webhooks.emit(
            WebhookEvent.LABEL_SUBMITTED, {"record": "r-1"}, project=default_project()
        )
    assert (
        client_for(admin_user).delete(reverse("api:webhook", args=[endpoint.pk])).status_code == 204
    )
    assert not WebhookDelivery.objects.exists()
    assert webhooks.deliver_webhook(delivery_id=delivery.pk) == "missing"  # a late message


def test_an_admin_sends_a_test_event_reads_the_log_and_redelivers_a_finished_delivery(
    client_for, admin_user, private_ok
):
    endpoint, _ = webhooks.create_webhook_endpoint(
        project=default_project(), actor=admin_user, **HOOK
    )
    api = client_for(admin_user)
    sent = api.post(reverse("api:webhook_test", args=[endpoint.pk]))
    assert sent.status_code == 202, sent.content
    assert (sent.json()["event_type"], sent.json()["status"]) == ("webhook.test", "pending")
    log = api.get(reverse("api:webhook_deliveries", args=[endpoint.pk])).json()["results"]
    assert [d["id"] for d in log] == [sent.json()["id"]]
    redeliver = reverse("api:webhook_redeliver", args=[sent.json()["id"]])
    still_open = api.post(redeliver)
    assert still_open.status_code == 409 and still_open["Content-Type"] == PROBLEM
    WebhookDelivery.objects.filter(pk=sent.json()["id"]).update(status="failed", attempts=8)
    again = api.post(redeliver)
    assert again.status_code == 202 and again.json()["status"] == "pending"
    assert again.json()["max_attempts"] == 9
    assert AuditEvent.objects.filter(verb="webhook_redelivered").count() == 1
    send(api, "patch", reverse("api:webhook", args=[endpoint.pk]), {"enabled": False})
    disabled = api.post(reverse("api:webhook_test", args=[endpoint.pk]))
    assert disabled.status_code == 409 and "disabled" in disabled.json()["detail"]


def test_disabling_an_endpoint_needs_no_url_check(client_for, admin_user, private_ok, settings):
    endpoint, _ = webhooks.create_webhook_endpoint(
        project=default_project(), actor=admin_user, **HOOK
    )
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False  # its URL would now be refused
    url = reverse("api:webhook", args=[endpoint.pk])
    response = send(client_for(admin_user), "patch", url, {"enabled": False})
    assert response.status_code == 200 and response.json()["enabled"] is False
    refused = send(client_for(admin_user), "patch", url, {"description": "x"})
    assert refused.status_code == 422 and refused.json()["errors"][0]["field"] == "url"


def test_another_projects_delivery_is_a_404(client_for, admin_user, private_ok, lead):
    theirs, _ = webhooks.create_webhook_endpoint(
        project=other_project(slug="hooks-gamma"), actor=admin_user, **HOOK
    )
    delivery = webhooks.send_test_event(actor=admin_user, endpoint=theirs)
    api = client_for(admin_user)
    assert api.post(reverse("api:webhook_redeliver", args=[delivery.pk])).status_code == 404
    assert api.get(reverse("api:webhook_deliveries", args=[theirs.pk])).status_code == 404
    assert api.post(reverse("api:webhook_test", args=[theirs.pk])).status_code == 404
    for path in (
        reverse("api:webhook_deliveries", args=[theirs.pk]),
        reverse("api:webhook_test", args=[theirs.pk]),
    ):
        assert client_for(lead).get(path).status_code == 403
