import pytest

from goldset.demo.seed import seed_demo
from goldset.models import Tier, Triple, TripleState
from goldset.services.promotion import preview_reroute
from tests.goldset.answers_helpers import default_project
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_demo_has_promotions_and_a_re_route_waiting_for_confirmation():
    seed_demo(password="demo-pass-123")
    promoted = AuditEvent.objects.filter(verb="promoted")
    assert promoted.count() == 2
    triple = Triple.objects.get(routing_rule="promoted")
    assert (triple.tier, triple.state) == (Tier.GOLD, TripleState.PENDING_REVIEW)
    preview = preview_reroute(project=default_project())
    assert preview.rules_version == 2 and preview.changes and preview.held
    seed_demo(password=None)
    assert AuditEvent.objects.filter(verb="promoted").count() == 2
