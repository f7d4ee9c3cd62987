import pytest

from goldset.exceptions import GoldsetError
from goldset.models import Review, ReviewAssignment, Tier, TripleState
from goldset.services.reviews import (
    claim_next_assignment,
    draw_spot_checks,
    select_spot_checks,
    submit_review,
)
from tests.factories import default_project
from tests.goldset.curation_support import claim, review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(make_user):
    return {
        "author": make_user(Role.ANNOTATOR, username="author"),
        **{f"r{i}": make_user(Role.ANNOTATOR, username=f"rev{i}") for i in range(1, 5)},
    }


def test_gold_triple_needs_two_reviewers_and_triage_one(people):
    gold = write_triple(people["author"], gold=True)
    triage = write_triple(people["author"], gold=False)
    assert (gold.tier, gold.routing_rule) == (Tier.GOLD, "task_type:factual_qa")
    assert (triage.tier, triage.routing_rule) == (Tier.TRIAGE, "default")
    assert gold.current_revision.reviewers_needed == 2
    assert triage.current_revision.reviewers_needed == 1
    got = [
        claim_next_assignment(project=default_project(), reviewer=people[f"r{i}"])
        for i in range(1, 5)
    ]
    assert [a.revision.triple_id if a else None for a in got] == [gold.pk, gold.pk, triage.pk, None]


def test_author_is_never_given_their_own_triple(people):
    write_triple(people["author"])
    assert claim_next_assignment(project=default_project(), reviewer=people["author"]) is None


def test_author_cannot_review_own_revision(people):
    triple = write_triple(people["author"])
    with pytest.raises(GoldsetError, match="author cannot review"):
        submit_review(
            reviewer=people["author"], revision=triple.current_revision, verdict="confirm"
        )
    assert not Review.objects.exists()


def test_reviewer_without_assignment_cannot_submit(people):
    triple = write_triple(people["author"])
    with pytest.raises(GoldsetError, match="not assigned"):
        submit_review(reviewer=people["r1"], revision=triple.current_revision, verdict="confirm")


def test_next_item_returns_the_open_assignment_instead_of_hoarding(people):
    write_triple(people["author"])
    write_triple(people["author"])
    first = claim_next_assignment(project=default_project(), reviewer=people["r1"])
    again = claim_next_assignment(project=default_project(), reviewer=people["r1"])
    assert first.pk == again.pk
    assert ReviewAssignment.objects.filter(reviewer=people["r1"]).count() == 1


def test_double_submit_is_idempotent(people):
    triple = write_triple(people["author"])
    assignment = claim(people["r1"], triple)
    first = submit_review(
        reviewer=people["r1"], revision=assignment.revision, verdict="confirm", comment="fine"
    )
    second = submit_review(
        reviewer=people["r1"],
        revision=assignment.revision,
        verdict="flag",
        flags=["question_unrealistic"],
    )
    assert second.pk == first.pk and second.verdict == "confirm"
    assert Review.objects.count() == 1
    triple.refresh_from_db()
    assert triple.state == TripleState.PENDING_REVIEW


@pytest.mark.parametrize(
    "verdict,flags,direction,message",
    [
        ("flag", [], "", "must name what is wrong"),
        ("confirm", ["wrong_source_block"], "", "cannot carry flags"),
        ("flag", ["question_unrealistic"], "overstated", "qualifies"),
        ("maybe", [], "", "Choose a verdict"),
    ],
)
def test_a_flag_must_name_the_problem(people, verdict, flags, direction, message):
    triple = write_triple(people["author"])
    assignment = claim(people["r1"], triple)
    with pytest.raises(GoldsetError, match=message):
        submit_review(
            reviewer=people["r1"],
            revision=assignment.revision,
            verdict=verdict,
            flags=flags,
            entailment_direction=direction,
        )


def test_flag_records_flags_direction_category_and_comment(people):
    triple = write_triple(people["author"])
    result = review(
        people["r1"],
        triple,
        "flag",
        ["answer_not_entailed", "wrong_source_block"],
        entailment_direction="overstated",
        disagreement_category="compound_claim",
        comment="key rotation is in another section",
    )
    assert result.flags == ["wrong_source_block", "answer_not_entailed"]
    assert (result.entailment_direction, result.disagreement_category) == (
        "overstated",
        "compound_claim",
    )


def _gold_triage_triples(author, reviewer, n):
    triples = [write_triple(author, gold=False, question=f"Q{i}?") for i in range(n)]
    for triple in triples:
        review(reviewer, triple, "confirm")
    return triples


def test_spot_check_draw_is_reproducible_from_its_seed(people):
    triples = _gold_triage_triples(people["author"], people["r1"], 25)
    assert {t.state for t in triples} == {TripleState.GOLD}
    year, week, _ = triples[0].current_revision.reviews.get().submitted_at.isocalendar()
    draw = draw_spot_checks(
        project=default_project(), iso_year=year, iso_week=week, actor=people["r1"], seed=4242
    )
    assert draw.eligible_revision_ids == sorted(t.current_revision_id for t in triples)
    assert len(draw.selected_revision_ids) == 3  # ceil(10 % of 25)
    assert draw.selected_revision_ids == select_spot_checks(
        draw.eligible_revision_ids, seed=draw.seed, rate=draw.rate
    )
    assert select_spot_checks(draw.eligible_revision_ids, seed=4243, rate=draw.rate) != (
        draw.selected_revision_ids
    )
    with pytest.raises(GoldsetError, match="already drawn"):
        draw_spot_checks(
            project=default_project(), iso_year=year, iso_week=week, actor=people["r1"], seed=1
        )


def test_spot_check_gets_a_second_reviewer_and_a_flag_reopens_discussion(people):
    [triple] = _gold_triage_triples(people["author"], people["r1"], 1)
    year, week, _ = triple.current_revision.reviews.get().submitted_at.isocalendar()
    draw = draw_spot_checks(
        project=default_project(), iso_year=year, iso_week=week, actor=people["r1"], seed=7
    )
    assert draw.selected_revision_ids == [triple.current_revision_id]
    assert (
        claim_next_assignment(project=default_project(), reviewer=people["r1"]) is None
    )  # already reviewed it
    assignment = claim(people["r2"], triple)
    assert (assignment.slot, assignment.spot_check) == (2, True)
    assert (
        claim_next_assignment(project=default_project(), reviewer=people["r3"]) is None
    )  # never over-assigned
    submit_review(
        reviewer=people["r2"],
        revision=assignment.revision,
        verdict="flag",
        flags=["answer_not_entailed"],
        entailment_direction="understated",
    )
    triple.refresh_from_db()
    assert triple.state == TripleState.IN_DISCUSSION
