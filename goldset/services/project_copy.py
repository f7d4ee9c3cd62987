"""A new project started from another's policy (DESIGN.md §15): its domains (names only, no
corpus), the guideline in force for each domain and task, and the routing rules in force.
:func:`goldset.services.projects.create_project` copies the settings and calls this, in the
creating transaction, for the page and the API alike."""

from django.db import transaction

from goldset.models import Domain, GuidelineVersion, RoutingRules
from workbench.services.audit import record_event


@transaction.atomic
def copy_policy(*, source, target, by) -> dict[str, int]:
    """Copy ``source``'s domains, guidelines in force and routing rules in force into
    ``target`` (a new project: existing domains of the same slug are reused). Returns counts."""
    domains = {}
    for domain in Domain.objects.filter(project=source).order_by("slug"):
        domains[domain.pk], _ = Domain.objects.get_or_create(
            project=target, slug=domain.slug, defaults={"name": domain.name}
        )
    guidelines = 0
    seen = set()
    in_force = GuidelineVersion.objects.filter(domain__project=source).order_by(
        "domain_id", "task", "-version"
    )
    for guideline in in_force:
        key = (guideline.domain_id, guideline.task)
        if key in seen:
            continue
        seen.add(key)
        GuidelineVersion.objects.create(
            domain=domains[guideline.domain_id],
            task=guideline.task,
            version=1,
            body=guideline.body,
            html=guideline.html,
            note=f"copied from {source.slug} v{guideline.version}",
            created_by=by,
        )
        guidelines += 1
    rules = RoutingRules.objects.filter(project=source).order_by("-version").first()
    if rules is not None:
        RoutingRules.objects.create(
            project=target,
            version=1,
            gold_task_types=rules.gold_task_types,
            uncertainty_threshold=rules.uncertainty_threshold,
            adversarial_routes_gold=rules.adversarial_routes_gold,
            gold_domains=rules.gold_domains,
            note=f"copied from {source.slug} v{rules.version}",
            created_by=by,
        )
    counts = {"domains": len(domains), "guidelines": guidelines, "routing_rules": int(bool(rules))}
    record_event(
        actor=by,
        verb="project.copy_policy",
        object_type="project",
        object_id=target.slug,
        detail={"from": source.slug, **counts},
        project=target,
    )
    return counts
