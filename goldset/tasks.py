"""Celery tasks: thin, idempotent wrappers around services."""

import logging
import threading

from celery import current_app, shared_task
from celery.signals import worker_process_init, worker_ready

from goldset.conf import tunable
from goldset.rules.jobs import (
    MAP_TRACES_TASK,
    NOTIFICATION_EMAIL_TASK,
    RECONCILE_TASK,
    job_time_limits,
)
from goldset.rules.webhooks import DELIVER_TASK
from goldset.services.agreement import RECOMPUTE_TASK, run_agreement_recompute, warm_up
from goldset.services.import_jobs import RUN_IMPORT_TASK, run_import_job
from goldset.services.jobs import reconcile
from goldset.services.notifications import send_notification_emails
from goldset.services.outbox import mark_done, mark_started
from goldset.services.pcs_calibrations import CALIBRATION_TASK, run_pcs_calibration
from goldset.services.scoring_chunks import SCORE_CHUNK_TASK, run_chunk
from goldset.services.scoring_jobs import SCORE_RUN_TASK, run_scoring_job
from goldset.services.traces import map_pending_traces
from goldset.services.webhooks import deliver_webhook
from workbench.embedded import in_runner

logger = logging.getLogger(__name__)


def beats(task) -> bool:
    """Whether a job's attempt stamps a heartbeat: under a worker, and in the embedded default's
    background runner (its job pages watch the heartbeat as team mode's do); not when a task
    runs inside its caller (a command, the test overlay), which waits for it to end."""
    return not task.request.is_eager or in_runner()


@shared_task(name=RECOMPUTE_TASK, bind=True, ignore_result=True, **job_time_limits())
def recompute_agreement_task(
    self, outbox_id: int | None = None, project_id: int | None = None
) -> dict:
    """Recompute a project's agreement snapshots its dirty-scope marks name (everything when a
    request asked for it; the project is the request's); a no-op when nothing changed, and a no-op that leaves its request to the
    running recompute when one runs (one at a time: ``run_agreement_recompute``). A full
    recompute of a large team can outlast Celery's generic limit: it runs under the job time
    limit."""
    return run_agreement_recompute(
        project_id=project_id, message_id=outbox_id, heartbeat=beats(self)
    )


@shared_task(
    name=SCORE_RUN_TASK,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    **job_time_limits(),
)
def score_run_task(self, job_id: int, outbox_id: int | None = None) -> str:
    """Score one job. A duplicate or re-delivered message is harmless: the job is claimed first
    (or taken over when its worker was lost), so the broker may deliver it more than once."""
    mark_done(outbox_id)  # delivered: from here on the job row's heartbeat tracks the work
    job = run_scoring_job(job_id=job_id, worker=self.request.hostname or "", heartbeat=beats(self))
    return job.status


@shared_task(name=SCORE_CHUNK_TASK, bind=True, ignore_result=True, **job_time_limits())
def score_chunk_task(self, job_id: int, claim: str, kind: str, index: int) -> bool:
    """Do one piece of a split scoring job (offered as a group by the job's worker). A lost or
    duplicate message is harmless: the piece is claimed in the database first, and the job's
    own worker does every piece nobody took."""
    return run_chunk(
        job_id=job_id,
        claim=claim,
        kind=kind,
        index=index,
        worker=self.request.hostname or "",
        heartbeat=beats(self),
    )


@shared_task(
    name=CALIBRATION_TASK,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    **job_time_limits(),
)
def run_pcs_calibration_task(self, calibration_id: int, outbox_id: int | None = None) -> str:
    """Run one PCS calibration grid; a re-delivered message finds it claimed and does nothing;
    a lost attempt is requeued by the reconciler from the calibration's heartbeat."""
    mark_done(outbox_id)  # delivered: from here on the calibration's heartbeat tracks the work
    return run_pcs_calibration(
        calibration_id=calibration_id,
        worker=self.request.hostname or "",
        heartbeat=beats(self),
    ).status


@shared_task(name=RECONCILE_TASK, ignore_result=True)
def reconcile_task() -> dict:
    """The periodic reconciler (Celery beat, every RECONCILE_INTERVAL_SECONDS)."""
    return reconcile(trigger="beat")


@worker_ready.connect
def reconcile_on_start(sender=None, **kwargs):
    """A starting worker runs one reconciler pass: work left pending while no worker was up is
    published now, and lost jobs are requeued (by heartbeat age, whatever the workers' names)."""
    try:
        summary = reconcile(trigger="worker_start")
    except Exception:
        logger.exception("the reconciler pass at worker start failed")
        return
    logger.info("reconciler pass at worker start: %s", summary)


@worker_process_init.connect
def warm_agreement_at_start(sender=None, **kwargs):
    """A pool process of a worker that takes the default queue (where agreement recomputes go)
    warms the agreement computation up in the background as it starts, so its first recompute
    costs what the others do (``agreement.warm_up``). Workers of the reconcile or webhooks queue
    only skip it: they never recompute. The thread only imports and starts a process; a pool
    process that gets a recompute at once waits for the same work it would have done anyway."""
    queues = current_app.amqp.queues
    if not tunable("AGREEMENT_WARM_UP") or current_app.conf.task_default_queue not in (
        queues.consume_from or queues
    ):
        return
    threading.Thread(target=_warm_up_logged, name="agreement-warm-up", daemon=True).start()


def _warm_up_logged() -> None:
    try:
        warm_up()
    except Exception:
        logger.exception("warming the agreement computation up failed (the first recompute will)")


@shared_task(
    name=RUN_IMPORT_TASK, bind=True, acks_late=True, reject_on_worker_lost=True, **job_time_limits()
)
def run_import_task(self, job_id: int, outbox_id: int | None = None) -> str:
    """Run one import job. A duplicate or re-delivered message does nothing (the job is claimed
    first); a lost attempt is requeued by the reconciler from the job's heartbeat."""
    mark_done(outbox_id)  # delivered: from here on the job row's heartbeat tracks the work
    job = run_import_job(job_id=job_id, worker=self.request.hostname or "", heartbeat=beats(self))
    return job.status if job is not None else "not-queued"


@shared_task(name=NOTIFICATION_EMAIL_TASK, ignore_result=True)
def send_notification_emails_task(ids: list[int], outbox_id: int | None = None) -> int:
    """E-mail notifications to the users who asked for e-mail. Idempotent (each notification
    is stamped when sent); the message is closed only once they are sent, so a lost worker
    leaves it open and the reconciler requests the work again."""
    mark_started(outbox_id)
    sent = send_notification_emails(ids=ids)
    mark_done(outbox_id)
    return sent


@shared_task(name=DELIVER_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def deliver_webhook_task(delivery_id: int, outbox_id: int | None = None) -> str:
    """One attempt of one webhook delivery. A duplicate or re-delivered message does nothing
    (the delivery is claimed first); a retry is queued through the outbox with its backoff, and
    an attempt lost with its worker is settled by the reconciler."""
    return deliver_webhook(delivery_id=delivery_id, outbox_id=outbox_id)


@shared_task(
    name=MAP_TRACES_TASK,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    **job_time_limits(),
)
def map_traces_task(self, project_id: int, outbox_id: int | None = None) -> dict:
    """Map a project's received traces that wait to be mapped to answer records. A duplicate or
    re-delivered message finds them mapped (each trace row is claimed with its lock, and moves
    on with its record in one transaction); a worker lost mid-task leaves the message open and
    the reconciler requests the work again."""
    return map_pending_traces(project_id=project_id, message_id=outbox_id, heartbeat=beats(self))
