"""Adjudication and audit review of answer records (seed 004 §3.5, A.2; DESIGN.md §6).

Items reach a lead when their labels have no majority, carry a severe-safety flag, or fall in
the 5 % audit sample (seed 9314). The lead records the final label with a rationale and failure
categories; the item is then adjudicated and its final fields come from the lead.
"""

from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import (
    Adjudication,
    AdjudicationReason,
    AgreementDirtyScope,
    AnswerRecord,
    DecisionKind,
    FinalSource,
    RecordStatus,
    WebhookEvent,
)
from goldset.rules.labeling import OPEN_FOR_LEAD
from goldset.rules.time_on_item import ItemTiming
from goldset.selectors.answers import adjudicable_records
from goldset.selectors.guidelines import ADJUDICATION, get_guideline_in_force
from goldset.services.agreement import schedule_agreement_recompute
from goldset.services.agreement_sources import ANSWERS
from goldset.services.labeling import check_label_rules
from goldset.services.locking import submit_transaction
from goldset.services.time_on_item import flag_if_fast, timing_fields
from goldset.services.webhooks import adjudication_data, emit
from workbench.services.audit import record_event


class AdjudicationRejected(GoldsetError):
    """The item cannot be adjudicated by this user now; the message says why."""


def _refusal(*, lead, record: AnswerRecord) -> str:
    """Why :func:`adjudicable_records` left the record out for ``lead`` (the message only; the
    decision is the rule's)."""
    if record.status == RecordStatus.ADJUDICATED:
        return "This item has already been adjudicated."
    if record.status not in OPEN_FOR_LEAD:
        return "This item is not in the adjudication queue."
    if record.labels.filter(annotator=lead).exists():
        return "You labeled this item; another lead must adjudicate it."
    return "Your role does not adjudicate items."


@submit_transaction("adjudication")
def record_adjudication(
    *,
    lead,
    record: AnswerRecord,
    acceptability: str,
    grounding: str,
    severe_safety: bool = False,
    primary_failure: str = "",
    secondary_failures=(),
    rationale: str = "",
    timing: ItemTiming | None = None,
) -> Adjudication:
    """Record the lead's final label. Locks the record; one adjudication per item (a second one
    is rejected, not merged); who may adjudicate is :func:`adjudicable_records`, the rule the
    queue and the page filter with (a lead or admin, never on an item they labeled). Rationale is
    always required; the failure-taxonomy rules of labels apply. Records the time on item (from
    ``timing.opened_at``, the signed opening of the page: nothing is claimed), the adjudication
    guideline in force, and a FastDecision when it was faster than the tier's threshold. The
    record is checked in its own project (pages hand over records their project's access
    selector returned: another project's item never gets here through them)."""
    record = (
        AnswerRecord.objects.select_for_update(of=("self",))
        .select_related("question", "project")
        .get(pk=record.pk)
    )
    adjudicable = adjudicable_records(user=lead, project=record.project_id, statuses=OPEN_FOR_LEAD)
    if not adjudicable.filter(pk=record.pk).exists():
        raise AdjudicationRejected(_refusal(lead=lead, record=record))
    secondary = check_label_rules(
        question=record.question,
        acceptability=acceptability,
        grounding=grounding,
        severe_safety=severe_safety,
        primary_failure=primary_failure,
        secondary_failures=secondary_failures,
        rationale=rationale,
        adjudication=True,
    )
    audit = record.status == RecordStatus.AUDIT
    changed = (record.final_acceptability, record.final_grounding) != (acceptability, grounding)
    adjudication = Adjudication.objects.create(
        record=record,
        lead=lead,
        reason=AdjudicationReason.AUDIT_SAMPLE if audit else record.adjudication_reason,
        acceptability=acceptability,
        grounding=grounding,
        severe_safety=severe_safety,
        primary_failure=primary_failure,
        secondary_failures=secondary,
        rationale=rationale.strip(),
        changed_outcome=changed if audit else True,
        guideline=get_guideline_in_force(domain_id=record.domain_id, task=ADJUDICATION),
        **timing_fields(claimed_at=None, timing=timing),
    )
    flag_if_fast(
        project=record.project,
        decision=adjudication,
        kind=DecisionKind.ADJUDICATION,
        annotator_id=lead.pk,
        tier=record.tier,
    )
    record.status = RecordStatus.ADJUDICATED
    record.final_acceptability = acceptability
    record.final_grounding = grounding
    record.final_source = FinalSource.AUDIT if audit else FinalSource.ADJUDICATION
    record.finalized_at = timezone.now()
    record.save()
    record_event(
        actor=lead,
        verb="adjudicated",
        obj=record,
        detail={
            "reason": adjudication.reason,
            "acceptability": acceptability,
            "grounding": grounding,
        },
    )
    # An adjudication changes only the annotators' agreement with adjudicated labels (facts).
    schedule_agreement_recompute(
        project_id=record.project_id,
        dirty={"protocol": ANSWERS, "kind": AgreementDirtyScope.FACTS},
    )
    emit(
        WebhookEvent.ADJUDICATION_RECORDED,
        adjudication_data(adjudication, record),
        project=record.project,
        now=adjudication.created_at,
    )
    return adjudication
