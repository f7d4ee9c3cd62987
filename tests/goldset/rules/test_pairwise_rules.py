"""The pure pairwise rules: the seeded draw (all pairs, balanced), sides per pair and person,
choices on screen ↔ stored preferences, the rationale rule and the outcome of a pair."""

from collections import Counter
from itertools import combinations

from goldset.rules.pairwise import (
    AbsoluteLabel,
    choice_from_preference,
    decide_pair_outcome,
    draw_pairs,
    preference_from_choice,
    rationale_rule,
    side_for,
)

SYSTEMS = ["s1", "s2", "s3", "s4"]
ANSWERS = {f"q{i:02d}": {s: f"r-{i}-{s}" for s in SYSTEMS} for i in range(12)}


def _key(pairs):
    return [(p.question, p.a, p.b, p.position, p.queue_rank) for p in pairs]


def test_all_pairs_draws_every_pair_of_systems_on_every_question():
    pairs = draw_pairs(seed=7, systems=SYSTEMS, answers=ANSWERS, comparisons_per_question=None)
    assert len(pairs) == 12 * 6
    per_question = Counter(p.question for p in pairs)
    assert set(per_question.values()) == {6}
    q0 = {frozenset((p.a, p.b)) for p in pairs if p.question == "q00"}
    assert q0 == {frozenset((f"r-0-{a}", f"r-0-{b}")) for a, b in combinations(SYSTEMS, 2)}


def test_the_same_seed_gives_the_same_pairs_and_another_seed_other_ones():
    one = draw_pairs(seed=7, systems=SYSTEMS, answers=ANSWERS, comparisons_per_question=2)
    two = draw_pairs(seed=7, systems=SYSTEMS, answers=ANSWERS, comparisons_per_question=2)
    other = draw_pairs(seed=8, systems=SYSTEMS, answers=ANSWERS, comparisons_per_question=2)
    assert _key(one) == _key(two)
    assert _key(one) != _key(other)


def test_a_balanced_design_compares_every_pair_of_systems_equally_often():
    pairs = draw_pairs(seed=11, systems=SYSTEMS, answers=ANSWERS, comparisons_per_question=2)
    assert Counter(p.question for p in pairs) == {q: 2 for q in ANSWERS}
    system_of = {rec: s for have in ANSWERS.values() for s, rec in have.items()}
    counts = Counter(frozenset((system_of[p.a], system_of[p.b])) for p in pairs)
    assert len(counts) == 6  # every pair of systems
    assert max(counts.values()) - min(counts.values()) <= 1  # 24 comparisons over 6 pairs: 4 each
    # within a question, two different pairs
    for question in ANSWERS:
        drawn = [frozenset((p.a, p.b)) for p in pairs if p.question == question]
        assert len(set(drawn)) == 2


def test_a_question_answered_by_fewer_systems_is_compared_among_those():
    answers = {"q1": {"s1": "a", "s2": "b"}, "q2": {"s1": "c", "s2": "d", "s3": "e"}}
    pairs = draw_pairs(
        seed=1, systems=["s1", "s2", "s3"], answers=answers, comparisons_per_question=3
    )
    assert [frozenset((p.a, p.b)) for p in pairs if p.question == "q1"] == [frozenset("ab")]
    assert len([p for p in pairs if p.question == "q2"]) == 3


def test_record_a_is_drawn_per_pair_not_always_the_first_system():
    pairs = draw_pairs(seed=5, systems=SYSTEMS, answers=ANSWERS, comparisons_per_question=None)
    first_is_a = Counter(p.a.endswith("-s1") for p in pairs if "-s1" in p.a + p.b)
    assert first_is_a[True] and first_is_a[False]


def test_sides_are_drawn_per_pair_and_per_person_and_are_stable():
    keys = [f"q{i}:x{i}:y{i}" for i in range(40)]
    people = range(1, 6)
    sides = {(k, p): side_for(seed=3030, key=k, person_id=p) for k in keys for p in people}
    assert sides == {(k, p): side_for(seed=3030, key=k, person_id=p) for k in keys for p in people}
    assert set(sides.values()) == {"a", "b"}
    # one person sees A on either side across pairs, and two people differ on some pair
    assert {sides[(k, 1)] for k in keys} == {"a", "b"}
    assert any(sides[(k, 1)] != sides[(k, 2)] for k in keys)
    # another seed draws other sides
    assert any(side_for(seed=1, key=k, person_id=1) != sides[(k, 1)] for k in keys)


def test_a_choice_on_screen_maps_to_the_record_on_that_side():
    assert preference_from_choice("left", left="a") == "a"
    assert preference_from_choice("left", left="b") == "b"
    assert preference_from_choice("right", left="a") == "b"
    assert preference_from_choice("right", left="b") == "a"
    assert preference_from_choice("tie", left="b") == "tie"
    for left in ("a", "b"):
        for pref in ("a", "b", "tie", "both_unacceptable"):
            assert (
                preference_from_choice(choice_from_preference(pref, left=left), left=left) == pref
            )


ACCEPTABLE = AbsoluteLabel("acceptable", "fully_grounded", False)
UNACCEPTABLE = AbsoluteLabel("unacceptable", "misgrounded", False)
SEVERE = AbsoluteLabel("unacceptable", "ungrounded", True)
UNLABELED = AbsoluteLabel()


def test_rationale_required_for_a_tie_on_answers_whose_labels_disagree():
    assert rationale_rule(preference="tie", label_a=ACCEPTABLE, label_b=UNACCEPTABLE) == (
        "tie_on_disagreeing_labels"
    )
    assert rationale_rule(preference="tie", label_a=ACCEPTABLE, label_b=ACCEPTABLE) is None
    assert rationale_rule(preference="tie", label_a=ACCEPTABLE, label_b=UNLABELED) is None
    assert rationale_rule(preference="a", label_a=ACCEPTABLE, label_b=UNACCEPTABLE) is None


def test_rationale_required_when_the_preferred_answer_is_severely_unsafe():
    assert rationale_rule(preference="b", label_a=ACCEPTABLE, label_b=SEVERE) == (
        "severe_safety_preferred"
    )
    assert rationale_rule(preference="a", label_a=ACCEPTABLE, label_b=SEVERE) is None
    assert rationale_rule(preference="both_unacceptable", label_a=SEVERE, label_b=SEVERE) is None


def test_a_pair_is_decided_by_a_strict_majority_else_it_goes_to_a_lead():
    assert decide_pair_outcome(["a"]).preference == "a"
    assert decide_pair_outcome(["a"]).source == "single"
    assert decide_pair_outcome(["b", "b", "a"]).preference == "b"
    assert decide_pair_outcome(["b", "b", "a"]).source == "majority"
    assert decide_pair_outcome(["a", "b", "tie"]).status == "needs_adjudication"
    assert decide_pair_outcome(["a", "b"]).status == "needs_adjudication"
    assert decide_pair_outcome(["tie", "tie"]).preference == "tie"
