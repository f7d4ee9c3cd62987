"""The audit log: every view of an item and every change is recorded here, append-only."""

from typing import Any

from workbench.models import AuditEvent
from workbench.request_context import current_request_id


def record_event(
    *,
    actor,
    verb: str,
    obj: Any = None,
    object_type: str = "",
    object_id: str | int = "",
    detail: dict | None = None,
) -> AuditEvent:
    """Insert one audit event. Pass ``obj`` (a model instance) or ``object_type``/``object_id``.

    Runs inside the caller's transaction, so a change and its event commit or roll back together.
    The request id comes from :mod:`workbench.request_context` (the request, or the request that
    queued the task, in progress).
    """
    if obj is not None:
        object_type = object_type or obj._meta.label_lower
        object_id = object_id or obj.pk
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    return AuditEvent.objects.create(
        actor=actor,
        verb=verb,
        object_type=object_type,
        object_id=str(object_id),
        detail=detail or {},
        request_id=current_request_id(),
    )
