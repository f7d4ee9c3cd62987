import json

import pytest

from goldset.models import FinalSource, RecordStatus
from goldset.services.adjudication import AdjudicationRejected, record_adjudication
from goldset.services.labeling import LabelRuleViolation
from goldset.services.probe_exports import adjudication_export_rows
from tests.factories import AnswerRecordFactory, DomainFactory, default_project
from tests.goldset.answers_helpers import BAD, GOOD, claim_and_label, qualified_annotators

pytestmark = pytest.mark.django_db


@pytest.fixture
def split_record():
    domain = DomainFactory(slug="supply_chain")
    record = AnswerRecordFactory(question__domain=domain)
    one, two, three = qualified_annotators(domain, 3)
    claim_and_label(one, **GOOD)
    claim_and_label(two, **{**GOOD, "grounding": "partially_grounded"})
    claim_and_label(
        three, **{**BAD, "severe_safety": True, "rationale": "Approves without budget control."}
    )
    record.refresh_from_db()
    return record


def test_lead_resolves_the_item_with_a_rationale(split_record, lead):
    adjudication = record_adjudication(
        lead=lead,
        record=split_record,
        acceptability="unacceptable",
        grounding="misgrounded",
        severe_safety=True,
        primary_failure="stale_source_acceptance",
        secondary_failures=["citation_coverage_gap"],
        rationale="The memo governs; the answer follows the superseded guide.",
    )
    split_record.refresh_from_db()
    assert adjudication.reason == "severe_safety"
    assert (split_record.status, split_record.final_source, split_record.final_acceptability) == (
        RecordStatus.ADJUDICATED,
        FinalSource.ADJUDICATION,
        "unacceptable",
    )
    with pytest.raises(AdjudicationRejected, match="already"):
        record_adjudication(
            lead=lead,
            record=split_record,
            acceptability="acceptable",
            grounding="fully_grounded",
            rationale="x",
        )


def test_adjudication_always_needs_a_rationale(split_record, lead):
    with pytest.raises(LabelRuleViolation) as exc:
        record_adjudication(
            lead=lead, record=split_record, acceptability="acceptable", grounding="fully_grounded"
        )
    assert exc.value.rule == "adjudication_rationale"


def test_items_still_collecting_labels_cannot_be_adjudicated(lead):
    record = AnswerRecordFactory()
    with pytest.raises(AdjudicationRejected, match="not in the adjudication queue"):
        record_adjudication(
            lead=lead,
            record=record,
            acceptability="acceptable",
            grounding="fully_grounded",
            rationale="x",
        )


def test_export_has_labels_rationales_categories_roles_and_result(split_record, lead):
    record_adjudication(
        lead=lead,
        record=split_record,
        acceptability="unacceptable",
        grounding="misgrounded",
        primary_failure="stale_source_acceptance",
        rationale="Superseded guide.",
    )
    (row,) = list(adjudication_export_rows(project=default_project(), scope="export:test"))
    json.dumps(row)  # every line is plain JSON
    assert row["item_id"] == split_record.public_id
    assert row["system_id"] == split_record.run.system.system_id
    assert [label["reviewer_role"] for label in row["labels"]] == ["annotator"] * 3
    assert row["labels"][2]["rationale"] == "Approves without budget control."
    assert row["labels"][2]["primary_failure"] == "stale_source_acceptance"
    assert row["adjudication"]["reviewer_role"] == "adjudication_lead"
    assert row["adjudication"]["reason"] == "severe_safety"
    assert row["final"] == {
        "acceptability": "unacceptable",
        "grounding": "misgrounded",
        "source": "adjudication",
    }
    reviewers = [label["reviewer"] for label in row["labels"]]
    assert all(r.startswith("person-") for r in reviewers) and len(set(reviewers)) == 3
    ids = {str(label.annotator_id) for label in split_record.labels.all()} | {str(lead.pk)}
    assert not any(r.removeprefix("person-") in ids for r in reviewers)
    (again,) = list(adjudication_export_rows(project=default_project(), scope="export:test"))
    (other,) = list(adjudication_export_rows(project=default_project(), scope="export:another"))
    assert [label["reviewer"] for label in again["labels"]] == reviewers  # stable in a scope
    assert not set(reviewers) & {label["reviewer"] for label in other["labels"]}
