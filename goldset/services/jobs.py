"""The reconciler: the periodic pass that makes every background job end.

Each kind of background job registers a reconcile function (:func:`register_job_kind`); the
reconciler calls each one, then repairs and relays the outbox (:func:`reconcile_outbox`), and
records its run so /health/ can report a missing beat. It runs every
``RECONCILE_INTERVAL_SECONDS`` as the ``goldset.reconcile`` task, scheduled by Celery beat
(``celery -A workbench beat``; a service in docker-compose.yml), and on demand with
``manage.py score_run --recover``. The embedded default does not need it: work runs in-process
at commit.

Registering a kind (the import pipeline, webhooks), e.g. in ``GoldsetConfig.ready``::

    outbox.register_outbox_kind("imports.run", publish=lambda m: dispatch.publish(
        IMPORT_TASK, args=[m.payload["import_id"]], kwargs={"outbox_id": m.pk}))
    jobs.register_job_kind("imports", reconcile=reconcile_imports)  # fn(*, now) -> dict

A reconcile function finds its jobs that are running with a stale heartbeat or queued with no
message in flight, and requeues them (through :func:`goldset.services.outbox.enqueue`) or fails
them with a message; it must be safe to run concurrently with itself and with workers.
"""

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Min, Q
from django.utils import timezone

from goldset.conf import tunable
from goldset.models import (
    CalibrationStatus,
    ImportJob,
    ImportStatus,
    JobStatus,
    OutboxMessage,
    PcsCalibration,
    ReconcilerRun,
    ScoringJob,
)
from goldset.rules.jobs import (
    AGREEMENT_OUTBOX_KIND,
    IMPORT_OUTBOX_KIND,
    MAP_TRACES_TASK,
    NOTIFICATION_EMAIL_OUTBOX_KIND,
    NOTIFICATION_EMAIL_TASK,
    SCORING_OUTBOX_KIND,
    TRACES_OUTBOX_KIND,
)
from goldset.rules.webhooks import DELIVER_TASK, WEBHOOK_OUTBOX_KIND
from goldset.services import outbox
from goldset.services.agreement import RECOMPUTE_TASK
from goldset.services.import_jobs import RUN_IMPORT_TASK, reconcile_imports
from goldset.services.pcs_calibrations import (
    CALIBRATION_OUTBOX_KIND,
    CALIBRATION_TASK,
    reconcile_pcs_calibrations,
)
from goldset.services.scoring_jobs import SCORE_RUN_TASK, reconcile_scoring_jobs, stale_seconds
from goldset.services.traces import reconcile_traces
from goldset.services.webhooks import reconcile_webhook_deliveries
from workbench.dispatch import publish

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobKind:
    name: str
    reconcile: Callable[..., dict]


_JOB_KINDS: dict[str, JobKind] = {}


def register_job_kind(name: str, *, reconcile: Callable[..., dict]) -> None:
    """Add a kind of background job to the reconciler (idempotent: the last one wins)."""
    _JOB_KINDS[name] = JobKind(name=name, reconcile=reconcile)


def job_kinds() -> dict[str, JobKind]:
    return dict(_JOB_KINDS)


def reconcile(*, trigger: str = "command", now: dt.datetime | None = None) -> dict:
    """One reconciler pass over every registered job kind, then the outbox. A kind whose pass
    fails is logged and reported; the others still run. Records the run under ``trigger``
    ("beat", "worker_start" or "command"; /health/ watches the beat's)."""
    started = now or timezone.now()
    summary: dict = {}
    for kind in list(_JOB_KINDS.values()):
        try:
            summary[kind.name] = kind.reconcile(now=started)
        except Exception as exc:
            logger.exception("reconciling %s failed", kind.name)
            summary[kind.name] = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        summary["outbox"] = outbox.reconcile_outbox(now=started)
    except Exception as exc:
        logger.exception("reconciling the outbox failed")
        summary["outbox"] = {"error": f"{type(exc).__name__}: {exc}"}
    ReconcilerRun.objects.update_or_create(
        trigger=trigger,
        defaults={"started_at": started, "finished_at": timezone.now(), "summary": summary},
    )
    return summary


def reconcile_interval() -> int:
    return tunable("RECONCILE_INTERVAL_SECONDS")


def last_reconciler_run(*, trigger: str = "beat") -> ReconcilerRun | None:
    return ReconcilerRun.objects.filter(trigger=trigger).first()


