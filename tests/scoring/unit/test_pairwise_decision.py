"""The decision rule's pairwise clause: pairwise results agree with the PCS decision when every
released system outranks every held one by Bradley–Terry (or, when all share a decision, when
both name the same best system)."""

from scoring.pairwise import agreement_with_decision


def test_released_above_held_agrees():
    got = agreement_with_decision(
        {"s1": 0.8, "s2": -0.1, "s3": -0.7}, {"s1": True, "s2": True, "s3": False}, {}
    )
    assert got.agrees is True and got.conflicts == [] and got.compared == ["s1", "s2", "s3"]
    assert got.statement.startswith("Pairwise results agree")


def test_a_held_system_ranked_above_a_released_one_disagrees_and_is_named():
    got = agreement_with_decision({"s1": -0.5, "s2": 0.5}, {"s1": True, "s2": False}, {})
    assert got.agrees is False and got.conflicts == [("s1", "s2")]
    assert "s2 over s1" in got.statement


def test_all_released_compares_the_best_system():
    same = agreement_with_decision(
        {"a": 1.0, "b": 0.0}, {"a": True, "b": True}, {"a": 80.0, "b": 70.0}
    )
    assert same.agrees is True
    other = agreement_with_decision(
        {"a": 1.0, "b": 0.0}, {"a": False, "b": False}, {"a": 60.0, "b": 70.0}
    )
    assert other.agrees is False and "PCS: b; Bradley–Terry: a" in other.statement


def test_systems_outside_either_analysis_are_left_out():
    got = agreement_with_decision({"a": 1.0, "x": 2.0}, {"a": True, "b": False}, {})
    assert got.agrees is None and got.compared == ["a"]
