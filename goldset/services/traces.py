"""Production traces (issue 28, DESIGN.md §16): spans received over OTLP/HTTP are stored, and
each complete trace becomes an answer record routed into the tiers like an uploaded answer log.

* :func:`receive_spans` (the receiver's one write): stores a request's accepted spans once per
  (project, trace id, span id) — a batch sent again creates nothing — marks their traces
  pending, and queues the mapping through the outbox (one open request per project). Traces
  the decoder rejected a span of are rejected whole, with the spans stored for them by earlier
  requests dropped (nothing partial is mapped); so are traces that are whole on receipt but
  cannot become a record (:func:`check_on_receipt`: no question, answer or domain…), and a span
  re-sent with other content is refused: all named in the summary the receiver answers with
  (``partial_success``). When the project's mapping is behind (``OTLP_MAX_PENDING_TRACES``) it
  stores nothing and raises :class:`TracesBacklogged` (429).
* :func:`map_pending_traces` (the ``goldset.map_traces`` task): claims the project's pending
  traces (``SKIP LOCKED``), maps each with :func:`goldset.traces.mapping.map_trace` and, for the
  complete ones sampled, creates their answer records together in one savepoint (one trace at a
  time in savepoints of their own when the database refuses a value): question matched by id
  (a ``goldset.question_id`` attribute, else the hash of its normalised text) or created,
  system = service, version and answering model (admins only), one run per trace, routed by
  :class:`~goldset.services.answer_imports.RecordRouter` (the answer-log import's routing),
  passages matched to the corpus by block id (or the id of a one-block document) and kept as
  :class:`~goldset.models.UnmatchedPassage` with their text otherwise. An incomplete trace waits
  for more spans (their arrival makes it pending again); a trace that cannot be filed is
  rejected with the reason. Idempotent on the trace: a trace is mapped once (its row is locked
  and its status moves on in the same transaction as its record).
* :func:`receive_evaluations` (an evaluator-output import's lines naming traces): an output on
  a trace that waits to be sampled is kept as an evaluation span of it (one per evaluator) and
  the trace mapped again, as when a feedback span arrives; :func:`trace_targets` says where an
  output naming a trace goes (its record, the trace, or nowhere: rejected, unknown, or past
  ``OTLP_DROPPED_KEEP_DAYS``).
* :func:`reconcile_traces` (the reconciler): asks again for the mapping of traces left pending
  when a message was lost.

A complete trace becomes a record only when a sampling rule takes it
(:meth:`goldset.services.sampling.SamplingPass.sample`, the one place that decides); otherwise it
is ``dropped`` or ``capped``, keeping its spans (a later feedback span has it sampled again).
"""

import datetime as dt
import hashlib
import json
import logging
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Q, TextField, Value
from django.db.models.functions import Concat
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import GoldsetError
from goldset.imports.bulk import insert_missing_rows, insert_rows, one_of, update_rows
from goldset.imports.fields import column_length, is_clean_id
from goldset.models import (
    OPEN_TRACE_STATUSES,
    Block,
    Domain,
    EvaluatorImport,
    EvaluatorOutput,
    EvidencePassage,
    Project,
    Question,
    ReceivedSpan,
    ReceivedTrace,
    Run,
    System,
    TaskType,
    TraceStatus,
    UnmatchedPassage,
)
from goldset.models.answers import new_public_id
from goldset.rules.jobs import TRACES_OUTBOX_KIND, traces_dedupe_key
from goldset.services import outbox
from goldset.services.answer_imports import (
    AnsweredQuestion,
    PassageResolver,
    RecordRouter,
    insert_passages,
    insert_records,
    question_hash,
)
from goldset.services.sampling import SamplingDecision, SamplingPass
from goldset.traces.decode import Decoded, Span, SpanRejection, rejected_with, same_span
from goldset.traces.mapping import (
    DEFAULT_MAX_PASSAGES,
    TraceIncomplete,
    TraceRecord,
    TraceRejected,
    document_count,
    map_trace,
)
from goldset.traces.signals import CONFIDENCE_KEYS, EVALUATION_NAME, SCORE_LABEL, SCORE_VALUE
from goldset.traces.stored import (
    DOMAIN,
    FactsProblem,
    question_id_for,
    span_from_payload,
    span_payload,
    system_id_for,
    trace_facts,
)
from workbench.services.audit import record_event

logger = logging.getLogger(__name__)

SOURCE_NAME = "otlp"
QUESTION_ID_LENGTH = column_length(Question, "question_id")
TASK_FAMILY_LENGTH = column_length(Question, "task_family")
REF_LENGTH = column_length(EvidencePassage, "passage_ref")
REASON_CHARS = 2000
MAX_LATENCY_MS = 2**31 - 1  # AnswerRecord.latency_ms is a PositiveIntegerField
MAX_COST = 10_000  # AnswerRecord.cost_usd: 10 digits, 6 places
TASK_TYPES = tuple(TaskType.values)


class TracesBacklogged(GoldsetError):
    """The project's traces wait to be mapped beyond ``OTLP_MAX_PENDING_TRACES``: nothing of
    the request is stored; the receiver answers 429 with ``Retry-After``."""


@dataclass(frozen=True)
class ReceiveSummary:
    """What :func:`receive_spans` did with a request, beyond the decoder's rejections."""

    spans_received: int  # accepted by the decoder (stored, or already stored)
    traces: int  # traces the request's spans belong to
    traces_rejected: int  # traces rejected whole (by the decoder or on receipt)
    # spans refused on receipt: their trace cannot become a record (no question, answer or
    # domain…), their trace was rejected earlier, or a conflicting copy of a stored span
    rejections: tuple[SpanRejection, ...] = ()
    # spans accepted but not kept whole: retrieved documents beyond the cap
    warnings: tuple[str, ...] = ()


