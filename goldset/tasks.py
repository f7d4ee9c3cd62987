"""Celery tasks: thin, idempotent wrappers around services."""

import logging

from celery import shared_task
from celery.signals import worker_ready

from goldset.services.agreement import RECOMPUTE_TASK, recompute_agreement_snapshots
from goldset.services.scoring_jobs import SCORE_RUN_TASK, recover_orphaned_jobs, run_scoring_job

logger = logging.getLogger(__name__)
PING_TIMEOUT = 1.0


@shared_task(name=RECOMPUTE_TASK)
def recompute_agreement_task() -> dict:
    """Recompute every agreement snapshot; a no-op when the data version is unchanged."""
    version, rows = recompute_agreement_snapshots()
    return {"data_version": version, "snapshots": rows}


@shared_task(name=SCORE_RUN_TASK, acks_late=True, reject_on_worker_lost=True)
def score_run_task(job_id: int) -> str:
    """Score one job. A duplicate or re-delivered message does nothing (the job is claimed
    first), so the broker may deliver it more than once."""
    job = run_scoring_job(job_id=job_id, worker=score_run_task.request.hostname or "")
    return job.status


@worker_ready.connect
def recover_orphaned_jobs_on_start(sender=None, **kwargs):
    """A starting worker re-queues jobs left running by a worker that no longer answers."""
    alive = {sender.hostname} if sender is not None else set()
    for reply in sender.app.control.ping(timeout=PING_TIMEOUT) if sender is not None else []:
        alive.update(reply)
    requeued = recover_orphaned_jobs(alive_workers=alive)
    if requeued:
        logger.warning("re-queued scoring jobs of lost workers: %s", requeued)
