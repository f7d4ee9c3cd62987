"""The project switcher in the top bar (issue 27): a menu (a ``<details>``: opened by click, Enter
or Space, no script) of the projects the person is a member of — the current one marked — and a
link to the projects home. It never names a project the person is not a member of, and costs no
query of its own (the memberships are read by the statement that resolves the project)."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from goldset.models import Project
from goldset.services.projects import grant_role
from tests.factories import UserFactory
from tests.goldset.web.test_projects_core import login
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def projects():
    return (
        Project.objects.create(name="Alpha bot", slug="alpha-bot"),
        Project.objects.create(name="Zebra Secret", slug="zebra-secret"),
        Project.objects.create(name="Gamma RFP", slug="gamma-rfp"),
    )


def member(username, *projects, role=Role.ANNOTATOR):
    user = UserFactory(username=username)
    for project in projects:
        grant_role(project=project, user=user, role=role)
    return user


def menu(html: str) -> str:
    match = re.search(
        r'<details class="project-switch" id="project-switch">(.*?)</details>', html, re.S
    )
    assert match, "no project menu in the top bar"
    return match.group(1)


def test_a_member_of_two_projects_sees_both_in_the_menu_the_current_one_marked(projects):
    alpha, zebra, _gamma = projects
    html = login(member("both", alpha, zebra)).get("/p/alpha-bot/corpus/").content.decode()
    items = menu(html)
    assert "<summary" in items and "Alpha bot" in items.split("</summary>")[0]
    assert re.findall(r'<li>(?:<a href="([^"]+)"[^>]*>([^<]+))', items) == [
        ("/p/alpha-bot/", "Alpha bot "),
        ("/p/zebra-secret/", "Zebra Secret"),
    ]
    assert '<a href="/p/alpha-bot/" aria-current="true" class="current">Alpha bot' in items
    assert 'href="/p/zebra-secret/" aria-current' not in items
    assert '<li class="project-menu-home"><a href="/">All projects</a></li>' in items
    assert "Gamma RFP" not in html and "gamma-rfp" not in html  # not a member of gamma


def test_a_member_of_one_project_sees_only_it_and_nothing_of_the_others(projects):
    alpha, _zebra, _gamma = projects
    html = login(member("only-alpha", alpha)).get("/p/alpha-bot/corpus/").content.decode()
    items = menu(html)
    assert "Alpha bot" in items and 'href="/p/alpha-bot/"' in items
    for other in ("Zebra Secret", "zebra-secret", "Gamma RFP", "gamma-rfp"):
        assert other not in html, other
    # and on the other project's page there is no page at all
    assert login(member("only-alpha-2", alpha)).get("/p/zebra-secret/corpus/").status_code == 404


def test_an_installation_admin_sees_their_memberships_and_the_project_they_visit(projects):
    alpha, zebra, _gamma = projects
    boss = member("boss", alpha, role=Role.ADMIN)
    boss.is_staff = True
    boss.save(update_fields=["is_staff"])
    html = login(boss).get("/p/zebra-secret/corpus/").content.decode()
    items = menu(html)
    assert '<a href="/p/zebra-secret/" aria-current="true" class="current">Zebra Secret' in items
    assert '<a href="/p/alpha-bot/">Alpha bot</a>' in items
    assert "Gamma RFP" not in items  # the projects home lists every project; the menu, theirs


def test_the_menu_costs_no_query_whatever_the_number_of_projects(projects):
    alpha, zebra, gamma = projects

    def queries(user) -> int:
        c = login(user)
        c.get("/p/alpha-bot/corpus/")  # the session is warm
        with CaptureQueriesContext(connection) as ctx:
            html = c.get("/p/alpha-bot/corpus/").content.decode()
        assert menu(html).count('<li><a href="/p/') == len(user.project_memberships.all())
        return len(ctx.captured_queries)

    more = [Project.objects.create(name=f"Extra {i}", slug=f"extra-{i}") for i in range(5)]
    assert queries(member("one", alpha)) == queries(member("many", alpha, zebra, gamma, *more))
