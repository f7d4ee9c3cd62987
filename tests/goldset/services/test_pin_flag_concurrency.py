"""Issue 17: ``Triple.pin_superseded`` stays right when a triple is pinned to a block's old
version while another transaction adds the block's next version (PostgreSQL, two real
connections): whichever commits first, the pin ends up flagged, as the old per-read rule
would have listed it."""

import threading
import time

import psycopg
import pytest
from django.db import connection

from goldset.models import Triple, TripleRevision
from tests.goldset.curation_support import block_version, write_triple
from workbench.roles import Role

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PIN = "UPDATE goldset_triple SET current_revision_id = %s WHERE id = %s"
NEW_VERSION = (
    "INSERT INTO goldset_blockversion (block_id, version, text, section, sha256, created_at)"
    " VALUES (%s, 2, 'Newer text.', '', repeat('b', 64), now())"
)


def _connect():
    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"], dbname=db["NAME"]
    )


def _wait_until_blocked(watcher, pid: int) -> None:
    """Until ``pid`` waits on a lock (polls pg_stat_activity; fails after 30 s)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        row = watcher.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid]
        ).fetchone()
        watcher.rollback()
        if row and row[0] == "Lock":
            return
    raise AssertionError("the second transaction never waited for the first")


@pytest.fixture
def pinned_elsewhere(make_user):
    """A triple whose current revision pins another block, with a second revision pinning v1
    of ``block`` (not current yet)."""
    author = make_user(Role.ANNOTATOR, username="author")
    triple = write_triple(author)
    v1 = block_version()
    revision = TripleRevision.objects.create(
        project_id=triple.project_id,
        triple=triple,
        number=2,
        question="Q?",
        expected_block_version=v1,
        expected_answer="A.",
        created_by=author,
        reviewers_needed=2,
    )
    return triple, revision, v1.block_id


def _run(first_sql, first_args, second_sql, second_args):
    """``first`` runs its statement and keeps its transaction open; ``second`` runs its own in
    a thread and must wait for ``first``'s lock; then both commit."""
    first, second, watcher = _connect(), _connect(), _connect()
    errors = []
    try:
        first.execute(first_sql, first_args)

        def run_second():
            try:
                second.execute(second_sql, second_args)
                second.commit()
            except Exception as exc:  # reported to the test thread
                errors.append(exc)

        thread = threading.Thread(target=run_second)
        thread.start()
        _wait_until_blocked(watcher, second.info.backend_pid)
        first.commit()
        thread.join(timeout=30)
        assert not thread.is_alive() and errors == []
    finally:
        for conn in (first, second, watcher):
            conn.close()


def test_a_new_version_waits_for_an_open_pin_and_then_flags_it(pinned_elsewhere, postgres):
    triple, revision, block_id = pinned_elsewhere
    _run(PIN, [revision.pk, triple.pk], NEW_VERSION, [block_id])
    assert Triple.objects.get(pk=triple.pk).pin_superseded is True


def test_a_pin_waits_for_an_open_new_version_and_then_sees_it(pinned_elsewhere, postgres):
    triple, revision, block_id = pinned_elsewhere
    _run(NEW_VERSION, [block_id], PIN, [revision.pk, triple.pk])
    assert Triple.objects.get(pk=triple.pk).pin_superseded is True
