"""Every curation page: anonymous → login, wrong role → 403, someone else's object → 404."""

import pytest
from django.urls import reverse

from goldset.services.reviews import claim_next_assignment
from tests.factories import CustomerFactory, default_project
from tests.goldset.curation_support import write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db

ANNOTATOR_PAGES = ["curation:triples", "curation:write", "curation:queue"]
LEAD_PAGES = [
    "curation:dashboard",
    "curation:rereview",
    "curation:slices",
    "curation:spot_checks",
    "curation:quality",
    "curation:import",
]
ADMIN_PAGES = ["curation:customers"]


@pytest.mark.parametrize("name", ANNOTATOR_PAGES + LEAD_PAGES + ADMIN_PAGES + ["curation:blocks"])
def test_anonymous_users_are_sent_to_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", ANNOTATOR_PAGES)
def test_annotator_pages(client_for, annotator, lead, name):
    assert client_for(annotator).get(reverse(name)).status_code == 200
    assert client_for(lead).get(reverse(name)).status_code == 403


@pytest.mark.parametrize("name", LEAD_PAGES)
def test_lead_pages(client_for, annotator, lead, admin_user, name):
    assert client_for(annotator).get(reverse(name)).status_code == 403
    assert client_for(lead).get(reverse(name)).status_code == 200
    assert client_for(admin_user).get(reverse(name)).status_code == 200


@pytest.mark.parametrize("name", ADMIN_PAGES)
def test_admin_pages(client_for, annotator, lead, admin_user, name):
    assert client_for(annotator).get(reverse(name)).status_code == 403
    assert client_for(lead).get(reverse(name)).status_code == 403
    assert client_for(admin_user).get(reverse(name)).status_code == 200


def test_customer_pages_and_actions_are_admin_only(client_for, lead, admin_user):
    customer = CustomerFactory(slug="acme")
    for name in ("curation:grant", "curation:revoke"):
        assert client_for(lead).post(reverse(name, args=[customer.slug])).status_code == 403
    assert client_for(lead).get(reverse("curation:customer", args=["acme"])).status_code == 403
    assert (
        client_for(admin_user).get(reverse("curation:customer", args=["acme"])).status_code == 200
    )
    assert (
        client_for(admin_user).get(reverse("curation:customer", args=["nope"])).status_code == 404
    )


def test_a_triple_is_visible_to_its_author_and_leads_only(client_for, make_user, lead):
    author = make_user(Role.ANNOTATOR, username="author")
    other = make_user(Role.ANNOTATOR, username="other")
    triple = write_triple(author)
    url = reverse("curation:triple", args=[triple.pk])
    assert client_for(author).get(url).status_code == 200
    assert client_for(lead).get(url).status_code == 200
    assert client_for(other).get(url).status_code == 404
    for name in ("curation:revise", "curation:split"):
        assert client_for(other).get(reverse(name, args=[triple.pk])).status_code == 404
    for name in ("curation:message", "curation:drop", "curation:verify"):
        assert client_for(other).post(reverse(name, args=[triple.pk])).status_code == 404
    assert (
        client_for(author).get(reverse("curation:triple", args=[triple.pk + 99])).status_code == 404
    )


def test_a_review_page_belongs_to_its_reviewer(client_for, make_user):
    author = make_user(Role.ANNOTATOR, username="author")
    r1, r2 = (make_user(Role.ANNOTATOR, username=f"rev{i}") for i in (1, 2))
    write_triple(author)
    assignment = claim_next_assignment(project=default_project(), reviewer=r1)
    url = reverse("curation:review", args=[assignment.pk])
    assert client_for(r1).get(url).status_code == 200
    assert client_for(r2).get(url).status_code == 404
    assert client_for(author).get(url).status_code == 404
    assert client_for(r2).post(url, {"verdict": "confirm"}).status_code == 404


def test_lead_actions_need_the_lead_role(client_for, make_user):
    author = make_user(Role.ANNOTATOR, username="author")
    triple = write_triple(author)
    for name in ("curation:repin", "curation:retire"):
        assert client_for(author).post(reverse(name, args=[triple.pk])).status_code == 403
    assert client_for(author).get(reverse("curation:slice", args=["2026Q1"])).status_code == 403
