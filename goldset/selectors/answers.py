"""Reads for answer labeling. Everything handed to annotators and leads is blind: records are
addressed by ``public_id`` and no system, run or model reaches their templates. ``get_*_for``
fetch and authorize in one call (Http404 when the item is not theirs)."""

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db.models import (
    Count,
    Exists,
    F,
    OuterRef,
    Prefetch,
    Q,
    Subquery,
    Sum,
    TextField,
    Value,
)
from django.db.models.functions import Cast, Coalesce
from django.http import Http404
from django.utils import timezone

from goldset.conf import tunable
from goldset.imports.bulk import one_of
from goldset.models import (
    Adjudication,
    AnnotatorDomainLoad,
    AnswerCitation,
    AnswerRecord,
    BlockVersion,
    CalibrationItem,
    CalibrationResult,
    CalibrationRetake,
    CalibrationSet,
    Domain,
    DomainLabelLoad,
    EvidenceKind,
    EvidencePassage,
    Label,
    LabelAssignment,
    Question,
    RecordStatus,
    RetakeStatus,
    RetrievedPassage,
    Run,
    UnmatchedPassage,
)
from goldset.rules.axes import LABEL_VALUE_FIELDS
from goldset.rules.blinding import sees_labelers, sees_retrieval_scores, sees_systems
from goldset.rules.calibration import offer_for
from goldset.rules.labeling import LEAD_VISIBLE, OPEN_FOR_LEAD
from goldset.selectors.curation import counter_rows, counters_by_row, newest_version_of
from goldset.selectors.keyset import KeysetPage, keyset_page
from workbench.roles import Role, roles_in, roles_of

# ---------------------------------------------------------------- qualification and load


def qualified_domain_ids(annotator, *, project) -> set[int]:
    """Domains of ``project`` whose calibration the annotator passed (qualification is per
    project and domain)."""
    return set(
        CalibrationResult.objects.filter(
            annotator=annotator, passed=True, domain__project=project
        ).values_list("domain_id", flat=True)
    )


@dataclass(frozen=True)
class DomainLoad:
    domain_id: int
    total_slots: int
    qualified: int
    mine: int
    cap: int

    @property
    def open(self) -> bool:
        return self.mine < self.cap


def domain_loads(annotator, domain_ids, *, project) -> dict[int, DomainLoad]:
    """Per domain: all label slots, qualified annotators, this annotator's claims and their cap.

    The cap is the fair share (slots ÷ qualified annotators) plus ``project``'s
    ``LABEL_LOAD_TOLERANCE`` (10 %), never below the fair share rounded up: nobody's load
    exceeds the others' by more than the tolerance. ``domain_ids`` are domains of ``project``
    (:func:`qualified_domain_ids`). Slots and claims come from the maintained counters, so this
    costs three indexed reads at any size.
    """
    domain_ids = list(domain_ids)
    slots = dict(
        DomainLabelLoad.objects.filter(domain_id__in=domain_ids).values_list("domain_id", "slots")
    )
    qualified = dict(
        CalibrationResult.objects.filter(passed=True, domain_id__in=domain_ids)
        .values("domain_id")
        .annotate(n=Count("id"))
        .values_list("domain_id", "n")
    )
    mine = dict(
        AnnotatorDomainLoad.objects.filter(
            annotator=annotator, domain_id__in=domain_ids
        ).values_list("domain_id", "claimed")
    )
    loads = {}
    tolerance = tunable("LABEL_LOAD_TOLERANCE", project=project)
    for domain_id in domain_ids:
        total, people = slots.get(domain_id, 0), max(qualified.get(domain_id, 0), 1)
        fair = total / people
        cap = max(math.ceil(fair), math.floor(fair * (1 + tolerance)))
        loads[domain_id] = DomainLoad(
            domain_id, total, qualified.get(domain_id, 0), mine.get(domain_id, 0), cap
        )
    return loads


# ---------------------------------------------------------------- one item


@dataclass(frozen=True)
class BlindQuestion:
    """A question as annotators and leads see it: plain values, no path to its answer records."""

    question_id: str
    text: str
    domain_name: str
    domain_slug: str
    task_family: str
    conflict_flag: bool
    freshness_flag: bool
    adversarial: bool
    safety_flags: list
    required_behavior: str
    prohibited_behaviors: list


@dataclass(frozen=True)
class BlindRef:
    """An item named by its opaque id only."""

    public_id: str


@dataclass(frozen=True)
class BlindAssignment:
    """The annotator's own assignment as the label page sees it: plain values; the record is
    reachable by its opaque id only, so no run, system, model, cost or latency is in reach."""

    record: BlindRef
    is_calibration: bool
    slot: int

    @classmethod
    def of(cls, assignment: LabelAssignment) -> "BlindAssignment":
        return cls(
            record=BlindRef(public_id=assignment.record.public_id),
            is_calibration=assignment.is_calibration,
            slot=assignment.slot,
        )


