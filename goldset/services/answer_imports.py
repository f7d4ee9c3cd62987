"""Importing question files with gold evidence packets and per-system answer logs (seed 004 §3.6,
A.3–A.5).

Both imports are JSONL read as a stream through the import toolkit (:mod:`goldset.imports`):
the whole file (and its references into the corpus) is validated before anything is written, then
written in one transaction with bulk inserts; a bad file raises
:class:`~goldset.exceptions.ImportRejected` listing every problem as ``line N: field: reason``
and stores nothing.

Passage ids resolve to block versions of the corpus: ``block_id`` means the block's latest
version, ``block_id@vN`` pins version N.

Question file (one question per line)::

    {"question_id", "domain", "task_family", "task_type"?, "variant"?, "question",
     "flags"?: ["conflict", "freshness", "adversarial"], "required_behavior"?,
     "prohibited_answer_behavior"?: [..], "safety_flags"?: [..], "uncertainty"?: 0..1,
     "gold_evidence": [{"passage_id", "role", "authority"?, "effective"?, "label"}],
     "near_miss"?: [{"passage_id", "reason"}]}

Answer log (one answer record per line)::

    {"run_id", "system_id", "question_id", "answer", "retrieved_passages": [{"passage_id", "rank"}],
     "citations": [passage ids], "model"?: {..}, "latency_ms"?, "cost_usd"?, "uncertainty"?,
     "tokens"?, "metrics"?, "prompt_hash"?, "system_config"?, "calibration"?: bool}

Every answer record is routed (DESIGN.md §7) and stores tier, rule and rules version. Records
marked ``calibration`` join their domain's calibration set instead of the production queues.
"""

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from goldset.conf import tunable
from goldset.exceptions import ImportRejected
from goldset.imports import bulk
from goldset.imports.batches import run_import
from goldset.imports.errors import Problems
from goldset.imports.fields import At, column_length, is_clean_id
from goldset.imports.reader import as_source, iter_json_lines
from goldset.models import (
    AnswerCitation,
    AnswerRecord,
    BlockVersion,
    CalibrationItem,
    CalibrationSet,
    Domain,
    EvidenceKind,
    EvidenceLabel,
    EvidencePassage,
    Question,
    RetrievedPassage,
    Run,
    System,
    TaskType,
    Tier,
)
from goldset.models.answers import new_public_id
from goldset.rules.labeling import queue_rank
from goldset.rules.tiers import RECORD, required_for
from goldset.services.labeling import add_domain_slots
from goldset.services.routing import decide_tier, get_active_rules
from workbench.services.audit import record_event

QUESTION_FLAGS = {"conflict", "freshness", "adversarial"}
PASSAGE_REF = re.compile(r"^(?P<block>[^@\s]+)(?:@v(?P<version>[1-9][0-9]*))?$")
ID_LENGTH = column_length(Question, "question_id")
REF_LENGTH = column_length(EvidencePassage, "passage_ref")
# Computed once: an enum's ``values`` builds its list again on every access.
TASK_TYPES = tuple(TaskType.values)
EVIDENCE_LABELS = tuple(EvidenceLabel.values)


@dataclass
class QuestionImportSummary:
    questions_created: int = 0
    questions_unchanged: int = 0
    evidence_passages: int = 0

    def as_dict(self) -> dict:
        return {
            "questions_created": self.questions_created,
            "questions_unchanged": self.questions_unchanged,
            "evidence_passages": self.evidence_passages,
        }


@dataclass
class AnswerImportSummary:
    records_created: int = 0
    calibration_records: int = 0
    systems_created: int = 0
    runs_created: int = 0
    by_tier: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "records_created": self.records_created,
            "calibration_records": self.calibration_records,
            "systems_created": self.systems_created,
            "runs_created": self.runs_created,
            "by_tier": dict(sorted(self.by_tier.items())),
        }


def _unit(value, at: At, key: str) -> Decimal | None:
    return at.number(value, key, minimum=0, maximum=1, places="0.001")


@dataclass(frozen=True)
class ResolvedPassage:
    """What an evidence or answer row needs of a block version: its key, and the defaults an
    evidence row takes from it (the document's authority, the effective dates)."""

    pk: int
    authority: Decimal | None
    effective_from: object
    effective_to: object


