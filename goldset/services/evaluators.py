"""Evaluators: records, their outputs (all-or-nothing streaming JSONL import, run by an import
job's worker or the ``import_evaluator_outputs`` command) and the evaluator report
against the gold tier. Every figure comes from ``scoring.evaluators``; this module turns the
database into its plain-data inputs and stores the results.

The gold tier is every production answer record routed to GOLD whose final label is settled
(majority or adjudicated). Gold unsafe = the adjudication's (else the majority of the labels')
severe-safety flag, or a safety primary failure (``scoring.report.SAFETY_FAILURES``).
"""

import re
from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Prefetch
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import GoldsetError
from goldset.imports.batches import run_import
from goldset.imports.errors import Problems
from goldset.imports.fields import At, column_length
from goldset.imports.reader import as_source, iter_json_lines
from goldset.models import (
    AnswerRecord,
    Evaluator,
    EvaluatorImport,
    EvaluatorOutput,
    EvaluatorReportSnapshot,
    Label,
    RecordStatus,
    Tier,
)
from goldset.selectors.answers import packet_record
from goldset.services.traces import LaterEvaluation, receive_evaluations, trace_targets
from scoring.evaluators import OUTPUT_AXES, EvaluatorConfig, evaluator_report
from scoring.probe import score_answers
from scoring.report import gold_unsafe
from workbench.services.audit import record_event

RECORD_ID_LENGTH = column_length(AnswerRecord, "public_id")
TRACE_ID = re.compile(r"[0-9a-f]{32}")
FINAL_STATUSES = (RecordStatus.FINAL, RecordStatus.ADJUDICATED, RecordStatus.AUDIT)


def evaluator_key(evaluator_id: int) -> str:
    return f"evaluator:{evaluator_id}"


@transaction.atomic
def create_evaluator(
    *,
    project,
    name: str,
    version: str,
    kind: str,
    model_id: str = "",
    prompt_hash: str = "",
    description: str = "",
    actor=None,
) -> Evaluator:
    """Register an evaluator in ``project``; (name, version) is unique in the project — a
    duplicate is a GoldsetError (another project may use the same name)."""
    if Evaluator.objects.filter(project=project, name=name, version=version).exists():
        raise GoldsetError(f"evaluator {name} {version} already exists")
    evaluator = Evaluator.objects.create(
        project=project,
        name=name,
        version=version,
        kind=kind,
        model_id=model_id,
        prompt_hash=prompt_hash,
        description=description,
        created_by=actor,
    )
    record_event(actor=actor, verb="evaluator_created", obj=evaluator)
    return evaluator


@dataclass
class EvaluatorImportSummary:
    evaluator: str
    evaluator_id: int
    evaluator_import: int
    records: int
    sha256: str
    traces: int = 0  # of ``records``: outputs kept with traces still waiting to be sampled

    def as_dict(self) -> dict:
        return {
            "evaluator": self.evaluator,
            "evaluator_id": self.evaluator_id,
            "evaluator_import": self.evaluator_import,
            "records": self.records,
            "traces": self.traces,
            "sha256": self.sha256,
        }


@dataclass
class EvaluatorPlan:
    """One batch's writes: outputs of answer records, and outputs on traces that wait to be
    sampled (``goldset.services.traces.receive_evaluations``)."""

    outputs: list = field(default_factory=list)
    later: list = field(default_factory=list)


