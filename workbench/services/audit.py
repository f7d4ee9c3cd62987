"""The audit log: every view of an item and every change is recorded here, append-only.

Each event made during a request names the client's address (``detail["address"]``: the trusted
proxy rule of :mod:`workbench.client_address`, the same the lockout uses) and its user agent
(``detail["user_agent"]``), taken from :mod:`workbench.request_context`, so no caller can forget
them: sign-ins, tokens created, used and revoked, webhook changes and API writes alike."""

from collections.abc import Iterable
from typing import Any

from workbench.models import AuditEvent
from workbench.request_context import current, current_request_id


def record_event(
    *,
    actor,
    verb: str,
    obj: Any = None,
    object_type: str = "",
    object_id: str | int = "",
    detail: dict | None = None,
    project: Any = None,
) -> AuditEvent:
    """Insert one audit event. Pass ``obj`` (a model instance) or ``object_type``/``object_id``.

    Runs inside the caller's transaction, so a change and its event commit or roll back together.
    The request id, client address and user agent come from :mod:`workbench.request_context`
    (the request, or for the id the request that queued the task, in progress); a ``detail``
    naming ``address`` keeps its own. The project is ``project``, else ``obj``'s project.
    """
    if obj is not None:
        object_type = object_type or obj._meta.label_lower
        object_id = object_id or obj.pk
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    context = current()
    client = {
        name: value
        for name, value in (("address", context.client_address), ("user_agent", context.user_agent))
        if value
    }
    return AuditEvent.objects.create(
        actor=actor,
        verb=verb,
        object_type=object_type,
        object_id=str(object_id),
        detail={**client, **(detail or {})},
        request_id=context.request_id,
        project_id=_project_id(project, obj),
    )


def _project_id(project, obj) -> int | None:
    if project is not None:
        return project.pk
    return getattr(obj, "project_id", None)


def record_events(*, actor, verb: str, events: Iterable[tuple[Any, dict]]) -> int:
    """Insert many events of one actor and verb in one statement (bulk imports): ``events``
    yields ``(obj, detail)`` pairs; each row is what :func:`record_event` would have written for
    it. Same transaction rules as :func:`record_event`. Returns the number inserted."""
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    request_id = current_request_id()
    rows = [
        AuditEvent(
            actor=actor,
            verb=verb,
            object_type=obj._meta.label_lower,
            object_id=str(obj.pk),
            detail=detail or {},
            request_id=request_id,
            project_id=getattr(obj, "project_id", None),
        )
        for obj, detail in events
    ]
    AuditEvent.objects.bulk_create(rows)
    return len(rows)
