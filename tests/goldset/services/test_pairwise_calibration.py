"""Pairwise qualification (issue 30): a reviewer judges the project's calibration pairs blind
and must reach Cohen κ ≥ the project's KAPPA_GATE against the references before real pairs
are offered; a lead grants a retake after a failure; the rule is per project."""

import pytest

from goldset.exceptions import CrossProjectReference
from goldset.models import PairCalibrationAnswer, PairQualification, PairwisePair
from goldset.rules.pairwise import choice_from_preference, score_pair_calibration
from goldset.selectors.pairwise import (
    calibration_left_for,
    get_pair_calibration_status,
    is_pair_qualified,
)
from goldset.services.pairwise import PairwiseRejected, claim_next_pair, submit_judgment
from goldset.services.pairwise_calibration import (
    add_calibration_pair,
    reset_pair_calibration,
    submit_calibration_answer,
)
from tests.factories import UserFactory, default_project
from tests.goldset.pairwise_support import build_runs, choice_for, make_task, reviewers
from tests.goldset.project_support import other_project
from workbench.roles import Role

pytestmark = pytest.mark.django_db

REFERENCES = ("a", "b", "tie", "a")


@pytest.fixture
def calibrated(lead):
    """A task whose first four pairs are the project's calibration pairs."""
    runs, _, _ = build_runs(n_systems=3, n_questions=4)
    task = make_task(runs, actor=lead, name="Calibration source")
    pairs = list(PairwisePair.objects.filter(task=task).order_by("position")[:4])
    items = [
        add_calibration_pair(project=default_project(), actor=lead, pair=pair, reference=ref)
        for pair, ref in zip(pairs, REFERENCES, strict=True)
    ]
    return task, items


def _answer(person, items, preferences):
    for item, preference in zip(items, preferences, strict=True):
        left = calibration_left_for(item, person.pk)
        submit_calibration_answer(
            project=default_project(),
            reviewer=person,
            item=item,
            choice=choice_from_preference(preference, left=left),
        )


def test_an_unqualified_reviewer_is_offered_no_real_pair(calibrated):
    (person,) = reviewers(1, qualified=False)
    assert claim_next_pair(project=default_project(), reviewer=person) is None
    status = get_pair_calibration_status(project=default_project(), reviewer=person)
    assert status.total == 4 and status.answered == 0 and status.next_item == calibrated[1][0]


def test_a_reviewer_who_agrees_with_the_references_qualifies_and_then_claims(calibrated):
    _, items = calibrated
    (person,) = reviewers(1, qualified=False)
    _answer(person, items, REFERENCES)
    result = PairQualification.objects.get(project=default_project(), reviewer=person)
    assert result.passed and result.kappa == pytest.approx(1.0) and result.n_items == 4
    assert result.threshold == pytest.approx(0.7) and result.disagreements == []
    assert is_pair_qualified(project=default_project(), reviewer=person)
    assert claim_next_pair(project=default_project(), reviewer=person) is not None


def test_a_reviewer_never_judges_their_calibration_pairs_again_as_real_pairs(calibrated):
    """The calibration pairs were drawn from the task's own open pairs: the reviewer who
    answered them (and saw the references) gets every other pair, never those four."""
    task, items = calibrated
    (person,) = reviewers(1, qualified=False)
    _answer(person, items, REFERENCES)
    calibration = {frozenset((i.record_a_id, i.record_b_id)) for i in items}
    judged = set()
    while (assignment := claim_next_pair(project=default_project(), reviewer=person)) is not None:
        judged.add(frozenset((assignment.pair.record_a_id, assignment.pair.record_b_id)))
        submit_judgment(
            assignment=assignment, choice=choice_for(assignment, "tie"), strength="", rationale=""
        )
    everything = {
        frozenset(p)
        for p in PairwisePair.objects.filter(task=task).values_list("record_a", "record_b")
    }
    assert judged and not judged & calibration
    assert judged == everything - calibration
    (fresh,) = reviewers(1, prefix="pw-fresh")  # qualified without these answers: offered them
    assert claim_next_pair(project=default_project(), reviewer=fresh) is not None


