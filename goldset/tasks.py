"""Celery tasks: take ids, call one service, idempotent by design."""

from celery import shared_task

from goldset.services.agreement import recompute_agreement_snapshots


@shared_task(name="goldset.recompute_agreement")
def recompute_agreement_task() -> dict:
    version, rows = recompute_agreement_snapshots()
    return {"data_version": version, "snapshots": rows}