@dataclass(frozen=True)
class BlindLabel:
    """The annotator's own label as their pages show it (display values; no path to the run)."""

    record: BlindRef
    acceptability: str
    grounding: str
    evidence_sufficiency: str
    citation_correctness: str
    conflict_handling: str
    safety_boundary: str
    severe_safety: bool
    primary_failure: str
    secondary_failures: list
    rationale: str

    @classmethod
    def of(cls, label: Label | None, *, public_id: str) -> "BlindLabel | None":
        if label is None:
            return None
        return cls(
            record=BlindRef(public_id=public_id),
            acceptability=label.get_acceptability_display(),
            grounding=label.get_grounding_display(),
            evidence_sufficiency=label.get_evidence_sufficiency_display(),
            citation_correctness=label.get_citation_correctness_display(),
            conflict_handling=label.get_conflict_handling_display(),
            safety_boundary=label.get_safety_boundary_display(),
            severe_safety=label.severe_safety,
            primary_failure=label.get_primary_failure_display() if label.primary_failure else "",
            secondary_failures=list(label.secondary_failures or []),
            rationale=label.rationale,
        )


@dataclass(frozen=True)
class BlindRecord:
    """An answer record as annotators and leads see it. A read model of plain values: no system,
    run, model, configuration, prompt hash, latency or cost can be reached from it (templates
    included), unlike from the ``AnswerRecord`` row it is built from."""

    pk: int
    public_id: str
    question: BlindQuestion
    answer: str
    status: str
    status_display: str
    adjudication_reason_display: str
    final_acceptability_display: str
    final_grounding_display: str

    @classmethod
    def of(cls, record: AnswerRecord) -> "BlindRecord":
        q = record.question
        return cls(
            pk=record.pk,
            public_id=record.public_id,
            question=BlindQuestion(
                question_id=q.question_id,
                text=q.text,
                domain_name=q.domain.name,
                domain_slug=q.domain.slug,
                task_family=q.task_family,
                conflict_flag=q.conflict_flag,
                freshness_flag=q.freshness_flag,
                adversarial=q.adversarial,
                safety_flags=list(q.safety_flags or []),
                required_behavior=q.required_behavior,
                prohibited_behaviors=list(q.prohibited_behaviors or []),
            ),
            answer=record.answer,
            status=record.status,
            status_display=record.get_status_display(),
            adjudication_reason_display=record.get_adjudication_reason_display()
            if record.adjudication_reason
            else "",
            final_acceptability_display=record.get_final_acceptability_display(),
            final_grounding_display=record.get_final_grounding_display(),
        )


@dataclass(frozen=True)
class RetrievedItem:
    """A passage the answer's retrieval returned, at its rank: in the corpus (its pinned
    ``block_version``, with ``newest_version`` for the superseded badge) or not in the corpus
    (``text`` as the trace sent it, ``passage_ref`` the document id it named, possibly
    empty). ``score`` is the retriever's score for the roles that see systems
    (:func:`goldset.rules.blinding.sees_retrieval_scores`), None for everyone else."""

    rank: int
    passage_ref: str
    in_corpus: bool
    block_version: BlockVersion | None
    newest_version: int | None
    text: str
    score: float | None


@dataclass(frozen=True)
class ItemPacket:
    """What the label and adjudication pages show: question, answer, evidence, what the answer
    cited and what its retrieval returned — never the system."""

    record: BlindRecord
    gold: list[EvidencePassage]
    near_misses: list[EvidencePassage]
    citations: list[AnswerCitation]
    retrieved: list[RetrievedItem]


def _record_qs():
    return AnswerRecord.objects.select_related("question__domain")


def get_item_packet(record: AnswerRecord | BlindRecord, *, user=None) -> ItemPacket:
    """The record's packet; each passage carries ``newest_version`` (its block's current version
    number) so superseded text is badged on the label and adjudication pages. ``retrieved``
    lists the passages retrieved in rank order, those matched to the corpus and those not in
    it (kept from a trace with their text) together; their scores only when ``user`` sees
    retrieval scores. Four queries."""
    blind = record if isinstance(record, BlindRecord) else BlindRecord.of(record)
    newest = Subquery(newest_version_of("block_version__block_id"))
    evidence = list(
        EvidencePassage.objects.filter(question__records__pk=record.pk)
        .select_related("block_version__block__document")
        .annotate(newest_version=newest)
        .order_by("kind", "position")
    )
    citations = list(
        AnswerCitation.objects.filter(record_id=record.pk)
        .select_related("block_version__block__document")
        .annotate(newest_version=newest)
        .order_by("position")
    )
    return ItemPacket(
        record=blind,
        gold=[e for e in evidence if e.kind == EvidenceKind.GOLD],
        near_misses=[e for e in evidence if e.kind == EvidenceKind.NEAR_MISS],
        citations=citations,
        retrieved=list_retrieved(
            record.pk, scores=user is not None and sees_retrieval_scores(roles_of(user))
        ),
    )


def list_retrieved(record_id: int, *, scores: bool = False) -> list[RetrievedItem]:
    """The passages record ``record_id``'s retrieval returned, by rank: matched to the corpus
    (``RetrievedPassage``) and not in the corpus (``UnmatchedPassage``) together, with the
    retriever's scores when ``scores`` (the caller decides who sees them). Two queries."""
    newest = Subquery(newest_version_of("block_version__block_id"))
    matched = (
        RetrievedPassage.objects.filter(record_id=record_id)
        .select_related("block_version__block__document")
        .annotate(newest_version=newest)
    )
    items = [
        RetrievedItem(
            rank=p.rank,
            passage_ref=p.passage_ref,
            in_corpus=True,
            block_version=p.block_version,
            newest_version=p.newest_version,
            text=p.block_version.text,
            score=p.score if scores else None,
        )
        for p in matched
    ]
    items += [
        RetrievedItem(
            rank=rank,
            passage_ref=ref,
            in_corpus=False,
            block_version=None,
            newest_version=None,
            text=text,
            score=score if scores else None,
        )
        for rank, ref, text, score in UnmatchedPassage.objects.filter(
            record_id=record_id
        ).values_list("rank", "passage_ref", "text", "score")
    ]
    return sorted(items, key=lambda item: item.rank)


