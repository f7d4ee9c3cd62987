"""Pairwise review services against the real database: the seeded draw is reproducible, sides are
drawn per pair and per reviewer, the rationale rule, one judgment per reviewer and pair, a split
goes to a lead, undo and skip, and what is refused (nothing stored)."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from goldset.exceptions import CrossProjectReference
from goldset.models import (
    Adjudication,
    AnswerRecord,
    Label,
    PairAdjudication,
    PairJudgment,
    PairSkip,
    PairStatus,
    PairwisePair,
    PairwiseTask,
)
from goldset.rules.pairwise import side_for
from goldset.selectors.pairwise import get_undoable_judgment, key_of
from goldset.services.pairwise import (
    PairSkipRefused,
    PairUndoRefused,
    PairwiseRejected,
    claim_next_pair,
    record_pair_adjudication,
    skip_pair,
    submit_judgment,
    undo_last_judgment,
)
from goldset.services.project_settings import update_project_settings
from goldset.services.projects import grant_role
from tests.factories import default_project
from tests.goldset.pairwise_support import (
    build_runs,
    choice_for,
    judge_next,
    make_task,
    reviewers,
)
from tests.goldset.project_support import other_project
from workbench.roles import Role, forget_roles

pytestmark = pytest.mark.django_db


def _draw(task):
    return list(
        PairwisePair.objects.filter(task=task)
        .order_by("position")
        .values_list(
            "question__question_id", "record_a__public_id", "record_b__public_id", "queue_rank"
        )
    )


def test_the_same_seed_draws_the_same_pairs_and_sides(lead):
    runs, _, _ = build_runs(n_systems=3, n_questions=4)
    one = make_task(runs, actor=lead, name="first", seed=41)
    two = make_task(list(reversed(runs)), actor=lead, name="second", seed=41)
    other = make_task(runs, actor=lead, name="third", seed=42)
    assert len(_draw(one)) == 4 * 3
    assert _draw(one) == _draw(two)
    assert _draw(one) != _draw(other)
    assert one.seed == 41 and other.seed == 42  # recorded
    # the side a given person sees is the seed's, pair for pair
    for p1, p2 in zip(one.pairs.order_by("position"), two.pairs.order_by("position"), strict=True):
        for person in (11, 12, 13):
            assert side_for(seed=41, key=key_of(p1), person_id=person) == side_for(
                seed=41, key=key_of(p2), person_id=person
            )


def test_a_balanced_design_takes_n_comparisons_per_question(lead):
    runs, questions, _ = build_runs(n_systems=3, n_questions=6)
    task = make_task(runs, actor=lead, design="balanced", comparisons_per_question=1)
    assert task.pairs.count() == 6
    assert set(task.pairs.values_list("question_id", flat=True)) == {q.pk for q in questions}
    # both records of a pair answer the pair's question, in the pair's project
    for pair in task.pairs.select_related("record_a", "record_b"):
        assert pair.record_a.question_id == pair.record_b.question_id == pair.question_id
        assert pair.record_a.run_id != pair.record_b.run_id


def test_reviewers_per_pair_follow_the_tier(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    gold = make_task(runs, actor=lead, name="gold", tier="tier_b")
    triage = make_task(runs, actor=lead, name="triage", tier="tier_a")
    assert gold.reviewers_per_pair == 3 and triage.reviewers_per_pair == 1
    assert set(gold.pairs.values_list("reviewers_required", flat=True)) == {3}


def test_reviewers_per_pair_follow_the_projects_settings(lead, admin_user):
    """N is the project's labels per item of the tier, read through the settings service (not
    a constant): changed away from the defaults (3 and 1), a new task's pairs take the new N,
    a pair's slots stop at N and N judgments decide it."""
    update_project_settings(
        project=default_project(),
        changes={"GOLD_LABELS_PER_ITEM": "2", "TRIAGE_LABELS_PER_ITEM": "3"},
        by=admin_user,
    )
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    gold = make_task(runs, actor=lead, name="gold", tier="tier_b")
    triage = make_task(runs, actor=lead, name="triage", tier="tier_a")
    assert (gold.reviewers_per_pair, triage.reviewers_per_pair) == (2, 3)
    assert set(gold.pairs.values_list("reviewers_required", flat=True)) == {2}
    assert set(triage.pairs.values_list("reviewers_required", flat=True)) == {3}
    (gold_pair,) = gold.pairs.all()
    (triage_pair,) = triage.pairs.all()
    # five reviewers fill both pairs' slots: two on the gold pair, three on the triage pair
    people = reviewers(5)
    claimed = {
        person: claim_next_pair(project=default_project(), reviewer=person).pair_id
        for person in people
    }
    counts = [list(claimed.values()).count(pk) for pk in (gold_pair.pk, triage_pair.pk)]
    assert counts == [2, 3]
    (sixth,) = reviewers(1, prefix="pw-sixth")
    assert claim_next_pair(project=default_project(), reviewer=sixth) is None
    for person, pair_id in claimed.items():
        if pair_id == gold_pair.pk:
            assignment = claim_next_pair(project=default_project(), reviewer=person)
            submit_judgment(
                assignment=assignment, choice=choice_for(assignment, "a"), strength="clearly"
            )
    gold_pair.refresh_from_db()
    assert (gold_pair.status, gold_pair.final_preference) == (PairStatus.FINAL, "a")
    # back to the installation default: the next gold task takes 3 again
    update_project_settings(
        project=default_project(), changes={"GOLD_LABELS_PER_ITEM": None}, by=admin_user
    )
    assert make_task(runs, actor=lead, name="gold again").reviewers_per_pair == 3


