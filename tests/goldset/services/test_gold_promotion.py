"""Promotion to gold (issue 28): a lead turns a labeled production record into a triple in one
step — the question, the governing retrieved block version, the answer as the starting expected
answer — which enters the author/two-reviewer protocol; the trace id and sampling rule stay with
it and go into the gold JSONL export."""

import pytest

from goldset.exceptions import GoldsetError
from goldset.models import Domain, Triple, TripleOrigin, TripleState
from goldset.selectors.curation import gold_row, iter_gold_rows, list_gold_triples
from goldset.services.adjudication import record_adjudication
from goldset.services.gold_promotion import promote_record_to_triple
from goldset.services.projects import grant_role
from tests.factories import BlockFactory, BlockVersionFactory, UserFactory, default_project
from tests.goldset.promotion_to_gold_support import corpus, trace_born_record
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return default_project()


def test_a_lead_promotes_a_trace_born_record_to_a_triple_with_its_provenance(
    project, lead, admin_user
):
    versions = corpus(project)
    record, trace = trace_born_record(project, admin_user)
    governing = record.retrieved.order_by("rank").first().block_version
    triple = promote_record_to_triple(actor=lead, project=project, record=record)
    revision = triple.current_revision
    assert (triple.state, triple.author, triple.source) == (
        TripleState.PENDING_REVIEW,
        lead,
        "llm_generated",
    )
    assert revision.question == record.question.text
    assert revision.expected_block_version == governing
    assert governing in versions.values()
    assert revision.expected_answer == record.answer
    assert (triple.tier, triple.routing_rule) == ("tier_b", "task_type:rag_synthesis")
    assert revision.reviewers_needed == 2
    origin = TripleOrigin.objects.get(triple=triple)
    assert (origin.record, origin.trace_id, origin.sampling_rule) == (
        record,
        trace.trace_id,
        "unhappy-users",
    )
    event = AuditEvent.objects.get(verb="record_promoted_to_triple")
    assert event.detail["trace_id"] == trace.trace_id
    # a second promotion (a double submit) returns the first triple
    assert promote_record_to_triple(actor=lead, project=project, record=record) == triple
    assert Triple.objects.count() == 1

    # gold: the export line carries the provenance, by both readers
    Triple.objects.filter(pk=triple.pk).update(
        state=TripleState.GOLD, resolution="consensus", human_verified_by=lead
    )
    gold = list_gold_triples().filter(project=project)
    provenance = {
        "answer_record": record.public_id,
        "trace_id": trace.trace_id,
        "sampling_rule": "unhappy-users",
    }
    assert gold_row(gold.get())["metadata"]["provenance"] == provenance
    assert [r["metadata"]["provenance"] for r in iter_gold_rows(gold)] == [provenance]


def test_a_record_a_lead_adjudicated_acceptable_is_promoted(project, lead, admin_user):
    """Settled by adjudication rather than by agreeing labels: the lead's final label makes
    it promotable, and another lead may promote it (the one who adjudicated may too)."""
    corpus(project)
    record, trace = trace_born_record(
        project, admin_user, status="needs_adjudication", acceptability=""
    )
    with pytest.raises(GoldsetError, match="only a labeled record"):
        promote_record_to_triple(actor=lead, project=project, record=record)
    record_adjudication(
        lead=lead,
        record=record,
        acceptability="acceptable",
        grounding="fully_grounded",
        rationale="The answer follows AC-2.",
    )
    record.refresh_from_db()
    assert (record.status, record.final_source) == ("adjudicated", "adjudication")
    other = UserFactory(username="second-lead")
    grant_role(project=project, user=other, role=Role.LEAD)
    triple = promote_record_to_triple(actor=other, project=project, record=record)
    assert triple.state == TripleState.PENDING_REVIEW
    assert triple.current_revision.expected_answer == record.answer
    assert TripleOrigin.objects.get(triple=triple).trace_id == trace.trace_id


def test_the_lead_may_pick_another_retrieved_block_and_edit_the_answer(project, lead, admin_user):
    corpus(project)
    record, _ = trace_born_record(project, admin_user)
    last = record.retrieved.order_by("-rank").first().block_version
    triple = promote_record_to_triple(
        actor=lead,
        project=project,
        record=record,
        block_version_id=last.pk,
        expected_answer="Accounts are reviewed by the organization.",
        source="public_rfp",
    )
    revision = triple.current_revision
    assert revision.expected_block_version == last
    assert revision.expected_answer == "Accounts are reviewed by the organization."


@pytest.mark.parametrize(
    ("status", "acceptability", "message"),
    [
        ("labeling", "", "only a labeled record"),
        ("needs_adjudication", "", "only a labeled record"),
        ("final", "unacceptable", "not acceptable"),
    ],
)
def test_only_a_settled_acceptable_record_is_promoted(
    project, lead, admin_user, status, acceptability, message
):
    corpus(project)
    record, _ = trace_born_record(project, admin_user, status=status, acceptability=acceptability)
    with pytest.raises(GoldsetError, match=message):
        promote_record_to_triple(actor=lead, project=project, record=record)
    assert not Triple.objects.exists()


def test_refusals_name_what_is_wrong(project, lead, annotator, admin_user):
    versions = corpus(project)
    record, _ = trace_born_record(project, admin_user)
    with pytest.raises(GoldsetError, match="lead or an admin"):
        promote_record_to_triple(actor=annotator, project=project, record=record)
    never_retrieved = BlockVersionFactory(
        block=BlockFactory(document=versions["IA-5"].block.document, block_id="ZZ-9")
    )
    with pytest.raises(GoldsetError, match="^block_version:"):
        promote_record_to_triple(
            actor=lead, project=project, record=record, block_version_id=never_retrieved.pk
        )
    with pytest.raises(GoldsetError, match="^source:"):
        promote_record_to_triple(actor=lead, project=project, record=record, source="customer")
    assert not Triple.objects.exists() and not TripleOrigin.objects.exists()


def test_a_record_without_a_matched_passage_has_nothing_to_pin(project, lead, admin_user):
    Domain.objects.create(project=project, slug="controls", name="Controls")
    record, _ = trace_born_record(project, admin_user)  # no corpus: every passage unmatched
    with pytest.raises(GoldsetError, match="^block_version: the record retrieved no passage"):
        promote_record_to_triple(actor=lead, project=project, record=record)