def get_assignment_for(*, project, annotator, public_id: str) -> LabelAssignment:
    """The annotator's own assignment of ``project``'s item; Http404 for items not assigned to
    them and for items of another project."""
    assignment = (
        LabelAssignment.objects.select_related("record__question__domain")
        .filter(annotator=annotator, record__public_id=public_id, record__project=project)
        .first()
    )
    if assignment is None:
        raise Http404("No such item in your queue.")
    assignment.annotator = annotator  # it is theirs: no second read of the user row
    return assignment


def get_own_label(assignment: LabelAssignment) -> Label | None:
    """The assignment's label; an assignment has one exactly when it is completed (the labeling
    service sets both in one transaction, undo clears both), so an open one costs no query."""
    if assignment.completed_at is None:
        return None
    return Label.objects.filter(assignment=assignment).first()


# ---------------------------------------------------------------- who may adjudicate

# The roles that adjudicate (the access table's and the views' LEADS say the same).
ADJUDICATORS = frozenset({Role.LEAD.value, Role.ADMIN.value})


def adjudicable_records(*, user, project, statuses=LEAD_VISIBLE):
    """The one home of "who may adjudicate what": the records of ``project`` (a project or its
    id) in ``statuses`` that ``user`` may open as a lead — a lead or admin role (in the
    request's project: ``roles_of``), and none of the record's labels is theirs (a person who is
    annotator and lead never adjudicates their own label). No records for anyone else, never a
    record of another project. The queue, the page, the next-item step and
    :func:`record_adjudication` all filter with it."""
    if not roles_in(user, project) & ADJUDICATORS:
        return AnswerRecord.objects.none()
    own_label = Label.objects.filter(record_id=OuterRef("pk"), annotator_id=user.pk)
    return AnswerRecord.objects.filter(
        project_id=getattr(project, "pk", project), status__in=statuses
    ).exclude(Exists(own_label))


def access_record_for_adjudication(*, user, project, public_id: str) -> BlindRecord:
    """Fetch and authorize in one call: the item of ``project`` ``user`` may open as a lead (in
    the adjudication queue, the audit sample or adjudicated; see :func:`adjudicable_records`),
    as a blinded read model; Http404 otherwise, whatever the reason (another project's item
    included)."""
    record = (
        adjudicable_records(user=user, project=project)
        .select_related("question__domain")
        .filter(public_id=public_id)
        .first()
    )
    if record is None:
        raise Http404("No such item in your adjudication queue.")
    return BlindRecord.of(record)


def get_adjudication_of(record: BlindRecord) -> Adjudication | None:
    return Adjudication.objects.filter(record_id=record.pk).first()


@dataclass(frozen=True)
class Provenance:
    run_id: str
    system_id: str


def get_provenance_for_admin(*, user, record: BlindRecord) -> Provenance | None:
    """The run and system behind an item — for the roles that see systems (admins; None for
    anyone else)."""
    if not sees_systems(roles_of(user)):
        return None
    run_id, system_id = (
        AnswerRecord.objects.filter(pk=record.pk)
        .values_list("run__run_id", "run__system__system_id")
        .get()
    )
    return Provenance(run_id=run_id, system_id=system_id)


def list_blind_labels(record: AnswerRecord | BlindRecord, *, user) -> list[Label]:
    """The record's labels by slot; templates show them as Annotator 1/2/3, and each label's
    ``labeler_name`` is who labeled it for the roles that see labelers (admins), "" otherwise
    (:mod:`goldset.rules.blinding`)."""
    show = sees_labelers(roles_of(user))
    labels = list(
        Label.objects.filter(record_id=record.pk)
        .select_related("assignment", *(["annotator"] if show else []))
        .order_by("assignment__slot", "id")
    )
    for label in labels:
        label.labeler_name = label.annotator.username if show else ""
    return labels


# ---------------------------------------------------------------- queues


@dataclass(frozen=True)
class QueueOverview:
    domains: list[Domain]
    loads: dict
    done: int
    open_assignment: LabelAssignment | None

    @property
    def share_reached(self) -> bool:
        return self.open_assignment is None and not any(load.open for load in self.loads.values())


def get_queue_overview(*, project, annotator) -> QueueOverview:
    """The annotator's label queue in ``project``: their qualified domains with their loads,
    what they labeled there, and their open claim there."""
    domain_ids = qualified_domain_ids(annotator, project=project)
    open_assignment = (
        LabelAssignment.objects.filter(
            annotator=annotator,
            is_calibration=False,
            completed_at__isnull=True,
            record__project=project,
        )
        .select_related("record__question__domain")
        .first()
    )
    loads = domain_loads(annotator, domain_ids, project=project) if domain_ids else {}
    # Claimed slots are counted per domain as they are claimed; all but the open one are done.
    claimed = AnnotatorDomainLoad.objects.filter(
        annotator=annotator, domain__project=project
    ).aggregate(n=Sum("claimed"))
    done = (claimed["n"] or 0) - (1 if open_assignment is not None else 0)
    domains = list(Domain.objects.filter(pk__in=domain_ids).order_by("slug"))
    return QueueOverview(
        domains=domains,
        loads={d.slug: loads[d.pk] for d in domains},
        done=done,
        open_assignment=open_assignment,
    )