def _reason(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


@transaction.atomic
def receive_spans(*, project, decoded: Decoded) -> ReceiveSummary:
    """Store the spans ``decoded`` accepted for ``project`` and queue their traces' mapping;
    return what was refused on receipt, for the answer's ``partial_success``.

    Spans of a trace already mapped are stored (for later use) without mapping it again.
    Refused, each named in the summary: the spans of a trace rejected earlier; a span stored
    by an earlier request sent again with other content (the first copy is kept; an identical
    copy is simply already there); and every span of a trace that, with the spans stored for it
    before, is complete but cannot become an answer record (:func:`check_on_receipt`: no
    question, no answer, no domain, a malformed ``goldset.*`` attribute…), which is rejected
    whole with the reason, its earlier spans dropped, as a trace the decoder rejected a span
    of is (unless it was already mapped). A trace whose retrieved documents pass the cap keeps
    the first ones by rank, and the summary warns of it. Trace rows are locked in trace-id
    order, so concurrent requests never deadlock on them, and the mapping (which locks the
    same rows) sees either none or all of a request's spans. The number of statements does
    not grow with the spans or traces of the request."""
    if decoded.spans:
        limit = tunable("OTLP_MAX_PENDING_TRACES")
        waiting = (
            ReceivedTrace.objects.filter(project=project, status=TraceStatus.PENDING)
            .order_by()[:limit]
            .count()
        )
        if waiting >= limit:
            raise TracesBacklogged(
                f"{waiting} traces of this project wait to be mapped (OTLP_MAX_PENDING_TRACES)"
            )
    spans_by_trace = defaultdict(list)
    for span in decoded.spans:
        spans_by_trace[span.trace_id].append(span)
    refused: dict[str, str] = {}
    rejected_ids = decoded.rejected_trace_ids
    for rejection in decoded.rejections:
        if rejection.trace_id in rejected_ids:
            refused.setdefault(rejection.trace_id, str(rejection))
    trace_ids = sorted(set(spans_by_trace) | set(refused))
    if not trace_ids:
        return ReceiveSummary(spans_received=0, traces=0, traces_rejected=0)
    insert_missing_rows(
        ReceivedTrace, ("project_id", "trace_id"), [(project.pk, t) for t in trace_ids]
    )
    rows = {
        trace_id: (pk, status, reason)
        for trace_id, pk, status, reason in ReceivedTrace.objects.select_for_update()
        .filter(project=project, trace_id__in=one_of(trace_ids))
        .order_by("trace_id")
        .values_list("trace_id", "pk", "status", "reason")
    }
    rejections: list[SpanRejection] = []
    for trace_id, spans in spans_by_trace.items():
        _, status, reason = rows[trace_id]
        if status == TraceStatus.REJECTED:
            rejections += _rejected_whole(spans, f"its trace was rejected before: {reason}")
    keep = [
        trace_id
        for trace_id in spans_by_trace
        if rows[trace_id][1] != TraceStatus.REJECTED and trace_id not in refused
    ]
    # Spans are only ever stored here, under the lock of their trace's row (held): the spans
    # already stored for these traces are all there are, and the rest are copied in at once.
    stored: dict[tuple[str, str], Span] = {}
    if keep:
        for trace_id, span_id, parent_span_id, payload in ReceivedSpan.objects.filter(
            project=project, trace_id__in=one_of(keep)
        ).values_list("trace_id", "span_id", "parent_span_id", "payload"):
            stored[(trace_id, span_id)] = span_from_payload(
                trace_id=trace_id, span_id=span_id, parent_span_id=parent_span_id, payload=payload
            )
    fresh: dict[str, list[Span]] = {}
    conflicts = set()
    for trace_id in keep:
        fresh[trace_id] = []
        for span in spans_by_trace[trace_id]:
            first = stored.get(span.key)
            if first is None:
                fresh[trace_id].append(span)
            elif not same_span(first, span):
                conflicts.add(span.key)
                rejections.append(
                    SpanRejection(
                        trace_id,
                        span.span_id,
                        "conflicting duplicate: this span id was received in an earlier "
                        "request with other content (the first copy is kept)",
                    )
                )
    open_traces = [t for t in keep if rows[t][1] in OPEN_TRACE_STATUSES]
    whole = defaultdict(list)
    for (trace_id, _), span in stored.items():
        whole[trace_id].append(span)
    checked = check_on_receipt(
        project,
        {t: whole[t] + fresh[t] for t in open_traces},
        fresh={t: fresh[t] for t in open_traces},
    )
    for trace_id, (span_id, reason) in checked.refused.items():
        # every span of the request in the trace is refused with it (the span named first:
        # the root when the request holds it), but a conflicting copy, refused already
        spans = sorted(
            (s for s in spans_by_trace[trace_id] if s.key not in conflicts),
            key=lambda s: s.span_id != span_id,
        )
        rejections += _rejected_whole(spans, reason) if spans else []
        refused[trace_id] = reason
    insert_rows(
        ReceivedSpan,
        ("project_id", "trace_id", "span_id", "parent_span_id", "payload"),
        [
            (project.pk, span.trace_id, span.span_id, span.parent_span_id, span_payload(span))
            for trace_id in keep
            if trace_id not in checked.refused
            for span in fresh[trace_id]
        ],
    )
    now = timezone.now()
    _reopen(project, [t for t in open_traces if t not in checked.refused], now=now)
    dropped = [t for t in refused if rows[t][1] != TraceStatus.MAPPED]
    update_rows(
        ReceivedTrace,
        ("status", "reason", "updated_at"),
        [
            (
                rows[t][0],
                TraceStatus.REJECTED,
                _reason(
                    refused[t]
                    if t in checked.refused
                    else f"a span was rejected on receipt: {refused[t]}"
                ),
                now,
            )
            for t in sorted(dropped)
        ],
    )
    if dropped:
        ReceivedSpan.objects.filter(project=project, trace_id__in=one_of(dropped)).delete()
    return ReceiveSummary(
        spans_received=len(decoded.spans),
        traces=len(trace_ids),
        traces_rejected=len(dropped),
        rejections=tuple(rejections),
        warnings=tuple(checked.warnings),
    )


def _rejected_whole(spans: list[Span], reason: str) -> list[SpanRejection]:
    """The rejections of a trace's spans for ``reason``: the first names it, the others follow."""
    cause = SpanRejection(spans[0].trace_id, spans[0].span_id, reason)
    return [cause] + [rejected_with(span, cause) for span in spans[1:]]


@dataclass
class ReceiptCheck:
    refused: dict = field(default_factory=dict)  # trace id → (span id to name, reason)
    warnings: list = field(default_factory=list)


def check_on_receipt(project, traces: dict[str, list[Span]], *, fresh: dict) -> ReceiptCheck:
    """What can be told of the traces a request brings spans for (``traces``: trace id → every
    span of it, stored before or new; ``fresh``: the request's new ones) before the mapping
    runs: a trace complete with these spans that cannot become an answer record is refused,
    naming the span (its root) and what is missing — no question, no answer, two roots, a
    malformed ``goldset.*`` attribute, a text the database cannot hold, and for a question not
    in the project yet no domain (none named and several or none in the project), a domain or a
    task type that does not exist — exactly as the mapping would reject it
    (:func:`map_trace`, :func:`_store_batch`'s checks). A trace whose retrieved documents pass
    the cap (``DEFAULT_MAX_PASSAGES``) is warned of; for a trace not complete yet, a retriever
    span of the request that alone passes the cap is. Two statements at most (the project's
    domains, and the questions the complete traces name), whatever the number of traces."""
    check = ReceiptCheck()
    complete = {}
    for trace_id, spans in traces.items():
        if not spans:
            continue
        try:
            outcome = map_trace(spans)
        except Exception:  # left to the mapping, which logs it and rejects the trace
            continue
        if isinstance(outcome, TraceRejected):
            root = next((s for s in spans if not s.parent_span_id), spans[0])
            check.refused[trace_id] = (root.span_id, outcome.reason)
        elif isinstance(outcome, TraceIncomplete):
            for span in fresh.get(trace_id, ()):
                count = document_count(span)
                if count > DEFAULT_MAX_PASSAGES:
                    check.warnings.append(
                        f"span {span.span_id} of trace {trace_id}: {count} retrieved documents; "
                        f"a trace keeps its first {DEFAULT_MAX_PASSAGES} by rank"
                    )
        else:
            try:
                facts = trace_facts(
                    outcome, id_length=QUESTION_ID_LENGTH, family_length=TASK_FAMILY_LENGTH
                )
                _check_texts(outcome)
                question_id = _question_id(outcome, facts)
            except (FactsProblem, TraceRefused) as exc:
                check.refused[trace_id] = (outcome.root_span_id, str(exc))
                continue
            complete[trace_id] = (outcome, facts, question_id)
            if outcome.passages_dropped:
                total = len(outcome.passages) + outcome.passages_dropped
                check.warnings.append(
                    f"trace {trace_id}: {total} retrieved documents; the first "
                    f"{len(outcome.passages)} by rank are kept, {outcome.passages_dropped} "
                    "dropped"
                )
    if not complete:
        return check
    known = set(
        Question.objects.filter(
            project=project, question_id__in=one_of({q for _, _, q in complete.values()})
        ).values_list("question_id", flat=True)
    )
    domains = None
    for trace_id, (outcome, facts, question_id) in complete.items():
        if question_id in known:
            continue
        if domains is None:
            domains = project_domains(project)
        try:
            domain_for_trace(domains, facts.domain)
            _task_type(facts)
        except TraceRefused as exc:
            check.refused[trace_id] = (outcome.root_span_id, str(exc))
    return check


def _reopen(project, trace_ids: list[str], *, now) -> None:
    """New spans (or a later evaluation) for these open traces, whose rows the caller holds
    locked: map them (again) after the commit."""
    if not trace_ids:
        return
    ReceivedTrace.objects.filter(project=project, trace_id__in=one_of(trace_ids)).update(
        status=TraceStatus.PENDING, reason="", updated_at=now
    )
    request_mapping(project_id=project.pk)


def request_mapping(*, project_id: int) -> None:
    """Queue a mapping pass over ``project_id``'s pending traces after the caller's commit (one
    open request per project: a request while one waits is merged into it)."""
    outbox.enqueue(
        kind=TRACES_OUTBOX_KIND,
        payload={"project_id": project_id},
        dedupe_key=traces_dedupe_key(project_id),
    )


# ---------------------------------------------------------------------------------------------
# Mapping


@dataclass
class MappingSummary:
    mapped: int = 0
    incomplete: int = 0
    rejected: int = 0
    dropped: int = 0
    capped: int = 0

    def as_dict(self) -> dict:
        return {
            "mapped": self.mapped,
            "incomplete": self.incomplete,
            "rejected": self.rejected,
            "dropped": self.dropped,
            "capped": self.capped,
        }


class TraceRefused(GoldsetError):
    """A complete trace that cannot become an answer record; the message says why."""


def map_pending_traces(
    *, project_id: int, message_id: int | None = None, heartbeat: bool = False
) -> dict:
    """Map ``project_id``'s pending traces, batch by batch (``OTLP_MAP_BATCH`` traces a
    transaction), until none is left; closes the outbox message. A re-delivered message finds
    nothing pending (or only what arrived since) and does nothing more. Returns the counts."""
    outbox.mark_started(message_id)
    summary = MappingSummary()
    project = Project.objects.filter(pk=project_id).first()
    if project is not None:
        with outbox.beating([message_id] if message_id else [], heartbeat=heartbeat):
            while _map_batch(project, summary):
                pass
    outbox.mark_done(message_id)
    return summary.as_dict()


@dataclass
class _Sampled:
    """A complete trace a rule sampled, waiting for its record to be stored."""

    trace: ReceivedTrace
    record: TraceRecord
    facts: object  # goldset.traces.stored.TraceFacts
    decision: SamplingDecision
    spans: list


TRACE_COLUMNS = (
    "status",
    "reason",
    "record_id",
    "convention",
    "sampled_by",
    "sampling_rule_id",
    "span_count",
    "capped_on",
    "capped_rules",
    "mapped_at",
    "updated_at",
)


@transaction.atomic
def _map_batch(project, summary: MappingSummary) -> bool:
    """One batch: claim up to ``OTLP_MAP_BATCH`` pending traces, map and sample each, store the
    sampled ones' records together (:func:`_store_records`), and write every trace's outcome in
    one statement. The number of statements does not grow with the traces of the batch (a test
    holds it), apart from the lookups a domain or task-type rule makes per trace."""
    traces = list(
        ReceivedTrace.objects.select_for_update(skip_locked=True)
        .filter(project=project, status=TraceStatus.PENDING)
        .order_by("id")[: tunable("OTLP_MAP_BATCH")]
    )
    if not traces:
        return False
    spans = defaultdict(list)
    for trace_id, span_id, parent_span_id, payload in ReceivedSpan.objects.filter(
        project=project, trace_id__in=one_of(t.trace_id for t in traces)
    ).values_list("trace_id", "span_id", "parent_span_id", "payload"):
        spans[trace_id].append(
            span_from_payload(
                trace_id=trace_id, span_id=span_id, parent_span_id=parent_span_id, payload=payload
            )
        )
    router = RecordRouter(project=project)
    now = timezone.now()
    sampling = SamplingPass(project=project, now=now)
    counts = Counter()
    sampled: list[_Sampled] = []
    for trace in traces:
        received = spans.get(trace.trace_id, [])
        trace.span_count = len(received)
        trace.updated_at = now
        outcome, facts = _map_one(trace, received)
        if isinstance(outcome, TraceRecord):
            trace.convention = outcome.convention
            counted = set(trace.capped_rules or ()) if trace.capped_on == sampling.day else set()
            decision = sampling.sample(record=outcome, spans=received, facts=facts, counted=counted)
            counted |= set(decision.capped)
            trace.capped_on = sampling.day if counted else None
            trace.capped_rules = sorted(counted) or None
            trace.sampled_by, trace.sampling_rule = decision.sampled_by, decision.rule
            if decision.sampled:
                sampled.append(_Sampled(trace, outcome, facts, decision, received))
            else:
                trace.status, trace.reason = decision.status, ""
                setattr(summary, decision.status, getattr(summary, decision.status) + 1)
                counts[trace.status] += 1
            continue
        _close(trace, outcome, summary, counts)
    for item, stored in zip(sampled, _store_records(project, router, sampled), strict=True):
        trace = item.trace
        if isinstance(stored, Exception):
            sampling.release(item.decision)
            reason = (
                str(stored)
                if isinstance(stored, TraceRefused | FactsProblem)
                else f"could not be stored ({type(stored).__name__})"
            )
            _close(trace, TraceRejected(trace.trace_id, reason, trace.span_count), summary, counts)
        else:
            trace.record_id, tier = stored
            trace.status, trace.reason, trace.mapped_at = TraceStatus.MAPPED, "", now
            counts[f"tier_{tier}"] += 1
            summary.mapped += 1
    sampling.save()
    update_rows(
        ReceivedTrace,
        TRACE_COLUMNS,
        [(t.pk, *(getattr(t, name) for name in TRACE_COLUMNS)) for t in traces],
    )
    record_event(
        actor=None,
        verb="traces_mapped",
        object_type="traces",
        object_id=project.slug,
        project=project,
        detail={"traces": len(traces), **dict(sorted(counts.items()))},
    )
    return True


def _map_one(trace: ReceivedTrace, received: list):
    """(outcome, facts) of one claimed trace: its TraceRecord and ``goldset.*`` facts, or why
    it waits or is rejected (facts None)."""
    try:
        outcome = (
            map_trace(received)
            if received
            else TraceIncomplete(trace.trace_id, "no spans stored yet", 0)
        )
    except Exception as exc:  # one odd trace must not stop its project's mapping for good
        logger.exception("trace %s could not be mapped", trace.trace_id)
        return TraceRejected(
            trace.trace_id, f"could not be mapped ({type(exc).__name__})", len(received)
        ), None
    if not isinstance(outcome, TraceRecord):
        return outcome, None
    try:
        facts = trace_facts(outcome, id_length=QUESTION_ID_LENGTH, family_length=TASK_FAMILY_LENGTH)
    except FactsProblem as exc:
        trace.convention = outcome.convention
        return TraceRejected(trace.trace_id, str(exc), len(received)), None
    return outcome, facts


def _close(trace: ReceivedTrace, outcome, summary: MappingSummary, counts: Counter) -> None:
    """An incomplete trace waits for more spans; a rejected one keeps the reason."""
    if isinstance(outcome, TraceIncomplete):
        trace.status, trace.reason = TraceStatus.INCOMPLETE, _reason(outcome.reason)
        summary.incomplete += 1
    else:
        trace.status, trace.reason = TraceStatus.REJECTED, _reason(outcome.reason)
        trace.sampled_by, trace.sampling_rule = "", None
        summary.rejected += 1
    counts[trace.status] += 1


def _store_records(project, router: RecordRouter, items: list[_Sampled]) -> list:
    """Per sampled trace, in order: ``(record id, tier)``, or the exception that refused it
    (:class:`TraceRefused` naming what it lacks, or what the database raised). The batch is
    stored in one savepoint with a constant number of statements; when the database refuses
    a value, the savepoint rolls back and each trace is stored in a savepoint of its own, so
    only the trace at fault is refused. A transient error (a lock, a timeout, the connection)
    is raised: the batch is retried."""
    if not items:
        return []
    try:
        with transaction.atomic():
            return _store_batch(project, router, items)
    except (OperationalError, InterfaceError):
        raise
    except Exception as exc:
        if len(items) == 1:  # the database refused a value of this trace
            logger.exception("trace %s could not be stored", items[0].record.trace_id)
            return [exc]
    results = []
    for item in items:
        try:
            with transaction.atomic():
                results.extend(_store_batch(project, router, [item]))
        except (OperationalError, InterfaceError):
            raise
        except Exception as exc:  # the database refused a value: this trace only
            logger.exception("trace %s could not be stored", item.record.trace_id)
            results.append(exc)
    return results


def _store_batch(project, router: RecordRouter, items: list[_Sampled]) -> list:
    """Create the answer records of sampled traces (see :func:`_store_records`). A trace
    refused for what it lacks (a text the database cannot hold, a domain, a task type) is
    refused before anything is written."""
    results: list = [None] * len(items)
    wanted: dict[int, str] = {}  # item index → question id
    for index, item in enumerate(items):
        try:
            _check_texts(item.record)
            wanted[index] = _question_id(item.record, item.facts)
        except TraceRefused as exc:
            results[index] = exc
    questions = _questions_for(project, items, wanted, results)
    valid = [i for i in wanted if results[i] is None]
    systems = _systems_for(
        project, {system_id_for(items[i].record.system): items[i] for i in valid}
    )
    run_ids = {i: f"trace-{items[i].record.trace_id}" for i in valid}
    Run.objects.bulk_create(
        [
            Run(
                project=project,
                run_id=run_ids[i],
                system_id=systems[system_id_for(items[i].record.system)],
                source_name=SOURCE_NAME,
            )
            for i in valid
        ],
        ignore_conflicts=True,
    )
    runs = dict(
        Run.objects.filter(project=project, run_id__in=one_of(run_ids.values())).values_list(
            "run_id", "pk"
        )
    )
    resolved = _resolve_refs(project, [items[i].record for i in valid])
    rows, tiers, slots, passages = [], [], Counter(), []
    for i in valid:
        item = items[i]
        record, facts, decision = item.record, item.facts, item.decision
        question = questions[wanted[i]]
        uncertainty = (
            None
            if facts.uncertainty is None
            else Decimal(repr(facts.uncertainty)).quantize(Decimal("0.001"))
        )
        tier, tier_value, rule, rules_version, labels_required = router.route(question, uncertainty)
        retrieved, unmatched, citations, unmatched_citations = _passages(record, resolved)
        extra = {
            "trace": {
                "trace_id": record.trace_id,
                "convention": record.convention,
                "sampled_by": decision.sampled_by,
                "sampling_rule_version": decision.rule.version if decision.rule else None,
                "passages_dropped": record.passages_dropped,
                "unmatched_citations": unmatched_citations,
            }
        }
        if record.input_tokens is not None or record.output_tokens is not None:
            extra["tokens"] = {"input": record.input_tokens, "output": record.output_tokens}
        public_id = new_public_id()
        rows.append(
            (
                project.pk,
                public_id,
                runs[run_ids[i]],
                question.pk,
                question.domain_id,
                router.queue_rank(public_id),
                record.answer,
                {"name": record.system.model, "ids": list(record.model_ids)},
                _latency(record.latency_ms),
                _cost(record.cost),
                extra,
                uncertainty,
                False,
                tier_value,
                rule,
                rules_version,
                labels_required,
            )
        )
        tiers.append(tier)
        slots[question.domain_id] += labels_required
        passages.append((retrieved, unmatched, citations))
    record_ids = insert_records(rows, slots=slots)
    retrieved_rows, unmatched_rows, citation_rows = [], [], []
    for record_id, (retrieved, unmatched, citations) in zip(record_ids, passages, strict=True):
        retrieved_rows += [(record_id, *row) for row in retrieved]
        unmatched_rows += [(record_id, *row) for row in unmatched]
        citation_rows += [(record_id, *row) for row in citations]
    insert_passages(retrieved=retrieved_rows, citations=citation_rows)
    insert_rows(
        UnmatchedPassage, ("record_id", "rank", "passage_ref", "text", "score"), unmatched_rows
    )
    for i, record_id, tier in zip(valid, record_ids, tiers, strict=True):
        _store_later_evaluations(project, record_id, items[i].spans)
        results[i] = (record_id, tier)
    return results


def _check_texts(record: TraceRecord) -> None:
    """The texts a JSON attribute value carried (messages, documents, citations) may hold what
    the decoder's checks of the attribute itself cannot see: a NUL or a lone surrogate from a
    ``\\u`` escape, which the database refuses."""
    named = [("the question", record.question), ("the answer", record.answer)]
    named += [(f"citation {n + 1}", c) for n, c in enumerate(record.citations)]
    for passage in record.passages:
        named.append((f"passage {passage.rank}", passage.text))
        named.append((f"passage {passage.rank}'s document id", passage.document_id or ""))
    for what, text in named:
        if "\x00" in text:
            raise TraceRefused(f"{what} contains a NUL character")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise TraceRefused(f"{what} is not valid UTF-8") from None


def _question_id(record: TraceRecord, facts) -> str:
    """The id the trace's question is filed under: the ``goldset.question_id`` it names, else
    the hash of its normalised text."""
    if facts.question_id and not is_clean_id(facts.question_id, QUESTION_ID_LENGTH):
        raise TraceRefused("goldset.question_id: not a valid question id")
    return facts.question_id or question_id_for(record.question)


QUESTION_COLUMNS = ("pk", "task_type", "uncertainty", "adversarial", "domain_id", "domain__slug")


def _questions_for(project, items: list[_Sampled], wanted: dict, results: list) -> dict:
    """The questions the traces answer, by question id (``wanted``: item index → id): the
    project's question with that id, else one created (in the domain the trace names, or the
    project's only domain; a trace that cannot be filed gets its TraceRefused in
    ``results``). Four statements at most, however many traces."""
    found = {
        row[0]: AnsweredQuestion(*row[1:])
        for row in Question.objects.filter(
            project=project, question_id__in=one_of(set(wanted.values()))
        ).values_list("question_id", *QUESTION_COLUMNS)
    }
    new: dict[str, Question] = {}
    domains = None
    for index, question_id in wanted.items():
        if question_id in found or question_id in new:
            continue
        if domains is None:
            domains = project_domains(project)
        item = items[index]
        try:
            slug = domain_for_trace(domains, item.facts.domain)
            task_type = _task_type(item.facts)
        except TraceRefused as exc:
            results[index] = exc
            continue
        content = {
            "question_id": question_id,
            "domain": slug,
            "task_family": item.facts.task_family,
            "task_type": task_type,
            "question": item.record.question,
            "source": SOURCE_NAME,
        }
        new[question_id] = Question(
            project=project,
            question_id=question_id,
            domain_id=domains[slug],
            task_family=item.facts.task_family,
            task_type=task_type,
            text=item.record.question,
            content_sha256=question_hash(content),
        )
    if new:
        Question.objects.bulk_create(new.values(), ignore_conflicts=True)
        found.update(
            (row[0], AnsweredQuestion(*row[1:]))
            for row in Question.objects.filter(
                project=project, question_id__in=one_of(new)
            ).values_list("question_id", *QUESTION_COLUMNS)
        )
    return found


def _task_type(facts) -> str:
    task_type = facts.task_type or TaskType.RAG_SYNTHESIS.value
    if task_type not in TASK_TYPES:
        raise TraceRefused(
            f"goldset.task_type: {task_type!r} is not one of {', '.join(TASK_TYPES)}"
        )
    return task_type


def project_domains(project) -> dict[str, int]:
    """``project``'s domains: slug → id (one statement)."""
    return dict(Domain.objects.filter(project=project).values_list("slug", "pk"))


def domain_for_trace(domains: dict[str, int], named: str) -> str:
    """The slug of the domain a new question of a trace goes to: the one it names (a
    ``goldset.domain`` attribute), else the project's only domain; TraceRefused naming what is
    missing otherwise."""
    if named:
        if named not in domains:
            raise TraceRefused(f"{DOMAIN}: no domain {named!r} in this project")
        return named
    if len(domains) == 1:
        return next(iter(domains))
    if not domains:
        raise TraceRefused("the project has no domain yet: create one before sending traces")
    raise TraceRefused(
        f"no domain: the project has several; name one in a {DOMAIN} attribute of the root "
        "span or the resource"
    )


def _systems_for(project, wanted: dict) -> dict[str, int]:
    """System ids → ids of the systems the traces ran (``wanted``: system id → a sampled trace
    of it), created when new (admins only: service, version and answering model)."""
    if not wanted:
        return {}
    systems = dict(
        System.objects.filter(project=project, system_id__in=one_of(wanted)).values_list(
            "system_id", "pk"
        )
    )
    missing = [system_id for system_id in wanted if system_id not in systems]
    if missing:
        System.objects.bulk_create(
            [
                System(
                    project=project,
                    system_id=system_id,
                    config={
                        "source": SOURCE_NAME,
                        "service.name": wanted[system_id].record.system.service_name,
                        "service.version": wanted[system_id].record.system.service_version,
                        "model": wanted[system_id].record.system.model,
                    },
                )
                for system_id in missing
            ],
            ignore_conflicts=True,
        )
        systems.update(
            System.objects.filter(project=project, system_id__in=one_of(missing)).values_list(
                "system_id", "pk"
            )
        )
    return systems


def _resolve_refs(project, records: list[TraceRecord]) -> dict:
    """The corpus block versions the records' passages and citations name: a document id as
    a block id (``block`` or ``block@vN``), else as the id of a document with exactly one
    block. Three statements at most for the whole batch."""
    refs = set()
    for record in records:
        refs |= {p.document_id for p in record.passages if p.document_id}
        refs |= set(record.citations)
    refs = {ref for ref in refs if len(ref) <= REF_LENGTH}
    resolved = _versions(refs, project) if refs else {}
    missing = refs - set(resolved)
    if missing:
        blocks = defaultdict(list)
        for block_id, document_id in Block.objects.filter(
            project=project, document__project=project, document__document_id__in=one_of(missing)
        ).values_list("block_id", "document__document_id"):
            blocks[document_id].append(block_id)
        single = {doc: ids[0] for doc, ids in blocks.items() if len(ids) == 1}
        if single:
            by_block = _versions(set(single.values()), project)
            for document_id, block_id in single.items():
                if block_id in by_block:
                    resolved[document_id] = by_block[block_id]
    return resolved


def _passages(record: TraceRecord, resolved: dict):
    """(retrieved rows, unmatched rows, citation rows, unmatched citation ids) of a record:
    a passage whose document id resolved to the corpus is a retrieved passage (with its
    score); the others are kept with their text and score."""
    retrieved, unmatched = [], []
    for passage in record.passages:
        version = resolved.get(passage.document_id) if passage.document_id else None
        score = _finite(passage.score)
        if version is not None:
            retrieved.append((version.pk, passage.document_id, passage.rank, score))
        else:
            ref = (passage.document_id or "")[:REF_LENGTH]
            unmatched.append((passage.rank, ref, passage.text, score))
    citations = [
        (resolved[ref].pk, ref, position)
        for position, ref in enumerate(record.citations)
        if ref in resolved
    ]
    unmatched_citations = [ref for ref in record.citations if ref not in resolved]
    return retrieved, unmatched, citations, unmatched_citations


def _versions(refs: set[str], project) -> dict:
    """The refs that name an existing block version (``block`` or ``block@vN``)."""
    resolved = PassageResolver(refs, project=project).resolved
    return {ref: version for ref, version in resolved.items() if version is not None}


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _latency(milliseconds: float) -> int | None:
    return round(milliseconds) if 0 <= milliseconds <= MAX_LATENCY_MS else None


def _cost(cost: float | None) -> Decimal | None:
    if cost is None or not math.isfinite(cost) or not 0 <= cost < MAX_COST:
        return None
    return Decimal(repr(cost)).quantize(Decimal("0.000001"))


# ---------------------------------------------------------------------------------------------
# Evaluator outputs arriving later

EVALUATOR_ID = "goldset.evaluator.id"
EVALUATOR_IMPORT = "goldset.evaluator.import"
EVALUATOR_LABELS = "goldset.evaluator.labels"
EVALUATOR_UNSAFE = "goldset.evaluator.unsafe_probability"
# an evaluator output's acceptability as an evaluation's label (goldset.traces.signals)
VERDICTS = {"acceptable": "pass", "unacceptable": "fail"}


@dataclass(frozen=True)
class TraceTarget:
    """Where an evaluator output naming a trace goes: the record of a mapped trace, or the trace
    itself while it waits to be sampled (``record_id`` None); ``refused`` says why it can go
    nowhere."""

    record_id: int | None = None
    refused: str = ""


def trace_targets(*, project, trace_ids, now, lock: bool = False) -> dict[str, TraceTarget]:
    """Per trace id of ``project``: its :class:`TraceTarget`. A trace that was rejected, or
    dropped or capped longer than ``OTLP_DROPPED_KEEP_DAYS`` ago (its spans deleted, or about to
    be), takes no output: it is not sampled any more. ``lock``: the rows are locked (trace-id
    order, as the receiver locks them) until the caller's transaction ends, so what was decided
    here still holds when the output is stored."""
    rows = ReceivedTrace.objects.filter(project=project, trace_id__in=one_of(trace_ids))
    if lock:
        rows = rows.select_for_update().order_by("trace_id")
    days = tunable("OTLP_DROPPED_KEEP_DAYS")
    kept_since = now - dt.timedelta(days=days)
    targets = {}
    for trace_id, status, record_id, span_count, updated_at in rows.values_list(
        "trace_id", "status", "record_id", "span_count", "updated_at"
    ):
        if status == TraceStatus.MAPPED:
            targets[trace_id] = TraceTarget(record_id=record_id)
        elif status == TraceStatus.REJECTED:
            targets[trace_id] = TraceTarget(refused=f"trace {trace_id} was rejected")
        elif status in (TraceStatus.DROPPED, TraceStatus.CAPPED) and (
            span_count == 0 or updated_at < kept_since
        ):
            targets[trace_id] = TraceTarget(
                refused=f"trace {trace_id} was {status} more than {days} days ago "
                "(OTLP_DROPPED_KEEP_DAYS) and is no longer kept: too late to sample it"
            )
        else:
            targets[trace_id] = TraceTarget()
    for trace_id in set(trace_ids) - set(targets):
        targets[trace_id] = TraceTarget(refused=f"unknown trace {trace_id}")
    return targets


@dataclass(frozen=True)
class LaterEvaluation:
    """An evaluator's output on a trace that waits to be sampled (``goldset.services.evaluators``:
    a ``trace_id`` line of an evaluator-output import)."""

    trace_id: str
    evaluator_id: int
    evaluator_name: str
    import_id: int
    labels: dict
    score: float | None = None
    unsafe_probability: float | None = None
    confidence: float | None = None

    def as_span(self, *, now_ns: int) -> Span:
        """An evaluation span of the trace (``goldset.traces.signals`` reads it as a judge's
        evaluation: its score, its acceptability as the label pass/fail, its confidence), one
        per evaluator: a later output of the same evaluator replaces it."""
        attributes = {
            EVALUATION_NAME: self.evaluator_name,
            EVALUATOR_ID: self.evaluator_id,
            EVALUATOR_IMPORT: self.import_id,
            EVALUATOR_LABELS: json.dumps(self.labels, sort_keys=True),
        }
        optional = {
            SCORE_VALUE: self.score,
            SCORE_LABEL: VERDICTS.get(self.labels.get("acceptability", "")),
            CONFIDENCE_KEYS[0]: self.confidence,
            EVALUATOR_UNSAFE: self.unsafe_probability,
        }
        attributes.update({key: value for key, value in optional.items() if value is not None})
        return Span(
            trace_id=self.trace_id,
            span_id=evaluation_span_id(self.evaluator_id),
            parent_span_id="",
            name="evaluator output",
            kind="INTERNAL",
            start_ns=now_ns,
            end_ns=now_ns,
            attributes=attributes,
            parent_is_remote=True,
        )


def evaluation_span_id(evaluator_id: int) -> str:
    """The span id of an evaluator's later output in a trace (16 hex digits, never all zeros)."""
    return hashlib.sha256(f"goldset-evaluator:{evaluator_id}".encode()).hexdigest()[:15] + "1"


def receive_evaluations(*, project, evaluations: list[LaterEvaluation]) -> int:
    """Keep evaluator outputs on traces that wait to be sampled as evaluation spans of those
    traces, and have the traces mapped again: a dropped or capped trace is sampled again (the
    judge rule reads the outputs with the trace's own evaluations), as when a feedback span
    arrives later. A trace that becomes an answer record takes these outputs as its
    ``EvaluatorOutput`` rows. Run inside the caller's transaction, with the traces' rows locked
    by :func:`trace_targets` (``lock=True``) after it found them waiting. Returns the traces
    reopened."""
    if not evaluations:
        return 0
    now = timezone.now()
    now_ns = int(now.timestamp() * 1_000_000_000)
    spans = [evaluation.as_span(now_ns=now_ns) for evaluation in evaluations]
    for span_id in {span.span_id for span in spans}:
        ReceivedSpan.objects.filter(
            project=project,
            span_id=span_id,
            trace_id__in=one_of(s.trace_id for s in spans if s.span_id == span_id),
        ).delete()
    insert_rows(
        ReceivedSpan,
        ("project_id", "trace_id", "span_id", "parent_span_id", "payload"),
        [(project.pk, s.trace_id, s.span_id, "", span_payload(s)) for s in spans],
    )
    trace_ids = sorted({span.trace_id for span in spans})
    _reopen(project, trace_ids, now=now)
    return len(trace_ids)


def _store_later_evaluations(project, record_id: int, spans) -> None:
    """The evaluator outputs kept with a trace (:func:`receive_evaluations`) as the outputs of
    its new record; only those of this project's evaluators (an attribute a client sent cannot
    name another project's)."""
    found = {}
    for span in spans:
        attributes = span.attributes
        evaluator_id = attributes.get(EVALUATOR_ID)
        if isinstance(evaluator_id, int) and span.span_id == evaluation_span_id(evaluator_id):
            found[(evaluator_id, attributes.get(EVALUATOR_IMPORT))] = attributes
    if not found:
        return
    valid = set(
        EvaluatorImport.objects.filter(
            evaluator__project=project, pk__in=[i for _, i in found if isinstance(i, int)]
        ).values_list("evaluator_id", "pk")
    )
    EvaluatorOutput.objects.bulk_create(
        EvaluatorOutput(
            evaluator_id=evaluator_id,
            record_id=record_id,
            source_id=import_id,
            labels=json.loads(attributes[EVALUATOR_LABELS]),
            score=attributes.get(SCORE_VALUE),
            unsafe_probability=attributes.get(EVALUATOR_UNSAFE),
        )
        for (evaluator_id, import_id), attributes in found.items()
        if (evaluator_id, import_id) in valid
    )


# ---------------------------------------------------------------------------------------------
# Reconciler


def reconcile_traces(*, now: dt.datetime) -> dict:
    """Delete the spans of traces no sampling rule took (dropped or capped) once they are
    ``OTLP_DROPPED_KEEP_DAYS`` old (the trace rows and their counts stay; a feedback span
    arriving later finds no root and the trace is rejected as incomplete). Ask again for the
    mapping of projects whose traces have waited longer than
    ``OUTBOX_REDISPATCH_SECONDS`` (their message was lost with a worker or the broker; the
    outbox merges the request into an open one), and reject the traces still incomplete
    ``OTLP_INCOMPLETE_SECONDS`` after their last span, saying what they waited for (their spans
    stay for admins; spans arriving later are not stored)."""
    waited = tunable("OTLP_INCOMPLETE_SECONDS")
    expired = ReceivedTrace.objects.filter(
        status=TraceStatus.INCOMPLETE, updated_at__lt=now - dt.timedelta(seconds=waited)
    ).update(
        status=TraceStatus.REJECTED,
        reason=Concat(
            Value(f"still incomplete {waited} s after its last span: "),
            "reason",
            output_field=TextField(),
        ),
        updated_at=now,
    )
    kept = now - dt.timedelta(days=tunable("OTLP_DROPPED_KEEP_DAYS"))
    unsampled = ReceivedTrace.objects.filter(
        status__in=(TraceStatus.DROPPED, TraceStatus.CAPPED), updated_at__lt=kept, span_count__gt=0
    )
    purged = 0
    for project_id, trace_ids in _by_project(unsampled.values_list("project_id", "trace_id")):
        with transaction.atomic():
            # a span arriving meanwhile reopened its trace (pending): its spans stay
            locked = list(
                ReceivedTrace.objects.select_for_update(skip_locked=True)
                .filter(
                    project_id=project_id,
                    trace_id__in=one_of(trace_ids),
                    status__in=(TraceStatus.DROPPED, TraceStatus.CAPPED),
                )
                .values_list("trace_id", flat=True)
            )
            ReceivedSpan.objects.filter(project_id=project_id, trace_id__in=one_of(locked)).delete()
            purged += ReceivedTrace.objects.filter(
                project_id=project_id, trace_id__in=one_of(locked)
            ).update(span_count=0)
    before = now - dt.timedelta(seconds=outbox.redispatch_seconds())
    project_ids = sorted(
        set(
            ReceivedTrace.objects.filter(
                Q(updated_at__lt=before), status=TraceStatus.PENDING
            ).values_list("project_id", flat=True)
        )
    )
    for project_id in project_ids:
        with transaction.atomic():
            request_mapping(project_id=project_id)
    return {
        "projects_requeued": len(project_ids),
        "incomplete_rejected": expired,
        "unsampled_purged": purged,
    }


def _by_project(pairs) -> list[tuple[int, list[str]]]:
    grouped = defaultdict(list)
    for project_id, trace_id in pairs:
        grouped[project_id].append(trace_id)
    return sorted(grouped.items())