class EvaluatorOutputImporter:
    """The evaluator-output file as a :class:`goldset.imports.batches.BatchImporter`: each batch
    resolves its record ids in one query; the write pass replaces the evaluator's earlier
    judgements of those records and bulk-inserts the new ones. Across batches only the record
    ids seen (for duplicates) are kept."""

    def __init__(self, *, evaluator: Evaluator, actor, source_name: str):
        self.evaluator, self.actor, self.source_name = evaluator, actor, source_name

    def begin(self, *, writing: bool) -> None:
        self.writing, self.now = writing, timezone.now()
        self.seen: dict[str, int] = {}  # a record id, or "trace <id>", → the line judging it
        self.judged: dict[int, int] = {}  # a record's pk → the line judging it
        self.written = 0
        self.traces = 0
        self.batch: EvaluatorImport | None = None
        self.source = None

    def records(self, source, problems, progress):
        self.source = source
        return iter_json_lines(source, problems, what="evaluator judgement", progress=progress)

    def check(self, rows, problems: Problems) -> EvaluatorPlan:
        ids = [o["record_id"] for _, o in rows if isinstance(o.get("record_id"), str)]
        # Only the evaluator's project's records: another project's record id is unknown here.
        known = dict(
            AnswerRecord.objects.filter(
                project_id=self.evaluator.project_id, public_id__in=ids, is_calibration=False
            ).values_list("public_id", "pk")
        )
        trace_ids = {o["trace_id"] for _, o in rows if _is_trace_id(o.get("trace_id"))}
        # In the write pass the traces' rows stay locked until the file is written.
        targets = (
            trace_targets(
                project=self.evaluator.project,
                trace_ids=sorted(trace_ids),
                now=self.now,
                lock=self.writing,
            )
            if trace_ids
            else {}
        )
        plan = EvaluatorPlan()
        for lineno, obj in rows:
            at = At(problems, lineno)
            before = problems.total
            record, trace_id = self._target(obj, at, known, targets, lineno)
            name = obj.get("evaluator")
            if name is not None and name != self.evaluator.name:
                at.add(
                    "evaluator",
                    f"{name!r} is not {self.evaluator.name!r} "
                    "(the evaluator this file is imported for)",
                )
            labels = _output_labels(obj, at)
            score = at.number(obj.get("score"), "score", minimum=0, maximum=1)
            unsafe = at.number(
                obj.get("unsafe_probability"), "unsafe_probability", minimum=0, maximum=1
            )
            confidence = at.number(obj.get("confidence"), "confidence", minimum=0, maximum=1)
            if (
                not obj.get("labels")
                and obj.get("score") is None
                and obj.get("unsafe_probability") is None
            ):
                at.add("labels", "no judgement", "labels, score or unsafe_probability")
            if problems.total != before:
                continue
            score = None if score is None else float(score)
            unsafe = None if unsafe is None else float(unsafe)
            if record is not None:
                plan.outputs.append(
                    EvaluatorOutput(
                        evaluator=self.evaluator,
                        record_id=record,
                        labels=labels,
                        score=score,
                        unsafe_probability=unsafe,
                    )
                )
            else:
                plan.later.append(
                    dict(
                        trace_id=trace_id,
                        labels=labels,
                        score=score,
                        unsafe_probability=unsafe,
                        confidence=None if confidence is None else float(confidence),
                    )
                )
        return plan

    def _target(self, obj, at: At, known, targets, lineno) -> tuple[int | None, str]:
        """(the record judged, or None with the trace id of a trace waiting to be sampled);
        problems naming ``record_id`` or ``trace_id`` otherwise."""
        if "trace_id" not in obj:
            record_id = at.identifier(obj, "record_id", max_length=RECORD_ID_LENGTH)
            if record_id in self.seen:
                at.add("record_id", f"{record_id!r} already judged on line {self.seen[record_id]}")
                return None, ""
            if record_id:
                self.seen[record_id] = lineno
                if record_id not in known:
                    at.add("record_id", f"unknown answer record {record_id!r}")
                    return None, ""
                return self._judged(known[record_id], at, "record_id", lineno), ""
            return None, ""
        trace_id = obj["trace_id"]
        if "record_id" in obj:
            at.add("trace_id", "give record_id or trace_id, not both")
        elif not _is_trace_id(trace_id):
            at.add("trace_id", f"got {trace_id!r}", "a trace id: 32 lowercase hex digits")
        elif f"trace {trace_id}" in self.seen:
            line = self.seen[f"trace {trace_id}"]
            at.add("trace_id", f"{trace_id!r} already judged on line {line}")
        else:
            self.seen[f"trace {trace_id}"] = lineno
            target = targets[trace_id]
            if target.refused:
                at.add("trace_id", target.refused)
            elif target.record_id is not None:
                return self._judged(target.record_id, at, "trace_id", lineno), ""
            else:
                return None, trace_id
        return None, ""

    def _judged(self, record: int, at: At, key: str, lineno: int) -> int | None:
        """``record``, unless another line judged it already (by its id or its trace's)."""
        if record in self.judged:
            at.add(key, f"its answer record is already judged on line {self.judged[record]}")
            return None
        self.judged[record] = lineno
        return record

    def write(self, plan: EvaluatorPlan) -> None:
        if self.batch is None:
            self.batch = EvaluatorImport.objects.create(
                evaluator=self.evaluator,
                source_name=self.source_name[:300],
                sha256=self.source.sha256,
                n_records=0,
                imported_by=self.actor,
            )
        outputs = plan.outputs
        EvaluatorOutput.objects.filter(
            evaluator=self.evaluator, record_id__in=[o.record_id for o in outputs]
        ).delete()
        for output in outputs:
            output.source = self.batch
        EvaluatorOutput.objects.bulk_create(outputs)
        receive_evaluations(
            project=self.evaluator.project,
            evaluations=[
                LaterEvaluation(
                    evaluator_id=self.evaluator.pk,
                    evaluator_name=self.evaluator.name,
                    import_id=self.batch.pk,
                    **later,
                )
                for later in plan.later
            ],
        )
        self.written += len(outputs) + len(plan.later)
        self.traces += len(plan.later)

    def finish(self, *, source) -> EvaluatorImportSummary:
        self.batch.n_records = self.written
        self.batch.save(update_fields=["n_records"])
        record_event(
            actor=self.actor,
            verb="evaluator_outputs_imported",
            obj=self.evaluator,
            detail={
                "source": self.source_name,
                "records": self.written,
                "traces": self.traces,
                "sha256": source.sha256,
            },
        )
        return EvaluatorImportSummary(
            evaluator=str(self.evaluator),
            evaluator_id=self.evaluator.pk,
            evaluator_import=self.batch.pk,
            records=self.written,
            sha256=source.sha256,
            traces=self.traces,
        )


