"""PCS calibration jobs (seed 004 A.7/A.8): a named, versioned calibration fitted on the settled
answer records by ``scoring.calibration`` in a Celery worker, with progress on the row.

Inputs: every production answer record with a settled final label (any tier) and every
calibration-set answer record with a lead's reference label, with its question's PROBE packet
(``goldset.services.evaluators.gold_label`` / the reference). Answers are keyed by run id, so a
system's production and calibration answers to one question stay two answer records. Split strata:
domain, task family, conflict flag and answerability (a question whose required behaviour is a
refusal is unanswerable); the paraphrase group is the question id without A.3's variant suffix
(``-p2``, ``-a1``, ``-d``; see :func:`paraphrase_group`).

Like every background job, a calibration always ends: the worker claims it by raising
``attempts`` and beats ``heartbeat_at`` while the grid runs (:mod:`goldset.services.heartbeat`);
:func:`reconcile_pcs_calibrations` (a reconciler pass) requeues one whose worker was lost, or
fails it after ``JOB_MAX_ATTEMPTS``; only the attempt holding the row may write to it.
"""

import datetime as dt
import logging
import re

from django.db import close_old_connections, transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import CrossProjectReference, GoldsetError
from goldset.models import AnswerRecord, CalibrationStatus, OutboxMessage, PcsCalibration
from goldset.rules.jobs import calibration_dedupe_key
from goldset.selectors.answers import packet_record
from goldset.services import outbox
from goldset.services.evaluators import FINAL_STATUSES, answer_entry, gold_label
from goldset.services.heartbeat import Heartbeat
from scoring import calibration as cal
from scoring.calibration import Selected
from scoring.probe import DEFAULT_CONFIG, score_answers
from scoring.report import gold_unsafe
from workbench.services.audit import record_event

logger = logging.getLogger(__name__)
CALIBRATION_TASK = "goldset.run_pcs_calibration"
CALIBRATION_OUTBOX_KIND = "pcs.calibrate"
VARIANT_SUFFIX = re.compile(r"-(?:[pad]\d*|direct|paraphrase|adversarial)$")


def paraphrase_group(question_id: str) -> str:
    return VARIANT_SUFFIX.sub("", question_id)


@transaction.atomic
def start_pcs_calibration(*, project, name: str, actor=None) -> PcsCalibration:
    """Queue a new version of ``project``'s calibration ``name`` (versions count per project
    and name). The calibration fits the project's records only. The task goes through the
    outbox: the row commits even when the broker is down and the grid is dispatched when it
    returns."""
    name = name.strip()
    if not name or not re.fullmatch(r"[\w.-]{1,80}", name):
        raise GoldsetError("a calibration name is 1–80 letters, digits, '.', '-' or '_'")
    latest = (
        PcsCalibration.objects.filter(project=project, name=name).aggregate(v=Max("version"))["v"]
        or 0
    )
    calibration = PcsCalibration.objects.create(
        project=project, name=name, version=latest + 1, created_by=actor
    )
    record_event(actor=actor, verb="pcs_calibration_started", obj=calibration)
    _queue(calibration.pk)
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


def _inputs(*, project):
    """The project's settled records and calibration references, as PROBE inputs."""
    base = (
        AnswerRecord.objects.filter(project=project)
        .select_related("question__domain", "run__system", "adjudication", "calibration_item")
        .prefetch_related(
            "retrieved", "unmatched_passages", "citations", "question__evidence", "labels"
        )
    )
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


class _TakenOver(Exception):
    """This attempt lost its calibration to the reconciler: it must stop and write nothing."""


def _claim(calibration_id: int, worker: str) -> PcsCalibration | None:
    now = timezone.now()
    claimed = PcsCalibration.objects.filter(
        pk=calibration_id, status=CalibrationStatus.QUEUED
    ).update(
        status=CalibrationStatus.RUNNING,
        stage="load",
        progress=1,
        worker=worker[:200],
        started_at=now,
        heartbeat_at=now,
        attempts=F("attempts") + 1,
    )
    if not claimed:
        return None
    return PcsCalibration.objects.select_related("project").get(pk=calibration_id)