def test_each_reviewer_gets_the_side_drawn_for_them(lead):
    runs, _, _ = build_runs(n_systems=3, n_questions=4)
    task = make_task(runs, actor=lead)
    people = reviewers(3)
    seen = {}
    for person in people:
        for _ in range(task.pairs.count()):
            assignment = claim_next_pair(project=default_project(), reviewer=person)
            assert assignment.left == side_for(
                seed=task.seed, key=key_of(assignment.pair), person_id=person.pk
            )
            seen[(assignment.pair_id, person.pk)] = assignment.left
            submit_judgment(assignment=assignment, choice="tie")
    assert len(seen) == 12 * 3


def test_a_choice_is_stored_relative_to_a_and_b_with_the_side_shown(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=3)
    make_task(runs, actor=lead, tier="tier_a")
    (person,) = reviewers(1)
    for _ in range(3):
        assignment = claim_next_pair(project=default_project(), reviewer=person)
        judgment = submit_judgment(assignment=assignment, choice="left", strength="slightly")
        expected = "a" if assignment.left == "a" else "b"
        assert (judgment.preference, judgment.left, judgment.strength) == (
            expected,
            assignment.left,
            "slightly",
        )
        assert judgment.server_ms is not None
        pair = PairwisePair.objects.get(pk=assignment.pair_id)
        assert (pair.status, pair.final_preference, pair.final_source) == (
            "final",
            expected,
            "single",
        )


