import pytest

from goldset.demo.corpus import as_jsonl
from goldset.exceptions import GoldsetError
from goldset.models import BlockVersion, QualityTrackerEntry, Resolution, Source, TripleState
from goldset.selectors.curation import gold_row, list_gold_triples
from goldset.services.corpus import import_corpus
from goldset.services.customers import grant_customer_permission, revoke_customer_permission
from goldset.services.resolution import (
    SplitPart,
    drop_triple,
    mark_superseded_pins,
    post_message,
    repin_triple,
    retire_triple,
    revise_triple,
    split_triple,
    verify_llm_triple,
)
from goldset.services.reviews import claim_next_assignment, submit_review
from tests.factories import BlockVersionFactory, CustomerFactory, DomainFactory, default_project
from tests.goldset.curation_support import block_version, claim, review, write_triple
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


def _discussion(team):
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "flag", ["answer_not_entailed"], entailment_direction="overstated")
    assert triple.state == TripleState.IN_DISCUSSION
    return triple


def test_both_confirm_makes_gold_with_consensus(team):
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    assert triple.state == TripleState.PENDING_REVIEW
    review(team["r2"], triple, "confirm")
    assert (triple.state, triple.resolution) == (TripleState.GOLD, Resolution.CONSENSUS)
    row = gold_row(list_gold_triples().get())
    assert row["metadata"]["resolution"] == "consensus"
    assert row["metadata"]["reviewed_by"] == ["rev1", "rev2"]
    assert row["metadata"]["added_by"] == "author"
    assert row["expected_block"]["sha256"] == triple.current_revision.expected_block_version.sha256
    assert AuditEvent.objects.filter(verb="triple_gold", object_id=str(triple.pk)).exists()


def test_triage_single_confirm_is_gold_and_single_flag_is_discussion(team):
    confirmed = write_triple(team["author"], gold=False)
    review(team["r1"], confirmed, "confirm")
    assert (confirmed.state, confirmed.resolution) == (TripleState.GOLD, "single_review")
    flagged = write_triple(team["author"], gold=False)
    review(team["r1"], flagged, "flag", ["question_unrealistic"])
    assert flagged.state == TripleState.IN_DISCUSSION


def test_discussion_then_revise_re_enters_review_with_fresh_reviewers(team):
    triple = _discussion(team)
    post_message(triple=triple, author=team["author"], body="The block says AES-256 only.")
    post_message(triple=triple, author=team["r2"], body="Then drop the GCM mode.")
    with pytest.raises(GoldsetError, match="Only the author"):
        post_message(triple=triple, author=team["r3"], body="me too")
    revision = revise_triple(
        triple=triple,
        actor=team["author"],
        question=triple.current_revision.question,
        block_version=triple.current_revision.expected_block_version,
        expected_answer="AES-256.",
    )
    triple.refresh_from_db()
    assert (triple.state, revision.number) == (TripleState.PENDING_REVIEW, 2)
    assert (
        claim_next_assignment(project=default_project(), reviewer=team["r1"]) is None
    )  # reviewed revision 1
    assert claim_next_assignment(project=default_project(), reviewer=team["r2"]) is None
    review(team["r3"], triple, "confirm")
    review(team["r4"], triple, "confirm")
    assert (triple.state, triple.resolution) == (TripleState.GOLD, Resolution.REVISED_CONSENSUS)


def test_discussion_then_drop(team):
    triple = _discussion(team)
    with pytest.raises(GoldsetError):
        drop_triple(triple=triple, actor=team["r1"])  # confirmed: not a party to the discussion
    drop_triple(triple=triple, actor=team["r2"], reason="question is unanswerable from corpus")
    triple.refresh_from_db()
    assert triple.state == TripleState.DROPPED
    assert not QualityTrackerEntry.objects.exists()


def test_both_flag_drops_and_logs_the_quality_tracker(team):
    triple = write_triple(team["author"])
    review(
        team["r1"], triple, "flag", ["wrong_source_block"], disagreement_category="compound_claim"
    )
    review(team["r2"], triple, "flag", ["wrong_source_block", "question_unrealistic"])
    assert triple.state == TripleState.DROPPED
    entry = QualityTrackerEntry.objects.get()
    assert entry.flags == {"wrong_source_block": 2, "question_unrealistic": 1}
    assert entry.categories == ["compound_claim"]
    assert {u.username for u in entry.reviewers.all()} == {"rev1", "rev2"}
    assert entry.author == team["author"]


def test_split_into_three_atomic_triples_each_with_its_own_block(team):
    triple = _discussion(team)
    versions = [block_version() for _ in range(3)]
    children = split_triple(
        triple=triple,
        actor=team["author"],
        parts=[
            SplitPart(f"Atomic question {i}?", v, f"Claim {i}.") for i, v in enumerate(versions)
        ],
    )
    triple.refresh_from_db()
    assert triple.state == TripleState.SPLIT
    assert len(children) == 3
    assert [c.current_revision.expected_block_version for c in children] == versions
    assert {c.state for c in children} == {TripleState.PENDING_REVIEW}
    assert {c.parent_id for c in children} == {triple.pk}
    assert all(c.current_revision.reviewers_needed == 2 for c in children)


