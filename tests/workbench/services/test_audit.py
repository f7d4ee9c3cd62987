import pytest
from django.db import DatabaseError, connection, transaction

from workbench.models import AuditEvent
from workbench.services.audit import record_event

pytestmark = pytest.mark.django_db


def test_record_event_stores_actor_object_and_detail(annotator):
    event = record_event(actor=annotator, verb="viewed", obj=annotator, detail={"why": "test"})
    assert (event.object_type, event.object_id, event.detail) == (
        "auth.user",
        str(annotator.pk),
        {"why": "test"},
    )


def test_anonymous_actor_is_stored_as_none():
    from django.contrib.auth.models import AnonymousUser

    assert record_event(actor=AnonymousUser(), verb="login_failed").actor is None


@pytest.mark.parametrize(
    "statement",
    ["UPDATE workbench_auditevent SET verb = 'edited'", "DELETE FROM workbench_auditevent"],
)
def test_postgres_refuses_to_change_or_delete_audit_events(postgres, annotator, statement):
    record_event(actor=annotator, verb="login")
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(statement)
    assert AuditEvent.objects.get().verb == "login"
