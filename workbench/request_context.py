"""The context of the unit of work in progress (a web request or a Celery task), for the audit log.

Set by :class:`workbench.middleware.RequestIdMiddleware` for a request and by
:class:`workbench.celery.ContextTask` for a task (which carries the id of the request that queued
it in a message header), so services never take the request: the audit service reads this.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

# The Celery message header that carries the queuing request's id into the task.
REQUEST_ID_HEADER = "goldset_request_id"


@dataclass(frozen=True, slots=True)
class RequestContext:
    request_id: str = ""
    client_address: str = ""
    user_agent: str = ""


_NONE = RequestContext()
_current: ContextVar[RequestContext | None] = ContextVar("goldset_request_context", default=None)


def current() -> RequestContext:
    """The context of the work in progress; empty fields outside a request or task."""
    return _current.get() or _NONE


def current_request_id() -> str:
    return current().request_id


@contextmanager
def bound(context: RequestContext) -> Iterator[RequestContext]:
    """Make ``context`` current for the block, restoring the previous one afterwards."""
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)
