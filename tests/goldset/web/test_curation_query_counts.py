"""Queue, dashboard and list pages run a constant number of queries as the data grows."""

import pytest
from django.urls import reverse

from goldset.services.customers import grant_customer_permission
from goldset.services.quality import draw_working_slice
from goldset.services.resolution import mark_superseded_pins
from goldset.services.reviews import claim_next_assignment
from tests.factories import BlockVersionFactory, CustomerFactory, default_project
from tests.goldset.bulk_support import vacuum_test_database
from tests.goldset.curation_support import review, write_triple

pytestmark = pytest.mark.django_db


def populate(team, n):
    """n triples: a quarter gold, a quarter dropped (quality tracker), a quarter needing
    re-review, the rest pending; one customer triple; a working slice."""
    author, r1, r2 = team["author"], team["r1"], team["r2"]
    customer = CustomerFactory(slug="acme")
    grant_customer_permission(customer=customer, actor=team["admin"])
    k = n // 4
    for i in range(k):
        t = write_triple(
            author,
            question=f"Gold {i}?",
            **({"source": "customer_permissioned", "customer": customer} if i == 0 else {}),
        )
        review(r1, t, "confirm")
        review(r2, t, "confirm")
    for i in range(k):
        t = write_triple(author, question=f"Dropped {i}?")
        review(r1, t, "flag", ["wrong_source_block"], comment=f"wrong {i}")
        review(r2, t, "flag", ["question_unrealistic"], disagreement_category="compound_claim")
    for i in range(k):
        t = write_triple(author, gold=False, question=f"Old pin {i}?")
        review(r1, t, "confirm")
        v2 = BlockVersionFactory(block=t.current_revision.expected_block_version.block, version=2)
        mark_superseded_pins(superseding_version_ids=[v2.pk])
    for i in range(n - 3 * k):
        write_triple(author, question=f"Pending {i}?")
    draw_working_slice(project=default_project(), quarter="2026Q1", actor=team["lead"], seed=1)
    claim_next_assignment(project=default_project(), reviewer=team["r3"])


@pytest.mark.parametrize("n", [10, 200])
def test_dashboard_query_count_is_constant(client_for, team, django_assert_max_num_queries, n):
    populate(team, n)
    c = client_for(team["lead"])
    with django_assert_max_num_queries(14):  # + review skips per reviewer
        response = c.get(reverse("curation:dashboard"))
    assert response.status_code == 200
    assert len(response.context["quality"]) == min(n // 4, 10)
    assert len(response.context["rereview"]) == min(n // 4, 10)


@pytest.mark.parametrize("n", [10, 200])
def test_review_queue_query_count_is_constant(client_for, team, django_assert_max_num_queries, n):
    vacuum_test_database()  # what earlier tests rolled back (see bulk_support)
    populate(team, n)
    c = client_for(team["r1"])
    # 7: the "waiting" figure reads a bounded window of the open-slots index, then counts in it.
    with django_assert_max_num_queries(7):
        response = c.get(reverse("curation:queue"))
    assert response.status_code == 200
    assert len(response.context["recent"]) == min(20, 3 * (n // 4))
    r3 = client_for(team["r3"])
    with django_assert_max_num_queries(7):
        assert len(r3.get(reverse("curation:queue")).context["open"]) == 1


@pytest.mark.parametrize("n", [10, 200])
def test_list_pages_query_count_is_constant(client_for, team, django_assert_max_num_queries, n):
    populate(team, n)
    pages = [
        (team["author"], reverse("curation:triples")),
        (team["lead"], reverse("curation:rereview")),
        (team["lead"], reverse("curation:quality")),
        (team["lead"], reverse("curation:slice", args=["2026Q1"])),
        (team["admin"], reverse("curation:customers")),
    ]
    for user, url in pages:
        c = client_for(user)
        with django_assert_max_num_queries(6):
            assert c.get(url).status_code == 200