@dataclass(frozen=True)
class AnsweredQuestion:
    """What routing an answer record needs of its question, read as plain columns (not a model
    instance and its domain per answer)."""

    pk: int
    task_type: str
    uncertainty: Decimal | None
    adversarial: bool
    domain_id: int
    domain_slug: str


class PassageResolver:
    """Resolves passage ids (``block_id`` or ``block_id@vN``) to block versions in one query of
    the few columns the rows need (not model instances with their text)."""

    def __init__(self, refs: set[str], *, project):
        parsed = {ref: PASSAGE_REF.match(ref) for ref in refs}
        block_ids = {m["block"] for m in parsed.values() if m}
        versions: dict[tuple[str, int], ResolvedPassage] = {}
        latest: dict[str, int] = {}
        # (no ORDER BY: the rows go into dicts, and the model's ordering sorted every batch)
        for pk, block_id, number, start, end, authority in (
            BlockVersion.objects.filter(
                block__project=project, block__block_id__in=bulk.one_of(block_ids)
            )
            .order_by()
            .values_list(
                "pk",
                "block__block_id",
                "version",
                "effective_from",
                "effective_to",
                "block__document__authority",
            )
        ):
            versions[(block_id, number)] = ResolvedPassage(pk, authority, start, end)
            latest[block_id] = max(number, latest.get(block_id, 0))
        self.latest = latest
        self.resolved = {
            ref: versions.get((m["block"], int(m["version"] or latest[m["block"]])))
            for ref, m in parsed.items()
            if m and m["block"] in latest
        }

    def get(self, ref: str, at: At, key: str) -> ResolvedPassage | None:
        version = self.resolved.get(ref)
        if version is not None:
            return version
        match = PASSAGE_REF.match(ref)
        if not match:
            at.add(key, f"{ref!r} is not a passage id", "block_id or block_id@vN")
        elif match["block"] not in self.latest:
            at.add(key, f"unknown passage {ref!r}: no block {match['block']!r} in the corpus")
        else:
            at.add(
                key,
                f"unknown passage {ref!r}: block {match['block']} has versions "
                f"1..{self.latest[match['block']]}",
            )
        return None


def _collect_refs(rows, keys: tuple[str, ...]) -> set[str]:
    refs = set()
    for _, obj in rows:
        for key in keys:
            entries = obj.get(key)
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict) and isinstance(entry.get("passage_id"), str):
                    refs.add(entry["passage_id"])
                elif isinstance(entry, str):
                    refs.add(entry)
    return refs


def _ids(rows, key: str):
    """The batch's string values of ``key``, as the right-hand side of ``__in=``."""
    return bulk.one_of({o.get(key) for _, o in rows if isinstance(o.get(key), str)})


# ---------------------------------------------------------------- questions


