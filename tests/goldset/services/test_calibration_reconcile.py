"""PCS calibrations always end: the reconciler requeues a calibration whose worker was lost
(stale heartbeat), fails it with a message once its attempts are used, re-sends a queued
calibration whose message is gone, and an attempt that was taken over cannot record its result."""

import datetime as dt

import pytest
from django.utils import timezone

from goldset.models import CalibrationStatus, OutboxMessage, PcsCalibration
from goldset.rules.jobs import calibration_dedupe_key
from goldset.services.jobs import reconcile
from goldset.services.pcs_calibrations import (
    CALIBRATION_OUTBOX_KIND,
    reconcile_pcs_calibrations,
    run_pcs_calibration,
    start_pcs_calibration,
)
from tests.factories import default_project
from tests.goldset.evaluators_helpers import build_gold_tier
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(django_capture_on_commit_callbacks):
    build_gold_tier(20)
    with django_capture_on_commit_callbacks(execute=False):
        return start_pcs_calibration(project=default_project(), name="q2")


def ago(seconds):
    return timezone.now() - dt.timedelta(seconds=seconds)


def lose_worker(calibration, *, attempts, heartbeat_age):
    PcsCalibration.objects.filter(pk=calibration.pk).update(
        status=CalibrationStatus.RUNNING,
        stage="grid",
        progress=40,
        worker="w1@host",
        attempts=attempts,
        heartbeat_at=ago(heartbeat_age),
    )


def open_messages(calibration):
    return OutboxMessage.objects.filter(
        kind=CALIBRATION_OUTBOX_KIND,
        dedupe_key=calibration_dedupe_key(calibration.pk),
        done_at__isnull=True,
    )


def test_a_lost_calibration_is_requeued_and_then_runs_once(queued, settings):
    settings.JOB_STALE_SECONDS = 60
    lose_worker(queued, attempts=1, heartbeat_age=30)
    assert reconcile_pcs_calibrations()["requeued"] == []  # a fresh heartbeat: still working
    lose_worker(queued, attempts=1, heartbeat_age=300)
    OutboxMessage.objects.all().delete()
    summary = reconcile_pcs_calibrations()
    queued.refresh_from_db()
    assert summary["requeued"] == [queued.pk] and queued.status == CalibrationStatus.QUEUED
    assert queued.progress == 0 and "w1@host was lost" in queued.notice
    assert open_messages(queued).count() == 1
    assert AuditEvent.objects.filter(verb="pcs_calibration_requeued").count() == 1
    done = run_pcs_calibration(calibration_id=queued.pk, worker="w2@host")
    assert done.status == CalibrationStatus.SUCCEEDED, done.error
    assert done.attempts == 2 and done.worker == "w2@host" and done.progress == 100
    assert abs(sum(done.selected["family_weights"]) - 1) < 1e-9
    assert "w1@host was lost" in done.notice  # the page keeps the story of the first attempt
    # a re-delivered message for the finished calibration does nothing
    again = run_pcs_calibration(calibration_id=queued.pk)
    assert again.attempts == 2 and again.finished_at == done.finished_at


def test_a_calibration_that_used_its_attempts_fails_with_a_message(queued, settings):
    settings.JOB_STALE_SECONDS = 60
    settings.JOB_MAX_ATTEMPTS = 3
    lose_worker(queued, attempts=3, heartbeat_age=300)
    assert reconcile_pcs_calibrations()["failed"] == [queued.pk]
    queued.refresh_from_db()
    assert queued.status == CalibrationStatus.FAILED and queued.finished_at is not None
    assert "All 3 attempts are used" in queued.error and "w1@host" in queued.error
    assert queued.selected == {}
    assert run_pcs_calibration(calibration_id=queued.pk).status == CalibrationStatus.FAILED


def test_a_running_calibration_without_any_heartbeat_is_taken_over(queued, settings):
    settings.JOB_STALE_SECONDS = 60
    PcsCalibration.objects.filter(pk=queued.pk).update(
        status=CalibrationStatus.RUNNING, attempts=1, heartbeat_at=None
    )
    assert reconcile_pcs_calibrations()["requeued"] == [queued.pk]


def test_a_queued_calibration_whose_message_is_gone_is_sent_again(queued, settings):
    settings.OUTBOX_REDISPATCH_SECONDS = 30
    assert open_messages(queued).count() == 1  # queued with a dedupe key per calibration
    OutboxMessage.objects.all().delete()  # the broker lost it, and the outbox row is gone
    assert reconcile_pcs_calibrations()["redispatched"] == []  # not waiting long enough yet
    PcsCalibration.objects.filter(pk=queued.pk).update(created_at=ago(120))
    assert reconcile_pcs_calibrations()["redispatched"] == [queued.pk]
    assert open_messages(queued).count() == 1
    assert reconcile_pcs_calibrations()["redispatched"] == []  # its message is open


def test_the_reconciler_runs_the_calibration_pass(queued, settings):
    settings.JOB_STALE_SECONDS = 60
    lose_worker(queued, attempts=1, heartbeat_age=300)
    summary = reconcile(trigger="command")
    assert summary["pcs_calibrations"]["requeued"] == [queued.pk]


def test_an_attempt_that_was_taken_over_stores_nothing(queued, monkeypatch):
    from goldset.services import pcs_calibrations

    real_claim = pcs_calibrations._claim

    def claim_then_lose_it(calibration_id, worker):
        calibration = real_claim(calibration_id, worker)
        # the reconciler gives this attempt up and a second attempt starts meanwhile
        PcsCalibration.objects.filter(pk=calibration_id).update(
            attempts=calibration.attempts + 1, stage="second attempt"
        )
        return calibration

    monkeypatch.setattr(pcs_calibrations, "_claim", claim_then_lose_it)
    result = run_pcs_calibration(calibration_id=queued.pk)
    assert result.status == CalibrationStatus.RUNNING  # left to the attempt that holds it
    assert result.stage == "second attempt" and result.selected == {} and result.result == {}
    assert result.finished_at is None