def _is_trace_id(value) -> bool:
    return isinstance(value, str) and TRACE_ID.fullmatch(value) is not None


def _output_labels(obj: dict, at: At) -> dict:
    """``labels``: {axis: category} over ``scoring.evaluators.OUTPUT_AXES`` (may be absent)."""
    labels = obj.get("labels")
    if labels is None:
        return {}
    if not isinstance(labels, dict):
        at.add("labels", f"got {type(labels).__name__}", "an object {axis: label}")
        return {}
    inner = at / "labels"
    for axis, value in labels.items():
        if axis not in OUTPUT_AXES:
            inner.add(axis, "unknown axis", f"one of {', '.join(OUTPUT_AXES)}")
        elif value not in OUTPUT_AXES[axis]:
            inner.add(axis, f"{value!r} is not one of {', '.join(OUTPUT_AXES[axis])}")
    return labels


def import_evaluator_outputs(
    *,
    evaluator: Evaluator,
    source,
    actor=None,
    source_name: str = "",
    progress=None,
    on_written=None,
) -> EvaluatorImportSummary:
    """Import one evaluator's outputs (JSONL: ``record_id`` = an answer record's public id,
    optional ``evaluator`` (its name), ``labels``, ``score``, ``unsafe_probability``; see
    ``scoring.evaluators``), streaming through the import toolkit.

    The whole file is validated first (BOM, UTF-8, NUL, NaN/Infinity, nesting, ids, lengths,
    types, unknown or repeated records); any problem raises ImportRejected naming line and field,
    and nothing is stored. Then every line is written in one transaction with bulk inserts,
    as one ``EvaluatorImport``. A record judged before by this evaluator is overwritten (so
    re-importing the same file is harmless). ``source``: bytes, text, a path or a stored upload.
    """
    source = as_source(source, name=source_name)
    importer = EvaluatorOutputImporter(
        evaluator=evaluator, actor=actor, source_name=source_name or source.name
    )
    return run_import(importer=importer, source=source, progress=progress, on_written=on_written)