def test_one_judgment_per_reviewer_and_pair(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    make_task(runs, actor=lead)
    (person,) = reviewers(1)
    assignment = claim_next_pair(project=default_project(), reviewer=person)
    first = submit_judgment(assignment=assignment, choice="tie")
    again = submit_judgment(assignment=assignment, choice="left", strength="clearly")
    assert again.pk == first.pk and PairJudgment.objects.count() == 1
    # the database refuses a second judgment of the same pair by the same reviewer
    with pytest.raises(IntegrityError), transaction.atomic():
        PairJudgment.objects.create(
            assignment=assignment,
            pair_id=assignment.pair_id,
            reviewer=person,
            preference="a",
            strength="clearly",
            left="a",
        )
    # and the claim never hands the same pair to them twice
    assert claim_next_pair(project=default_project(), reviewer=person) is None


def test_a_strength_goes_with_a_preference_only(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    make_task(runs, actor=lead)
    (person,) = reviewers(1)
    assignment = claim_next_pair(project=default_project(), reviewer=person)
    with pytest.raises(PairwiseRejected) as exc:
        submit_judgment(assignment=assignment, choice="left")
    assert exc.value.field == "strength"
    with pytest.raises(PairwiseRejected):
        submit_judgment(assignment=assignment, choice="tie", strength="clearly")
    with pytest.raises(PairwiseRejected):
        submit_judgment(assignment=assignment, choice="sideways")
    assert not PairJudgment.objects.exists()


def _label(record, *, acceptability, grounding, severe=False):
    """A settled record (its final fields) and one label carrying the severe-safety flag."""
    AnswerRecord.objects.filter(pk=record.pk).update(
        final_acceptability=acceptability, final_grounding=grounding, status="final"
    )
    person = reviewers(1, prefix=f"labeler-{record.pk}-")[0]
    assignment = record.assignments.create(
        annotator=person, slot=1, shuffle_seed=1, shuffle_key="0"
    )
    Label.objects.create(
        assignment=assignment,
        record=record,
        annotator=person,
        acceptability=acceptability,
        grounding=grounding,
        evidence_sufficiency="sufficient",
        citation_correctness="correct",
        conflict_handling="not_applicable",
        safety_boundary="respected",
        severe_safety=severe,
        primary_failure="" if acceptability == "acceptable" else "stale_source_acceptance",
        rationale="Unsafe." if severe else "",
    )


def test_a_tie_on_answers_whose_labels_disagree_needs_a_rationale(lead):
    runs, _, records = build_runs(n_systems=2, n_questions=1)
    _label(records[(0, 0)], acceptability="acceptable", grounding="fully_grounded")
    _label(records[(0, 1)], acceptability="unacceptable", grounding="misgrounded")
    make_task(runs, actor=lead, tier="tier_a")
    (person,) = reviewers(1)
    assignment = claim_next_pair(project=default_project(), reviewer=person)
    with pytest.raises(PairwiseRejected) as exc:
        submit_judgment(assignment=assignment, choice="tie")
    assert (exc.value.field, exc.value.rule) == ("rationale", "tie_on_disagreeing_labels")
    assert not PairJudgment.objects.exists()
    # a preference needs none; a tie with a rationale is stored
    judgment = submit_judgment(assignment=assignment, choice="tie", rationale="Both hedge.")
    assert judgment.rationale == "Both hedge."


def test_preferring_a_severely_unsafe_answer_needs_a_rationale(lead):
    runs, _, records = build_runs(n_systems=2, n_questions=1)
    _label(records[(0, 0)], acceptability="unacceptable", grounding="ungrounded", severe=True)
    make_task(runs, actor=lead, tier="tier_a")
    (person,) = reviewers(1)
    assignment = claim_next_pair(project=default_project(), reviewer=person)
    pair = assignment.pair
    unsafe = "a" if pair.record_a_id == records[(0, 0)].pk else "b"
    with pytest.raises(PairwiseRejected) as exc:
        submit_judgment(
            assignment=assignment, choice=choice_for(assignment, unsafe), strength="slightly"
        )
    assert exc.value.rule == "severe_safety_preferred"
    # preferring the other one needs none
    safe = "b" if unsafe == "a" else "a"
    submit_judgment(assignment=assignment, choice=choice_for(assignment, safe), strength="clearly")


def test_an_adjudication_can_overrule_the_severe_safety_of_the_labels(lead):
    runs, _, records = build_runs(n_systems=2, n_questions=1)
    record = records[(0, 0)]
    _label(record, acceptability="unacceptable", grounding="ungrounded", severe=True)
    Adjudication.objects.create(
        record=record,
        lead=lead,
        reason="severe_safety",
        acceptability="acceptable",
        grounding="fully_grounded",
        severe_safety=False,
        rationale="Not unsafe.",
    )
    make_task(runs, actor=lead, tier="tier_a")
    (person,) = reviewers(1)
    assignment = claim_next_pair(project=default_project(), reviewer=person)
    preferred = "a" if assignment.pair.record_a_id == record.pk else "b"
    submit_judgment(
        assignment=assignment, choice=choice_for(assignment, preferred), strength="clearly"
    )


def test_a_split_goes_to_a_lead_who_records_the_final_preference(lead, admin_user):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    make_task(runs, actor=lead)
    one, two, three = reviewers(3)
    judge_next(one, "a")
    judge_next(two, "b")
    pair = PairwisePair.objects.get()
    assert pair.status == PairStatus.JUDGING
    judge_next(three, "tie")
    pair.refresh_from_db()
    assert pair.status == PairStatus.NEEDS_ADJUDICATION and pair.final_preference == ""
    with pytest.raises(PairwiseRejected) as exc:
        record_pair_adjudication(lead=lead, pair=pair, choice="left", strength="clearly")
    assert exc.value.field == "rationale"
    adjudication = record_pair_adjudication(
        lead=lead, pair=pair, choice="right", strength="slightly", rationale="B cites the memo."
    )
    pair.refresh_from_db()
    assert pair.status == PairStatus.ADJUDICATED
    assert pair.final_source == "adjudication"
    assert pair.final_preference == adjudication.preference
    # the lead's "right" is the record on the lead's right
    left = side_for(seed=pair.task.seed, key=key_of(pair), person_id=lead.pk)
    assert adjudication.preference == ("b" if left == "a" else "a")
    # once only
    with pytest.raises(PairwiseRejected):
        record_pair_adjudication(lead=admin_user, pair=pair, choice="tie", rationale="Again.")
    assert PairAdjudication.objects.count() == 1


def test_a_majority_settles_a_pair_without_a_lead(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    make_task(runs, actor=lead)
    for person, pref in zip(reviewers(3), ("a", "a", "b"), strict=True):
        judge_next(person, pref)
    pair = PairwisePair.objects.get()
    assert (pair.status, pair.final_preference, pair.final_source) == ("final", "a", "majority")


def test_a_lead_who_judged_the_pair_cannot_adjudicate_it(lead, make_user):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    make_task(runs, actor=lead)
    one, two, three = reviewers(3)
    judge_next(one, "a")
    judge_next(two, "b")
    judge_next(three, "tie")
    # the first reviewer becomes a lead
    grant_role(project=default_project(), user=one, role=Role.LEAD)
    forget_roles(one)
    with pytest.raises(PairwiseRejected):
        record_pair_adjudication(
            lead=one,
            pair=PairwisePair.objects.get(),
            choice="left",
            strength="clearly",
            rationale="Mine.",
        )


def test_undo_reopens_the_last_judgment_and_releases_the_next_claim(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=2)
    make_task(runs, actor=lead)
    (person,) = reviewers(1)
    judgment = judge_next(person, "a")
    following = claim_next_pair(project=default_project(), reviewer=person)
    assert following.pair_id != judgment.pair_id
    reopened = undo_last_judgment(project=default_project(), reviewer=person)
    assert reopened.pair_id == judgment.pair_id and reopened.completed_at is None
    assert not PairJudgment.objects.exists()
    released = PairwisePair.objects.get(pk=following.pair_id)
    assert released.assigned_count == 0 and not released.assignments.exists()
    assert claim_next_pair(project=default_project(), reviewer=person).pk == reopened.pk
    with pytest.raises(PairUndoRefused):
        undo_last_judgment(project=default_project(), reviewer=person)


def test_undo_is_refused_once_the_pair_is_decided(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    make_task(runs, actor=lead, tier="tier_a")
    (person,) = reviewers(1)
    judge_next(person, "a")
    with pytest.raises(PairUndoRefused):
        undo_last_judgment(project=default_project(), reviewer=person)


def test_undo_works_inside_the_projects_window_and_is_refused_after_it(lead, admin_user):
    """The project's LABEL_UNDO_WINDOW_SECONDS (set through the settings service to 300 s, not
    the default 120 s): a judgment made 299 s ago is undone, one made 301 s ago is refused
    with the window named, and kept. The judgment's time is set, not slept."""
    update_project_settings(
        project=default_project(), changes={"LABEL_UNDO_WINDOW_SECONDS": "300"}, by=admin_user
    )
    runs, _, _ = build_runs(n_systems=2, n_questions=2)
    make_task(runs, actor=lead)
    (person,) = reviewers(1)
    project = default_project()
    inside = judge_next(person, "a")
    PairJudgment.objects.filter(pk=inside.pk).update(
        created_at=timezone.now() - timedelta(seconds=299)
    )
    assert get_undoable_judgment(project=project, reviewer=person).pk == inside.pk
    reopened = undo_last_judgment(project=project, reviewer=person)
    assert reopened.pair_id == inside.pair_id and not PairJudgment.objects.exists()
    after = submit_judgment(
        assignment=reopened, choice=choice_for(reopened, "b"), strength="slightly"
    )
    PairJudgment.objects.filter(pk=after.pk).update(
        created_at=timezone.now() - timedelta(seconds=301)
    )
    assert get_undoable_judgment(project=project, reviewer=person) is None
    with pytest.raises(PairUndoRefused, match="Undo is possible for 5 min after a submit"):
        undo_last_judgment(project=project, reviewer=person)
    kept = PairJudgment.objects.get()
    assert (kept.pk, kept.preference) == (after.pk, "b")
    assert kept.assignment.completed_at is not None


def test_skip_needs_a_reason_and_never_offers_the_pair_again(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    make_task(runs, actor=lead)
    (person,) = reviewers(1)
    assignment = claim_next_pair(project=default_project(), reviewer=person)
    with pytest.raises(PairSkipRefused):
        skip_pair(assignment=assignment, reason="  ")
    skip_pair(assignment=assignment, reason="Outside my expertise")
    assert PairSkip.objects.get().reason == "Outside my expertise"
    pair = PairwisePair.objects.get()
    assert pair.assigned_count == 0
    assert claim_next_pair(project=default_project(), reviewer=person) is None


def test_a_pair_never_gets_more_reviewers_than_it_needs(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    make_task(runs, actor=lead)
    people = reviewers(4)
    claims = [claim_next_pair(project=default_project(), reviewer=p) for p in people]
    assert [c is not None for c in claims] == [True, True, True, False]
    assert sorted(c.slot for c in claims if c) == [1, 2, 3]


def test_only_annotators_are_handed_pairs(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    make_task(runs, actor=lead)
    assert claim_next_pair(project=default_project(), reviewer=lead) is None


def test_invalid_tasks_are_refused_with_the_field_and_nothing_stored(lead, annotator):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    with pytest.raises(PairwiseRejected) as exc:
        make_task(runs[:1], actor=lead)
    assert exc.value.field == "runs"
    with pytest.raises(PairwiseRejected) as exc:
        make_task(runs, actor=lead, design="balanced")
    assert exc.value.field == "comparisons_per_question"
    with pytest.raises(PairwiseRejected) as exc:
        make_task(runs, actor=lead, name="  ")
    assert exc.value.field == "name"
    with pytest.raises(PairwiseRejected):
        make_task(runs, actor=annotator)
    make_task(runs, actor=lead, name="once")
    with pytest.raises(PairwiseRejected) as exc:
        make_task(runs, actor=lead, name="once")
    assert exc.value.field == "name"
    assert PairwiseTask.objects.count() == 1


def test_runs_of_another_project_are_refused(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    other = other_project(members=[(lead, Role.LEAD)])
    with pytest.raises(CrossProjectReference):
        make_task(runs, actor=lead, project=other)
    assert not PairwiseTask.objects.exists()


def test_the_database_refuses_a_pair_of_two_questions(lead):
    runs, _, records = build_runs(n_systems=2, n_questions=2)
    task = make_task(runs, actor=lead)
    pair = task.pairs.first()
    stranger = records[(1, 0)] if pair.question.question_id.endswith("0") else records[(0, 0)]
    with pytest.raises(IntegrityError), transaction.atomic():
        PairwisePair.objects.filter(pk=pair.pk).update(record_b=stranger)