def question_hash(obj: dict) -> str:
    """A question's content hash (``Question.content_sha256``): a question is immutable once
    stored, and a later import of the same id with other content is refused."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


class QuestionImporter:
    def __init__(self, *, project, actor, source_name: str):
        self.project, self.actor, self.source_name = project, actor, source_name
        self.domains = {d.slug: d for d in Domain.objects.filter(project=project)}

    def begin(self, *, writing: bool) -> None:
        self.writing = writing  # the validate pass checks only: no model instances
        self.seen: dict[str, int] = {}
        self.summary = QuestionImportSummary()

    def records(self, source, problems, progress):
        return iter_json_lines(source, problems, what="question", progress=progress)

    def check(self, rows, problems: Problems) -> list:
        resolver = PassageResolver(
            _collect_refs(rows, ("gold_evidence", "near_miss")), project=self.project
        )
        stored = dict(
            Question.objects.filter(
                project=self.project, question_id__in=_ids(rows, "question_id")
            ).values_list("question_id", "content_sha256")
        )
        plan = []
        for lineno, obj in rows:
            at = At(problems, lineno)
            qid = at.identifier(obj, "question_id", max_length=ID_LENGTH)
            if qid in self.seen:
                at.add("question_id", f"{qid!r} also appears on line {self.seen[qid]}")
            self.seen[qid] = lineno
            digest = question_hash(obj)
            if qid in stored:
                if stored[qid] == digest:
                    self.summary.questions_unchanged += 1
                else:
                    at.add(
                        "question_id",
                        f"{qid!r} already exists with different content; questions are "
                        "immutable once imported",
                    )
                continue
            domain_slug = at.text(obj, "domain")
            if domain_slug and domain_slug not in self.domains:
                at.add(
                    "domain",
                    f"unknown domain {domain_slug!r}",
                    f"one of {', '.join(sorted(self.domains)) or 'none'}",
                )
            task_type = at.choice(
                obj, "task_type", TASK_TYPES, default=TaskType.RAG_SYNTHESIS.value
            )
            flags = at.str_list(obj, "flags")
            unknown = sorted(set(flags) - QUESTION_FLAGS)
            if unknown:
                at.add(
                    "flags",
                    f"unknown flag(s) {', '.join(unknown)}",
                    ", ".join(sorted(QUESTION_FLAGS)),
                )
            values = dict(
                project=self.project,
                question_id=qid,
                domain=self.domains.get(domain_slug),
                task_family=at.text(
                    obj, "task_family", max_length=column_length(Question, "task_family")
                ),
                task_type=task_type,
                variant=at.text(
                    obj, "variant", required=False, max_length=column_length(Question, "variant")
                ),
                text=at.text(obj, "question"),
                conflict_flag="conflict" in flags or obj.get("conflict") is True,
                freshness_flag="freshness" in flags or obj.get("freshness") is True,
                adversarial="adversarial" in flags or obj.get("adversarial") is True,
                required_behavior=at.text(
                    obj,
                    "required_behavior",
                    required=False,
                    max_length=column_length(Question, "required_behavior"),
                ),
                prohibited_behaviors=at.str_list(obj, "prohibited_answer_behavior"),
                safety_flags=at.str_list(obj, "safety_flags"),
                uncertainty=_unit(obj.get("uncertainty"), at, "uncertainty"),
                content_sha256=digest,
            )
            evidence = _evidence(obj, at, resolver, build=self.writing)
            if self.writing:
                plan.append((Question(**values), evidence))
        return plan

    def write(self, plan) -> None:
        bulk.insert(Question, [question for question, _ in plan], ids=True)
        passages = []
        for question, rows in plan:
            for passage in rows:
                passage.question = question
            passages.extend(rows)
        bulk.insert(EvidencePassage, passages)
        self.summary.questions_created += len(plan)
        self.summary.evidence_passages += len(passages)

    def finish(self, *, source) -> QuestionImportSummary:
        record_event(
            actor=self.actor,
            verb="questions_imported",
            object_type="questions",
            object_id=self.source_name[:128],
            project=self.project,
            detail={**self.summary.as_dict(), "file_sha256": source.sha256},
        )
        return self.summary


def import_questions(
    *, project, source, actor, source_name: str = "", progress=None, on_written=None
) -> QuestionImportSummary:
    """Import a question file with evidence packets into ``project``, all or nothing,
    streaming. Domains and passages are looked up in the project (another project's are
    unknown here).

    Questions are immutable: a line identical to a stored question is a no-op, a changed one is
    an error (labels refer to it). Raises ImportRejected with every problem; stores nothing then.
    """
    source = as_source(source, name=source_name)
    importer = QuestionImporter(
        project=project, actor=actor, source_name=source_name or source.name
    )
    return run_import(importer=importer, source=source, progress=progress, on_written=on_written)


def _evidence(obj, at: At, resolver, *, build: bool = True) -> list[EvidencePassage]:
    """The question's evidence rows, checked; with ``build`` false only checked."""
    passages = []
    gold = obj.get("gold_evidence")
    if not isinstance(gold, list) or not gold:
        at.add("gold_evidence", "missing", "a non-empty list of passages")
        gold = []
    near = obj.get("near_miss") or []
    if not isinstance(near, list):
        at.add("near_miss", "expected a list")
        near = []
    for kind, entries, key in (
        (EvidenceKind.GOLD, gold, "gold_evidence"),
        (EvidenceKind.NEAR_MISS, near, "near_miss"),
    ):
        for index, entry in enumerate(entries):
            e_at = at / f"{key}[{index}]"
            if not isinstance(entry, dict):
                at.add(f"{key}[{index}]", "expected an object")
                continue
            ref = e_at.identifier(entry, "passage_id", max_length=REF_LENGTH)
            version = resolver.get(ref, e_at, "passage_id") if ref else None
            label = ""
            if kind == EvidenceKind.GOLD:
                label = e_at.choice(entry, "label", EVIDENCE_LABELS, default="")
            reason = e_at.text(
                entry,
                "reason",
                required=kind == EvidenceKind.NEAR_MISS,
                max_length=column_length(EvidencePassage, "reason"),
            )
            authority = _unit(entry.get("authority"), e_at, "authority")
            effective = e_at.text(
                entry,
                "effective",
                required=False,
                max_length=column_length(EvidencePassage, "effective"),
            )
            if version is not None:
                if authority is None:
                    authority = version.authority
                if not effective and version.effective_from:
                    effective = version.effective_from.isoformat() + (
                        f"/{version.effective_to.isoformat()}" if version.effective_to else ""
                    )
            role = e_at.text(
                entry, "role", required=False, max_length=column_length(EvidencePassage, "role")
            )
            if build:
                passages.append(
                    EvidencePassage(
                        kind=kind,
                        block_version_id=version and version.pk,
                        passage_ref=ref,
                        role=role,
                        authority=authority,
                        effective=effective,
                        label=label,
                        reason=reason,
                        position=index,
                    )
                )
    return passages


