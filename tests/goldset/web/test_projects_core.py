"""Projects (issue 27): the project comes from the URL, membership decides access (404 when not a
member), roles are per project, and the project pages manage projects and members."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from django.urls import get_script_prefix, reverse

from goldset.models import (
    DEFAULT_PROJECT_SLUG,
    Domain,
    GoldVersion,
    Project,
    ProjectMembership,
    default_project_id,
)
from goldset.models.projects import MEMBER_ROLES
from goldset.services.projects import (
    ProjectRefused,
    create_project,
    delete_project,
    grant_role,
    remove_member,
)
from tests.factories import UserFactory
from workbench.models import ApiToken
from workbench.project_urls import project_url, root_url
from workbench.roles import Role, roles_of
from workbench.services.api_tokens import create_api_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_projects(make_user):
    boss = make_user(Role.ADMIN, username="install-admin")
    bot = create_project(name="Customer bot", slug="customer-bot", by=boss)
    policy = create_project(name="Policy assistant", slug="policy", by=boss)
    return bot, policy


def member(username, **roles):
    """A person who holds ``roles`` ({project: role}) and nothing in the default project."""
    user = UserFactory(username=username)
    for project, role in roles.items():
        grant_role(project=Project.objects.get(slug=project), user=user, role=role)
    return user


def login(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def test_member_roles_are_the_workbench_roles():
    assert MEMBER_ROLES == Role.choices


def test_a_project_page_lives_under_its_slug_and_links_stay_in_it(two_projects):
    ann = member("ann", **{"customer-bot": Role.ANNOTATOR})
    page = login(ann).get("/p/customer-bot/corpus/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'href="/p/customer-bot/corpus/"' in html and 'href="/corpus/' not in html
    assert 'id="project-switch"' in html and "Customer bot" in html
    assert get_script_prefix() == "/"  # the mount ends with the request


def test_a_project_without_the_trailing_slash_redirects(two_projects):
    ann = member("ann", **{"customer-bot": Role.ANNOTATOR})
    answer = login(ann).get("/p/customer-bot")
    assert answer.status_code == 301 and answer["Location"] == "/p/customer-bot/"


@pytest.mark.parametrize("path", ["/p/policy/corpus/", "/p/nowhere/corpus/", "/corpus/"])
def test_not_a_member_gets_404(two_projects, path):
    ann = member("ann", **{"customer-bot": Role.ANNOTATOR})
    assert login(ann).get(path).status_code == 404


def test_anonymous_callers_go_to_the_login_page_whatever_the_project(two_projects):
    for path in ("/p/policy/corpus/", "/p/nowhere/corpus/"):
        answer = Client().get(path)
        assert answer.status_code == 302
        assert answer["Location"] == f"/login/?next={path}"


def test_roles_are_per_project(two_projects):
    both = member("both", **{"customer-bot": Role.LEAD, "policy": Role.ANNOTATOR})
    c = login(both)
    assert c.get("/p/customer-bot/quality/agreement/").status_code == 200
    assert c.get("/p/policy/quality/agreement/").status_code == 403
    assert c.get("/p/policy/answers/").status_code == 200
    assert c.get("/p/customer-bot/answers/").status_code == 403


def test_a_role_change_applies_at_the_next_request(two_projects):
    bot, _ = two_projects
    person = member("person", **{"customer-bot": Role.ANNOTATOR})
    c = login(person)
    assert c.get("/p/customer-bot/quality/agreement/").status_code == 403
    grant_role(project=bot, user=person, role=Role.LEAD)
    assert c.get("/p/customer-bot/quality/agreement/").status_code == 200
    remove_member(project=bot, user=person)
    assert c.get("/p/customer-bot/quality/agreement/").status_code == 404


def test_installation_admins_hold_admin_in_every_project(two_projects, make_user):
    boss = make_user(Role.ADMIN, username="other-boss")
    c = login(boss)
    assert c.get("/p/policy/project/members/").status_code == 200
    assert c.get("/p/customer-bot/audit/").status_code == 200


def test_the_projects_home_lists_each_project_of_the_person(two_projects):
    both = member("both", **{"customer-bot": Role.LEAD, "policy": Role.ANNOTATOR})
    html = login(both).get("/").content.decode()
    assert 'id="project-customer-bot"' in html and 'id="project-policy"' in html
    assert 'href="/p/policy/answers/"' in html  # the annotator's queue in policy
    assert 'href="/p/customer-bot/answers/adjudication/"' in html  # the lead's in the bot
    assert 'href="/p/policy/answers/adjudication/"' not in html


def test_someone_only_in_the_default_project_keeps_the_home_they_had(annotator):
    html = login(annotator).get("/").content.decode()
    assert 'id="inbox"' in html and 'id="project-cards"' not in html


def test_an_api_call_names_its_project_and_a_token_keeps_to_its_own(two_projects):
    bot, policy = two_projects
    both = member("both", **{"customer-bot": Role.ANNOTATOR, "policy": Role.ANNOTATOR})
    token, raw = create_api_token(user=both, name="ci")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    c = Client()
    assert c.get("/api/v1/projects/customer-bot/domains/", **auth).status_code == 200
    assert c.get("/api/v1/projects/policy/domains/", **auth).status_code == 200
    assert c.get("/api/v1/projects/nowhere/domains/", **auth).status_code == 404
    assert c.get("/api/v1/domains/", **auth).status_code == 404  # not in the default project
    ApiToken.objects.filter(pk=token.pk).update(project=bot)
    assert c.get("/api/v1/projects/customer-bot/domains/", **auth).status_code == 200
    assert c.get("/api/v1/projects/policy/domains/", **auth).status_code == 404
    assert Client().get("/api/v1/projects/policy/domains/").status_code == 401


def test_installation_admins_create_projects_and_become_their_admins(make_user):
    boss = make_user(Role.ADMIN, username="boss")
    c = login(boss)
    answer = c.post(reverse("projects:create"), {"name": "RFP responder", "slug": "rfp"})
    assert answer.status_code == 302 and answer["Location"] == "/p/rfp/"
    project = Project.objects.get(slug="rfp")
    assert ProjectMembership.objects.get(project=project, user=boss).role == Role.ADMIN
    again = c.post(reverse("projects:create"), {"name": "RFP", "slug": "rfp"})
    assert again.status_code == 422 and "exists already" in again.content.decode()
    reserved = c.post(reverse("projects:create"), {"name": "x", "slug": "new"})
    assert reserved.status_code == 422 and "reserved" in reserved.content.decode()


def test_a_project_admin_who_is_not_an_installation_admin_cannot_create_projects(two_projects):
    admin = member("proj-admin", **{"policy": Role.ADMIN})
    assert login(admin).get(root_url("projects:create")).status_code == 403


def test_project_admins_manage_members(two_projects):
    _, policy = two_projects
    admin = member("proj-admin", **{"policy": Role.ADMIN})
    newcomer = UserFactory(username="newcomer")
    c = login(admin)
    answer = c.post("/p/policy/project/members/", {"username": "newcomer", "role": "annotator"})
    assert answer.status_code == 302
    assert ProjectMembership.objects.get(project=policy, user=newcomer).role == "annotator"
    assert (
        c.post("/p/policy/project/members/", {"username": "ghost", "role": "annotator"}).status_code
        == 422
    )
    page = c.get("/p/policy/project/members/").content.decode()
    assert "newcomer" in page
    c.post(f"/p/policy/project/members/{newcomer.pk}/remove/")
    assert not ProjectMembership.objects.filter(project=policy, user=newcomer).exists()
    annotator = member("ann", **{"policy": Role.ANNOTATOR})
    assert login(annotator).get("/p/policy/project/members/").status_code == 403


def test_a_project_keeps_its_last_admin(two_projects):
    _, policy = two_projects
    only = ProjectMembership.objects.get(project=policy, role=Role.ADMIN).user
    with pytest.raises(ProjectRefused, match="at least one admin"):
        remove_member(project=policy, user=only)


def test_a_project_with_a_frozen_version_cannot_be_deleted_but_can_be_archived(two_projects):
    bot, policy = two_projects
    GoldVersion.objects.create(project=bot, number=1, sealed=True)
    with pytest.raises(ProjectRefused, match="frozen gold versions"):
        delete_project(project=bot, by=None)
    boss = ProjectMembership.objects.filter(project=bot, role=Role.ADMIN).first().user
    c = login(boss)
    assert c.post("/p/customer-bot/project/archive/", {"archived": "1"}).status_code == 302
    bot.refresh_from_db()
    assert bot.archived
    assert "(archived)" in c.get("/p/customer-bot/corpus/").content.decode()
    wrong = c.post("/p/policy/project/delete/", {"confirm_slug": "nope"})
    assert wrong.status_code == 302 and Project.objects.filter(slug="policy").exists()
    assert c.post("/p/policy/project/delete/", {"confirm_slug": "policy"})["Location"] == "/"
    assert not Project.objects.filter(slug="policy").exists()
    busy = create_project(name="Busy", slug="busy", by=boss)
    Domain.objects.create(project=busy, slug="kept", name="Kept")
    with pytest.raises(ProjectRefused, match="holds data"):
        delete_project(project=busy, by=None)
    assert Project.objects.filter(slug="busy").exists()


def test_urls_into_a_project_from_anywhere(two_projects):
    bot, _ = two_projects
    assert project_url(bot, "answers:queue") == "/p/customer-bot/answers/"
    assert root_url("home") == "/"


def test_roles_outside_a_project_are_those_of_every_project(two_projects):
    both = member("both", **{"customer-bot": Role.LEAD, "policy": Role.ANNOTATOR})
    assert roles_of(both) == {Role.LEAD, Role.ANNOTATOR}
    assert roles_of(AnonymousUser()) == frozenset()


def test_the_rows_of_before_projects_are_in_the_default_project(annotator):
    assert Project.objects.get(pk=default_project_id()).slug == DEFAULT_PROJECT_SLUG
    assert ProjectMembership.objects.get(user=annotator).project.slug == DEFAULT_PROJECT_SLUG
