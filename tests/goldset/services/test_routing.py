from decimal import Decimal

import pytest

from goldset.models import RoutingRules, Tier, default_project_id
from goldset.services.routing import (
    RoutingRulesUnchanged,
    decide_tier,
    get_active_rules,
    route_case,
    update_routing_rules,
)
from tests.goldset.answers_helpers import default_project
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_default_rules_are_the_seed_003_rules_as_version_1():
    rules = get_active_rules(project=default_project())
    assert (
        rules.version,
        sorted(rules.gold_task_types),
        rules.uncertainty_threshold,
        rules.adversarial_routes_gold,
    ) == (
        1,
        ["factual_qa", "rag_synthesis"],
        Decimal("0.650"),
        True,
    )


@pytest.mark.parametrize(
    "case,tier,rule",
    [
        ({"task_type": "factual_qa"}, Tier.GOLD, "task_type:factual_qa"),
        ({"task_type": "rag_synthesis"}, Tier.GOLD, "task_type:rag_synthesis"),
        ({"task_type": "summarization", "uncertainty": 0.65}, Tier.GOLD, "uncertainty>=0.65"),
        ({"task_type": "summarization", "uncertainty": 0.649}, Tier.TRIAGE, "default"),
        ({"task_type": "code_generation", "adversarial": True}, Tier.GOLD, "adversarial"),
        ({"task_type": "summarization"}, Tier.TRIAGE, "default"),
        ({"task_type": "summarization", "uncertainty": None}, Tier.TRIAGE, "default"),
    ],
)
def test_each_rule_fires_on_its_own(case, tier, rule):
    decision = route_case(**case, project=default_project())
    assert (decision.tier, decision.rule, decision.rules_version) == (tier, rule, 1)


def test_when_several_rules_match_the_first_in_order_is_recorded():
    decision = route_case(
        task_type="factual_qa", uncertainty=0.9, adversarial=True, project=default_project()
    )
    assert (decision.tier, decision.rule) == (Tier.GOLD, "task_type:factual_qa")
    decision = route_case(
        task_type="summarization", uncertainty=0.9, adversarial=True, project=default_project()
    )
    assert decision.rule == "uncertainty>=0.65"


def test_the_extra_domain_rule_and_a_disabled_adversarial_rule():
    rules = RoutingRules(
        project_id=default_project_id(),
        version=7,
        gold_task_types=[],
        uncertainty_threshold=Decimal("0.8"),
        adversarial_routes_gold=False,
        gold_domains=["healthcare_ops"],
    )
    assert decide_tier(rules=rules, task_type="factual_qa", adversarial=True).tier == Tier.TRIAGE
    decision = decide_tier(rules=rules, task_type="factual_qa", domain="healthcare_ops")
    assert (decision.tier, decision.rule, decision.rules_version) == (
        Tier.GOLD,
        "domain:healthcare_ops",
        7,
    )


def test_an_edit_creates_a_new_version_and_new_cases_use_it(admin_user):
    get_active_rules(project=default_project())
    rules = update_routing_rules(
        actor=admin_user,
        gold_task_types=["factual_qa"],
        uncertainty_threshold=Decimal("0.5"),
        adversarial_routes_gold=True,
        gold_domains=[],
        note="tighter",
        project=default_project(),
    )
    assert rules.version == 2 and RoutingRules.objects.count() == 2
    decision = route_case(task_type="rag_synthesis", uncertainty=0.55, project=default_project())
    assert (decision.rule, decision.rules_version) == ("uncertainty>=0.5", 2)
    event = AuditEvent.objects.get(verb="routing_rules_changed")
    assert event.detail["from_version"] == 1 and event.detail["to_version"] == 2


def test_an_edit_that_changes_nothing_creates_no_version(admin_user):
    current = get_active_rules(project=default_project())
    with pytest.raises(RoutingRulesUnchanged):
        update_routing_rules(
            actor=admin_user,
            gold_task_types=list(reversed(current.gold_task_types)),
            uncertainty_threshold=current.uncertainty_threshold,
            adversarial_routes_gold=True,
            gold_domains=[],
            project=default_project(),
        )
    assert RoutingRules.objects.count() == 1
