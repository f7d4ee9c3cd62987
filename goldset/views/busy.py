"""How a page answers a submit that met a lock twice (:class:`SubmitBusy`): the form it came
from, re-rendered with what the person entered and the message, as 503 with ``Retry-After``
(``base.html``'s htmx config swaps 503 answers in, so the htmx form shows it too)."""

from goldset.services.locking import SubmitBusy


def as_busy(response, exc: SubmitBusy):
    response.status_code = 503
    response["Retry-After"] = str(exc.retry_after_seconds)
    return response