def test_a_failed_reviewer_sees_where_they_differ_and_a_lead_grants_a_retake(calibrated, lead):
    _, items = calibrated
    (person,) = reviewers(1, qualified=False)
    _answer(person, items, ("b", "a", "a", "tie"))
    result = PairQualification.objects.get(project=default_project(), reviewer=person)
    assert not result.passed
    assert [d["item_id"] for d in result.disagreements] == [i.public_id for i in items]
    # said as the reviewer saw each pair: on their sides
    first = result.disagreements[0]
    left = calibration_left_for(items[0], person.pk)
    assert first["yours"] == ("B (right) better" if left == "a" else "A (left) better")
    assert first["reference"] == ("A (left) better" if left == "a" else "B (right) better")
    assert claim_next_pair(project=default_project(), reviewer=person) is None
    # a repeated submit changes nothing
    again = submit_calibration_answer(
        project=default_project(), reviewer=person, item=items[0], choice="tie"
    )
    assert again.preference == "b"
    assert reset_pair_calibration(project=default_project(), actor=lead, reviewer=person) == 4
    assert not PairCalibrationAnswer.objects.filter(reviewer=person).exists()
    _answer(person, items, REFERENCES)
    assert is_pair_qualified(project=default_project(), reviewer=person)
    with pytest.raises(PairwiseRejected, match="passed"):
        reset_pair_calibration(project=default_project(), actor=lead, reviewer=person)


def test_the_gate_is_the_projects_kappa_gate(calibrated):
    project = default_project()
    project.settings = {**(project.settings or {}), "KAPPA_GATE": "0.1"}
    project.save(update_fields=["settings"])
    _, items = calibrated
    (person,) = reviewers(1, qualified=False)
    _answer(person, items, ("a", "b", "tie", "b"))  # one of four differs
    expected = score_pair_calibration(["a", "b", "tie", "b"], list(REFERENCES), gate=0.1)
    result = PairQualification.objects.get(reviewer=person)
    assert result.threshold == pytest.approx(0.1)
    assert result.kappa == pytest.approx(expected.kappa) and result.passed == expected.passed
    assert result.passed  # κ ≈ 0.64 ≥ 0.1, though below the installation's 0.70


def test_a_set_that_is_not_ready_scores_nobody(lead):
    runs, _, _ = build_runs(n_systems=3, n_questions=1)
    task = make_task(runs, actor=lead, name="Small")
    items = [
        add_calibration_pair(project=default_project(), actor=lead, pair=pair, reference="a")
        for pair in PairwisePair.objects.filter(task=task)
    ]
    (person,) = reviewers(1, qualified=False)
    status = get_pair_calibration_status(project=default_project(), reviewer=person)
    assert status.next_item is None and len(status.problems) == 2
    assert "at least 4" in status.problems[0] and "two values" in status.problems[1]
    assert len(items) == 3


def test_qualification_is_per_project(calibrated):
    (person,) = reviewers(1, qualified=False)
    other = other_project(slug="other-pw")
    PairQualification.objects.create(
        project=other, reviewer=person, n_items=4, kappa=1.0, threshold=0.7, passed=True
    )
    assert not is_pair_qualified(project=default_project(), reviewer=person)


def test_only_leads_add_calibration_pairs_of_their_own_project(calibrated, lead):
    task, items = calibrated
    pair = PairwisePair.objects.filter(task=task).order_by("position")[5]
    annotator = UserFactory(role=Role.ANNOTATOR, username="pw-not-lead")
    with pytest.raises(PairwiseRejected, match="lead"):
        add_calibration_pair(project=default_project(), actor=annotator, pair=pair, reference="a")
    with pytest.raises(PairwiseRejected, match="decided"):
        add_calibration_pair(project=default_project(), actor=lead, pair=pair)
    with pytest.raises(PairwiseRejected, match="reference"):
        add_calibration_pair(project=default_project(), actor=lead, pair=pair, reference="left")
    other = other_project(slug="other-pw-2")
    with pytest.raises((CrossProjectReference, PairwiseRejected)):
        add_calibration_pair(project=other, actor=lead, pair=pair, reference="a")
    # adding the same records again returns the first item
    again = add_calibration_pair(
        project=default_project(), actor=lead, pair=items[0].source_pair, reference="b"
    )
    assert again.pk == items[0].pk and again.reference == "a"
