"""Importing question files with gold evidence packets and per-system answer logs (seed 004 §3.6,
A.3–A.5).

Both imports are JSONL, validate the whole file (and its references into the corpus) before
writing, and are atomic: a bad file raises :class:`~goldset.exceptions.ImportRejected` listing
every problem as ``line N: field: reason`` and stores nothing.

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
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.db import transaction
from django.db.models import Max

from goldset.exceptions import ImportRejected
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
)
from goldset.rules.tiers import RECORD, required_for
from goldset.services.routing import route_case
from workbench.services.audit import record_event

MAX_REPORTED_ERRORS = 50
QUESTION_FLAGS = {"conflict", "freshness", "adversarial"}
PASSAGE_REF = re.compile(r"^(?P<block>[^@\s]+)(?:@v(?P<version>[1-9][0-9]*))?$")


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


class _Problems:
    def __init__(self):
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")

    def raise_if_any(self, source: str):
        if self.items:
            raise ImportRejected(self.items[:MAX_REPORTED_ERRORS], source=source)


def _lines(text: str, problems: _Problems):
    """Yield (line number, object) for each non-blank JSON object line."""
    seen_any = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        seen_any = True
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.add(f"line {lineno}", f"not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            problems.add(f"line {lineno}", "expected a JSON object")
            continue
        yield lineno, obj
    if not seen_any:
        problems.add("line 1", "the file is empty")


def _str(obj, key, where, problems, *, required=True, max_length=None) -> str:
    value = obj.get(key)
    if value is None or value == "":
        if required:
            problems.add(f"{where}{key}", "missing (expected a non-empty string)")
        return ""
    if not isinstance(value, str):
        problems.add(f"{where}{key}", f"expected a string, got {type(value).__name__}")
        return ""
    if max_length and len(value) > max_length:
        problems.add(f"{where}{key}", f"longer than {max_length} characters")
        return ""
    return value


def _str_list(obj, key, where, problems) -> list[str]:
    value = obj.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        problems.add(f"{where}{key}", "expected a list of strings")
        return []
    return value


def _unit(value, where, problems) -> Decimal | None:
    if value is None:
        return None
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        number = None
    if number is None or isinstance(value, bool) or not (0 <= number <= 1):
        problems.add(where, f"expected a number between 0 and 1, got {value!r}")
        return None
    return number.quantize(Decimal("0.001"))


class PassageResolver:
    """Resolves passage ids (``block_id`` or ``block_id@vN``) to block versions in two queries."""

    def __init__(self, refs: set[str]):
        parsed = {ref: PASSAGE_REF.match(ref) for ref in refs}
        block_ids = {m["block"] for m in parsed.values() if m}
        latest = dict(
            BlockVersion.objects.filter(block__block_id__in=block_ids)
            .values("block__block_id")
            .annotate(latest=Max("version"))
            .values_list("block__block_id", "latest")
        )
        wanted: dict[str, tuple[str, int]] = {}
        for ref, match in parsed.items():
            if match and match["block"] in latest:
                wanted[ref] = (match["block"], int(match["version"] or latest[match["block"]]))
        versions = {
            (v.block.block_id, v.version): v
            for v in BlockVersion.objects.filter(
                block__block_id__in={b for b, _ in wanted.values()}
            ).select_related("block__document__domain")
        }
        self.latest = latest
        self.resolved = {ref: versions.get(key) for ref, key in wanted.items()}

    def get(self, ref: str, where: str, problems: _Problems) -> BlockVersion | None:
        version = self.resolved.get(ref)
        if version is not None:
            return version
        match = PASSAGE_REF.match(ref)
        if not match:
            problems.add(where, f"{ref!r} is not a passage id (expected block_id or block_id@vN)")
        elif match["block"] not in self.latest:
            problems.add(
                where, f"unknown passage {ref!r}: no block {match['block']!r} in the corpus"
            )
        else:
            problems.add(
                where,
                f"unknown passage {ref!r}: block {match['block']} has versions 1..{self.latest[match['block']]}",
            )
        return None


def _collect_refs(obj: dict, keys: tuple[str, ...]) -> set[str]:
    refs = set()
    for key in keys:
        for entry in obj.get(key) or []:
            if isinstance(entry, dict) and isinstance(entry.get("passage_id"), str):
                refs.add(entry["passage_id"])
            elif isinstance(entry, str):
                refs.add(entry)
    return refs


# ---------------------------------------------------------------- questions


def _question_hash(obj: dict) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


@transaction.atomic
def import_questions(*, text: str, actor, source_name: str = "") -> QuestionImportSummary:
    """Import a question file with evidence packets, all or nothing.

    Questions are immutable: a line identical to a stored question is a no-op, a changed one is
    an error (labels refer to it). Raises ImportRejected with every problem; stores nothing then.
    """
    problems = _Problems()
    rows = list(_lines(text, problems))
    resolver = PassageResolver(
        set().union(*(_collect_refs(o, ("gold_evidence", "near_miss")) for _, o in rows))
        if rows
        else set()
    )
    domains = {d.slug: d for d in Domain.objects.all()}
    stored = dict(
        Question.objects.filter(
            question_id__in=[
                o.get("question_id") for _, o in rows if isinstance(o.get("question_id"), str)
            ]
        ).values_list("question_id", "content_sha256")
    )
    seen: dict[str, int] = {}
    plan = []
    summary = QuestionImportSummary()
    for lineno, obj in rows:
        where = f"line {lineno}: "
        qid = _str(obj, "question_id", where, problems, max_length=200)
        if qid in seen:
            problems.add(f"{where}question_id", f"{qid!r} also appears on line {seen[qid]}")
        seen[qid] = lineno
        digest = _question_hash(obj)
        if qid in stored:
            if stored[qid] == digest:
                summary.questions_unchanged += 1
            else:
                problems.add(
                    f"{where}question_id",
                    f"{qid!r} already exists with different content; questions are immutable once imported",
                )
            continue
        domain_slug = _str(obj, "domain", where, problems)
        if domain_slug and domain_slug not in domains:
            problems.add(
                f"{where}domain",
                f"unknown domain {domain_slug!r} (known: {', '.join(sorted(domains)) or 'none'})",
            )
        task_type = obj.get("task_type", TaskType.RAG_SYNTHESIS.value)
        if task_type not in TaskType.values:
            problems.add(
                f"{where}task_type",
                f"expected one of {', '.join(TaskType.values)}, got {task_type!r}",
            )
        flags = _str_list(obj, "flags", where, problems)
        unknown = sorted(set(flags) - QUESTION_FLAGS)
        if unknown:
            problems.add(
                f"{where}flags",
                f"unknown flag(s) {', '.join(unknown)} (expected {', '.join(sorted(QUESTION_FLAGS))})",
            )
        question = Question(
            question_id=qid,
            domain=domains.get(domain_slug),
            task_family=_str(obj, "task_family", where, problems, max_length=120),
            task_type=task_type,
            variant=_str(obj, "variant", where, problems, required=False, max_length=120),
            text=_str(obj, "question", where, problems),
            conflict_flag="conflict" in flags or obj.get("conflict") is True,
            freshness_flag="freshness" in flags or obj.get("freshness") is True,
            adversarial="adversarial" in flags or obj.get("adversarial") is True,
            required_behavior=_str(
                obj, "required_behavior", where, problems, required=False, max_length=300
            ),
            prohibited_behaviors=_str_list(obj, "prohibited_answer_behavior", where, problems),
            safety_flags=_str_list(obj, "safety_flags", where, problems),
            uncertainty=_unit(obj.get("uncertainty"), f"{where}uncertainty", problems),
            content_sha256=digest,
        )
        passages = _evidence(obj, where, problems, resolver)
        plan.append((question, passages))
    problems.raise_if_any(source_name)

    for question, passages in plan:
        question.save()
        for passage in passages:
            passage.question = question
        EvidencePassage.objects.bulk_create(passages)
        summary.questions_created += 1
        summary.evidence_passages += len(passages)
    record_event(
        actor=actor,
        verb="questions_imported",
        object_type="questions",
        object_id=source_name[:128],
        detail={**summary.as_dict(), "file_sha256": hashlib.sha256(text.encode()).hexdigest()},
    )
    return summary


def _evidence(obj, where, problems, resolver) -> list[EvidencePassage]:
    passages = []
    gold = obj.get("gold_evidence")
    if not isinstance(gold, list) or not gold:
        problems.add(f"{where}gold_evidence", "missing (expected a non-empty list of passages)")
        gold = []
    near = obj.get("near_miss") or []
    if not isinstance(near, list):
        problems.add(f"{where}near_miss", "expected a list")
        near = []
    for kind, entries, key in (
        (EvidenceKind.GOLD, gold, "gold_evidence"),
        (EvidenceKind.NEAR_MISS, near, "near_miss"),
    ):
        for index, entry in enumerate(entries):
            e_where = f"{where}{key}[{index}]."
            if not isinstance(entry, dict):
                problems.add(e_where.rstrip("."), "expected an object")
                continue
            ref = _str(entry, "passage_id", e_where, problems)
            version = resolver.get(ref, f"{e_where}passage_id", problems) if ref else None
            label = ""
            if kind == EvidenceKind.GOLD:
                label = entry.get("label", "")
                if label not in EvidenceLabel.values:
                    problems.add(
                        f"{e_where}label",
                        f"expected one of {', '.join(EvidenceLabel.values)}, got {label!r}",
                    )
            reason = _str(
                entry,
                "reason",
                e_where,
                problems,
                required=kind == EvidenceKind.NEAR_MISS,
                max_length=200,
            )
            authority = _unit(entry.get("authority"), f"{e_where}authority", problems)
            effective = _str(entry, "effective", e_where, problems, required=False, max_length=40)
            if version is not None:
                if authority is None:
                    authority = version.block.document.authority
                if not effective and version.effective_from:
                    effective = version.effective_from.isoformat() + (
                        f"/{version.effective_to.isoformat()}" if version.effective_to else ""
                    )
            passages.append(
                EvidencePassage(
                    kind=kind,
                    block_version=version,
                    passage_ref=ref,
                    role=_str(entry, "role", e_where, problems, required=False, max_length=120),
                    authority=authority,
                    effective=effective,
                    label=label,
                    reason=reason,
                    position=index,
                )
            )
    return passages


# ---------------------------------------------------------------- answer logs


def _nonneg_int(value, where, problems) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        problems.add(where, f"expected a number ≥ 0, got {value!r}")
        return None
    return round(value)


def _cost(value, where, problems) -> Decimal | None:
    if value is None:
        return None
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        number = None
    if number is None or isinstance(value, bool) or number < 0 or number >= 10_000:
        problems.add(where, f"expected an amount in USD ≥ 0, got {value!r}")
        return None
    return number.quantize(Decimal("0.000001"))


@transaction.atomic
def import_answer_logs(
    *, text: str, actor, source_name: str = "", id_factory=None
) -> AnswerImportSummary:
    """Import answer logs (any number of runs and systems), all or nothing.

    Systems and runs are created on first sight; a run always belongs to one system. A
    (run, question) pair may occur once. Every record is routed and gets its label count (GOLD 3,
    TRIAGE 1). Raises ImportRejected with every problem; stores nothing then. ``id_factory``
    (deterministic demos only) makes the opaque public ids; by default they are random tokens.
    """
    problems = _Problems()
    rows = list(_lines(text, problems))
    resolver = PassageResolver(
        set().union(*(_collect_refs(o, ("retrieved_passages", "citations")) for _, o in rows))
        if rows
        else set()
    )
    questions = {
        q.question_id: q
        for q in Question.objects.select_related("domain").filter(
            question_id__in=[
                o.get("question_id") for _, o in rows if isinstance(o.get("question_id"), str)
            ]
        )
    }
    systems = {s.system_id: s for s in System.objects.all()}
    runs = {
        r.run_id: r
        for r in Run.objects.select_related("system").filter(
            run_id__in=[o.get("run_id") for _, o in rows if isinstance(o.get("run_id"), str)]
        )
    }
    existing_pairs = set(
        AnswerRecord.objects.filter(run__run_id__in=list(runs)).values_list(
            "run__run_id", "question__question_id"
        )
    )
    run_system: dict[str, tuple[str, int]] = {}
    seen_pairs: dict[tuple[str, str], int] = {}
    plan = []
    for lineno, obj in rows:
        where = f"line {lineno}: "
        run_id = _str(obj, "run_id", where, problems, max_length=200)
        system_id = _str(obj, "system_id", where, problems, max_length=200)
        qid = _str(obj, "question_id", where, problems)
        if run_id and system_id:
            stored = runs.get(run_id)
            if stored is not None and stored.system.system_id != system_id:
                problems.add(
                    f"{where}system_id",
                    f"run {run_id!r} belongs to system {stored.system.system_id!r}, not {system_id!r}",
                )
            first = run_system.setdefault(run_id, (system_id, lineno))
            if first[0] != system_id:
                problems.add(
                    f"{where}system_id",
                    f"run {run_id!r} is for system {first[0]!r} on line {first[1]}",
                )
        question = questions.get(qid)
        if qid and question is None:
            problems.add(
                f"{where}question_id", f"unknown question {qid!r} (import the question file first)"
            )
        pair = (run_id, qid)
        if pair in existing_pairs:
            problems.add(f"{where}question_id", f"run {run_id!r} already has an answer for {qid!r}")
        elif pair in seen_pairs:
            problems.add(
                f"{where}question_id",
                f"{qid!r} is answered twice in run {run_id!r} (also line {seen_pairs[pair]})",
            )
        seen_pairs[pair] = lineno
        answer = _str(obj, "answer", where, problems)
        retrieved = []
        entries = obj.get("retrieved_passages", [])
        if not isinstance(entries, list):
            problems.add(f"{where}retrieved_passages", "expected a list of {passage_id, rank}")
            entries = []
        ranks = set()
        for index, entry in enumerate(entries):
            e_where = f"{where}retrieved_passages[{index}]."
            if not isinstance(entry, dict):
                problems.add(e_where.rstrip("."), "expected an object")
                continue
            ref = _str(entry, "passage_id", e_where, problems)
            rank = entry.get("rank")
            if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
                problems.add(f"{e_where}rank", f"expected a whole number ≥ 1, got {rank!r}")
            elif rank in ranks:
                problems.add(f"{e_where}rank", f"rank {rank} appears twice")
            ranks.add(rank)
            version = resolver.get(ref, f"{e_where}passage_id", problems) if ref else None
            retrieved.append(RetrievedPassage(block_version=version, passage_ref=ref, rank=rank))
        citations = []
        cited = obj.get("citations", [])
        if not isinstance(cited, list):
            problems.add(f"{where}citations", "expected a list of passage ids")
            cited = []
        for index, ref in enumerate(cited):
            c_where = f"{where}citations[{index}]"
            if not isinstance(ref, str) or not ref:
                problems.add(c_where, "expected a passage id string")
                continue
            version = resolver.get(ref, c_where, problems)
            citations.append(AnswerCitation(block_version=version, passage_ref=ref, position=index))
        model = obj.get("model", {})
        if not isinstance(model, dict):
            problems.add(f"{where}model", "expected an object")
            model = {}
        calibration = obj.get("calibration", False)
        if not isinstance(calibration, bool):
            problems.add(f"{where}calibration", f"expected true or false, got {calibration!r}")
        record = AnswerRecord(
            question=question,
            answer=answer,
            model=model,
            latency_ms=_nonneg_int(obj.get("latency_ms"), f"{where}latency_ms", problems),
            cost_usd=_cost(obj.get("cost_usd"), f"{where}cost_usd", problems),
            uncertainty=_unit(obj.get("uncertainty"), f"{where}uncertainty", problems),
            is_calibration=calibration is True,
            extra={k: obj[k] for k in ("tokens", "metrics", "prompt_hash") if k in obj},
        )
        plan.append((run_id, system_id, obj.get("system_config"), record, retrieved, citations))
    problems.raise_if_any(source_name)

    summary = AnswerImportSummary()
    for run_id, system_id, config, record, retrieved, citations in plan:
        if system_id not in systems:
            systems[system_id] = System.objects.create(
                system_id=system_id, config=config if isinstance(config, dict) else {}
            )
            summary.systems_created += 1
        if run_id not in runs:
            runs[run_id] = Run.objects.create(
                run_id=run_id,
                system=systems[system_id],
                source_name=source_name[:300],
                imported_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
            summary.runs_created += 1
        question = record.question
        uncertainty = record.uncertainty if record.uncertainty is not None else question.uncertainty
        decision = route_case(
            task_type=question.task_type,
            uncertainty=uncertainty,
            adversarial=question.adversarial,
            domain=question.domain.slug,
        )
        record.run = runs[run_id]
        record.tier = decision.tier
        record.routing_rule = decision.rule
        record.rules_version = decision.rules_version
        record.labels_required = required_for(RECORD, decision.tier)
        if id_factory is not None:
            record.public_id = id_factory()
        record.save()
        for row in (*retrieved, *citations):
            row.record = record
        RetrievedPassage.objects.bulk_create(retrieved)
        AnswerCitation.objects.bulk_create(citations)
        if record.is_calibration:
            calibration_set, _ = CalibrationSet.objects.get_or_create(domain=question.domain)
            CalibrationItem.objects.create(calibration_set=calibration_set, record=record)
            summary.calibration_records += 1
        summary.records_created += 1
        summary.by_tier[record.tier] = summary.by_tier.get(record.tier, 0) + 1
    record_event(
        actor=actor,
        verb="answer_logs_imported",
        object_type="answer_logs",
        object_id=source_name[:128],
        detail={**summary.as_dict(), "file_sha256": hashlib.sha256(text.encode()).hexdigest()},
    )
    return summary
