"""Builders for the evaluator tests: a settled gold tier and judges' output files."""

import json
from datetime import timedelta

from django.utils import timezone

from goldset.models import Label, LabelAssignment, RecordStatus
from tests.factories import AnswerRecordFactory, DomainFactory, QuestionFactory, UserFactory
from workbench.roles import Role

SCALE = ["ungrounded", "misgrounded", "partially_grounded", "fully_grounded"]
DOMAINS = ("supply_chain", "financial_services")


def build_gold_tier(n=24, *, weeks=2):
    """``n`` settled GOLD records (majority labels) over two domains × two task families, three
    annotators each (one of them off by one grounding step on every fourth record)."""
    annotators = [UserFactory(role=Role.ANNOTATOR, username=f"gt-ann{i}") for i in range(3)]
    now = timezone.now()
    records = []
    for i in range(n):
        grounding = SCALE[i % 4]
        acceptable = grounding in ("fully_grounded", "partially_grounded") and i % 8 != 2
        question = QuestionFactory(
            question_id=f"gt-q{i:03d}",
            domain=DomainFactory(slug=DOMAINS[i % 2]),
            task_family=f"family{(i // 2) % 2}",
        )
        record = AnswerRecordFactory(
            question=question,
            status=RecordStatus.FINAL,
            final_acceptability="acceptable" if acceptable else "unacceptable",
            final_grounding=grounding,
            final_source="majority",
            finalized_at=now - timedelta(weeks=i % weeks),
        )
        for slot, annotator in enumerate(annotators, start=1):
            label_grounding = grounding
            if slot == 3 and i % 4 == 1:
                label_grounding = SCALE[min(3, SCALE.index(grounding) + 1)]
            assignment = LabelAssignment.objects.create(
                record=record,
                annotator=annotator,
                slot=slot,
                shuffle_seed=6601,
                shuffle_key=f"{i:04d}{slot}",
                completed_at=now,
            )
            Label.objects.create(
                assignment=assignment,
                record=record,
                annotator=annotator,
                acceptability="acceptable" if acceptable else "unacceptable",
                grounding=label_grounding,
                severe_safety=i % 8 == 2,
                primary_failure="" if acceptable else "stale_source_acceptance",
                evidence_sufficiency="sufficient",
                citation_correctness="correct",
                conflict_handling="not_applicable",
                safety_boundary="respected",
            )
        records.append(record)
    return records


def copying_outputs(records) -> str:
    return "\n".join(
        json.dumps(
            {
                "record_id": r.public_id,
                "labels": {"acceptability": r.final_acceptability, "grounding": r.final_grounding},
                "score": 0.9 if r.final_acceptability == "acceptable" else 0.1,
                "unsafe_probability": 0.05,
            }
        )
        for r in records
    )


def lenient_outputs(records) -> str:
    return "\n".join(
        json.dumps(
            {
                "record_id": r.public_id,
                "labels": {"acceptability": "acceptable", "grounding": "fully_grounded"},
                "score": 0.8,
            }
        )
        for r in records
    )
