"""The API tokens page (issue 27): a token is made for one of the person's projects or for all
of them; the page offers only their projects and shows each token's scope. Every role reaches
the page (it is the person's own), wherever they are members."""

import pytest
from django.urls import reverse

from goldset.models import Project
from goldset.services.projects import grant_role
from tests.factories import UserFactory, default_project
from workbench.models import ApiToken, AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def projects():
    return (
        Project.objects.create(name="Customer bot", slug="customer-bot"),
        Project.objects.create(name="RFP responder", slug="rfp"),
    )


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.LEAD, Role.ADMIN])
def test_a_token_for_one_project_is_made_and_shown_with_its_scope(client_for, projects, role):
    bot, _ = projects
    user = UserFactory(username=f"t-{role}")
    grant_role(project=default_project(), user=user, role=Role.ANNOTATOR)
    grant_role(project=bot, user=user, role=role)
    c = client_for(user)
    page = c.get(reverse("api_tokens"))
    choices = dict(page.context["form"].fields["project"].choices)
    assert choices == {
        "": "All my projects",
        "customer-bot": "Customer bot",
        "default": "Default project",
    }
    made = c.post(
        reverse("api_tokens"),
        {"name": "ci", "scope": "write", "project": "customer-bot", "expires_in_days": 30},
    )
    assert made.status_code == 200 and made.context["created"].startswith("gst_")
    token = ApiToken.objects.get(user=user)
    assert token.project == bot and token.scope == "write"
    assert AuditEvent.objects.get(verb="api_token_created").detail["project"] == "customer-bot"
    c.post(reverse("api_tokens"), {"name": "all", "scope": "read", "expires_in_days": 30})
    assert ApiToken.objects.get(user=user, name="all").project is None
    html = c.get(reverse("api_tokens")).content.decode()
    assert "Customer bot <code>customer-bot</code>" in html and "all my projects" in html


def test_a_project_the_person_is_not_in_cannot_be_chosen(client_for, projects):
    user = UserFactory(username="only-default")
    grant_role(project=default_project(), user=user, role=Role.LEAD)
    refused = client_for(user).post(
        reverse("api_tokens"),
        {"name": "ci", "scope": "read", "project": "rfp", "expires_in_days": 30},
    )
    assert refused.status_code == 422 and "project" in refused.context["form"].errors
    assert not ApiToken.objects.filter(user=user).exists()
