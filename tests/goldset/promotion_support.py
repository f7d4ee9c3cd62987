"""Builders for the re-route and promotion tests: rules versions, open cases of both protocols."""

from decimal import Decimal

from goldset.models import RecordStatus, Tier
from goldset.services.routing import get_active_rules, update_routing_rules
from tests.factories import AnswerRecordFactory, DomainFactory, QuestionFactory, UserFactory
from tests.goldset.answers_helpers import default_project
from tests.goldset.curation_support import block_version, write_triple
from workbench.roles import Role

NOTHING_TO_GOLD = dict(
    gold_task_types=[],
    uncertainty_threshold=Decimal("1"),
    adversarial_routes_gold=False,
    gold_domains=[],
)


def set_rules(admin, **rules):
    """A new rules version; unspecified rules are switched off (nothing routes to GOLD)."""
    get_active_rules(project=default_project())
    return update_routing_rules(
        actor=admin, note="test", **{**NOTHING_TO_GOLD, **rules}, project=default_project()
    )


def triage_triple(author, *, domain=None, **fields):
    """A TRIAGE triple in pending_review (summarization; route it under rules that send it to
    TRIAGE)."""
    domain = domain or DomainFactory(slug="supply_chain")
    fields.setdefault("task_type", "summarization")
    return write_triple(author, gold=False, domain=domain, version=block_version(), **fields)


def answer_record(
    *,
    tier=Tier.TRIAGE,
    domain_slug="supply_chain",
    status=RecordStatus.LABELING,
    uncertainty=None,
    task_type="summarization",
    adversarial=False,
    **fields,
):
    domain = DomainFactory(slug=domain_slug)
    question = QuestionFactory(domain=domain, task_type=task_type, adversarial=adversarial)
    gold = tier == Tier.GOLD
    return AnswerRecordFactory(
        question=question,
        tier=tier,
        routing_rule="task_type:rag_synthesis" if gold else "default",
        labels_required=3 if gold else 1,
        status=status,
        uncertainty=uncertainty,
        **fields,
    )


def reviewers(n, prefix="rev"):
    return [UserFactory(role=Role.ANNOTATOR, username=f"{prefix}{i}") for i in range(1, n + 1)]


def assign(reviewer, triple):
    """Test setup: give ``reviewer`` the next slot of ``triple``'s current revision directly
    (what a claim does, without the queue's oldest-first order)."""
    from goldset.models import ReviewAssignment, TripleRevision

    revision = TripleRevision.objects.get(pk=triple.current_revision_id)
    slot = revision.assigned_count + 1
    TripleRevision.objects.filter(pk=revision.pk).update(assigned_count=slot)
    return ReviewAssignment.objects.create(revision=revision, reviewer=reviewer, slot=slot)


def review_directly(reviewer, triple, verdict="confirm", flags=()):
    from goldset.services.reviews import submit_review

    assignment = assign(reviewer, triple)
    result = submit_review(
        reviewer=reviewer, revision=assignment.revision, verdict=verdict, flags=flags
    )
    triple.refresh_from_db()
    return result
