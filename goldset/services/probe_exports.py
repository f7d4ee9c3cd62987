"""The PROBE artifacts of a frozen version that come from the answer-labeling area (seed 004
§6.4 / Table 9): the questions with their gold evidence packets, the adjudication export, and
the adjudicated labels answer-log scoring uses for the label-derived PCS axes."""

from collections.abc import Iterator

from django.db.models import Prefetch

from goldset.models import AnswerRecord, EvidenceKind, EvidencePassage, Question, RecordStatus
from goldset.services.exports import canonical_json
from goldset.services.pseudonyms import ensure_pseudonyms, gold_version_scope


def _questions():
    return (
        Question.objects.select_related("domain")
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


def iter_answer_question_packets() -> Iterator[dict]:
    for q in _questions().iterator(chunk_size=500):
        yield packet_record(q)


def adjudication_export_rows(*, scope: str, include_open: bool = False) -> Iterator[dict]:
    """The adjudication export with the people in it pseudonymised for ``scope`` (a gold
    version's, or a fresh one per export: ``pseudonyms.export_scope()``)."""
    from goldset.selectors.answers import iter_adjudication_export, list_adjudication_export_people

    people = list_adjudication_export_people(include_open=include_open)
    names = ensure_pseudonyms(scope=scope, user_ids=people)
    return iter_adjudication_export(pseudonyms=names, include_open=include_open)


def render_adjudication_export(version) -> Iterator[bytes]:
    """The answers area's adjudication export at freeze time, one canonical JSON line each,
    reviewers under the version's pseudonyms."""
    for item in adjudication_export_rows(scope=gold_version_scope(version.number)):
        yield (canonical_json(item) + "\n").encode("utf-8")


def adjudicated_labels(version, answers: list[dict]) -> list[dict]:
    """Final (majority or adjudicated) labels for the answer records whose question and system
    match the uploaded log, keyed by question_id + system_id for ``scoring.probe``."""
    wanted = {(str(a.get("question_id")), str(a.get("system_id", ""))) for a in answers}
    records = (
        AnswerRecord.objects.filter(
            is_calibration=False,
            status__in=[RecordStatus.FINAL, RecordStatus.ADJUDICATED, RecordStatus.AUDIT],
            question__question_id__in={q for q, _ in wanted},
        )
        .exclude(final_grounding="")
        .select_related("question", "run__system", "adjudication")
    )
    labels = []
    for r in records:
        key = (r.question.question_id, r.run.system.system_id)
        if key not in wanted:
            continue
        label = {"question_id": key[0], "system_id": key[1], "grounding": r.final_grounding}
        adjudication = getattr(r, "adjudication", None)
        if adjudication is not None and adjudication.primary_failure:
            label["failure_categories"] = [
                adjudication.primary_failure,
                *adjudication.secondary_failures,
            ]
        labels.append(label)
    return sorted(labels, key=lambda x: (x["question_id"], x["system_id"]))
