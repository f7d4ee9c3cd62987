"""Promotion to gold (issue 28): from a labeled production answer record, a lead creates a gold
triple in one step — the record's question, the governing retrieved block version as the
expected block, the answer as adjudicated as the starting expected answer — which then enters
the normal author / two-reviewer protocol (:func:`goldset.services.triples.create_triple`: routed
by the routing rules, ``pending_review``). Its provenance (the record, and for a trace-born
record the trace id and the sampling rule that chose it) is kept on a
:class:`~goldset.models.TripleOrigin` and in the gold JSONL export.

*Labeled* means settled: ``final`` or ``adjudicated``, with an acceptable final label (an
unacceptable answer is no expected answer). The governing block version is the first cited
block version, else the best-ranked retrieved one matched to the corpus; the lead may pick
another block version the record retrieved or cited, and edit the expected answer.
"""

from django.db import transaction

from goldset.exceptions import GoldsetError
from goldset.models import (
    Acceptability,
    AnswerRecord,
    ReceivedTrace,
    RecordStatus,
    Source,
    Triple,
    TripleOrigin,
)
from goldset.selectors.promotion import governing_candidates
from goldset.services.triples import create_triple
from workbench.roles import Role, roles_in
from workbench.services.audit import record_event

SETTLED = (RecordStatus.FINAL, RecordStatus.ADJUDICATED)
SOURCES = (Source.LLM_GENERATED, Source.PUBLIC_RFP, Source.SYNTHETIC_HUMAN_VERIFIED)


def check_promotable(record: AnswerRecord) -> None:
    if record.is_calibration:
        raise GoldsetError("A calibration item cannot be promoted to a triple.")
    if record.status not in SETTLED:
        raise GoldsetError(
            "record: only a labeled record (final or adjudicated) can be promoted to a triple; "
            f"this one is {record.get_status_display().lower()}."
        )
    if record.final_acceptability != Acceptability.ACCEPTABLE:
        raise GoldsetError(
            "record: its final label is not acceptable, so its answer cannot be the starting "
            "expected answer."
        )


@transaction.atomic
def promote_record_to_triple(
    *,
    actor,
    project,
    record: AnswerRecord,
    block_version_id: int | None = None,
    expected_answer: str = "",
    source: str = Source.LLM_GENERATED,
) -> Triple:
    """Create the triple of ``record`` (a settled, acceptable production record of ``project``)
    authored by ``actor`` (lead or admin). Locks the record; a second promotion of the same
    record returns the first triple and creates nothing. Raises GoldsetError naming the field."""
    if not roles_in(actor, project) & {Role.LEAD.value, Role.ADMIN.value}:
        raise GoldsetError("Only a lead or an admin can promote a record to a gold triple.")
    record = (
        AnswerRecord.objects.select_for_update()
        .select_related("question", "domain")
        .get(pk=record.pk, project=project)
    )
    existing = TripleOrigin.objects.filter(record=record).select_related("triple").first()
    if existing is not None:
        return existing.triple
    check_promotable(record)
    if source not in SOURCES:
        raise GoldsetError(f"source: one of {', '.join(SOURCES)}")
    candidates = governing_candidates(record)
    if not candidates:
        raise GoldsetError(
            "block_version: the record retrieved no passage matched to the corpus; there is no "
            "block version to pin."
        )
    chosen = candidates[0]
    if block_version_id is not None:
        chosen = next((v for v in candidates if v.pk == block_version_id), None)
        if chosen is None:
            raise GoldsetError("block_version: not a block version this record retrieved or cited")
    answer = (expected_answer or record.answer).strip()
    triple = create_triple(
        project=project,
        author=actor,
        question=record.question.text,
        block_version=chosen,
        expected_answer=answer,
        task_type=record.question.task_type,
        source=source,
        domain=record.domain,
        model_uncertainty=record.uncertainty,
        adversarial=record.question.adversarial,
    )
    trace = ReceivedTrace.objects.filter(project=project, record=record).first()
    origin = TripleOrigin.objects.create(
        project=project,
        triple=triple,
        record=record,
        record_public_id=record.public_id,
        trace_id=trace.trace_id if trace else "",
        sampling_rule=trace.sampled_by if trace else "",
        promoted_by=actor,
    )
    record_event(
        actor=actor,
        verb="record_promoted_to_triple",
        obj=triple,
        project=project,
        detail={
            "record": record.public_id,
            "trace_id": origin.trace_id,
            "sampling_rule": origin.sampling_rule,
            "block_version_id": chosen.pk,
            "answer_edited": answer != record.answer.strip(),
        },
    )
    return triple
