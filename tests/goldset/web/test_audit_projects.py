"""The audit log per project (issue 27): under ``/p/<slug>/`` a project's admins see that
project's events (page and CSV); installation-level events (sign-ins, projects, tokens valid in
every project) appear to installation admins only, on the unprefixed page, beside the default
project's; no page shows another project's events."""

import pytest
from django.urls import reverse

from goldset.models import Project
from goldset.services.projects import grant_role
from tests.factories import UserFactory, default_project
from workbench.models import AuditEvent
from workbench.roles import Role
from workbench.services.audit import record_event

pytestmark = pytest.mark.django_db


@pytest.fixture
def project_b():
    return Project.objects.create(name="Customer bot", slug="customer-bot")


@pytest.fixture
def events(project_b):
    record_event(actor=None, verb="canary_in_b", object_type="x", object_id="1", project=project_b)
    record_event(
        actor=None,
        verb="seen_in_default",
        object_type="x",
        object_id="2",
        project=default_project(),
    )
    record_event(actor=None, verb="installation_level", object_type="x", object_id="3")


def verbs_on_page(client, prefix=""):
    response = client.get(prefix + reverse("audit:log"))
    assert response.status_code == 200
    return {e.verb for e in response.context["page"].items}


def verbs_in_csv(client, prefix=""):
    response = client.get(prefix + reverse("audit:csv"))
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    return {v for v in ("canary_in_b", "seen_in_default", "installation_level") if v in text}


def test_a_projects_admin_sees_that_projects_events_only(client_for, project_b, events):
    b_admin = UserFactory(username="b-admin")
    grant_role(project=project_b, user=b_admin, role=Role.ADMIN)
    c = client_for(b_admin)
    assert verbs_on_page(c, "/p/customer-bot") >= {"canary_in_b"}
    assert not verbs_on_page(c, "/p/customer-bot") & {"seen_in_default", "installation_level"}
    assert verbs_in_csv(c, "/p/customer-bot") == {"canary_in_b"}
    assert c.get(reverse("audit:log")).status_code == 404  # not in the default project
    page = c.get("/p/customer-bot" + reverse("audit:log")).content.decode()
    assert 'id="audit-scope"' in page and "Customer bot" in page


def test_the_default_projects_admin_sees_neither_b_nor_installation_events(
    client_for, project_b, events
):
    a_admin = UserFactory(username="a-admin")
    grant_role(project=default_project(), user=a_admin, role=Role.ADMIN)
    c = client_for(a_admin)
    seen = verbs_on_page(c)
    assert "seen_in_default" in seen and not seen & {"canary_in_b", "installation_level"}
    assert verbs_in_csv(c) == {"seen_in_default"}
    assert c.get("/p/customer-bot" + reverse("audit:log")).status_code == 404


def test_installation_admins_see_installation_events_on_the_unprefixed_page(
    client_for, admin_user, project_b, events
):
    c = client_for(admin_user)  # staff: an installation admin
    seen = verbs_on_page(c)
    assert {"seen_in_default", "installation_level"} <= seen and "canary_in_b" not in seen
    assert verbs_in_csv(c) == {"seen_in_default", "installation_level"}
    in_b = verbs_on_page(c, "/p/customer-bot")
    assert "canary_in_b" in in_b and not in_b & {"seen_in_default", "installation_level"}


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.LEAD])
def test_only_a_projects_admins_reach_its_audit_log(client_for, project_b, role):
    user = UserFactory(username=f"b-{role}")
    grant_role(project=project_b, user=user, role=role)
    c = client_for(user)
    assert c.get("/p/customer-bot" + reverse("audit:log")).status_code == 403
    assert c.get("/p/customer-bot" + reverse("audit:csv")).status_code == 403


def test_a_download_of_a_projects_log_is_audited_in_that_project(client_for, project_b, events):
    b_admin = UserFactory(username="b-admin")
    grant_role(project=project_b, user=b_admin, role=Role.ADMIN)
    client_for(b_admin).get("/p/customer-bot" + reverse("audit:csv"))
    assert AuditEvent.objects.get(verb="audit_log_downloaded").project == project_b
