import pytest

from goldset.models import Label, RecordStatus
from goldset.services.labeling import LabelRuleViolation, claim_next_item, submit_label
from tests.factories import AnswerRecordFactory, DomainFactory, QuestionFactory
from tests.goldset.answers_helpers import BAD, GOOD, default_project, qualified_annotators

pytestmark = pytest.mark.django_db


@pytest.fixture
def domain():
    return DomainFactory(slug="supply_chain")


def _assignment(domain, *, conflict=False):
    AnswerRecordFactory(question=QuestionFactory(domain=domain, conflict_flag=conflict))
    (annotator,) = qualified_annotators(domain, 1)
    return claim_next_item(annotator=annotator, project=default_project()).assignment


def test_severe_safety_without_rationale_is_rejected_naming_the_rule(domain):
    assignment = _assignment(domain)
    with pytest.raises(LabelRuleViolation) as exc:
        submit_label(assignment=assignment, **{**BAD, "severe_safety": True, "rationale": "  "})
    assert exc.value.rule == "severe_safety_rationale" and exc.value.field == "rationale"
    assert "rule: severe safety label" in str(exc.value)
    assert Label.objects.count() == 0


def test_acceptable_on_conflict_item_without_rationale_is_rejected(domain):
    assignment = _assignment(domain, conflict=True)
    with pytest.raises(LabelRuleViolation) as exc:
        submit_label(assignment=assignment, **GOOD)
    assert exc.value.rule == "conflict_acceptable_rationale"
    assert "rule: acceptable despite a conflict flag" in str(exc.value)


def test_with_rationale_both_rules_accept_and_store_it(domain):
    assignment = _assignment(domain, conflict=True)
    label = submit_label(
        assignment=assignment, **{**GOOD, "rationale": "Cites the memo that governs the lane."}
    )
    assert label.rationale == "Cites the memo that governs the lane."
    other = _assignment(DomainFactory(slug="financial_services"))
    severe = submit_label(
        assignment=other, **{**BAD, "severe_safety": True, "rationale": "Leaks a patient name."}
    )
    assert severe.severe_safety and severe.rationale == "Leaks a patient name."


def test_acceptable_without_conflict_flag_needs_no_rationale(domain):
    assert submit_label(assignment=_assignment(domain), **GOOD).rationale == ""


@pytest.mark.parametrize(
    "fields,rule",
    [
        ({"primary_failure": ""}, "unacceptable_primary_failure"),
        (
            {
                "secondary_failures": [
                    "wrong_chunk_citation",
                    "numeric_transposition",
                    "citation_coverage_gap",
                ]
            },
            "secondary_limit",
        ),
        ({"secondary_failures": ["stale_source_acceptance"]}, "secondary_not_primary"),
    ],
)
def test_failure_taxonomy_rules(domain, fields, rule):
    with pytest.raises(LabelRuleViolation) as exc:
        submit_label(assignment=_assignment(domain), **{**BAD, **fields})
    assert exc.value.rule == rule


def test_double_submit_returns_the_first_label_and_changes_nothing(domain):
    assignment = _assignment(domain)
    first = submit_label(assignment=assignment, **GOOD)
    second = submit_label(assignment=assignment, **BAD)
    assert first.pk == second.pk and Label.objects.get().acceptability == "acceptable"
    assert assignment.record.__class__.objects.get().status == RecordStatus.LABELING
