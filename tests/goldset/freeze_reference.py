"""The gold-row, adjudication-export, question-packet and gold-packet code before issue 26,
verbatim (model objects, joins and prefetches), kept as the reference the streamed versions
must equal byte for byte."""

from collections.abc import Iterator, Mapping

from django.db.models import Prefetch

from goldset.models import AnswerRecord, EvidenceKind, EvidencePassage, Label, Question, Triple
from goldset.selectors.answers import _export_statuses
from goldset.services import exports
from workbench.roles import Role


def gold_row(triple: Triple) -> dict:
    """One line of gold JSONL (DESIGN.md §9); :mod:`goldset.services.triples` imports this shape."""
    revision = triple.current_revision
    version = revision.expected_block_version
    metadata = {
        "domain": triple.domain.slug,
        "difficulty": triple.difficulty,
        "task_type": triple.task_type,
        "tier": triple.tier,
        "source": triple.source,
        "added_by": triple.author.username,
        "added_at": triple.added_at.date().isoformat(),
        "reviewed_by": [r.reviewer.username for r in revision.reviews.all()],
        "resolution": triple.resolution,
    }
    if triple.customer_id:
        metadata["customer"] = triple.customer.slug
    if revision.superseded_reason:
        # pinned to superseded text on purpose; the importer reads the reason back (check_pin)
        metadata["superseded_reason"] = revision.superseded_reason
    return {
        "id": triple.external_id,
        "question": revision.question,
        "expected_block": {
            "block_id": version.block.block_id,
            "document_id": version.block.document.document_id,
            "version": version.version,
            "page_range": version.page_range,
            "sha256": version.sha256,
        },
        "expected_answer": revision.expected_answer,
        "metadata": metadata,
    }


def _decision_timing(decision) -> dict:
    """Time on item and the guideline version a label or adjudication was made under (None for
    decisions recorded before they were kept)."""
    return {
        "server_ms": decision.server_ms,
        "active_ms": decision.active_ms,
        "guideline_version": decision.guideline.version if decision.guideline_id else None,
    }


def iter_adjudication_export(
    *, project, pseudonyms: Mapping[int, str], include_open: bool = False
) -> Iterator[dict]:
    """One dict per item (seed 004 Table 9 "Adjudication export"): labels with rationales,
    failure categories and reviewer role, the adjudication if any, and the final result.

    Reviewers appear as the ``pseudonyms`` given (``{user_id: label}``, see
    ``services.pseudonyms``: random per gold version or per export), never names or keys. Items
    still collecting labels are left out unless ``include_open``. Streams in chunks.
    """
    statuses = _export_statuses(include_open)
    records = (
        AnswerRecord.objects.filter(project=project, is_calibration=False, status__in=statuses)
        .select_related("question__domain", "run__system", "adjudication__guideline")
        .prefetch_related(
            Prefetch(
                "labels",
                queryset=Label.objects.select_related("assignment", "guideline").order_by(
                    "assignment__slot", "id"
                ),
            )
        )
        .order_by("id")
    )
    for record in records.iterator(chunk_size=500):
        adjudication = getattr(record, "adjudication", None)
        yield {
            "item_id": record.public_id,
            "question_id": record.question.question_id,
            "domain": record.question.domain.slug,
            "task_family": record.question.task_family,
            "run_id": record.run.run_id,
            "system_id": record.run.system.system_id,
            "tier": record.tier,
            "routing_rule": record.routing_rule,
            "rules_version": record.rules_version,
            "status": record.status,
            "labels": [
                {
                    "slot": label.assignment.slot,
                    "reviewer": pseudonyms[label.annotator_id],
                    "reviewer_role": Role.ANNOTATOR.value,
                    "acceptability": label.acceptability,
                    "grounding": label.grounding,
                    "evidence_sufficiency": label.evidence_sufficiency,
                    "citation_correctness": label.citation_correctness,
                    "conflict_handling": label.conflict_handling,
                    "safety_boundary": label.safety_boundary,
                    "severe_safety": label.severe_safety,
                    "primary_failure": label.primary_failure or None,
                    "secondary_failures": label.secondary_failures,
                    "rationale": label.rationale,
                    "labeled_at": label.created_at.isoformat(),
                    **_decision_timing(label),
                }
                for label in record.labels.all()
            ],
            "adjudication": None
            if adjudication is None
            else {
                "reviewer": pseudonyms[adjudication.lead_id],
                "reviewer_role": Role.LEAD.value,
                "reason": adjudication.reason,
                "acceptability": adjudication.acceptability,
                "grounding": adjudication.grounding,
                "severe_safety": adjudication.severe_safety,
                "primary_failure": adjudication.primary_failure or None,
                "secondary_failures": adjudication.secondary_failures,
                "rationale": adjudication.rationale,
                "changed_outcome": adjudication.changed_outcome,
                "adjudicated_at": adjudication.created_at.isoformat(),
                **_decision_timing(adjudication),
            },
            "audit_sample": {
                "seed": record.audit_seed,
                "draw": record.audit_draw,
                "selected": record.in_audit_sample,
            }
            if record.audit_seed is not None
            else None,
            "final": {
                "acceptability": record.final_acceptability or None,
                "grounding": record.final_grounding or None,
                "source": record.final_source or None,
            },
        }


def _questions(project):
    return (
        Question.objects.filter(project=project)
        .select_related("domain")
        .prefetch_related(
            Prefetch("evidence", queryset=EvidencePassage.objects.order_by("position", "pk"))
        )
        .order_by("question_id")
    )


def question_record(q: Question) -> dict:
    flags = [f for f, on in (("conflict", q.conflict_flag), ("freshness", q.freshness_flag)) if on]
    return {
        "question_id": q.question_id,
        "question": q.text,
        "domain": q.domain.slug,
        "task_family": q.task_family,
        "variant": q.variant,
        "flags": flags,
        "required_behavior": q.required_behavior,
        "safety_flags": q.safety_flags,
    }


def packet_record(q: Question) -> dict:
    """Seed 004 A.4: gold passages with role, authority, effective window and label; near
    misses with their reason; prohibited behaviours."""
    gold, near = [], []
    for e in q.evidence.all():
        if e.kind == EvidenceKind.NEAR_MISS:
            near.append({"passage_id": e.passage_ref, "reason": e.reason})
        else:
            passage = {
                "passage_id": e.passage_ref,
                "role": e.role,
                "effective": e.effective,
                "label": e.label,
            }
            if e.authority is not None:  # absent: scoring.probe's default authority applies
                passage["authority"] = float(e.authority)
            gold.append(passage)
    return {
        **question_record(q),
        "gold_evidence": gold,
        "near_miss": near,
        "prohibited_answer_behavior": q.prohibited_behaviors,
    }


def iter_answer_question_packets(*, project) -> Iterator[dict]:
    for q in _questions(project).iterator(chunk_size=500):
        yield packet_record(q)


def gold_packet(row: dict, p, *, redacted: bool) -> dict:
    """A gold row's PROBE evidence packet (``p``: its pinned block version, an
    ``exports.Pinned``), as ``exports._packet`` built it before the line was composed around
    its evidence encoded once per pin."""
    passage = exports._passage(p, redacted=redacted)  # the evidence itself is unchanged
    return {
        "question_id": row["id"],
        "domain": (row.get("metadata") or {}).get("domain"),
        "gold_evidence": [passage],
        "near_miss": [],
        "prohibited_answer_behavior": [],
    }
