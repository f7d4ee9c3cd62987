"""PCS calibration jobs (seed 004 A.7/A.8): a named, versioned calibration fitted on the settled
answer records by ``scoring.calibration`` in a Celery worker, with progress on the row.

Inputs: every production answer record with a settled final label (any tier) and every
calibration-set answer record with a lead's reference label, with its question's PROBE packet
(``goldset.services.evaluators.gold_label`` / the reference). Answers are keyed by run id, so a
system's production and calibration answers to one question stay two answer records. Split strata:
domain, task family, conflict flag and answerability (a question whose required behaviour is a
refusal is unanswerable); the paraphrase group is the question id without A.3's variant suffix
(``-p2``, ``-a1``, ``-d``; see :func:`paraphrase_group`).
"""

import re

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import AnswerRecord, CalibrationStatus, PcsCalibration
from goldset.selectors.answers import packet_record
from goldset.services import outbox
from goldset.services.evaluators import FINAL_STATUSES, answer_entry, gold_label
from scoring import calibration as cal
from scoring.calibration import Selected
from scoring.probe import DEFAULT_CONFIG, score_answers
from scoring.report import gold_unsafe
from workbench.services.audit import record_event

CALIBRATION_TASK = "goldset.run_pcs_calibration"
CALIBRATION_OUTBOX_KIND = "pcs.calibrate"
VARIANT_SUFFIX = re.compile(r"-(?:[pad]\d*|direct|paraphrase|adversarial)$")


def paraphrase_group(question_id: str) -> str:
    return VARIANT_SUFFIX.sub("", question_id)


@transaction.atomic
def start_pcs_calibration(*, name: str, actor=None) -> PcsCalibration:
    """Queue a new version of calibration ``name``. The task goes through the outbox: the row
    commits even when the broker is down and the grid is dispatched when it returns."""
    name = name.strip()
    if not name or not re.fullmatch(r"[\w.-]{1,80}", name):
        raise GoldsetError("a calibration name is 1–80 letters, digits, '.', '-' or '_'")
    latest = PcsCalibration.objects.filter(name=name).aggregate(v=Max("version"))["v"] or 0
    calibration = PcsCalibration.objects.create(name=name, version=latest + 1, created_by=actor)
    record_event(actor=actor, verb="pcs_calibration_started", obj=calibration)
    outbox.enqueue(kind=CALIBRATION_OUTBOX_KIND, payload={"calibration_id": calibration.pk})
    return calibration


def reference_label(record: AnswerRecord) -> dict:
    """A calibration-set record's reference label in ``gold_label``'s shape."""
    item = record.calibration_item
    label = {
        "question_id": record.question.question_id,
        "system_id": record.run.system.system_id,
        "acceptability": item.reference_acceptability,
        "grounding": item.reference_grounding,
        "severe_safety": bool(item.reference_severe_safety),
        "primary_failure": "",
        "secondary_failures": [],
    }
    label["unsafe"] = gold_unsafe(label)
    return label


def _inputs():
    base = AnswerRecord.objects.select_related(
        "question__domain", "run__system", "adjudication", "calibration_item"
    ).prefetch_related("retrieved", "citations", "question__evidence", "labels")
    settled = base.filter(is_calibration=False, status__in=FINAL_STATUSES).exclude(
        final_acceptability=""
    )
    references = base.filter(is_calibration=True).exclude(
        calibration_item__reference_acceptability=""
    )
    records = [*settled.order_by("pk"), *references.filter(calibration_item__isnull=False)]
    packets = {r.question.question_id: packet_record(r.question) for r in records}
    answers, labels = [], []
    for r in records:
        label = reference_label(r) if r.is_calibration else gold_label(r)
        answers.append({**answer_entry(r), "system_id": r.run.run_id})
        labels.append({**label, "system_id": r.run.run_id})
    return packets, answers, labels


def _set(calibration_id: int, **fields) -> None:
    PcsCalibration.objects.filter(pk=calibration_id).update(**fields)


def run_pcs_calibration(*, calibration_id: int) -> PcsCalibration:
    """The body of ``run_pcs_calibration_task``: claims a queued calibration (a duplicate
    delivery finds it claimed and does nothing), runs the grid with progress, stores the result
    or the failure's reason."""
    claimed = PcsCalibration.objects.filter(
        pk=calibration_id, status=CalibrationStatus.QUEUED
    ).update(status=CalibrationStatus.RUNNING, stage="load", progress=1)
    if not claimed:
        return PcsCalibration.objects.get(pk=calibration_id)
    try:
        packets, answers, labels = _inputs()
        if not answers:
            raise GoldsetError("no answer record has a settled label to calibrate against")
        _set(calibration_id, stage="PROBE scoring", progress=5)
        scored = score_answers(list(packets.values()), answers, labels=labels)
        split = cal.split_questions(
            [
                {
                    "question_id": qid,
                    "paraphrase_group": paraphrase_group(qid),
                    "domain": p["domain"],
                    "task_family": p["task_family"],
                    "conflict": "conflict" in p["flags"],
                    "answerable": "refus" not in (p.get("required_behavior") or ""),
                }
                for qid, p in packets.items()
            ]
        )
        gold = {
            (lab["question_id"], lab["system_id"]): {
                "acceptable": lab["acceptability"] == "acceptable",
                "unsafe": lab["unsafe"],
            }
            for lab in labels
        }
        items = cal.items_from_scores(scored.answers, gold)
        last = [0]

        def progress(fraction: float, stage: str) -> None:
            percent = 10 + int(85 * fraction)
            if percent != last[0]:
                last[0] = percent
                _set(calibration_id, stage=stage, progress=percent)

        result = cal.calibrate(items, split, progress=progress)
    except (GoldsetError, ValueError) as exc:
        _set(
            calibration_id,
            status=CalibrationStatus.FAILED,
            error=str(exc)[:4000],
            finished_at=timezone.now(),
        )
    else:
        _set(
            calibration_id,
            status=CalibrationStatus.SUCCEEDED,
            stage="done",
            progress=100,
            selected={
                "family_weights": list(result.selected.family_weights),
                "regulated_family_weights": list(result.selected.regulated_family_weights),
                "caps": result.selected.caps,
                "thresholds": result.selected.thresholds,
            },
            result={**result.to_dict(), "split": split.assignment},
            finished_at=timezone.now(),
        )
    return PcsCalibration.objects.get(pk=calibration_id)


def probe_config_for(calibration: PcsCalibration | None):
    """The ``scoring.probe.ProbeConfig`` a scoring job uses: the seed's default without a
    calibration, else the calibration's selected weights, caps and thresholds."""
    if calibration is None:
        return DEFAULT_CONFIG
    if calibration.status != CalibrationStatus.SUCCEEDED:
        raise GoldsetError(f"calibration {calibration.label} has not succeeded")
    s = calibration.selected
    return Selected(
        tuple(s["family_weights"]),
        tuple(s["regulated_family_weights"]),
        dict(s["caps"]),
        dict(s["thresholds"]),
    ).probe_config()
