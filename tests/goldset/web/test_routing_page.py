import pytest
from django.urls import reverse

from goldset.models import RoutingRules
from tests.factories import DomainFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("fixture", ["annotator", "lead"])
def test_only_admins_open_the_routing_rules(request, client_for, fixture):
    assert (
        client_for(request.getfixturevalue(fixture)).get(reverse("routing:rules")).status_code
        == 403
    )


def test_admin_saves_a_new_version_with_a_domain_rule(client_for, admin_user):
    DomainFactory(slug="healthcare_ops")
    c = client_for(admin_user)
    assert "v1 in force" in c.get(reverse("routing:rules")).content.decode()
    response = c.post(
        reverse("routing:rules"),
        {
            "gold_task_types": ["factual_qa"],
            "uncertainty_threshold": "0.7",
            "adversarial_routes_gold": "on",
            "gold_domains": ["healthcare_ops"],
            "note": "healthcare is high-stakes",
        },
        follow=True,
    )
    html = response.content.decode()
    assert "v2 in force" in html and "healthcare is high-stakes" in html
    assert RoutingRules.objects.get(version=2).gold_domains == ["healthcare_ops"]


@pytest.mark.parametrize(
    "threshold,error",
    [
        ("1.5", "less than or equal to 1"),
        ("-0.1", "greater than or equal to 0"),
        ("x", "Enter a number"),
    ],
)
def test_invalid_threshold_re_renders_with_a_field_error(client_for, admin_user, threshold, error):
    response = client_for(admin_user).post(
        reverse("routing:rules"), {"uncertainty_threshold": threshold, "note": "n"}
    )
    assert response.status_code == 422 and error in response.content.decode()
    assert RoutingRules.objects.count() == 1


def test_saving_the_same_rules_says_so_and_creates_nothing(client_for, admin_user):
    response = client_for(admin_user).post(
        reverse("routing:rules"),
        {
            "gold_task_types": ["factual_qa", "rag_synthesis"],
            "uncertainty_threshold": "0.65",
            "adversarial_routes_gold": "on",
            "note": "same",
        },
    )
    assert "already in force" in response.content.decode()
    assert RoutingRules.objects.count() == 1
