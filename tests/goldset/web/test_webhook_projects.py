"""Webhooks per project (issue 27): an endpoint belongs to a project, receives that project's
events only, and its payload names the project; the webhook pages under ``/p/<slug>/`` list and
reach the project's endpoints only (another project's are a 404), and an endpoint registered
there belongs to that project."""

import pytest
from django.urls import reverse

from goldset.models import (
    DeliveryStatus,
    GoldVersion,
    Project,
    ScoringJob,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from goldset.services import webhooks
from goldset.services.projects import grant_role
from tests.factories import UserFactory, default_project
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db
FROZEN = WebhookEvent.GOLD_VERSION_FROZEN


@pytest.fixture
def project_b():
    return Project.objects.create(name="Customer bot", slug="customer-bot")


@pytest.fixture
def endpoints(settings, admin_user, project_b):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    a, _ = webhooks.create_webhook_endpoint(
        project=default_project(), actor=admin_user, url="http://127.0.0.1:9/a", events=[FROZEN]
    )
    b, _ = webhooks.create_webhook_endpoint(
        project=project_b, actor=admin_user, url="http://127.0.0.1:9/canary-b", events=[FROZEN]
    )
    return a, b


def b_admin(project_b):
    user = UserFactory(username="b-admin")
    grant_role(project=project_b, user=user, role=Role.ADMIN)
    return user


def test_an_event_of_a_project_is_delivered_to_its_endpoints_only(
    endpoints, project_b, django_capture_on_commit_callbacks
):
    a, b = endpoints
    with django_capture_on_commit_callbacks(execute=False):
        to_b = webhooks.emit(FROZEN, {"version": 1}, project=project_b)
        to_a = webhooks.emit(FROZEN, {"version": 2}, project=default_project())
    assert [d.endpoint_id for d in to_b] == [b.pk]
    assert [d.endpoint_id for d in to_a] == [a.pk]
    assert to_b[0].payload["project"] == {"slug": "customer-bot", "name": "Customer bot"}
    assert to_a[0].payload["project"]["slug"] == "default"
    assert webhooks.wants(FROZEN, project=project_b)
    other = Project.objects.create(name="RFP", slug="rfp")
    assert not webhooks.wants(FROZEN, project=other)
    assert webhooks.emit(FROZEN, {"version": 3}, project=other) == []


def test_a_payloads_links_lead_into_its_project(settings, endpoints, project_b):
    settings.WEBHOOKS_LINK_BASE_URL = "https://gs.example.org"
    version = GoldVersion.objects.create(project=project_b, number=4, sealed=True)
    job = ScoringJob.objects.create(
        project=project_b, version=version, name="x", kind="retrieval", run_format="trec",
        run_filename="r", run_sha256="0" * 64, run_size=1,
    )  # fmt: skip
    links = webhooks.gold_version_data(version)["links"]
    assert links == {
        "page": "https://gs.example.org/p/customer-bot/versions/v4/",
        "api": "https://gs.example.org/api/v1/projects/customer-bot/versions/4/",
    }
    assert webhooks.scoring_job_data(job)["links"]["api"] == (
        f"https://gs.example.org/api/v1/projects/customer-bot/jobs/{job.pk}/"
    )


def test_a_test_event_names_its_endpoints_project(endpoints, django_capture_on_commit_callbacks):
    _, b = endpoints
    with django_capture_on_commit_callbacks(execute=False):
        delivery = webhooks.send_test_event(actor=None, endpoint=b)
    assert delivery.payload["project"]["slug"] == "customer-bot"
    assert AuditEvent.objects.get(verb="webhook_test_sent").project == b.project


def test_the_pages_of_a_project_list_and_reach_its_endpoints_only(
    client_for, endpoints, project_b, admin_user
):
    a, b = endpoints
    WebhookDelivery.objects.create(
        endpoint=b, event_type=FROZEN, message_id="msg_b", payload={}, status=DeliveryStatus.FAILED,
        attempts=1, max_attempts=1,
    )  # fmt: skip
    delivery_b = WebhookDelivery.objects.get(endpoint=b)
    c = client_for(b_admin(project_b))
    listed = c.get("/p/customer-bot" + reverse("webhooks:endpoints"))
    assert listed.status_code == 200
    assert [e.pk for e in listed.context["endpoints"]] == [b.pk]
    assert "canary-b" in listed.content.decode() and "127.0.0.1:9/a" not in listed.content.decode()
    assert c.get("/p/customer-bot" + reverse("webhooks:endpoint", args=[b.pk])).status_code == 200
    assert c.get("/p/customer-bot" + reverse("webhooks:endpoint", args=[a.pk])).status_code == 404
    # the default project's admin: its own endpoint only; B's are 404, even to act on them
    a_admin = UserFactory(username="a-admin")
    grant_role(project=default_project(), user=a_admin, role=Role.ADMIN)
    ca = client_for(a_admin)
    page = ca.get(reverse("webhooks:endpoints"))
    assert [e.pk for e in page.context["endpoints"]] == [a.pk]
    assert "canary-b" not in page.content.decode()
    for method, url in (
        ("get", reverse("webhooks:endpoint", args=[b.pk])),
        ("post", reverse("webhooks:enabled", args=[b.pk])),
        ("post", reverse("webhooks:test", args=[b.pk])),
        ("post", reverse("webhooks:redeliver", args=[delivery_b.pk])),
    ):
        assert getattr(ca, method)(url).status_code == 404, url
    assert ca.get("/p/customer-bot" + reverse("webhooks:endpoints")).status_code == 404
    b.refresh_from_db()
    assert b.enabled


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.LEAD])
def test_only_a_projects_admins_reach_its_webhook_pages(client_for, project_b, role):
    user = UserFactory(username=f"b-{role}")
    grant_role(project=project_b, user=user, role=role)
    assert client_for(user).get("/p/customer-bot/webhooks/").status_code == 403


def test_an_endpoint_registered_under_a_project_belongs_to_it(settings, client_for, project_b):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    c = client_for(b_admin(project_b))
    response = c.post(
        "/p/customer-bot" + reverse("webhooks:endpoints"),
        {"url": "http://127.0.0.1:9/new", "events": [FROZEN]},
    )
    assert response.status_code == 200
    assert WebhookEndpoint.objects.get(url="http://127.0.0.1:9/new").project == project_b
