"""The agreement refreshes' share of the time (issue 26, ``AGREEMENT_REFRESH_BUDGET``): after a
refresh that ran d seconds, a request from labels or reviews waits until d × (1/budget − 1)
seconds have passed since it ended, held back and published again with that delay; a lead's
"Recompute now" never waits, nor does anything when tasks run in-process (the embedded mode)."""

import datetime as dt

import pytest
from django.utils import timezone

from goldset.models import AgreementDirtyScope, AgreementSnapshot, OutboxMessage
from goldset.rules.jobs import AGREEMENT_OUTBOX_KIND
from goldset.services import agreement, outbox
from goldset.services.agreement import run_agreement_recompute, schedule_agreement_recompute
from tests.goldset.project_support import default_project

pytestmark = pytest.mark.django_db(transaction=True)  # commits run the relay


@pytest.fixture
def labeled(labeled):
    # The labels' commits ran the recompute in-process: figures exist, no request is open.
    assert AgreementSnapshot.objects.exists()
    assert not OutboxMessage.objects.filter(done_at__isnull=True).exists()
    return labeled


@pytest.fixture
def in_workers(monkeypatch):
    """Tasks go to workers (team mode); what a postponed request publishes is recorded."""
    relayed = []
    monkeypatch.setattr(agreement, "tasks_run_inline", lambda: False)
    monkeypatch.setattr(outbox, "relay_outbox", lambda ids=None, **_: relayed.append(ids))
    return relayed


def _last_refresh_ran(seconds: float, ended_ago: float) -> None:
    """Make the project's latest finished refresh one that ran ``seconds`` and ended
    ``ended_ago`` seconds ago."""
    done = timezone.now() - dt.timedelta(seconds=ended_ago)
    last = OutboxMessage.objects.filter(kind=AGREEMENT_OUTBOX_KIND, done_at__isnull=False)
    last.update(done_at=done - dt.timedelta(days=1))
    latest = last.order_by("-pk").first()
    OutboxMessage.objects.filter(pk=latest.pk).update(
        started_at=done - dt.timedelta(seconds=seconds), done_at=done
    )


def _a_label_request(annotator) -> OutboxMessage:
    """What a label's commit records: its dirty-scope mark and a debounced request."""
    schedule_agreement_recompute(
        project_id=default_project().pk,
        dirty={"kind": AgreementDirtyScope.RATING, "annotator_id": annotator.pk},
    )
    return OutboxMessage.objects.get(kind=AGREEMENT_OUTBOX_KIND, done_at__isnull=True)


def _a_label_request_run_at_commit(annotator) -> None:
    schedule_agreement_recompute(
        project_id=default_project().pk,
        dirty={"kind": AgreementDirtyScope.RATING, "annotator_id": annotator.pk},
    )


def test_a_label_request_after_a_long_refresh_waits_out_the_budget(labeled, in_workers, settings):
    settings.AGREEMENT_REFRESH_BUDGET = 0.05
    _last_refresh_ran(seconds=5, ended_ago=5)  # quiet for 5 × 19 = 95 s: 90 s still to go
    request = _a_label_request(labeled[0])
    versions = set(AgreementSnapshot.objects.values_list("pk", "data_version"))
    in_workers.clear()  # (its first publication, at commit)

    result = run_agreement_recompute(message_id=request.pk)

    assert result["postponed"] == pytest.approx(90, abs=2)
    request.refresh_from_db()
    assert request.started_at is None and request.done_at is None and request.dispatched_at is None
    wait = (request.available_at - timezone.now()).total_seconds()
    assert wait == pytest.approx(90, abs=2)
    assert in_workers == [[request.pk]]  # published again, with that delay
    # Nothing was recomputed: the mark waits with the request, later labels merge into it.
    assert set(AgreementSnapshot.objects.values_list("pk", "data_version")) == versions
    assert AgreementDirtyScope.objects.exists()
    assert _a_label_request(labeled[1]).pk == request.pk
    assert (
        OutboxMessage.objects.filter(kind=AGREEMENT_OUTBOX_KIND, done_at__isnull=True).count() == 1
    )


def test_once_the_budget_allows_the_request_refreshes(labeled, in_workers, settings):
    settings.AGREEMENT_REFRESH_BUDGET = 0.05
    _last_refresh_ran(seconds=5, ended_ago=96)
    request = _a_label_request(labeled[0])

    in_workers.clear()
    result = run_agreement_recompute(message_id=request.pk)

    assert "postponed" not in result and result["snapshots"] > 0
    request.refresh_from_db()
    assert request.done_at is not None and in_workers == []
    assert not AgreementDirtyScope.objects.exists()


@pytest.mark.parametrize("budget", [1, 0.5])
def test_a_budget_of_one_or_a_short_refresh_does_not_hold_back(
    labeled, in_workers, settings, budget
):
    settings.AGREEMENT_REFRESH_BUDGET = budget
    _last_refresh_ran(seconds=2, ended_ago=3)  # at 0.5: quiet for 2 s, over
    request = _a_label_request(labeled[0])
    in_workers.clear()
    assert "postponed" not in run_agreement_recompute(message_id=request.pk)
    assert in_workers == []


def test_recompute_now_never_waits(labeled, in_workers, settings):
    settings.AGREEMENT_REFRESH_BUDGET = 0.05
    _last_refresh_ran(seconds=5, ended_ago=1)
    schedule_agreement_recompute(project_id=default_project().pk, now=True)
    request = OutboxMessage.objects.get(kind=AGREEMENT_OUTBOX_KIND, done_at__isnull=True)
    in_workers.clear()
    assert "postponed" not in run_agreement_recompute(message_id=request.pk)
    request.refresh_from_db()
    assert request.done_at is not None and in_workers == []


def test_in_process_tasks_never_wait(labeled, settings):
    """The embedded mode (Celery eager) has nothing to hold a task back with: it refreshes."""
    settings.AGREEMENT_REFRESH_BUDGET = 0.05
    _last_refresh_ran(seconds=5, ended_ago=1)
    _a_label_request_run_at_commit(labeled[0])
    # Its commit ran the task in-process: no request is left waiting, the mark is consumed.
    assert not OutboxMessage.objects.filter(done_at__isnull=True).exists()
    assert not AgreementDirtyScope.objects.exists()


@pytest.mark.postgres
def test_a_recompute_reads_without_parallel_workers_and_restores_the_session(
    labeled, in_workers, settings, monkeypatch
):
    """Its statements run on one core of the database machine (no parallel workers); the
    connection's setting is as before once it is done, for whatever the process runs next."""
    from django.db import connection

    settings.AGREEMENT_REFRESH_BUDGET = 1

    def parallel_workers() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW max_parallel_workers_per_gather")
            return cursor.fetchone()[0]

    seen = []
    real = agreement.refresh_time_on_item_figures
    monkeypatch.setattr(
        agreement,
        "refresh_time_on_item_figures",
        lambda: (seen.append(parallel_workers()), real())[1],
    )
    before = parallel_workers()
    request = _a_label_request(labeled[0])
    run_agreement_recompute(message_id=request.pk)
    assert seen == ["0"] and before != "0" and parallel_workers() == before
