"""An agreement recompute in progress is not requested again merely because it is slow: while
its worker is alive the requests it covers are stamped by a heartbeat; once the worker is gone
(no stamps for JOB_STALE_SECONDS) the reconciler requests the work again, exactly once."""

import datetime as dt

import pytest
from django.utils import timezone

from goldset.models import OutboxMessage
from goldset.rules.jobs import AGREEMENT_DEBOUNCE_KEY, AGREEMENT_OUTBOX_KIND
from goldset.services.outbox import beating, reconcile_outbox, start_all_of_kind
from tests.waiting import wait_until

STALE = 120


def started_request(*, started_ago: float) -> OutboxMessage:
    """A recompute request a worker picked up ``started_ago`` seconds ago (the task's first
    step, start_all_of_kind, as the real task does)."""
    message = OutboxMessage.objects.create(
        kind=AGREEMENT_OUTBOX_KIND,
        dedupe_key=AGREEMENT_DEBOUNCE_KEY,
        dispatched_at=timezone.now() - dt.timedelta(seconds=started_ago + 1),
    )
    start_all_of_kind(kind=AGREEMENT_OUTBOX_KIND, message_id=message.pk)
    OutboxMessage.objects.filter(pk=message.pk).update(
        started_at=timezone.now() - dt.timedelta(seconds=started_ago)
    )
    return message


def requested_again(original: OutboxMessage) -> int:
    """Recompute requests made after ``original`` (each a new message, whether or not the
    embedded eager mode already ran it)."""
    return OutboxMessage.objects.filter(kind=AGREEMENT_OUTBOX_KIND).exclude(pk=original.pk).count()


@pytest.fixture
def quick_beats(settings):
    settings.JOB_STALE_SECONDS = STALE
    settings.JOB_HEARTBEAT_SECONDS = 0.05


@pytest.mark.django_db
def test_a_started_recompute_with_a_fresh_heartbeat_is_left_alone(quick_beats):
    message = started_request(started_ago=STALE * 5)  # slower than the staleness window
    OutboxMessage.objects.filter(pk=message.pk).update(heartbeat_at=timezone.now())
    summary = reconcile_outbox(now=timezone.now() + dt.timedelta(seconds=STALE / 2))
    assert summary["abandoned_messages"] == 0
    message.refresh_from_db()
    assert message.done_at is None and requested_again(message) == 0


@pytest.mark.django_db
def test_a_started_recompute_whose_heartbeat_stopped_is_requested_again_once(quick_beats):
    message = started_request(started_ago=STALE * 5)
    OutboxMessage.objects.filter(pk=message.pk).update(
        heartbeat_at=timezone.now() - dt.timedelta(seconds=STALE * 2)
    )
    assert reconcile_outbox()["abandoned_messages"] == 1
    assert reconcile_outbox()["abandoned_messages"] == 0
    message.refresh_from_db()
    assert "worker was lost" in message.last_error and message.done_at is not None
    assert requested_again(message) == 1


@pytest.mark.django_db
def test_a_request_started_and_never_beating_is_requested_again(quick_beats):
    message = started_request(started_ago=STALE * 2)  # its worker died before its first beat
    assert reconcile_outbox()["abandoned_messages"] == 1 and requested_again(message) == 1


def stamp(message):
    message.refresh_from_db()
    return message.heartbeat_at


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_recompute_heartbeat_keeps_a_slow_live_recompute_from_being_requested_again(
    postgres, quick_beats
):
    message = started_request(started_ago=STALE * 5)
    with beating([message.pk]):
        wait_until(lambda: stamp(message) is not None, timeout=5, what="the first beat")
        first = message.heartbeat_at
        # It keeps beating while the work runs.
        wait_until(lambda: stamp(message) > first, timeout=5, what="a second beat")
        assert reconcile_outbox()["abandoned_messages"] == 0
        assert requested_again(message) == 0
    # The work ended without closing its message (its worker died): once the beat is older
    # than the window, the reconciler asks for the work again.
    later = timezone.now() + dt.timedelta(seconds=STALE + 5)
    assert reconcile_outbox(now=later)["abandoned_messages"] == 1
    assert requested_again(message) == 1
