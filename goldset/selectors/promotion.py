"""Reads for promotion and re-routing pages. Answer records are addressed by ``public_id`` only:
nothing here loads their system, run or model (blinding holds for leads)."""

from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404
from django.shortcuts import get_object_or_404

from goldset.exceptions import GoldsetError
from goldset.models import AnswerCitation, AnswerRecord, BlockVersion, Label, Tier, Triple
from goldset.rules.blinding import RECORD_SYSTEM_COLUMNS
from goldset.rules.tiers import (
    KINDS,
    PROMOTABLE_RECORD_STATUSES,
    PROMOTABLE_TRIPLE_STATES,
    RECORD,
    TRIPLE,
)
from goldset.selectors.keyset import KeysetPage, keyset_page
from workbench.models import AuditEvent

HISTORY_VERBS = ("promoted", "rerouted")
RECORD_TYPE, TRIPLE_TYPE = "goldset.answerrecord", "goldset.triple"


def promotable_triples_q() -> Q:
    return Q(tier=Tier.TRIAGE, state__in=PROMOTABLE_TRIPLE_STATES, current_revision__isnull=False)


def promotable_records_q() -> Q:
    return Q(tier=Tier.TRIAGE, status__in=PROMOTABLE_RECORD_STATUSES, is_calibration=False)


def filter_promotable(
    *, project, kind: str, domain: str = "", task_type: str = "", source: str = ""
):
    """``project``'s promotable TRIAGE cases of ``kind`` matching the filters (domain slug, task
    type and, for triples, source). System, run and model are deliberately not filters
    (blinding)."""
    if kind == TRIPLE:
        qs = Triple.objects.filter(promotable_triples_q(), project=project)
        if domain:
            qs = qs.filter(domain__slug=domain)
        if task_type:
            qs = qs.filter(task_type=task_type)
        if source:
            qs = qs.filter(source=source)
        return qs
    if kind == RECORD:
        qs = AnswerRecord.objects.filter(promotable_records_q(), project=project)
        if domain:
            qs = qs.filter(question__domain__slug=domain)
        if task_type:
            qs = qs.filter(question__task_type=task_type)
        return qs
    raise GoldsetError(f"kind: choose one of {', '.join(KINDS)}.")


def list_promotable(
    *,
    project,
    kind: str,
    domain: str = "",
    task_type: str = "",
    source: str = "",
    cursor: str | None = None,
    size: int,
) -> KeysetPage:
    """One keyset page (by id) of the promotable TRIAGE cases matching the filters, read from the
    ``triple_promotable`` / ``answer_record_promotable`` index, with what their rows show (blind
    for answer records: no run, system or model is loaded; their labels are counted for the
    page's rows only). Raises Http404 for a malformed cursor."""
    qs = filter_promotable(
        project=project, kind=kind, domain=domain, task_type=task_type, source=source
    )
    if kind == TRIPLE:
        qs = qs.select_related("domain", "current_revision")
    else:
        labels = (
            Label.objects.filter(record_id=OuterRef("pk"))
            .order_by()
            .values("record_id")
            .annotate(n=Count("id"))
            .values("n")
        )
        qs = (
            qs.select_related("question__domain")
            .defer(*RECORD_SYSTEM_COLUMNS, "answer")
            .annotate(n_labels=Coalesce(Subquery(labels), 0))
        )
    return keyset_page(qs, fields=("id",), cursor=cursor, size=size)


def matching_ids(
    *, project, kind: str, domain: str = "", task_type: str = "", source: str = "", limit: int
) -> list[int]:
    """The ids of ``project``'s first ``limit`` matching cases by id (one read of the promotable
    index)."""
    qs = filter_promotable(
        project=project, kind=kind, domain=domain, task_type=task_type, source=source
    )
    return list(qs.order_by("pk").values_list("pk", flat=True)[:limit])


def get_triple_for_promotion(*, project, pk: int) -> Triple:
    """A triple of ``project`` for the lead's tier page (role checked by the view); 404 for
    another project's."""
    return get_object_or_404(
        Triple.objects.select_related("domain", "author", "current_revision"),
        project=project,
        pk=pk,
    )


def get_record_for_promotion(*, project, public_id: str) -> AnswerRecord:
    """A production answer record of ``project`` by its public id; 404 for calibration items and
    another project's records. Blind: the run (and so the system) is never loaded."""
    record = (
        AnswerRecord.objects.filter(project=project, public_id=public_id, is_calibration=False)
        .select_related("question__domain")
        .defer(*RECORD_SYSTEM_COLUMNS)
        .annotate(n_labels=Count("labels", distinct=True))
        .first()
    )
    if record is None:
        raise Http404("No such answer record.")
    return record


def tier_history(*, obj) -> list[AuditEvent]:
    """The case's promotion and re-route events, newest first."""
    object_type = TRIPLE_TYPE if isinstance(obj, Triple) else RECORD_TYPE
    return list(
        AuditEvent.objects.filter(
            object_type=object_type, object_id=str(obj.pk), verb__in=HISTORY_VERBS
        )
        .select_related("actor")
        .order_by("-created_at", "-id")
    )


def list_recent_promotions(*, project, limit: int = 20) -> list[AuditEvent]:
    """``project``'s latest ``promoted`` events (who, when, why, which case by its public
    name)."""
    return list(
        AuditEvent.objects.filter(project=project, verb="promoted")
        .select_related("actor")
        .order_by("-created_at", "-id")[:limit]
    )


def governing_candidates(record: AnswerRecord) -> list[BlockVersion]:
    """The block versions a record cited (in citation order), then those it retrieved (by rank),
    each once; the first is the governing one. Two queries."""
    cited = AnswerCitation.objects.filter(record=record).order_by("position")
    retrieved = record.retrieved.order_by("rank")
    ids = list(cited.values_list("block_version_id", flat=True))
    ids += list(retrieved.values_list("block_version_id", flat=True))
    order = list(dict.fromkeys(ids))
    versions = BlockVersion.objects.select_related("block__document").in_bulk(order)
    return [versions[pk] for pk in order]