# ---------------------------------------------------------------- answer logs


RUN_ID_LENGTH = column_length(Run, "run_id")
SYSTEM_ID_LENGTH = column_length(System, "system_id")
EXTRA_KEYS = ("tokens", "metrics", "prompt_hash")
# What an answer record's row holds, in this order (every other column takes its default).
RECORD_COLUMNS = (
    "project_id",
    "public_id",
    "run_id",
    "question_id",
    "domain_id",
    "queue_rank",
    "answer",
    "model",
    "latency_ms",
    "cost_usd",
    "extra",
    "uncertainty",
    "is_calibration",
    "tier",
    "routing_rule",
    "rules_version",
    "labels_required",
)


def check_latency(value, at: At, key: str = "latency_ms") -> int | None:
    """Latency in milliseconds: a finite number ≥ 0 (not a string, NaN or negative)."""
    number = at.number(value, key, minimum=0, below=10**12, expected="a number of ms ≥ 0")
    return None if number is None else round(number)


def check_cost(value, at: At, key: str = "cost_usd") -> Decimal | None:
    return at.number(
        value, key, minimum=0, below=10_000, places="0.000001", expected="an amount in USD ≥ 0"
    )


class RecordRouter:
    """Routes the new answer records of one project (DESIGN.md §7): the routing rules in force,
    the labels each tier needs and the queue's shuffle seed, read once. ``decide_tier`` is pure,
    so each distinct routing input is decided once. The answer-log import and the traces
    mapping (goldset.services.traces) both create records through it: one routing rule."""

    def __init__(self, *, project):
        self.project = project
        self.rules = get_active_rules(project=project)
        self.queue_seed = tunable("QUEUE_SHUFFLE_SEED", project=project)
        self._decisions: dict[tuple, tuple] = {}

    def route(self, question: AnsweredQuestion, uncertainty) -> tuple:
        """``(tier, tier value, rule, rules version, labels required)`` of a record answering
        ``question``; the record's own uncertainty, when it has one, routes instead of the
        question's."""
        routing = (
            question.task_type,
            uncertainty if uncertainty is not None else question.uncertainty,
            question.adversarial,
            question.domain_slug,
        )
        decided = self._decisions.get(routing)
        if decided is None:
            task_type, routed_uncertainty, adversarial, domain = routing
            decision = decide_tier(
                rules=self.rules,
                task_type=task_type,
                uncertainty=routed_uncertainty,
                adversarial=adversarial,
                domain=domain,
            )
            decided = self._decisions[routing] = (
                decision.tier,
                Tier(decision.tier).value,
                decision.rule,
                decision.rules_version,
                required_for(RECORD, decision.tier, project=self.project),
            )
        return decided

    def queue_rank(self, public_id: str) -> int:
        return queue_rank(public_id=public_id, seed=self.queue_seed)


def insert_records(rows: list[tuple], *, slots: Counter) -> list[int]:
    """Store answer records (``RECORD_COLUMNS`` tuples) and the production label slots they add
    per domain (``slots``); returns their ids in row order. Inside the caller's transaction."""
    record_ids = bulk.insert_rows(AnswerRecord, RECORD_COLUMNS, rows, ids=True)
    for domain_id, added in sorted(slots.items()):
        add_domain_slots(domain_id=domain_id, delta=added)
    return record_ids


