"""Demo promotion and re-route data, made through the real services: a lead promotes one TRIAGE
triple that became gold on one review (it now waits for its second review in the reviewers'
queues) and one final TRIAGE answer record (it now collects labels again); an admin saves routing
rules v2 (rag_synthesis no longer GOLD by task type; supply_chain GOLD by domain) and leaves the
re-route preview unconfirmed, so /routing/reroute/ shows what would change and what is held.
Idempotent: nothing happens once a demo promotion exists."""

from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import transaction

from goldset.models import (
    AnswerRecord,
    Project,
    RecordStatus,
    Tier,
    Triple,
    TripleState,
    default_project_id,
)
from goldset.services.promotion import promote_answer_record, promote_triple
from goldset.services.routing import get_active_rules, update_routing_rules
from workbench.models import AuditEvent

TRIPLE_REASON = "Release-gating eval R-12 (regression gate) depends on this case"
RECORD_REASON = "Judge calibration set needs dual-labelled examples in this domain"


@transaction.atomic
def seed_promotion_demo() -> bool:
    """Returns False (and does nothing) when a promotion exists already or the demo users or
    cases are missing."""
    if AuditEvent.objects.filter(verb="promoted").exists():
        return False
    users = get_user_model().objects.in_bulk(["lead", "admin"], field_name="username")
    if len(users) < 2:
        return False
    triple = Triple.objects.filter(tier=Tier.TRIAGE, state=TripleState.GOLD).order_by("pk").first()
    record = (
        AnswerRecord.objects.filter(
            tier=Tier.TRIAGE, status=RecordStatus.FINAL, is_calibration=False
        )
        .order_by("pk")
        .first()
    )
    if triple is not None:
        promote_triple(actor=users["lead"], triple=triple, reason=TRIPLE_REASON)
    if record is not None:
        promote_answer_record(actor=users["lead"], record=record, reason=RECORD_REASON)
    project = Project.objects.get(pk=default_project_id())
    rules = get_active_rules(project=project)
    if rules.version == 1:
        update_routing_rules(
            project=project,
            actor=users["admin"],
            gold_task_types=["factual_qa"],
            uncertainty_threshold=Decimal(rules.uncertainty_threshold),
            adversarial_routes_gold=rules.adversarial_routes_gold,
            gold_domains=["supply_chain"],
            note="Demo: RAG synthesis GOLD only when uncertain or adversarial; supply chain always GOLD",
        )
    return True