def count_stale_jobs(*, now: dt.datetime | None = None) -> dict:
    """Scoring jobs, import jobs and PCS calibrations running without a heartbeat for longer
    than the staleness window (or with none at all, as the reconcilers count them), and queued
    ones nobody picked up within the redispatch window (for /health/). An import or a
    calibration has no queueing time: it counts as waiting once it was created and last beat
    (a requeued one) more than the window ago."""
    now = now or timezone.now()
    stale_before = now - dt.timedelta(seconds=stale_seconds())
    waiting_before = now - dt.timedelta(seconds=outbox.redispatch_seconds())
    silent = Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True)
    running = (
        ScoringJob.objects.filter(silent, status=JobStatus.RUNNING).count()
        + ImportJob.objects.filter(silent, status=ImportStatus.RUNNING).count()
        + PcsCalibration.objects.filter(silent, status=CalibrationStatus.RUNNING).count()
    )
    untouched = Q(created_at__lt=waiting_before) & (
        Q(heartbeat_at__lt=waiting_before) | Q(heartbeat_at__isnull=True)
    )
    queued = (
        ScoringJob.objects.filter(
            Q(queued_at__lt=waiting_before)
            | Q(queued_at__isnull=True, created_at__lt=waiting_before),  # as is_stuck reads it
            status=JobStatus.QUEUED,
        ).count()
        + ImportJob.objects.filter(untouched, status=ImportStatus.QUEUED).count()
        + PcsCalibration.objects.filter(untouched, status=CalibrationStatus.QUEUED).count()
    )
    oldest = OutboxMessage.objects.filter(
        done_at__isnull=True, dispatched_at__isnull=True, created_at__lt=waiting_before
    ).aggregate(oldest=Min("created_at"))["oldest"]
    return {"running_stale": running, "queued_waiting": queued, "outbox_oldest_pending": oldest}


def _publish_scoring(message: OutboxMessage) -> None:
    publish(
        SCORE_RUN_TASK,
        args=[message.payload["job_id"]],
        kwargs={"outbox_id": message.pk},
        countdown=outbox.countdown(message) or None,
    )


def _publish_agreement(message: OutboxMessage) -> None:
    publish(
        RECOMPUTE_TASK,
        kwargs={"outbox_id": message.pk, "project_id": message.payload.get("project_id")},
        countdown=outbox.countdown(message) or None,
    )


def _publish_import(message: OutboxMessage) -> None:
    publish(
        RUN_IMPORT_TASK,
        args=[message.payload["import_id"]],
        kwargs={"outbox_id": message.pk},
        countdown=outbox.countdown(message) or None,
    )


def _publish_calibration(message: OutboxMessage) -> None:
    publish(
        CALIBRATION_TASK,
        args=[message.payload["calibration_id"]],
        kwargs={"outbox_id": message.pk},
    )


def _publish_emails(message: OutboxMessage) -> None:
    publish(
        NOTIFICATION_EMAIL_TASK,
        args=[message.payload["ids"]],
        kwargs={"outbox_id": message.pk},
    )


def _publish_webhook(message: OutboxMessage) -> None:
    publish(
        DELIVER_TASK,
        args=[message.payload["delivery_id"]],
        kwargs={"outbox_id": message.pk},
        countdown=outbox.countdown(message) or None,
    )


def _publish_traces(message: OutboxMessage) -> None:
    publish(
        MAP_TRACES_TASK,
        args=[message.payload["project_id"]],
        kwargs={"outbox_id": message.pk},
    )


def register_builtin_kinds() -> None:
    """Scoring jobs, import jobs, PCS calibrations, agreement recomputes and webhook
    deliveries (called once from ``GoldsetConfig.ready``)."""
    outbox.register_outbox_kind(SCORING_OUTBOX_KIND, publish=_publish_scoring)
    outbox.register_outbox_kind(AGREEMENT_OUTBOX_KIND, publish=_publish_agreement)
    outbox.register_outbox_kind(IMPORT_OUTBOX_KIND, publish=_publish_import)
    outbox.register_outbox_kind(CALIBRATION_OUTBOX_KIND, publish=_publish_calibration)
    outbox.register_outbox_kind(NOTIFICATION_EMAIL_OUTBOX_KIND, publish=_publish_emails)
    register_job_kind("scoring", reconcile=reconcile_scoring_jobs)
    register_job_kind("imports", reconcile=reconcile_imports)
    register_job_kind("pcs_calibrations", reconcile=reconcile_pcs_calibrations)
    outbox.register_outbox_kind(WEBHOOK_OUTBOX_KIND, publish=_publish_webhook)
    register_job_kind("webhooks", reconcile=reconcile_webhook_deliveries)
    outbox.register_outbox_kind(TRACES_OUTBOX_KIND, publish=_publish_traces)
    register_job_kind("traces", reconcile=reconcile_traces)