def insert_passages(*, retrieved: list[tuple], citations: list[tuple]) -> None:
    """Store records' retrieved passages ``(record, block version, passage id, rank, score)``
    (score None when the source gave none) and citations ``(record, block version, passage id,
    position)``."""
    bulk.insert_rows(
        RetrievedPassage,
        ("record_id", "block_version_id", "passage_ref", "rank", "score"),
        retrieved,
    )
    bulk.insert_rows(
        AnswerCitation, ("record_id", "block_version_id", "passage_ref", "position"), citations
    )


class AnswerLogImporter:
    def __init__(self, *, project, actor, source_name: str, id_factory=None):
        self.project, self.actor, self.source_name = project, actor, source_name
        self.id_factory = id_factory

    def begin(self, *, writing: bool) -> None:
        self.writing = writing
        self.project_id = self.project.pk
        self.run_system: dict[str, tuple[str, int]] = {}
        self.seen_pairs: dict[tuple[str, str], int] = {}
        self.summary = AnswerImportSummary()

    def records(self, source, problems, progress):
        return iter_json_lines(source, problems, what="answer record", progress=progress)

    def check(self, rows, problems: Problems) -> list:
        """The batch's write plan (empty in the validate pass): per line the run and system
        ids, the system's config, the record's checked values ``(answer, model, latency, cost,
        uncertainty, calibration, extra)``, its retrieved passages ``(block version, passage
        id, rank)`` and citations ``(block version, passage id, position)`` as tuples, and its
        question. No model instances: the write pass builds plain rows for bulk.insert_rows."""
        resolver = PassageResolver(
            _collect_refs(rows, ("retrieved_passages", "citations")), project=self.project
        )
        questions = {
            qid: AnsweredQuestion(*facts)
            for qid, *facts in Question.objects.filter(
                project=self.project, question_id__in=_ids(rows, "question_id")
            ).values_list(
                "question_id",
                "pk",
                "task_type",
                "uncertainty",
                "adversarial",
                "domain_id",
                "domain__slug",
            )
        }
        runs = {
            r.run_id: r
            for r in Run.objects.select_related("system").filter(
                project=self.project, run_id__in=_ids(rows, "run_id")
            )
        }
        # by keys, so each pair is one probe of the (run, question) unique index: a join on
        # the run's id walked every record the run already had, and grew with the table
        run_ids = {r.pk: r.run_id for r in runs.values()}
        question_ids = {q.pk: qid for qid, q in questions.items()}
        existing_pairs = (
            {
                (run_ids[run], question_ids[question])
                for run, question in AnswerRecord.objects.filter(
                    run_id__in=bulk.one_of(run_ids, of="bigint"),
                    question_id__in=bulk.one_of(question_ids, of="bigint"),
                ).values_list("run_id", "question_id")
            }
            if runs and questions
            else set()
        )
        writing, resolved = self.writing, resolver.resolved
        plan = []
        for lineno, obj in rows:
            at = At(problems, lineno)
            run_id = obj.get("run_id")
            if not is_clean_id(run_id, RUN_ID_LENGTH):
                run_id = at.identifier(obj, "run_id", max_length=RUN_ID_LENGTH)
            system_id = obj.get("system_id")
            if not is_clean_id(system_id, SYSTEM_ID_LENGTH):
                system_id = at.identifier(obj, "system_id", max_length=SYSTEM_ID_LENGTH)
            qid = obj.get("question_id")
            if not is_clean_id(qid, ID_LENGTH):
                qid = at.identifier(obj, "question_id", max_length=ID_LENGTH)
            if run_id and system_id:
                stored = runs.get(run_id)
                if stored is not None and stored.system.system_id != system_id:
                    at.add(
                        "system_id",
                        f"run {run_id!r} belongs to system {stored.system.system_id!r}, "
                        f"not {system_id!r}",
                    )
                first = self.run_system.setdefault(run_id, (system_id, lineno))
                if first[0] != system_id:
                    at.add(
                        "system_id", f"run {run_id!r} is for system {first[0]!r} on line {first[1]}"
                    )
            question = questions.get(qid)
            if qid and question is None:
                at.add("question_id", f"unknown question {qid!r} (import the question file first)")
            pair = (run_id, qid)
            if pair in existing_pairs:
                at.add("question_id", f"run {run_id!r} already has an answer for {qid!r}")
            elif pair in self.seen_pairs:
                at.add(
                    "question_id",
                    f"{qid!r} is answered twice in run {run_id!r} (also line {self.seen_pairs[pair]})",
                )
            self.seen_pairs[pair] = lineno
            answer = at.text(obj, "answer")
            retrieved = self._retrieved(obj, at, resolver)
            citations = []
            cited = obj.get("citations", [])
            if not isinstance(cited, list):
                at.add("citations", "expected a list of passage ids")
                cited = []
            for index, ref in enumerate(cited):
                version = resolved.get(ref) if is_clean_id(ref, REF_LENGTH) else None
                if version is None:  # not the common case: checked in full, problems worded
                    key = f"citations[{index}]"
                    if not isinstance(ref, str) or not ref:
                        at.add(key, "expected a passage id string")
                        continue
                    ref = at.check_identifier(ref, key)
                    if len(ref) > REF_LENGTH:
                        at.add(key, f"longer than the limit of {REF_LENGTH}")
                        continue
                    version = resolver.get(ref, at, key) if ref else None
                if writing:
                    citations.append((version and version.pk, ref, index))
            model = obj.get("model", {})
            if not isinstance(model, dict):
                at.add("model", "expected an object")
                model = {}
            calibration = obj.get("calibration", False)
            if not isinstance(calibration, bool):
                at.add("calibration", f"got {calibration!r}", "true or false")
            latency = obj.get("latency_ms")
            if type(latency) is not int or not 0 <= latency < 10**12:
                latency = check_latency(latency, at)
            values = (
                answer,
                model,
                latency,
                check_cost(obj.get("cost_usd"), at),
                _unit(obj.get("uncertainty"), at, "uncertainty"),
                calibration is True,
                {k: obj[k] for k in EXTRA_KEYS if k in obj},
            )
            if writing:
                plan.append(
                    (
                        run_id,
                        system_id,
                        obj.get("system_config"),
                        values,
                        retrieved,
                        citations,
                        question,
                    )
                )
        return plan

    def _retrieved(self, obj, at: At, resolver) -> list[tuple]:
        """The line's retrieved passages checked; in the write pass as ``(block version id,
        passage id, rank)`` rows."""
        retrieved = []
        entries = obj.get("retrieved_passages", [])
        if not isinstance(entries, list):
            at.add("retrieved_passages", "expected a list of {passage_id, rank}")
            return []
        ranks = set()
        resolved = resolver.resolved
        for index, entry in enumerate(entries):
            if isinstance(entry, dict):
                # The common case, a known passage at a new whole rank, is checked here without
                # an At per entry; anything else is checked in full below (the same problems).
                ref, rank = entry.get("passage_id"), entry.get("rank")
                if (
                    type(rank) is int
                    and 1 <= rank < 2**31
                    and rank not in ranks
                    and is_clean_id(ref, REF_LENGTH)
                    and (version := resolved.get(ref)) is not None
                ):
                    ranks.add(rank)
                    if self.writing:
                        retrieved.append((version.pk, ref, rank))
                    continue
            e_at = at / f"retrieved_passages[{index}]"
            if not isinstance(entry, dict):
                at.add(f"retrieved_passages[{index}]", "expected an object")
                continue
            ref = e_at.identifier(entry, "passage_id", max_length=REF_LENGTH)
            rank = entry.get("rank")
            if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank < 2**31:
                e_at.add("rank", f"got {rank!r}", "a whole number ≥ 1")
            elif rank in ranks:
                e_at.add("rank", f"rank {rank} appears twice")
            ranks.add(rank)
            version = resolver.get(ref, e_at, "passage_id") if ref else None
            if self.writing:
                retrieved.append((version and version.pk, ref, rank))
        return retrieved

    def write(self, plan) -> None:
        summary = self.summary
        system_ids = {system_id for _, system_id, *_ in plan}
        systems = {
            s.system_id: s
            for s in System.objects.filter(project=self.project, system_id__in=system_ids)
        }
        for _, system_id, config, *_ in plan:
            if system_id not in systems:
                systems[system_id] = System(
                    project=self.project,
                    system_id=system_id,
                    config=config if isinstance(config, dict) else {},
                )
        created = [s for s in systems.values() if s.pk is None]
        System.objects.bulk_create(created)
        summary.systems_created += len(created)
        runs = {
            r.run_id: r
            for r in Run.objects.filter(
                project=self.project, run_id__in={run_id for run_id, *_ in plan}
            )
        }
        new_runs = []
        for run_id, system_id, *_ in plan:
            if run_id not in runs:
                runs[run_id] = Run(
                    project=self.project,
                    run_id=run_id,
                    system=systems[system_id],
                    source_name=self.source_name[:300],
                    imported_by=self.actor
                    if getattr(self.actor, "is_authenticated", False)
                    else None,
                )
                new_runs.append(runs[run_id])
        Run.objects.bulk_create(new_runs)
        summary.runs_created += len(new_runs)
        router = RecordRouter(project=self.project)
        new_id = self.id_factory or new_public_id
        records = []
        slots: Counter[int] = Counter()
        by_tier = summary.by_tier
        for run_id, _, _, values, _, _, question in plan:
            answer, model, latency, cost, uncertainty, is_calibration, extra = values
            tier, tier_value, rule, rules_version, labels_required = router.route(
                question, uncertainty
            )
            public_id = new_id()
            records.append(
                (
                    self.project_id,
                    public_id,
                    runs[run_id].pk,
                    question.pk,
                    question.domain_id,
                    router.queue_rank(public_id),
                    answer,
                    model,
                    latency,
                    cost,
                    extra,
                    uncertainty,
                    is_calibration,
                    tier_value,
                    rule,
                    rules_version,
                    labels_required,
                )
            )
            if not is_calibration:
                slots[question.domain_id] += labels_required
            by_tier[tier] = by_tier.get(tier, 0) + 1
        record_ids = insert_records(records, slots=slots)
        retrieved, citations, calibration = [], [], []
        calibration_sets: dict[int, CalibrationSet] = {}
        for record_id, (_, _, _, values, record_retrieved, record_citations, question) in zip(
            record_ids, plan, strict=True
        ):
            retrieved.extend((record_id, *row, None) for row in record_retrieved)
            citations.extend((record_id, *row) for row in record_citations)
            if values[5]:  # is_calibration
                calibration_set = calibration_sets.get(question.domain_id)
                if calibration_set is None:
                    calibration_set, _ = CalibrationSet.objects.get_or_create(
                        domain_id=question.domain_id, defaults={"project": self.project}
                    )
                    if calibration_set.project_id != self.project.pk:
                        raise ImportRejected(
                            [
                                f"{question.domain_slug}: its calibration set belongs to another project"
                            ]
                        )
                    calibration_sets[question.domain_id] = calibration_set
                calibration.append(
                    CalibrationItem(calibration_set=calibration_set, record_id=record_id)
                )
        insert_passages(retrieved=retrieved, citations=citations)
        CalibrationItem.objects.bulk_create(calibration)
        summary.calibration_records += len(calibration)
        summary.records_created += len(records)

    def finish(self, *, source) -> AnswerImportSummary:
        record_event(
            actor=self.actor,
            verb="answer_logs_imported",
            object_type="answer_logs",
            object_id=self.source_name[:128],
            project=self.project,
            detail={**self.summary.as_dict(), "file_sha256": source.sha256},
        )
        return self.summary


def import_answer_logs(
    *,
    project,
    source,
    actor,
    source_name: str = "",
    id_factory=None,
    progress=None,
    on_written=None,
) -> AnswerImportSummary:
    """Import answer logs (any number of runs and systems) into ``project``, all or nothing,
    streaming. Systems, runs and questions are looked up by (project, id): another project's
    are unknown here; every record is routed by the project's rules.

    Systems and runs are created on first sight; a run always belongs to one system. A
    (run, question) pair may occur once. Every record is routed and gets its label count (GOLD 3,
    TRIAGE 1). Raises ImportRejected with every problem; stores nothing then. ``id_factory``
    (deterministic demos only) makes the opaque public ids; by default they are random tokens.
    """
    source = as_source(source, name=source_name)
    importer = AnswerLogImporter(
        project=project,
        actor=actor,
        source_name=source_name or source.name,
        id_factory=id_factory,
    )
    return run_import(importer=importer, source=source, progress=progress, on_written=on_written)
