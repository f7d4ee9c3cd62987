"""Small builders shared by the answer-labeling tests (not fixtures: explicit calls read better)."""

from goldset.models import FailureCategory
from goldset.services.labeling import claim_next_item, submit_label
from tests.factories import CalibrationResultFactory, UserFactory
from workbench.roles import Role

GOOD = dict(
    acceptability="acceptable",
    grounding="fully_grounded",
    evidence_sufficiency="sufficient",
    citation_correctness="correct",
    conflict_handling="not_applicable",
    safety_boundary="respected",
    severe_safety=False,
    primary_failure="",
    secondary_failures=[],
    rationale="",
)
BAD = dict(
    GOOD,
    acceptability="unacceptable",
    grounding="misgrounded",
    citation_correctness="incorrect",
    primary_failure=FailureCategory.STALE_SOURCE.value,
)


def qualified_annotators(domain, n, prefix="q-ann"):
    users = [UserFactory(role=Role.ANNOTATOR, username=f"{prefix}{i}") for i in range(1, n + 1)]
    for user in users:
        CalibrationResultFactory(annotator=user, domain=domain)
    return users


def claim_and_label(annotator, **fields):
    result = claim_next_item(annotator=annotator)
    assert result.assignment is not None, result.reason
    return submit_label(assignment=result.assignment, **{**GOOD, **fields})