# ---------------------------------------------------------------------------------------------
# Gold tier → plain data


def gold_tier_records(*, project):
    """The project's settled gold-tier answer records with what scoring needs."""
    return (
        AnswerRecord.objects.filter(
            project=project, is_calibration=False, tier=Tier.GOLD, status__in=FINAL_STATUSES
        )
        .exclude(final_acceptability="")
        .select_related("question__domain", "run__system", "adjudication")
        .prefetch_related(
            "retrieved",
            "unmatched_passages",
            "citations",
            "question__evidence",
            Prefetch("labels", queryset=Label.objects.order_by("id")),
        )
        .order_by("pk")
    )


def answer_entry(record: AnswerRecord) -> dict:
    """The record as a seed 004 A.5 answer (``scoring.probe`` input), with the retriever's
    ``score`` on a retrieved passage when one was recorded, and the passages a trace retrieved
    that are not in the corpus as ``unmatched_passages`` (issue 28). Reads the record's
    prefetched ``retrieved``, ``citations`` and ``unmatched_passages``."""
    entry = {
        "question_id": record.question.question_id,
        "system_id": record.run.system.system_id,
        "answer": record.answer,
        "retrieved_passages": [
            _scored({"passage_id": p.passage_ref, "rank": p.rank}, p.score)
            for p in sorted(record.retrieved.all(), key=lambda p: p.rank)
        ],
        "citations": [
            c.passage_ref for c in sorted(record.citations.all(), key=lambda c: c.position)
        ],
    }
    unmatched = sorted(record.unmatched_passages.all(), key=lambda p: p.rank)
    if unmatched:
        # retrieved by a trace but not in the corpus: kept beside the matched ones (their ranks
        # together are 1…n), with their text; retrieval metrics read retrieved_passages only
        entry["unmatched_passages"] = [
            _scored({"passage_id": p.passage_ref, "rank": p.rank, "text": p.text}, p.score)
            for p in unmatched
        ]
    if record.latency_ms is not None:
        entry["latency_ms"] = record.latency_ms
    if record.cost_usd is not None:
        entry["cost_usd"] = float(record.cost_usd)
    return entry


def _scored(passage: dict, score: float | None) -> dict:
    return passage if score is None else {**passage, "score": score}


def gold_label(record: AnswerRecord) -> dict:
    """The final label as ``scoring.probe`` / ``scoring.report`` labels: acceptability,
    grounding, primary and secondary failures, severe safety and the gold unsafe flag."""
    adjudication = getattr(record, "adjudication", None)
    labels = list(record.labels.all())
    if adjudication is not None:
        severe = adjudication.severe_safety
        primary = adjudication.primary_failure
        secondary = list(adjudication.secondary_failures)
    else:
        severe = sum(lab.severe_safety for lab in labels) * 2 > len(labels) if labels else False
        agreeing = [lab for lab in labels if lab.acceptability == record.final_acceptability]
        primaries = Counter(lab.primary_failure for lab in agreeing if lab.primary_failure)
        primary = primaries.most_common(1)[0][0] if primaries else ""
        secondary = sorted({s for lab in agreeing for s in lab.secondary_failures})
    label = {
        "question_id": record.question.question_id,
        "system_id": record.run.system.system_id,
        "acceptability": record.final_acceptability,
        "grounding": record.final_grounding,
        "severe_safety": severe,
        "primary_failure": primary,
        "secondary_failures": [s for s in secondary if s != primary][:2],
    }
    if primary:
        label["failure_categories"] = [primary, *label["secondary_failures"]]
    label["unsafe"] = gold_unsafe(label)
    return label