def run_pcs_calibration(
    *, calibration_id: int, worker: str = "", heartbeat: bool = False
) -> PcsCalibration:
    """The body of ``run_pcs_calibration_task``: claims a queued calibration (``queued`` →
    ``running``, one conditional UPDATE that raises ``attempts``, so a duplicate delivery finds
    it claimed and does nothing), runs the grid with progress, stores the result or the
    failure's reason. Only this attempt may write: once the reconciler has requeued or failed
    it (its heartbeat aged), its next progress write stops the grid and nothing is stored.
    ``heartbeat`` starts the heartbeat thread (real workers), so a long grid never looks lost."""
    calibration = _claim(calibration_id, worker)
    if calibration is None:
        return PcsCalibration.objects.get(pk=calibration_id)
    this_attempt = PcsCalibration.objects.filter(
        pk=calibration_id, status=CalibrationStatus.RUNNING, attempts=calibration.attempts
    )

    def write(**fields) -> bool:
        return bool(this_attempt.all().update(**fields))

    def step(**fields) -> None:
        if not write(heartbeat_at=timezone.now(), **fields):
            raise _TakenOver(calibration_id)

    beat = Heartbeat(f"calibration-{calibration_id}", this_attempt.all) if heartbeat else None
    if beat is not None:
        beat.start()
    try:
        result, split = _fit(step, project=calibration.project)
    except _TakenOver:
        logger.warning(
            "PCS calibration %s: attempt %s was taken over; it stored nothing",
            calibration_id,
            calibration.attempts,
        )
    except (GoldsetError, ValueError) as exc:
        write(status=CalibrationStatus.FAILED, error=str(exc)[:4000], finished_at=timezone.now())
    except Exception as exc:
        logger.exception("PCS calibration %s failed", calibration_id)
        close_old_connections()
        write(
            status=CalibrationStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:4000],
            finished_at=timezone.now(),
        )
    else:
        write(
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
    finally:
        if beat is not None:
            beat.stop()
    return PcsCalibration.objects.get(pk=calibration_id)


def _fit(step, *, project):
    """Load the project's inputs, score them with PROBE, split and run the grid;
    ``step(**fields)`` records progress (and raises when this attempt no longer holds the
    calibration)."""
    packets, answers, labels = _inputs(project=project)
    if not answers:
        raise GoldsetError("no answer record has a settled label to calibrate against")
    step(stage="PROBE scoring", progress=5)
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
            step(stage=stage, progress=percent)

    return cal.calibrate(items, split, progress=progress), split


def _queue(calibration_id: int) -> None:
    outbox.enqueue(
        kind=CALIBRATION_OUTBOX_KIND,
        payload={"calibration_id": calibration_id},
        dedupe_key=calibration_dedupe_key(calibration_id),
    )


def reconcile_pcs_calibrations(*, now: dt.datetime | None = None) -> dict:
    """The reconciler's pass over PCS calibrations (registered in
    ``goldset.services.jobs.register_builtin_kinds``), like imports': a running calibration
    with no heartbeat for ``JOB_STALE_SECONDS`` lost its worker (the grid lives in that
    worker's memory, nothing of it is stored) and is requeued with a notice, or failed with a
    message once ``JOB_MAX_ATTEMPTS`` attempts were used; a queued calibration with no open
    outbox message after ``OUTBOX_REDISPATCH_SECONDS`` is queued again. Each change happens
    under the row's lock; safe to run concurrently with itself and with workers."""
    now = now or timezone.now()
    stale_before = now - dt.timedelta(seconds=tunable("JOB_STALE_SECONDS"))
    requeued, failed, redispatched = [], [], []
    lost = PcsCalibration.objects.filter(status=CalibrationStatus.RUNNING).filter(
        Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True)
    )
    for pk in lost.values_list("pk", flat=True):
        with transaction.atomic():
            calibration = PcsCalibration.objects.select_for_update().get(pk=pk)
            fresh = (
                calibration.heartbeat_at is not None and calibration.heartbeat_at >= stale_before
            )
            if calibration.status != CalibrationStatus.RUNNING or fresh:
                continue
            since = (
                calibration.heartbeat_at.isoformat(timespec="seconds")
                if calibration.heartbeat_at
                else "-"
            )
            lost_text = (
                f"Attempt {calibration.attempts} on worker {calibration.worker or '?'} was lost: "
                f"no heartbeat since {since}."
            )
            if calibration.attempts >= tunable("JOB_MAX_ATTEMPTS"):
                PcsCalibration.objects.filter(pk=pk).update(
                    status=CalibrationStatus.FAILED,
                    error=f"{lost_text} All {calibration.attempts} attempts are used; "
                    "run the grid again to retry.",
                    finished_at=now,
                )
                record_event(
                    actor=None,
                    verb="pcs_calibration_failed",
                    obj=calibration,
                    detail={"lost_worker": calibration.worker, "attempt": calibration.attempts},
                )
                failed.append(pk)
                continue
            PcsCalibration.objects.filter(pk=pk).update(
                status=CalibrationStatus.QUEUED,
                stage="re-queued: worker lost",
                progress=0,
                notice=f"{calibration.notice}\n{lost_text} Requeued by the reconciler.".strip(),
            )
            record_event(
                actor=None,
                verb="pcs_calibration_requeued",
                obj=calibration,
                detail={"lost_worker": calibration.worker, "attempt": calibration.attempts},
            )
            _queue(pk)
            requeued.append(pk)
    waiting_since = now - dt.timedelta(seconds=outbox.redispatch_seconds())
    open_ids = {
        payload.get("calibration_id")
        for payload in OutboxMessage.objects.filter(
            kind=CALIBRATION_OUTBOX_KIND, done_at__isnull=True
        ).values_list("payload", flat=True)
    }
    waiting = PcsCalibration.objects.filter(
        status=CalibrationStatus.QUEUED, created_at__lt=waiting_since
    )
    for pk in waiting.values_list("pk", flat=True):
        if pk in open_ids:
            continue  # its message is pending or in flight; the outbox reconciler watches it
        with transaction.atomic():
            if (
                PcsCalibration.objects.select_for_update()
                .filter(pk=pk, status=CalibrationStatus.QUEUED)
                .exists()
            ):
                _queue(pk)
                redispatched.append(pk)
    return {"requeued": requeued, "failed": failed, "redispatched": redispatched}


def probe_config_for(calibration: PcsCalibration | None, *, project=None):
    """The ``scoring.probe.ProbeConfig`` a scoring job uses: the seed's default without a
    calibration, else the calibration's selected weights, caps and thresholds. With
    ``project``, a calibration of another project is refused (:class:`CrossProjectReference`)."""
    if calibration is None:
        return DEFAULT_CONFIG
    if project is not None and calibration.project_id != project.pk:
        raise CrossProjectReference(
            f"PCS calibration {calibration.label} belongs to another project; choose one of "
            "this project's calibrations"
        )
    if calibration.status != CalibrationStatus.SUCCEEDED:
        raise GoldsetError(f"calibration {calibration.label} has not succeeded")
    s = calibration.selected
    return Selected(
        tuple(s["family_weights"]),
        tuple(s["regulated_family_weights"]),
        dict(s["caps"]),
        dict(s["thresholds"]),
    ).probe_config()
