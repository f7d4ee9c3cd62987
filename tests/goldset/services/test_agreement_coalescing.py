"""One agreement recompute at a time (issue 26): a request whose task finds another recompute
running (the recompute lock held by another connection) starts nothing in parallel and is left
open, and the next recompute to run covers it; the figures are those of a recompute alone."""

import psycopg
import pytest
from django.db import connection

from goldset.models import AgreementDirtyScope, AgreementSnapshot, OutboxMessage
from goldset.rules.jobs import AGREEMENT_OUTBOX_KIND
from goldset.services.agreement import recompute_lock_key, schedule_agreement_recompute
from goldset.tasks import recompute_agreement_task
from tests.goldset.answers_helpers import claim_and_label
from tests.goldset.project_support import default_project
from tests.waiting import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _lock() -> int:
    """The default project's recompute lock (each project has its own)."""
    return recompute_lock_key(default_project().pk)


def _recompute_running_elsewhere() -> psycopg.Connection:
    s = connection.settings_dict
    other = psycopg.connect(
        dbname=s["NAME"],
        user=s["USER"],
        password=s["PASSWORD"] or None,
        host=s["HOST"] or None,
        port=s["PORT"] or None,
        autocommit=True,
    )
    other.execute("SELECT pg_advisory_lock(%s)", [_lock()])
    return other


def _lock_held_elsewhere() -> bool:
    """Whether a server process still holds the recompute lock (a closed connection's backend
    lets go of it when it exits, a moment after the client closed)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND pid <> pg_backend_pid() AND ((classid::bigint << 32) | objid::bigint) = %s)",
            [_lock()],
        )
        return cursor.fetchone()[0]


def _open_requests():
    return OutboxMessage.objects.filter(kind=AGREEMENT_OUTBOX_KIND, done_at__isnull=True)


def test_a_request_while_a_recompute_runs_is_picked_up_by_the_next_one(labeled):
    # the labels' commits ran the task in-process (embedded mode): figures exist, marks gone
    assert AgreementSnapshot.objects.exists() and not AgreementDirtyScope.objects.exists()
    before = set(AgreementSnapshot.objects.values_list("pk", "data_version"))
    other = _recompute_running_elsewhere()
    try:
        # a new label: a mark, and a request whose task (run at commit) finds a recompute running
        claim_and_label(labeled[0])
        request = _open_requests().get()
        assert recompute_agreement_task(outbox_id=request.pk) == {
            "coalesced": True,
            "project_id": default_project().pk,
        }
        request.refresh_from_db()
        assert request.started_at is None and request.done_at is None  # left for the next run
        assert AgreementDirtyScope.objects.exists()
        assert set(AgreementSnapshot.objects.values_list("pk", "data_version")) == before
    finally:
        other.close()  # the running recompute ends (its lock goes with its connection)
    wait_until(lambda: not _lock_held_elsewhere(), timeout=30, what="the lock to be let go")

    result = recompute_agreement_task()  # the next run, with no message of its own
    assert "data_version" in result
    request.refresh_from_db()
    assert request.done_at is not None
    assert not _open_requests().exists() and not AgreementDirtyScope.objects.exists()
    assert set(AgreementSnapshot.objects.values_list("pk", "data_version")) != before


def test_a_recompute_leaves_the_lock_free_for_the_next(labeled):
    schedule_agreement_recompute(project_id=default_project().pk, now=True)
    assert "data_version" in recompute_agreement_task()
    s = connection.settings_dict
    with psycopg.connect(
        dbname=s["NAME"], user=s["USER"], host=s["HOST"] or None, port=s["PORT"] or None
    ) as other:
        taken = other.execute("SELECT pg_try_advisory_lock(%s)", [_lock()]).fetchone()[0]
    assert taken is True