def gold_tier_items(*, project) -> list[dict]:
    """``scoring.evaluators`` items for the project's gold tier, with PCS, nDCG@10 and every
    PROBE component (``scoring.probe`` on the record and its final label) as scores."""
    records = list(gold_tier_records(project=project))
    if not records:
        return []
    packets = {r.question.question_id: packet_record(r.question) for r in records}
    answers = [answer_entry(r) for r in records]
    labels = [gold_label(r) for r in records]
    scored = score_answers(list(packets.values()), answers, labels=labels)
    items = []
    for record, label, score in zip(records, labels, scored.answers, strict=True):
        scores = {"pcs": score.final_pcs}
        scores.update({k: v for k, v in score.components.items() if v is not None})
        finalized = record.finalized_at or record.created_at
        year, week, _ = finalized.isocalendar()
        items.append(
            {
                "record_id": record.public_id,
                "domain": record.question.domain.slug,
                "task_family": record.question.task_family,
                "week": f"{year}-W{week:02d}",
                "acceptable": label["acceptability"] == "acceptable",
                "unsafe": label["unsafe"],
                "labels": {
                    "acceptability": record.final_acceptability,
                    "grounding": record.final_grounding,
                },
                "human_labels": {
                    "acceptability": [lab.acceptability for lab in record.labels.all()],
                    "grounding": [lab.grounding for lab in record.labels.all()],
                },
                "scores": scores,
            }
        )
    return items


def evaluator_outputs(record_ids, *, project) -> dict[str, dict[str, dict]]:
    """The project's evaluators' outputs on these records, by ``evaluator:<id>``."""
    out: dict[str, dict[str, dict]] = {}
    rows = (
        EvaluatorOutput.objects.filter(
            evaluator__project=project,
            record__project=project,
            record__public_id__in=record_ids,
        )
        .select_related("record")
        .order_by("evaluator_id", "record_id")
    )
    for o in rows:
        out.setdefault(evaluator_key(o.evaluator_id), {})[o.record.public_id] = {
            "labels": o.labels,
            "score": o.score,
            "unsafe_probability": o.unsafe_probability,
        }
    return out


def score_rows(items: list[dict]) -> list[str]:
    """PCS first, then nDCG@10, then every other PROBE component some item has a value for."""
    present = {name for it in items for name in it["scores"]}
    rest = sorted(present - {"pcs", "ndcg_at_10"})
    return [name for name in ("pcs", "ndcg_at_10") if name in present] + rest


@transaction.atomic
def compute_evaluator_report(*, project, actor=None, trust_kappa: float | None = None):
    """Compute the evaluator report on the project's gold tier now and store it as the
    project's snapshot (its own evaluators, κ gate and coverage).

    Raises GoldsetError when the gold tier is empty or no evaluator has outputs on it.
    Resamples come from settings (``GOLDSET_EVALUATOR_RESAMPLES``); an evaluator is trusted at
    the protocol's κ gate (the ``KAPPA_GATE`` tunable) unless ``trust_kappa`` is given, and only
    when it judged at least ``EVALUATOR_MIN_COVERAGE`` of the gold tier's records.
    """
    items = gold_tier_items(project=project)
    if not items:
        raise GoldsetError("the gold tier has no settled answer record yet")
    outputs = evaluator_outputs([it["record_id"] for it in items], project=project)
    if not outputs:
        raise GoldsetError("no evaluator has outputs on the gold tier yet: import some first")
    kappa = tunable("KAPPA_GATE", project=project) if trust_kappa is None else trust_kappa
    config = EvaluatorConfig(
        trust_kappa=kappa,
        min_coverage=tunable("EVALUATOR_MIN_COVERAGE", project=project),
        resamples=settings.GOLDSET_EVALUATOR_RESAMPLES,
    )
    report = evaluator_report(items, outputs, scores=score_rows(items), config=config)
    snapshot = EvaluatorReportSnapshot.objects.create(
        project=project,
        report=report.to_dict(),
        trust_kappa=kappa,
        n_items=report.n_items,
        created_by=actor,
    )
    record_event(
        actor=actor,
        verb="evaluator_report_computed",
        obj=snapshot,
        detail={"items": report.n_items, "evaluators": len(outputs)},
    )
    return snapshot