def list_my_done_assignments(*, project, annotator, limit: int = 20):
    """The annotator's latest ``limit`` completed production claims in ``project``, newest
    first: a walk of the ``assignment_annotator_time`` index, whatever the length of their
    history."""
    return (
        LabelAssignment.objects.filter(
            annotator=annotator,
            is_calibration=False,
            completed_at__isnull=False,
            record__project=project,
        )
        .select_related("record__question__domain")
        .order_by("-completed_at", "-id")[:limit]
    )


ADJUDICATION_ORDER = ("status", "created_at", "id")


def list_adjudication_queue(
    *, user, project, include_done: bool = False, cursor: str | None = None, size: int
):
    """One keyset page of ``user``'s adjudication queue (:func:`adjudicable_records`: never an
    item they labeled) in (status, created_at, id) order, read from the
    ``answer_record_lead_queue`` index; each row carries its number of severe labels (counted for
    the page's rows only). Raises Http404 for a malformed cursor."""
    statuses = LEAD_VISIBLE if include_done else OPEN_FOR_LEAD
    severe = (
        Label.objects.filter(record_id=OuterRef("pk"), severe_safety=True)
        .order_by()
        .values("record_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    rows = (
        adjudicable_records(user=user, project=project, statuses=statuses)
        .select_related("question__domain")
        .filter(is_calibration=False)
        .annotate(severe=Coalesce(Subquery(severe), 0))
    )
    return keyset_page(rows, fields=ADJUDICATION_ORDER, cursor=cursor, size=size)


def next_item_for_lead(*, user, project) -> AnswerRecord | None:
    """The first open item of ``user``'s adjudication queue in ``project`` (the queue's own
    order and index)."""
    page = list_adjudication_queue(user=user, project=project, size=1)
    return page.items[0] if page.items else None


# ---------------------------------------------------------------- calibration


@dataclass(frozen=True)
class CalibrationRow:
    domain: Domain
    calibration_set: CalibrationSet
    total: int  # items taken (started) or offered (not started; 0 when no version is ready)
    done: int
    started: bool
    result: CalibrationResult | None
    next_assignment: LabelAssignment | None
    version: int | None = None  # the set version offered to this annotator if they start now
    retake: CalibrationRetake | None = None  # after a failed result: the newest retake request

    @property
    def may_request(self) -> bool:
        """A failed result whose retake is not already waiting for a lead."""
        return bool(self.result and not self.result.passed) and (
            self.retake is None or self.retake.status != RetakeStatus.PENDING
        )


def list_my_calibration(*, project, annotator) -> list[CalibrationRow]:
    """Per calibration set of ``project``: the annotator's progress, result, or the version
    they would be given now (``offer_for``). Constant queries."""
    sets = list(
        CalibrationSet.objects.filter(project=project)
        .select_related("domain")
        .prefetch_related("items")
        .order_by("domain__slug")
    )
    mine = list(
        LabelAssignment.objects.filter(
            annotator=annotator, is_calibration=True, record__project=project
        )
        .select_related("record__question")
        .order_by("shuffle_key")
    )
    results = {
        r.domain_id: r
        for r in CalibrationResult.objects.filter(annotator=annotator, domain__project=project)
    }
    retakes = {}
    failed = [domain_id for domain_id, r in results.items() if not r.passed]
    if failed:  # newest request per failed domain (one query, only when something failed)
        for retake in CalibrationRetake.objects.filter(
            annotator=annotator, domain_id__in=failed
        ).order_by("requested_at", "id"):
            retakes[retake.domain_id] = retake
    rows = []
    for s in sets:
        own = [a for a in mine if a.record.question.domain_id == s.domain_id]
        pending = [a for a in own if a.completed_at is None]
        offer = None if own else offer_for(s, s.items.all())
        rows.append(
            CalibrationRow(
                domain=s.domain,
                calibration_set=s,
                total=len(own) if own else (len(offer.items) if offer else 0),
                done=len(own) - len(pending),
                started=bool(own),
                result=results.get(s.domain_id),
                next_assignment=pending[0] if pending else None,
                version=offer.version if offer else None,
                retake=retakes.get(s.domain_id),
            )
        )
    return rows


def next_calibration_assignment(*, annotator, domain_id: int) -> LabelAssignment | None:
    return (
        LabelAssignment.objects.filter(
            annotator=annotator,
            is_calibration=True,
            completed_at__isnull=True,
            record__question__domain_id=domain_id,
        )
        .select_related("record")
        .order_by("shuffle_key")
        .first()
    )


@dataclass(frozen=True)
class StatusRow:
    annotator: object
    cells: list  # per domain: CalibrationResult | "in_progress" | None
    skips: int = 0  # production items skipped (with a reason)


def get_calibration_status(
    *, project, cursor: str | None = None, size: int
) -> tuple[list[Domain], KeysetPage]:
    """Every domain of ``project`` with a calibration set, and one keyset page of the project's
    annotators (by username), each a :class:`StatusRow` per domain: result, in progress or
    nothing, and their skips in the project. Five queries, whatever the number of people,
    claims and records. Raises Http404 for a malformed cursor."""
    domains = list(
        Domain.objects.filter(project=project, calibration_set__isnull=False).order_by("slug")
    )
    people = keyset_page(
        get_user_model().objects.filter(
            project_memberships__project=project,
            project_memberships__role=Role.ANNOTATOR.value,
        ),
        fields=("username", "id"),
        cursor=cursor,
        size=size,
    )
    ids = [user.pk for user in people.items]
    results = {
        (r.annotator_id, r.domain_id): r
        for r in CalibrationResult.objects.filter(domain__in=domains, annotator_id__in=ids)
    }
    started = set(
        LabelAssignment.objects.filter(
            is_calibration=True, annotator_id__in=ids, record__project=project
        ).values_list("annotator_id", "record__question__domain_id")
    )
    skips = count_skips_by_annotator(ids, project=project)
    rows = []
    for user in people.items:
        cells = []
        for d in domains:
            result = results.get((user.pk, d.pk))
            cells.append(result or ("in_progress" if (user.pk, d.pk) in started else None))
        rows.append(StatusRow(user, cells, skips.get(user.pk, 0)))
    return domains, KeysetPage(items=rows, next_cursor=people.next_cursor, first=people.first)


def list_calibration_sets(*, project):
    """``project``'s calibration sets with their item counts."""
    return (
        CalibrationSet.objects.filter(project=project)
        .select_related("domain")
        .annotate(
            total=Count("items"),
            referenced=Count("items", filter=Q(items__reference_severe_safety__isnull=False)),
            drafts=Count("items", filter=Q(items__set_version__isnull=True)),
        )
    )


def get_calibration_set(*, project, domain_slug: str) -> CalibrationSet:
    """``project``'s calibration set of the domain with its items; Http404 otherwise (another
    project's set included)."""
    calibration_set = (
        CalibrationSet.objects.select_related("domain")
        .prefetch_related(
            Prefetch(
                "items",
                queryset=CalibrationItem.objects.select_related(
                    "record__question", "reference_set_by"
                ).order_by("id"),
            )
        )
        .filter(project=project, domain__slug=domain_slug)
        .first()
    )
    if calibration_set is None:
        raise Http404("No calibration set for this domain.")
    return calibration_set


def get_calibration_item(*, project, domain_slug: str, public_id: str) -> CalibrationItem:
    """An item of ``project``'s calibration set of the domain; Http404 otherwise."""
    item = (
        CalibrationItem.objects.select_related("record__question__domain", "calibration_set")
        .filter(
            calibration_set__project=project,
            calibration_set__domain__slug=domain_slug,
            record__public_id=public_id,
        )
        .first()
    )
    if item is None:
        raise Http404("No such calibration item.")
    return item


# ---------------------------------------------------------------- admin


def list_runs(*, project, cursor: str | None = None, size: int) -> KeysetPage:
    """Admin only: one keyset page of ``project``'s runs, newest first, with their system and their records'
    counts (all, final or adjudicated, with a lead) from the maintained ``run_status``
    counters: two queries, whatever the number of runs and records. Raises Http404 for a
    malformed cursor."""
    page = keyset_page(
        Run.objects.filter(project=project).select_related("system"),
        fields=("imported_at", "id"),
        cursor=cursor,
        size=size,
        descending=True,
    )
    counts = counters_by_row(
        "run_status", [run.pk for run in page.items], RecordStatus.values, project=project
    )
    final = (RecordStatus.FINAL, RecordStatus.ADJUDICATED)
    for run in page.items:
        by_status = counts.get(run.pk, {})
        run.record_count = sum(by_status.values())
        run.final = sum(by_status.get(s, 0) for s in final)
        run.with_lead = sum(by_status.get(s, 0) for s in OPEN_FOR_LEAD)
    return page


def count_records_by_status(*, project) -> dict[str, int]:
    """Production records per status (statuses with none left out), in the statuses' order,
    from the maintained ``record_status`` counters (one query)."""
    counts = dict(counter_rows("record_status", project=project)["record_status"])
    return {status: counts[status] for status in RecordStatus.values if status in counts}


def _export_statuses(include_open: bool) -> list[str]:
    statuses = [RecordStatus.FINAL, RecordStatus.ADJUDICATED, RecordStatus.AUDIT]
    if include_open:
        statuses += [RecordStatus.LABELING, RecordStatus.NEEDS_ADJUDICATION]
    return statuses


def list_adjudication_export_people(*, project, include_open: bool = False) -> set[int]:
    """The annotators and leads ``project``'s adjudication export names (two queries)."""
    records = AnswerRecord.objects.filter(
        project=project, is_calibration=False, status__in=_export_statuses(include_open)
    )
    labelers = Label.objects.filter(record__in=records).values_list("annotator_id", flat=True)
    leads = records.filter(adjudication__isnull=False).values_list(
        "adjudication__lead_id", flat=True
    )
    return set(labelers) | set(leads)


EXPORT_RECORD_COLUMNS = (
    "id",
    "public_id",
    "question__question_id",
    "question__domain__slug",
    "question__task_family",
    "run__run_id",
    "run__system__system_id",
    "tier",
    "routing_rule",
    "rules_version",
    "status",
    "audit_seed",
    "audit_draw",
    "in_audit_sample",
    "final_acceptability",
    "final_grounding",
    "final_source",
    "adjudication__id",
    "adjudication__lead_id",
    "adjudication__reason",
    "adjudication__acceptability",
    "adjudication__grounding",
    "adjudication__severe_safety",
    "adjudication__primary_failure",
    "adjudication__secondary_failures",
    "adjudication__rationale",
    "adjudication__changed_outcome",
    "adjudication__created_at",
    "adjudication__server_ms",
    "adjudication__active_ms",
    "adjudication__guideline__version",
)
# In the order _export_labels unpacks them: the label's values in their one order
# (rules.axes.LABEL_VALUE_FIELDS), the failures as their JSON text (see there).
EXPORT_LABEL_COLUMNS = (
    "record_id",
    "assignment__slot",
    "annotator_id",
    *("secondary_failures_json" if f == "secondary_failures" else f for f in LABEL_VALUE_FIELDS),
    "created_at",
    "server_ms",
    "active_ms",
    "guideline__version",
)
EXPORT_CHUNK = 2000


def iter_adjudication_export(
    *, project, pseudonyms: Mapping[int, str], include_open: bool = False
) -> Iterator[dict]:
    """One dict per item of ``project`` (seed 004 Table 9 "Adjudication export"): labels with rationales,
    failure categories and reviewer role, the adjudication if any, and the final result.

    Reviewers appear as the ``pseudonyms`` given (``{user_id: label}``, see
    ``services.pseudonyms``: random per gold version or per export), never names or keys. Items
    still collecting labels are left out unless ``include_open``. Streams plain columns (no
    model objects: issue 26), records by id with one query of their labels per chunk; the
    guideline version of a decision is None when none was recorded.
    """
    records = (
        AnswerRecord.objects.filter(
            project=project, is_calibration=False, status__in=_export_statuses(include_open)
        )
        .order_by("id")
        .values_list(*EXPORT_RECORD_COLUMNS)
    )
    chunk: list[dict] = []
    for row in records.iterator(chunk_size=EXPORT_CHUNK):
        chunk.append(dict(zip(EXPORT_RECORD_COLUMNS, row, strict=True)))
        if len(chunk) >= EXPORT_CHUNK:
            yield from _export_items(chunk, pseudonyms)
            chunk = []
    yield from _export_items(chunk, pseudonyms)


def _export_items(chunk: list[dict], pseudonyms: Mapping[int, str]) -> Iterator[dict]:
    if not chunk:
        return
    labels = _export_labels([r["id"] for r in chunk], pseudonyms)
    for r in chunk:
        yield {
            "item_id": r["public_id"],
            "question_id": r["question__question_id"],
            "domain": r["question__domain__slug"],
            "task_family": r["question__task_family"],
            "run_id": r["run__run_id"],
            "system_id": r["run__system__system_id"],
            "tier": r["tier"],
            "routing_rule": r["routing_rule"],
            "rules_version": r["rules_version"],
            "status": r["status"],
            "labels": labels.get(r["id"], []),
            "adjudication": None
            if r["adjudication__id"] is None
            else _export_adjudication(r, pseudonyms),
            "audit_sample": {
                "seed": r["audit_seed"],
                "draw": r["audit_draw"],
                "selected": r["in_audit_sample"],
            }
            if r["audit_seed"] is not None
            else None,
            "final": {
                "acceptability": r["final_acceptability"] or None,
                "grounding": r["final_grounding"] or None,
                "source": r["final_source"] or None,
            },
        }


def _json_once(decoded: dict, text: str | None):
    """``json.loads(text)``, decoded once per distinct text of a column that repeats a few
    values (mostly ``[]``: issue 26); a list is copied each time, the rows being the callers'
    to change. None (SQL NULL) stays None, as the JSON field gives it. ``decoded`` is the
    caller's cache, emptied past 1,000 texts (a column of distinct values gains nothing)."""
    if text is None:
        return None
    value = decoded.get(text, decoded)
    if value is decoded:
        if len(decoded) >= 1000:
            decoded.clear()
        value = decoded[text] = json.loads(text)
    return list(value) if type(value) is list else value


def _export_labels(record_ids: list[int], pseudonyms: Mapping[int, str]) -> dict[int, list[dict]]:
    """The export's labels of these records, by record, in slot order (one query). Unpacked
    from plain tuples, and the failure lists decoded once per distinct JSON text (nearly all
    are ``[]``): three labels an item made these the export's largest cost (issue 26)."""
    rows = (
        Label.objects.filter(record_id__in=one_of(record_ids, of="bigint"))
        .annotate(secondary_failures_json=Cast("secondary_failures", TextField()))
        .order_by("record_id", "assignment__slot", "id")
        .values_list(*EXPORT_LABEL_COLUMNS)
    )
    annotator = Role.ANNOTATOR.value
    decoded: dict[str, object] = {}
    labels: dict[int, list[dict]] = {}
    for (
        record_id,
        slot,
        annotator_id,
        acceptability,
        grounding,
        evidence_sufficiency,
        citation_correctness,
        conflict_handling,
        safety_boundary,
        severe_safety,
        primary_failure,
        failures_json,
        rationale,
        created_at,
        server_ms,
        active_ms,
        guideline_version,
    ) in rows:
        labels.setdefault(record_id, []).append(
            {
                "slot": slot,
                "reviewer": pseudonyms[annotator_id],
                "reviewer_role": annotator,
                "acceptability": acceptability,
                "grounding": grounding,
                "evidence_sufficiency": evidence_sufficiency,
                "citation_correctness": citation_correctness,
                "conflict_handling": conflict_handling,
                "safety_boundary": safety_boundary,
                "severe_safety": severe_safety,
                "primary_failure": primary_failure or None,
                "secondary_failures": _json_once(decoded, failures_json),
                "rationale": rationale,
                "labeled_at": created_at.isoformat(),
                "server_ms": server_ms,
                "active_ms": active_ms,
                "guideline_version": guideline_version,
            }
        )
    return labels


def _export_adjudication(r: dict, pseudonyms: Mapping[int, str]) -> dict:
    return {
        "reviewer": pseudonyms[r["adjudication__lead_id"]],
        "reviewer_role": Role.LEAD.value,
        "reason": r["adjudication__reason"],
        "acceptability": r["adjudication__acceptability"],
        "grounding": r["adjudication__grounding"],
        "severe_safety": r["adjudication__severe_safety"],
        "primary_failure": r["adjudication__primary_failure"] or None,
        "secondary_failures": r["adjudication__secondary_failures"],
        "rationale": r["adjudication__rationale"],
        "changed_outcome": r["adjudication__changed_outcome"],
        "adjudicated_at": r["adjudication__created_at"].isoformat(),
        "server_ms": r["adjudication__server_ms"],
        "active_ms": r["adjudication__active_ms"],
        "guideline_version": r["adjudication__guideline__version"],
    }


# ---------------------------------------------------------------- PROBE question packets


QUESTION_COLUMNS = (
    "question_id",
    "text",
    "domain__slug",
    "task_family",
    "variant",
    "conflict_flag",
    "freshness_flag",
    "required_behavior",
    "safety_flags",
    "prohibited_behaviors",
)
EVIDENCE_COLUMNS = ("kind", "passage_ref", "role", "effective", "label", "authority", "reason")


def _question_values(q: Question) -> dict:
    return {
        "question_id": q.question_id,
        "text": q.text,
        "domain__slug": q.domain.slug,
        "task_family": q.task_family,
        "variant": q.variant,
        "conflict_flag": q.conflict_flag,
        "freshness_flag": q.freshness_flag,
        "required_behavior": q.required_behavior,
        "safety_flags": q.safety_flags,
        "prohibited_behaviors": q.prohibited_behaviors,
    }


def question_record(q: Question) -> dict:
    return _question_record(_question_values(q))


def _question_record(q: dict) -> dict:
    flags = [
        f for f, on in (("conflict", q["conflict_flag"]), ("freshness", q["freshness_flag"])) if on
    ]
    return {
        "question_id": q["question_id"],
        "question": q["text"],
        "domain": q["domain__slug"],
        "task_family": q["task_family"],
        "variant": q["variant"],
        "flags": flags,
        "required_behavior": q["required_behavior"],
        "safety_flags": q["safety_flags"],
    }


def packet_record(q: Question) -> dict:
    """Seed 004 A.4: gold passages with role, authority, effective window and label; near
    misses with their reason; prohibited behaviours."""
    evidence = [{c: getattr(e, c) for c in EVIDENCE_COLUMNS} for e in q.evidence.all()]
    return _packet_record(_question_values(q), evidence)


def _packet_record(q: dict, evidence: list[dict]) -> dict:
    gold, near = [], []
    for e in evidence:
        if e["kind"] == EvidenceKind.NEAR_MISS:
            near.append({"passage_id": e["passage_ref"], "reason": e["reason"]})
        else:
            passage = {
                "passage_id": e["passage_ref"],
                "role": e["role"],
                "effective": e["effective"],
                "label": e["label"],
            }
            if e["authority"] is not None:  # absent: scoring.probe's default authority applies
                passage["authority"] = float(e["authority"])
            gold.append(passage)
    return {
        **_question_record(q),
        "gold_evidence": gold,
        "near_miss": near,
        "prohibited_answer_behavior": q["prohibited_behaviors"],
    }


PACKET_CHUNK = 2000
# The question's JSON lists, read as their text and decoded by _json_once.
PACKET_JSON_COLUMNS = {
    "safety_flags": "safety_flags_json",
    "prohibited_behaviors": "prohibited_behaviors_json",
}


def iter_answer_question_packets(*, project) -> Iterator[dict]:
    """:func:`packet_record` of every question of ``project``, by question id, streamed from
    plain columns (issue 26: no model objects): one query of evidence per chunk of questions."""
    rows = (
        Question.objects.filter(project=project)
        .annotate(**{text: Cast(name, TextField()) for name, text in PACKET_JSON_COLUMNS.items()})
        .order_by("question_id")
        .values_list("pk", *(PACKET_JSON_COLUMNS.get(c, c) for c in QUESTION_COLUMNS))
    )
    decoded: dict[str, object] = {}
    chunk: list[tuple] = []
    for row in rows.iterator(chunk_size=PACKET_CHUNK):
        chunk.append(row)
        if len(chunk) >= PACKET_CHUNK:
            yield from _packets_of(chunk, decoded)
            chunk = []
    yield from _packets_of(chunk, decoded)


def _packets_of(chunk: list[tuple], decoded: dict) -> Iterator[dict]:
    if not chunk:
        return
    evidence: dict[int, list[dict]] = {}
    rows = (
        EvidencePassage.objects.filter(
            question_id__in=one_of([row[0] for row in chunk], of="bigint")
        )
        .order_by("question_id", "position", "pk")
        .values_list("question_id", *EVIDENCE_COLUMNS)
    )
    for question_id, *values in rows:
        evidence.setdefault(question_id, []).append(
            dict(zip(EVIDENCE_COLUMNS, values, strict=True))
        )
    for pk, *values in chunk:
        question = dict(zip(QUESTION_COLUMNS, values, strict=True))
        for name in PACKET_JSON_COLUMNS:
            question[name] = _json_once(decoded, question[name])
        yield _packet_record(question, evidence.get(pk, []))


def get_undoable_label(*, project, annotator) -> Label | None:
    """The annotator's last production label in ``project`` if it can still be undone (one
    query): within the project's ``LABEL_UNDO_WINDOW_SECONDS`` and its item still collecting
    labels. The undo service re-checks both under lock."""
    window = tunable("LABEL_UNDO_WINDOW_SECONDS", project=project)
    since = timezone.now() - timedelta(seconds=window)
    last = (
        Label.objects.filter(
            annotator=annotator, assignment__is_calibration=False, record__project=project
        )
        .select_related("record")
        .order_by("-created_at", "-id")
        .first()
    )
    if last is None or last.created_at < since or last.record.status != RecordStatus.LABELING:
        return None
    return last


def count_skips_by_annotator(annotator_ids, *, project) -> dict[int, int]:
    """Skips per annotator (those with none left out), from the maintained ``skips`` counters
    (one query, bounded by the number of annotators asked about)."""
    keys = [str(pk) for pk in annotator_ids]
    if not keys:
        return {}
    skips = counter_rows("skips", keys=keys, project=project)["skips"]
    return {int(key): n for key, n in skips}


# ---------------------------------------------------------------- the API's reads (issue 29)


def _blind_label_columns(qs, *, user):
    """Labels as plain columns: the item's opaque id, the slot, and who labeled it only for the
    roles that see labelers (:mod:`goldset.rules.blinding`, as :func:`list_blind_labels`); no
    join reaches the run or the system."""
    labeler = F("annotator__username") if sees_labelers(roles_of(user)) else Value("")
    return qs.annotate(
        record_public_id=F("record__public_id"),
        slot=F("assignment__slot"),
        calibration=F("assignment__is_calibration"),
        labeler_name=labeler,
    )


def list_labels_for(*, project, user, record: str = ""):
    """The labels of ``project`` the pages show ``user``, as one query: their own labels (the
    label page), and for the roles that adjudicate, the labels of the items
    :func:`adjudicable_records` opens to them (the adjudication page: never an item they
    labeled, whose other labels stay blind to them). ``record``: one item's labels (its
    ``public_id``). Newest first."""
    visible = Q(annotator=user)
    if roles_in(user, project) & ADJUDICATORS:
        visible |= Q(record__in=adjudicable_records(user=user, project=project).values("pk"))
    qs = Label.objects.filter(visible, record__project=project)
    if record:
        qs = qs.filter(record__public_id=record)
    return _blind_label_columns(qs, user=user).order_by("-id")


def get_label_for(*, project, user, pk: int) -> Label:
    """One label of :func:`list_labels_for`; Http404 for any other (not theirs, another
    project's, still blind)."""
    label = list_labels_for(project=project, user=user).filter(pk=pk).first()
    if label is None:
        raise Http404("No such label.")
    return label


def list_adjudications_for(*, project, user):
    """The adjudications of ``project`` on the items :func:`adjudicable_records` opens to
    ``user`` (leads and admins; never an item they labeled), newest first, with the item's
    opaque id and the lead's name (the adjudication page shows both); nothing of the system."""
    records = adjudicable_records(user=user, project=project).values("pk")
    return (
        Adjudication.objects.filter(record__in=records)
        .annotate(record_public_id=F("record__public_id"), lead_name=F("lead__username"))
        .order_by("-id")
    )


def get_adjudication_for(*, project, user, pk: int) -> Adjudication:
    """One adjudication of :func:`list_adjudications_for`; Http404 otherwise."""
    adjudication = list_adjudications_for(project=project, user=user).filter(pk=pk).first()
    if adjudication is None:
        raise Http404("No such adjudication.")
    return adjudication


def list_open_items_for_lead(*, user, project):
    """The items waiting for ``user`` as a lead in ``project`` (:func:`adjudicable_records` in
    ``OPEN_FOR_LEAD``; production items), each with its question and its labels by slot
    (``blind_labels``, blinded as :func:`list_blind_labels`): a constant number of queries
    whatever the page size. Rows are ``AnswerRecord``; hand them out as :class:`BlindRecord`."""
    labels = _blind_label_columns(Label.objects.all(), user=user).order_by("assignment__slot", "id")
    return (
        adjudicable_records(user=user, project=project, statuses=OPEN_FOR_LEAD)
        .filter(is_calibration=False)
        .select_related("question__domain")
        .prefetch_related(Prefetch("labels", queryset=labels, to_attr="blind_labels"))
    )
