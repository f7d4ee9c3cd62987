"""Routing a case (a triple or an answer record) to a tier, seed 003 / DESIGN.md §7.

A case goes to GOLD when ANY rule matches — task type in the GOLD task types, model uncertainty ≥
the threshold, the adversarial flag, or (optional extra rule) its domain in the GOLD domains —
else to TRIAGE. The decision names the first rule that fired, in that order, and the rules version.
"""

from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction

from goldset.exceptions import GoldsetError
from goldset.models import RoutingRules, Tier
from workbench.services.audit import record_event

DEFAULT_GOLD_TASK_TYPES = ["factual_qa", "rag_synthesis"]
DEFAULT_UNCERTAINTY_THRESHOLD = Decimal("0.65")


class RoutingRulesUnchanged(GoldsetError):
    """An edit that changes nothing does not create a new version."""


@dataclass(frozen=True)
class RoutingDecision:
    tier: Tier
    rule: str  # "task_type:factual_qa", "uncertainty>=0.65", "adversarial", "domain:x" or "default"
    rules_version: int


def _pk(project) -> int:
    """A project or its id (callers that hold only a case's ``project_id`` pass that)."""
    return getattr(project, "pk", project)


def get_active_rules(*, project) -> RoutingRules:
    """The rules in force in ``project`` (its newest version); the seed-003 defaults are created
    as the project's version 1 on first use."""
    rules = RoutingRules.objects.filter(project_id=_pk(project)).order_by("-version").first()
    if rules is None:
        rules = _create_default_rules(project)
    return rules


@transaction.atomic
def _create_default_rules(project) -> RoutingRules:
    rules, _ = RoutingRules.objects.get_or_create(
        project_id=_pk(project),
        version=1,
        defaults={
            "gold_task_types": DEFAULT_GOLD_TASK_TYPES,
            "uncertainty_threshold": DEFAULT_UNCERTAINTY_THRESHOLD,
            "adversarial_routes_gold": True,
            "note": "protocol defaults",
        },
    )
    return rules


def decide_tier(
    *,
    rules: RoutingRules,
    task_type: str,
    uncertainty: float | Decimal | None = None,
    adversarial: bool = False,
    domain: str = "",
) -> RoutingDecision:
    """Pure decision for one case under ``rules`` (no writes)."""
    if task_type in rules.gold_task_types:
        return RoutingDecision(Tier.GOLD, f"task_type:{task_type}", rules.version)
    if uncertainty is not None and Decimal(str(uncertainty)) >= rules.uncertainty_threshold:
        return RoutingDecision(
            Tier.GOLD,
            f"uncertainty>={Decimal(rules.uncertainty_threshold).normalize():f}",
            rules.version,
        )
    if adversarial and rules.adversarial_routes_gold:
        return RoutingDecision(Tier.GOLD, "adversarial", rules.version)
    if domain and domain in (rules.gold_domains or []):
        return RoutingDecision(Tier.GOLD, f"domain:{domain}", rules.version)
    return RoutingDecision(Tier.TRIAGE, "default", rules.version)


def route_case(
    *, project, task_type: str, uncertainty=None, adversarial: bool = False, domain: str = ""
) -> RoutingDecision:
    """Route a new case of ``project`` under the project's rules in force. Callers store tier,
    rule and rules_version."""
    return decide_tier(
        rules=get_active_rules(project=project),
        task_type=task_type,
        uncertainty=uncertainty,
        adversarial=adversarial,
        domain=domain,
    )


@transaction.atomic
def update_routing_rules(
    *,
    project,
    actor,
    gold_task_types: list[str],
    uncertainty_threshold: Decimal,
    adversarial_routes_gold: bool,
    gold_domains: list[str],
    note: str = "",
) -> RoutingRules:
    """Create the next version of ``project``'s routing rules. Existing cases keep the tier, rule and
    version they were routed with: nothing is re-routed here (a re-route preview does that, on
    confirmation). Raises :class:`RoutingRulesUnchanged` when nothing differs from the rules in
    force. Serialised by locking the project's current version row."""
    current = RoutingRules.objects.select_for_update().filter(project_id=_pk(project)).order_by(
        "-version"
    ).first() or _create_default_rules(project)
    wanted = (
        sorted(gold_task_types),
        Decimal(uncertainty_threshold),
        adversarial_routes_gold,
        sorted(gold_domains),
    )
    have = (
        sorted(current.gold_task_types),
        current.uncertainty_threshold,
        current.adversarial_routes_gold,
        sorted(current.gold_domains or []),
    )
    if wanted == have:
        raise RoutingRulesUnchanged(
            "These are the rules already in force; no new version was created."
        )
    rules = RoutingRules.objects.create(
        project=project,
        version=current.version + 1,
        gold_task_types=wanted[0],
        uncertainty_threshold=wanted[1],
        adversarial_routes_gold=adversarial_routes_gold,
        gold_domains=wanted[3],
        note=note,
        created_by=actor,
    )
    record_event(
        actor=actor,
        verb="routing_rules_changed",
        obj=rules,
        project=project,
        detail={
            "from_version": current.version,
            "to_version": rules.version,
            "gold_task_types": rules.gold_task_types,
            "uncertainty_threshold": str(rules.uncertainty_threshold),
            "adversarial_routes_gold": adversarial_routes_gold,
            "gold_domains": rules.gold_domains,
            "note": note,
        },
    )
    return rules


def list_routing_rules(*, project):
    """``project``'s routing rules versions, newest first."""
    return (
        RoutingRules.objects.filter(project=project)
        .select_related("created_by")
        .order_by("-version")
    )
