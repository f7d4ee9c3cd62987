"""Small builders shared by the answer-labeling tests (not fixtures: explicit calls read better)."""

from goldset.models import FailureCategory
from goldset.services.labeling import claim_next_item, submit_label
from tests.factories import CalibrationResultFactory, UserFactory, default_project
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


def claim_and_label(annotator, *, project=None, **fields):
    result = claim_next_item(project=project or default_project(), annotator=annotator)
    assert result.assignment is not None, result.reason
    return submit_label(assignment=result.assignment, **{**GOOD, **fields})


SECRET_SYSTEM = "secret_system_hybrid_xyz"
SECRET_RUN = "secret-run-2026-0417"
SECRET_MODEL = "secret-model-gpt-9000"
SECRETS = (SECRET_SYSTEM, SECRET_RUN, SECRET_MODEL)


def build_conflict_item(domain, *, n_annotators=3):
    """A GOLD record with a conflict flag, gold evidence and a citation, from a known system;
    returns (record, annotators) with every annotator qualified for the domain."""
    from goldset.models import AnswerCitation, EvidencePassage
    from tests.factories import (
        AnswerRecordFactory,
        BlockFactory,
        BlockVersionFactory,
        DocumentFactory,
        QuestionFactory,
        RunFactory,
        SystemFactory,
    )

    document = DocumentFactory(domain=domain, title="Northwest Lane Budget-Control Memo")
    version = BlockVersionFactory(
        block=BlockFactory(block_id="blk-memo-02", document=document),
        text="Air expedite on the Northwest lanes requires budget-control approval.",
    )
    question = QuestionFactory(domain=domain, conflict_flag=True, freshness_flag=True)
    EvidencePassage.objects.create(
        question=question,
        kind="gold",
        block_version=version,
        passage_ref="blk-memo-02",
        role="regional_exception",
        label="sufficient",
    )
    record = AnswerRecordFactory(
        question=question,
        run=RunFactory(run_id=SECRET_RUN, system=SystemFactory(system_id=SECRET_SYSTEM)),
        model={"generator": SECRET_MODEL, "temperature": 0},
        answer="Budget control must approve the air expedite first.",
    )
    AnswerCitation.objects.create(
        record=record, block_version=version, passage_ref="blk-memo-02", position=0
    )
    return record, qualified_annotators(domain, n_annotators)


def assert_blind(html: str):
    for secret in SECRETS:
        assert secret not in html, f"{secret} leaked"