def test_split_needs_at_least_two_parts(team):
    triple = _discussion(team)
    with pytest.raises(GoldsetError, match="at least two"):
        split_triple(
            triple=triple, actor=team["author"], parts=[SplitPart("q?", block_version(), "a")]
        )


def _corpus_row(domain, text):
    return {
        "document_id": "doc-enc",
        "title": "Encryption",
        "domain": domain,
        "authority": 0.9,
        "blocks": [{"block_id": "blk-enc-01", "versions": [{"text": text}]}],
    }


def test_new_block_version_marks_gold_and_pending_triples_needs_rereview(team):
    domain = DomainFactory(slug="security_questionnaire")
    import_corpus(
        project=default_project(),
        source=as_jsonl([_corpus_row(domain.slug, "AES-256.")]),
        actor=team["admin"],
    )
    v1 = BlockVersion.objects.get(block__block_id="blk-enc-01")
    gold = write_triple(team["author"], version=v1)
    review(team["r1"], gold, "confirm")
    review(team["r2"], gold, "confirm")
    pending = write_triple(team["author"], version=v1)
    other = write_triple(team["author"])  # pinned elsewhere: untouched
    import_corpus(
        project=default_project(),
        source=as_jsonl([_corpus_row(domain.slug, "AES-256-GCM.")]),
        actor=team["admin"],
    )
    for t in (gold, pending, other):
        t.refresh_from_db()
    assert gold.state == pending.state == TripleState.NEEDS_REREVIEW
    assert gold.previous_state == TripleState.GOLD
    assert other.state == TripleState.PENDING_REVIEW
    assert not list_gold_triples()

    revision = repin_triple(triple=gold, actor=team["lead"])
    assert revision.expected_block_version.version == 2
    gold.refresh_from_db()
    assert gold.state == TripleState.PENDING_REVIEW and gold.current_revision.number == 2
    retire_triple(triple=pending, actor=team["lead"], note="superseded")
    pending.refresh_from_db()
    assert pending.state == TripleState.RETIRED


def test_revocation_removes_customer_triples_from_gold(team):
    customer = CustomerFactory(name="Acme", slug="acme")
    with pytest.raises(GoldsetError, match="no active permission"):
        write_triple(team["author"], source=Source.CUSTOMER_PERMISSIONED, customer=customer)
    grant_customer_permission(customer=customer, actor=team["admin"], note="addendum 2026-01")
    mine = write_triple(team["author"], source=Source.CUSTOMER_PERMISSIONED, customer=customer)
    review(team["r1"], mine, "confirm")
    review(team["r2"], mine, "confirm")
    public = write_triple(team["author"])
    review(team["r3"], public, "confirm")
    review(team["r4"], public, "confirm")
    assert {t.pk for t in list_gold_triples()} == {mine.pk, public.pk}
    assert {t.pk for t in list_gold_triples(public_only=True)} == {public.pk}

    revoked = revoke_customer_permission(customer=customer, actor=team["admin"], note="opt-out")
    mine.refresh_from_db()
    assert revoked == [mine.pk]
    assert (mine.state, mine.previous_state) == (TripleState.REVOKED, TripleState.GOLD)
    assert {t.pk for t in list_gold_triples()} == {public.pk}
    assert AuditEvent.objects.filter(verb="customer_permission_revoked").exists()
    with pytest.raises(GoldsetError, match="no active permission"):
        write_triple(team["author"], source=Source.CUSTOMER_PERMISSIONED, customer=customer)


def test_llm_generated_triple_waits_for_human_verification_before_gold(team):
    triple = write_triple(team["author"], source=Source.LLM_GENERATED)
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    assert triple.state == TripleState.PENDING_REVIEW
    verify_llm_triple(triple=triple, verifier=team["lead"])
    triple.refresh_from_db()
    assert triple.state == TripleState.GOLD
    assert triple.human_verified_by == team["lead"]


def test_llm_generated_triple_verified_by_its_human_author_goes_gold_on_consensus(team):
    triple = write_triple(team["author"], source=Source.LLM_GENERATED, llm_verified=True)
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    assert triple.state == TripleState.GOLD


def test_reviews_on_a_triple_that_left_review_are_refused(team):
    triple = write_triple(team["author"])
    assignment = claim(team["r1"], triple)
    BlockVersionFactory(block=triple.current_revision.expected_block_version.block, version=2)
    newest = BlockVersion.objects.get(
        block=assignment.revision.expected_block_version.block, version=2
    )
    mark_superseded_pins(superseding_version_ids=[newest.pk])
    with pytest.raises(GoldsetError, match="no longer takes reviews"):
        submit_review(reviewer=team["r1"], revision=assignment.revision, verdict="confirm")
