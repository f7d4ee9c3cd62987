"""The identity page (issue 31): only installation admins create and revoke SCIM tokens and
end a person's sessions, tokens or account; every other role is refused, and the people list
pages with a fixed number of queries."""

import pytest
from django.db import reset_queries
from django.test import Client
from django.urls import reverse

from goldset.models import Project
from goldset.services.projects import grant_role
from tests.factories import UserFactory
from workbench.models import ApiToken, AuditEvent, ScimToken, UserSession
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token
from workbench.services.scim import authenticate_scim_token

pytestmark = pytest.mark.django_db

ACTIONS = ("end-sessions", "revoke-tokens", "deactivate", "reactivate")


@pytest.fixture
def people():
    other = Project.objects.create(name="Other", slug="other")
    project_admin = UserFactory(username="project-admin")
    grant_role(project=other, user=project_admin, role=Role.ADMIN)
    outsider = UserFactory(username="outsider")
    grant_role(project=other, user=outsider, role=Role.ANNOTATOR)
    return {
        "annotator": UserFactory(role=Role.ANNOTATOR, username="ann"),
        "lead": UserFactory(role=Role.LEAD, username="lead"),
        "project_admin": project_admin,
        "outsider": outsider,
        "installation_admin": UserFactory(role=Role.ADMIN, username="root"),
    }


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.mark.parametrize("who", ["annotator", "lead", "project_admin", "outsider"])
def test_only_installation_admins_reach_the_page_and_its_actions(people, who):
    c = _client(people[who])
    target = people["annotator"]
    assert c.get(reverse("identity:page")).status_code == 403
    assert c.post(reverse("identity:page"), {"name": "x"}).status_code == 403
    for action in ACTIONS:
        url = reverse("identity:person_action", args=[target.pk, action])
        assert c.post(url).status_code == 403
    token = ScimToken.objects.create(name="t", prefix="p1", digest="d1")
    assert c.post(reverse("identity:scim_token_revoke", args=[token.pk])).status_code == 403
    target.refresh_from_db()
    assert target.is_active and not ScimToken.objects.filter(revoked_at__isnull=False).exists()
    assert not AuditEvent.objects.filter(verb__in=["user_deactivated", "sessions_ended"]).exists()


def test_anonymous_callers_are_sent_to_login(client, people):
    assert client.get(reverse("identity:page")).status_code == 302


def test_an_installation_admin_creates_a_scim_token_shown_once_and_revokes_it(people):
    c = _client(people["installation_admin"])
    made = c.post(reverse("identity:page"), {"name": "Entra ID"})
    assert made.status_code == 200
    raw = made.context["created"]
    assert raw.startswith("scim_") and raw in made.content.decode()
    token = ScimToken.objects.get()
    assert token.digest != raw and raw not in str(token.__dict__)
    assert authenticate_scim_token(raw) == token
    assert raw not in c.get(reverse("identity:page")).content.decode()

    assert c.post(reverse("identity:scim_token_revoke", args=[token.pk])).status_code == 302
    assert authenticate_scim_token(raw) is None
    assert AuditEvent.objects.filter(verb="scim_token_revoked").count() == 1
    assert c.post(reverse("identity:scim_token_revoke", args=[999])).status_code == 404


def test_an_installation_admin_ends_sessions_revokes_tokens_and_deactivates(people):
    admin, target = people["installation_admin"], people["lead"]
    c = _client(admin)
    browser = _client(target)
    create_api_token(user=target, name="ci", expires_in_days=30)

    assert (
        c.post(reverse("identity:person_action", args=[target.pk, "end-sessions"])).status_code
        == 302
    )
    assert browser.get(reverse("api_tokens")).status_code == 302
    assert not UserSession.objects.filter(user=target).exists()

    c.post(reverse("identity:person_action", args=[target.pk, "revoke-tokens"]))
    assert ApiToken.objects.get(user=target).revoked_at is not None
    assert AuditEvent.objects.get(verb="api_tokens_revoked_by_admin").actor == admin

    c.post(reverse("identity:person_action", args=[target.pk, "deactivate"]))
    target.refresh_from_db()
    assert not target.is_active
    assert AuditEvent.objects.get(verb="user_deactivated").actor == admin
    c.post(reverse("identity:person_action", args=[target.pk, "reactivate"]))
    target.refresh_from_db()
    assert target.is_active
    assert c.post(reverse("identity:person_action", args=[target.pk, "explode"])).status_code == 404
    assert c.post(reverse("identity:person_action", args=[99999, "deactivate"])).status_code == 404
    assert (
        c.get(reverse("identity:person_action", args=[target.pk, "deactivate"])).status_code == 405
    )


def test_the_people_list_pages_with_constant_queries(people, django_assert_max_num_queries):
    c = _client(people["installation_admin"])
    url = reverse("identity:page")
    c.get(url)
    reset_queries()  # each request empties the connection's log: start the count at zero
    with django_assert_max_num_queries(12) as few:
        c.get(url)
    baseline = len(few)  # read now: the captured queries are a view of the log
    assert baseline
    for i in range(60):
        user = UserFactory(username=f"bulk{i:02}")
        create_api_token(user=user, name="t", expires_in_days=3)
    reset_queries()
    with django_assert_max_num_queries(baseline):
        page = c.get(url)
    assert len(page.context["page"].object_list) == 50 and page.context["page"].has_next()
    assert "bulk00" in page.content.decode()
    found = c.get(url, {"q": "bulk07"})
    assert [p.username for p in found.context["page"]] == ["bulk07"]


def test_an_admin_cannot_deactivate_themselves(people):
    admin = people["installation_admin"]
    c = _client(admin)
    answer = c.post(reverse("identity:person_action", args=[admin.pk, "deactivate"]), follow=True)
    assert "cannot deactivate yourself" in answer.content.decode()
    admin.refresh_from_db()
    assert admin.is_active and c.get(reverse("identity:page")).status_code == 200
