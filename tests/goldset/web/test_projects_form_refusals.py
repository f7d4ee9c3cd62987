"""Cross-project references on the pages' forms answer 422 (issue 27, with issue 24's "form errors
answer 422"): a form of project A that names an object of project B — a block version on the
revise and split pages, a customer on the write page, a domain on the routing-rules and freeze
pages — comes back with the error, a 4xx, and nothing is saved. (The write and release-report
pages: ``test_projects_curation`` and ``test_projects_versions``.)"""

import pytest
from django.urls import reverse

from goldset.models import GoldVersion, RoutingRules, Triple, TripleState
from goldset.services.customers import create_customer, grant_customer_permission
from goldset.services.routing import get_active_rules
from tests.goldset.web.test_projects_curation import (
    _corpus,
    _member,
    _review,
    _write,
    two,  # noqa: F401
)
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def in_discussion(two):  # noqa: F811
    """A triple of A flagged into discussion, A's author, and B's block version."""
    a, _b, author, a_version, b_version = two
    triple = _write(a, author, a_version, "Which cipher?", gold=False)
    _review(a, _member(a, "rev-a", Role.ANNOTATOR), triple, "flag", ["answer_not_entailed"])
    assert triple.state == TripleState.IN_DISCUSSION
    return triple, author, a_version, b_version


def test_the_revise_page_of_a_refuses_a_block_of_b_with_422(in_discussion, client_for):
    triple, author, _a_version, b_version = in_discussion
    response = client_for(author).post(
        "/p/alpha" + reverse("curation:revise", args=[triple.pk]),
        {
            "question": "Which cipher, exactly?",
            "block_version": f"{b_version.block.block_id}@1",
            "expected_answer": "AES-256.",
        },
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert "There is no version 1 of block" in page and "Bravo text" not in page
    triple.refresh_from_db()
    assert (triple.state, triple.revisions.count()) == (TripleState.IN_DISCUSSION, 1)


def test_the_split_page_of_a_refuses_a_block_of_b_with_422(in_discussion, client_for):
    triple, author, a_version, b_version = in_discussion
    response = client_for(author).post(
        "/p/alpha" + reverse("curation:split", args=[triple.pk]),
        {
            "question_1": "Which cipher?",
            "block_version_1": f"{a_version.block.block_id}@1",
            "expected_answer_1": "AES-256.",
            "question_2": "Which key size?",
            "block_version_2": f"{b_version.block.block_id}@1",
            "expected_answer_2": "256 bits.",
        },
    )
    assert response.status_code == 422
    assert "There is no version 1 of block" in response.content.decode()
    triple.refresh_from_db()
    assert triple.state == TripleState.IN_DISCUSSION and not triple.children.exists()


def test_the_write_page_of_a_refuses_a_customer_of_b_with_422(two, client_for):  # noqa: F811
    a, b, author, a_version, _b_version = two
    admin_b = _member(b, "admin-b", Role.ADMIN)
    customer = create_customer(project=b, name="Globex", actor=admin_b)
    grant_customer_permission(customer=customer, actor=admin_b)
    response = client_for(author).post(
        "/p/alpha" + reverse("curation:write"),
        {
            "question": "Which cipher?",
            "block_version": f"{a_version.block.block_id}@1",
            "expected_answer": "AES-256.",
            "task_type": "factual_qa",
            "difficulty": "standard",
            "source": "customer_permissioned",
            "customer": customer.pk,
        },
    )
    assert response.status_code == 422
    assert (
        "customer" in response.context["form"].errors and "Globex" not in response.content.decode()
    )
    assert not Triple.objects.exists()


def test_the_routing_page_of_a_refuses_a_domain_of_b_with_422(two, client_for):  # noqa: F811
    a, b, _author, _a_version, _b_version = two
    admin_a = _member(a, "admin-a", Role.ADMIN)
    before = get_active_rules(project=a)
    response = client_for(admin_a).post(
        "/p/alpha" + reverse("routing:rules"),
        {
            "gold_task_types": ["factual_qa"],
            "uncertainty_threshold": "0.5",
            "gold_domains": ["dom-bravo"],  # B's domain
            "note": "route B's domain",
        },
    )
    assert response.status_code == 422
    assert "gold_domains" in response.context["form"].errors
    assert list(RoutingRules.objects.filter(project=a)) == [before]
    assert not RoutingRules.objects.filter(project=b).exists()


def test_the_freeze_page_of_a_refuses_a_domain_of_b_with_422(two, client_for):  # noqa: F811
    a, _b, _author, a_version, _b_version = two
    admin_a = _member(a, "admin-a", Role.ADMIN)
    _corpus(a, "alpha-two", "More alpha text.")
    response = client_for(admin_a).post(
        "/p/alpha" + reverse("exports:freeze"), {"action": "freeze", "domain": "dom-bravo"}
    )
    assert response.status_code == 422
    assert "domain" in response.context["form"].errors
    assert not GoldVersion.objects.exists()
    # Its htmx preview keeps 200, so htmx swaps the error in (only 2xx answers are swapped).
    preview = client_for(admin_a).post(
        "/p/alpha" + reverse("exports:freeze"),
        {"action": "preview", "domain": "dom-bravo"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="freeze-preview",
    )
    fragment = preview.content.decode()
    assert preview.status_code == 200 and "<html" not in fragment
    assert "Domain: Select a valid choice" in fragment
