"""A project keeps an admin when its two admins stop being admins at once (PostgreSQL, two real
connections): while one transaction has demoted admin A and not committed, demoting admin B
waits for it (the lock on the project row, ``check_keeps_an_admin``) and then sees A demoted,
so it is refused — counted without that lock, each saw the other still an admin and both
passed."""

import threading

import psycopg
import pytest
from django.db import connection

from goldset.models import ProjectMembership
from goldset.services.projects import ProjectRefused, create_project, grant_role
from tests.factories import UserFactory
from tests.waiting import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _connect():
    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"], dbname=db["NAME"]
    )


def _a_lock_is_awaited(watcher) -> bool:
    row = watcher.execute(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND wait_event_type = 'Lock'"
    ).fetchone()
    watcher.rollback()
    return bool(row[0])


def test_two_admins_demoted_at_once_leave_one(db):
    first_admin, second_admin = UserFactory(username="ca-a"), UserFactory(username="ca-b")
    project = create_project(name="Race", slug="race", by=first_admin)
    grant_role(project=project, user=second_admin, role="admin")

    first, watcher = _connect(), _connect()
    outcome = []
    try:
        # The first demotion, as grant_role makes it, left uncommitted.
        first.execute(
            "SELECT id FROM goldset_projectmembership WHERE project_id = %s AND user_id = %s"
            " FOR UPDATE",
            [project.pk, first_admin.pk],
        )
        first.execute("SELECT id FROM goldset_project WHERE id = %s FOR UPDATE", [project.pk])
        first.execute(
            "UPDATE goldset_projectmembership SET role = 'annotator'"
            " WHERE project_id = %s AND user_id = %s",
            [project.pk, first_admin.pk],
        )

        def demote_second():
            try:
                grant_role(project=project, user=second_admin, role="annotator")
                outcome.append("demoted")
            except ProjectRefused as exc:
                outcome.append(str(exc))
            finally:
                connection.close()

        thread = threading.Thread(target=demote_second)
        thread.start()
        wait_until(
            lambda: _a_lock_is_awaited(watcher),
            timeout=30,
            what="the second demotion to wait for the first",
        )
        assert outcome == []  # still waiting for the first transaction
        first.commit()
        thread.join(timeout=30)
        assert not thread.is_alive()
    finally:
        first.close()
        watcher.close()
    assert outcome == ["A project keeps at least one admin."]
    roles = dict(
        ProjectMembership.objects.filter(project=project).values_list("user__username", "role")
    )
    assert roles == {"ca-a": "annotator", "ca-b": "admin"}
