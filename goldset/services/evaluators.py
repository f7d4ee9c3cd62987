"""Evaluators: records, their outputs (all-or-nothing JSONL import) and the evaluator report
against the gold tier. Every figure comes from ``scoring.evaluators``; this module turns the
database into its plain-data inputs and stores the results.

The gold tier is every production answer record routed to GOLD whose final label is settled
(majority or adjudicated). Gold unsafe = the adjudication's (else the majority of the labels')
severe-safety flag, or a safety primary failure (``scoring.report.SAFETY_FAILURES``).
"""

import hashlib
from collections import Counter

from django.conf import settings
from django.db import transaction
from django.db.models import Prefetch

from goldset.exceptions import GoldsetError, ImportRejected
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
from scoring.evaluators import EvaluatorConfig, evaluator_report, parse_output_lines
from scoring.probe import score_answers
from scoring.report import gold_unsafe
from workbench.services.audit import record_event

MAX_ERRORS = 50
FINAL_STATUSES = (RecordStatus.FINAL, RecordStatus.ADJUDICATED, RecordStatus.AUDIT)


def evaluator_key(evaluator_id: int) -> str:
    return f"evaluator:{evaluator_id}"


@transaction.atomic
def create_evaluator(
    *,
    name: str,
    version: str,
    kind: str,
    model_id: str = "",
    prompt_hash: str = "",
    description: str = "",
    actor=None,
) -> Evaluator:
    """Register an evaluator; (name, version) is unique — a duplicate is a GoldsetError."""
    if Evaluator.objects.filter(name=name, version=version).exists():
        raise GoldsetError(f"evaluator {name} {version} already exists")
    evaluator = Evaluator.objects.create(
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


@transaction.atomic
def import_evaluator_outputs(
    *, evaluator: Evaluator, text: str, source_name: str, actor=None
) -> EvaluatorImport:
    """Import one evaluator's outputs (JSONL: ``record_id`` = an answer record's public id,
    ``labels``, ``score``, ``unsafe_probability``; see ``scoring.evaluators``).

    The whole file is validated first; any problem raises ImportRejected listing every problem
    by line and field, and nothing is stored. A record judged before by this evaluator is
    overwritten (so re-importing the same file is harmless).
    """
    records, problems = parse_output_lines(text.splitlines(), source=source_name)
    for lineno, rec in records:
        if rec.get("evaluator") not in (None, evaluator.name):
            problems.append(
                f"{source_name}, line {lineno}: evaluator: {rec['evaluator']!r} is not "
                f"{evaluator.name!r} (the evaluator this file is imported for)"
            )
    known = dict(
        AnswerRecord.objects.filter(
            public_id__in=[r["record_id"] for _, r in records], is_calibration=False
        ).values_list("public_id", "pk")
    )
    for lineno, rec in records:
        if rec["record_id"] not in known:
            problems.append(
                f"{source_name}, line {lineno}: record_id: unknown answer record "
                f"{rec['record_id']!r}"
            )
    if problems:
        raise ImportRejected(problems[:MAX_ERRORS], source=source_name)
    batch = EvaluatorImport.objects.create(
        evaluator=evaluator,
        source_name=source_name,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        n_records=len(records),
        imported_by=actor,
    )
    EvaluatorOutput.objects.filter(
        evaluator=evaluator, record_id__in=[known[r["record_id"]] for _, r in records]
    ).delete()
    EvaluatorOutput.objects.bulk_create(
        EvaluatorOutput(
            evaluator=evaluator,
            record_id=known[rec["record_id"]],
            source=batch,
            labels=rec.get("labels") or {},
            score=rec.get("score"),
            unsafe_probability=rec.get("unsafe_probability"),
        )
        for _, rec in records
    )
    record_event(
        actor=actor,
        verb="evaluator_outputs_imported",
        obj=evaluator,
        detail={"source": source_name, "records": len(records), "sha256": batch.sha256},
    )
    return batch


# ---------------------------------------------------------------------------------------------
# Gold tier → plain data


def gold_tier_records():
    return (
        AnswerRecord.objects.filter(is_calibration=False, tier=Tier.GOLD, status__in=FINAL_STATUSES)
        .exclude(final_acceptability="")
        .select_related("question__domain", "run__system", "adjudication")
        .prefetch_related(
            "retrieved",
            "citations",
            "question__evidence",
            Prefetch("labels", queryset=Label.objects.order_by("id")),
        )
        .order_by("pk")
    )


def answer_entry(record: AnswerRecord) -> dict:
    """The record as a seed 004 A.5 answer (``scoring.probe`` input)."""
    entry = {
        "question_id": record.question.question_id,
        "system_id": record.run.system.system_id,
        "answer": record.answer,
        "retrieved_passages": [
            {"passage_id": p.passage_ref, "rank": p.rank}
            for p in sorted(record.retrieved.all(), key=lambda p: p.rank)
        ],
        "citations": [
            c.passage_ref for c in sorted(record.citations.all(), key=lambda c: c.position)
        ],
    }
    if record.latency_ms is not None:
        entry["latency_ms"] = record.latency_ms
    if record.cost_usd is not None:
        entry["cost_usd"] = float(record.cost_usd)
    return entry


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


def gold_tier_items() -> list[dict]:
    """``scoring.evaluators`` items for the gold tier, with PCS, nDCG@10 and every PROBE
    component (``scoring.probe`` on the record and its final label) as scores."""
    records = list(gold_tier_records())
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


def evaluator_outputs(record_ids) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    rows = (
        EvaluatorOutput.objects.filter(record__public_id__in=record_ids)
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
def compute_evaluator_report(*, actor=None, trust_kappa: float | None = None):
    """Compute the evaluator report on the gold tier now and store it as a snapshot.

    Raises GoldsetError when the gold tier is empty or no evaluator has outputs on it.
    Resamples and the trust threshold come from settings (``GOLDSET_EVALUATOR_RESAMPLES``,
    ``GOLDSET_EVALUATOR_TRUST_KAPPA``) unless ``trust_kappa`` is given.
    """
    items = gold_tier_items()
    if not items:
        raise GoldsetError("the gold tier has no settled answer record yet")
    outputs = evaluator_outputs([it["record_id"] for it in items])
    if not outputs:
        raise GoldsetError("no evaluator has outputs on the gold tier yet: import some first")
    kappa = settings.GOLDSET_EVALUATOR_TRUST_KAPPA if trust_kappa is None else trust_kappa
    config = EvaluatorConfig(trust_kappa=kappa, resamples=settings.GOLDSET_EVALUATOR_RESAMPLES)
    report = evaluator_report(items, outputs, scores=score_rows(items), config=config)
    snapshot = EvaluatorReportSnapshot.objects.create(
        report=report.to_dict(), trust_kappa=kappa, n_items=report.n_items, created_by=actor
    )
    record_event(
        actor=actor,
        verb="evaluator_report_computed",
        obj=snapshot,
        detail={"items": report.n_items, "evaluators": len(outputs)},
    )
    return snapshot
