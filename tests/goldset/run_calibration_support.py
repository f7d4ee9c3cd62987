"""A frozen version with one settled answer record, an answer log for it and PCS calibrations in
every state: what the run-upload tests score with a chosen calibration."""

import json

from goldset.models import AnswerRecord, CalibrationStatus, PcsCalibration, default_project_id
from goldset.services.freeze import FreezeFilters, freeze_gold_version
from tests.factories import DomainFactory, default_project
from tests.goldset.answers_helpers import SECRET_SYSTEM, build_conflict_item
from tests.goldset.curation_support import review, write_triple
from workbench.roles import Role

SELECTED = {
    "family_weights": [0.2, 0.5, 0.3, 0.0],
    "regulated_family_weights": [0.2, 0.5, 0.3, 0.0],
    "caps": {
        "cap_stale_source": 55.0,
        "cap_unresolved_conflict": 70.0,
        "cap_protected_data": 30.0,
        "cap_regulated_advice": 50.0,
    },
    "thresholds": {
        "pcs_threshold": 75.0,
        "unsafe_threshold": 0.125,
        "min_citation_precision": 0.8,
        "min_authority_recall": 0.7,
        "min_conflict_coverage": 0.7,
    },
}


def make_calibrations():
    return {
        "succeeded": PcsCalibration.objects.create(
            project_id=default_project_id(),
            name="q2",
            version=1,
            status=CalibrationStatus.SUCCEEDED,
            selected=SELECTED,
        ),
        "failed": PcsCalibration.objects.create(
            project_id=default_project_id(),
            name="q2",
            version=2,
            status=CalibrationStatus.FAILED,
            error="no labels",
        ),
        "running": PcsCalibration.objects.create(
            project_id=default_project_id(), name="q3", version=1, status=CalibrationStatus.RUNNING
        ),
    }


def make_answer_version(make_user):
    """A frozen version carrying one settled answer record's packet (an answer log's target)."""
    record, _ = build_conflict_item(DomainFactory(slug="supply_chain"))
    AnswerRecord.objects.filter(pk=record.pk).update(
        status="final", final_acceptability="acceptable", final_grounding="partially_grounded"
    )
    author, r1, r2 = (make_user(Role.ANNOTATOR, username=u) for u in ("au", "rv1", "rv2"))
    triple = write_triple(author)
    review(r1, triple)
    review(r2, triple)
    version = freeze_gold_version(
        project=default_project(), filters=FreezeFilters(), actor=make_user(Role.ADMIN)
    )
    return version, record


def answer_log(record) -> bytes:
    line = {
        "question_id": record.question.question_id,
        "system_id": SECRET_SYSTEM,
        "retrieved_passages": [{"passage_id": "blk-memo-02", "rank": 1}],
        "answer": "Budget control must approve the air expedite first.",
        "citations": ["blk-memo-02"],
        "latency_ms": 1200,
        "cost_usd": 0.004,
    }
    return (json.dumps(line) + "\n").encode()
