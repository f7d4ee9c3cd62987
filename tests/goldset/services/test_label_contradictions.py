"""Issue 24: contradictory labels are refused server-side naming the rule, by the one rule
(goldset.rules.label_consistency) the label form, the labeling and adjudication services and
the calibration reference labels share."""

import pytest
from django.urls import reverse

from goldset.forms.answers import AdjudicationForm, LabelForm, ReferenceLabelForm
from goldset.models import Adjudication, CalibrationItem, Label
from goldset.rules.label_consistency import RULES, label_contradiction
from goldset.services.adjudication import record_adjudication
from goldset.services.calibration import CalibrationError, set_reference_label
from goldset.services.labeling import LabelRuleViolation, claim_next_item, submit_label
from tests.factories import AnswerRecordFactory, CalibrationItemFactory, DomainFactory
from tests.goldset.answers_helpers import (
    BAD,
    GOOD,
    claim_and_label,
    default_project,
    qualified_annotators,
)

pytestmark = pytest.mark.django_db

SEVERE_BUT_FINE = {**GOOD, "severe_safety": True, "rationale": "Leaks a supplier's bank details."}
CONTRADICTIONS = [
    (SEVERE_BUT_FINE, "severe_but_acceptable_and_fully_grounded", "severe_safety"),
    (
        {
            **GOOD,
            "grounding": "partially_grounded",
            "primary_failure": "protected_data_exposure",
        },
        "acceptable_with_blocking_failure",
        "acceptability",
    ),
    (
        {
            **GOOD,
            "primary_failure": "numeric_transposition",
            "secondary_failures": ["policy_boundary_over_answer"],
        },
        "acceptable_with_blocking_failure",
        "acceptability",
    ),
    (
        {
            **BAD,
            "grounding": "fully_grounded",
            "primary_failure": "retrieval_silence_invented_answer",
        },
        "fully_grounded_invented_answer",
        "grounding",
    ),
]


def _assignment(slug="supply_chain"):
    domain = DomainFactory(slug=slug)
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1, prefix=f"{slug}-")
    return claim_next_item(annotator=annotator, project=default_project()).assignment


@pytest.mark.parametrize("fields,rule,field", CONTRADICTIONS)
def test_the_labeling_service_refuses_a_contradiction_naming_the_rule(fields, rule, field):
    assignment = _assignment()
    with pytest.raises(LabelRuleViolation) as exc:
        submit_label(assignment=assignment, **fields)
    assert (exc.value.rule, exc.value.field) == (rule, field)
    assert str(exc.value) == RULES[rule].message and "rule:" in str(exc.value)
    assert not Label.objects.exists()


def test_consistent_neighbours_of_each_contradiction_are_accepted():
    # severe + acceptable but only partially grounded; severe + unacceptable + fully grounded
    for i, fields in enumerate(
        [
            {**SEVERE_BUT_FINE, "grounding": "partially_grounded"},
            {**BAD, "grounding": "fully_grounded", "severe_safety": True, "rationale": "Leak."},
            {**BAD, "primary_failure": "protected_data_exposure"},
            {
                **BAD,
                "grounding": "ungrounded",
                "primary_failure": "retrieval_silence_invented_answer",
            },
        ]
    ):
        assert submit_label(assignment=_assignment(f"d{i}"), **fields).pk
    assert (
        label_contradiction(
            acceptability="acceptable", grounding="fully_grounded", severe_safety=False
        )
        is None
    )


def test_the_label_form_shows_the_rule_on_its_field():
    data = {**SEVERE_BUT_FINE, "severe_safety": "yes"}
    form = LabelForm(data={k: v for k, v in data.items() if v not in ("", [])})
    assert not form.is_valid()
    assert form.errors["severe_safety"] == [
        RULES["severe_but_acceptable_and_fully_grounded"].message
    ]
    adjudication = AdjudicationForm(
        data={
            "acceptability": "acceptable",
            "grounding": "fully_grounded",
            "severe_safety": "yes",
            "rationale": "x",
        }
    )
    assert not adjudication.is_valid() and "severe_safety" in adjudication.errors
    reference = ReferenceLabelForm(
        data={"acceptability": "acceptable", "grounding": "fully_grounded", "severe_safety": "yes"}
    )
    assert not reference.is_valid() and "severe_safety" in reference.errors


def test_the_label_page_refuses_it_over_http(client_for):
    assignment = _assignment()
    url = reverse("answers:item", args=[assignment.record.public_id])
    data = {**SEVERE_BUT_FINE, "severe_safety": "yes"}
    response = client_for(assignment.annotator).post(
        url, {k: v for k, v in data.items() if v not in ("", [])}
    )
    assert response.status_code == 200
    assert "rule: severe safety vs acceptable and fully grounded" in response.content.decode()
    assert not Label.objects.exists()


def test_adjudication_refuses_a_contradiction(lead):
    domain = DomainFactory(slug="supply_chain")
    record = AnswerRecordFactory(question__domain=domain)
    one, two, three = qualified_annotators(domain, 3)
    claim_and_label(one, **GOOD)
    claim_and_label(two, **GOOD)
    claim_and_label(three, **{**BAD, "severe_safety": True, "rationale": "Unsafe."})
    record.refresh_from_db()
    fields = {
        k: v
        for k, v in SEVERE_BUT_FINE.items()
        if k
        in (
            "acceptability",
            "grounding",
            "severe_safety",
            "primary_failure",
            "secondary_failures",
            "rationale",
        )
    }
    with pytest.raises(LabelRuleViolation) as exc:
        record_adjudication(lead=lead, record=record, **fields)
    assert exc.value.rule == "severe_but_acceptable_and_fully_grounded"
    assert not Adjudication.objects.exists()


def test_a_contradictory_reference_label_is_refused(lead):
    item = CalibrationItemFactory()
    with pytest.raises(CalibrationError, match="rule: severe safety vs acceptable"):
        set_reference_label(
            lead=lead,
            item=item,
            acceptability="acceptable",
            grounding="fully_grounded",
            severe_safety=True,
            project=default_project(),
        )
    assert CalibrationItem.objects.get(pk=item.pk).reference_acceptability == ""
