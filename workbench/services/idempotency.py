"""Creates that happen once however often they are asked for.

Page forms that create something (API tokens, webhook endpoints) carry a hidden ``form_token``,
new at every render: a double-click submits it twice, and :func:`claim_form_token` lets only the
first create; the repeat gets the object the first made. API clients send an
``Idempotency-Key`` header (draft-ietf-httpapi-idempotency-key-header): the first request with a
key runs and its answer is kept; a repeat with the same method and path gets that answer again
(``Idempotent-Replayed: true``), one still running gets 409, the key reused for another request
422. Keys are per user and kept ``IDEMPOTENCY_KEY_HOURS``; a 5xx or 429 answer frees its key for a
retry, and so does a first request that never answered (``ABANDONED_AFTER``: its process died).

A key is claimed by inserting its row (unique per user and key): a concurrent repeat waits on
the first's transaction and then finds its row, so two simultaneous submits still create one.
"""

import datetime as dt
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from workbench.models import IdempotencyKey

IDEMPOTENCY_KEY_HOURS = 24
MAX_KEY_CHARS = 255
# A first API request that has not answered after this long died with its process: its key is
# free again (a live request is long answered: gunicorn and the statement timeout end it).
ABANDONED_AFTER = dt.timedelta(minutes=10)


@dataclass(frozen=True)
class FormClaim:
    row: IdempotencyKey
    first: bool  # this request is the first with the token: it creates

    def record(self, obj) -> None:
        """Name the object the first request created (inside its transaction)."""
        self.row.object_type = obj._meta.label_lower
        self.row.object_id = str(obj.pk)
        self.row.save(update_fields=["object_type", "object_id"])


def _fresh_after() -> dt.datetime:
    return timezone.now() - dt.timedelta(hours=IDEMPOTENCY_KEY_HOURS)


def _claim(*, user, key: str, method: str = "", path: str = "") -> tuple[IdempotencyKey, bool]:
    """Insert the key's row, or return the existing one (after its first request committed).
    Must run inside a transaction (the caller's); an expired row is replaced."""
    IdempotencyKey.objects.filter(user=user, key=key, created_at__lt=_fresh_after()).delete()
    try:
        with transaction.atomic():
            row = IdempotencyKey.objects.create(user=user, key=key, method=method, path=path[:300])
        return row, True
    except IntegrityError:  # a first request holds the key (we waited for its commit)
        return IdempotencyKey.objects.get(user=user, key=key), False


def claim_form_token(*, user, token: str | None, kind: str) -> FormClaim | None:
    """Claim a page form's token for a create of ``kind`` (None without a token: the create is
    not deduplicated). Call inside the create's transaction; on a repeat, ``first`` is False and
    ``row.object_id`` names what the first submit created."""
    token = (token or "").strip()[:MAX_KEY_CHARS]
    if not token or not getattr(user, "is_authenticated", False):
        return None
    row, first = _claim(user=user, key=f"form:{kind}:{token}")
    return FormClaim(row=row, first=first)


# ---------------------------------------------------------------- API: Idempotency-Key


@dataclass(frozen=True)
class ApiClaim:
    row: IdempotencyKey
    outcome: str  # "first", "replay", "running", "mismatch"


def claim_api_key(*, user, key: str, method: str, path: str) -> ApiClaim:
    """Claim an ``Idempotency-Key`` for one API request (committed at once, so a concurrent
    repeat sees it running)."""
    with transaction.atomic():
        row, first = _claim(user=user, key=f"api:{key[:MAX_KEY_CHARS]}", method=method, path=path)
    if first:
        return ApiClaim(row=row, outcome="first")
    if (row.method, row.path) != (method, path[:300]):
        return ApiClaim(row=row, outcome="mismatch")
    if row.status_code is None and row.created_at < timezone.now() - ABANDONED_AFTER:
        IdempotencyKey.objects.filter(pk=row.pk, status_code=None).delete()
        return claim_api_key(user=user, key=key, method=method, path=path)
    if row.status_code is None:
        return ApiClaim(row=row, outcome="running")
    return ApiClaim(row=row, outcome="replay")


def kept_api_answer(*, user, key: str, method: str, path: str) -> IdempotencyKey | None:
    """The kept answer of ``user``'s earlier request with this key, method and path (answered,
    not expired), or None. Claims nothing: for a repeat the access rules would now refuse
    because its first request changed them (deleted the project, removed or demoted the
    caller); the first request passed them, or its answer would not have been kept."""
    return IdempotencyKey.objects.filter(
        user=user,
        key=f"api:{key[:MAX_KEY_CHARS]}",
        method=method,
        path=path[:300],
        status_code__isnull=False,
        created_at__gte=_fresh_after(),
    ).first()


def record_api_answer(*, row: IdempotencyKey, response) -> None:
    """Keep the first request's answer for repeats; a server error or a rate limit refusal (429:
    DRF checks the limit after the key was claimed) frees the key for the retry instead."""
    if response.status_code >= 500 or response.status_code == 429:
        IdempotencyKey.objects.filter(pk=row.pk).delete()
        return
    IdempotencyKey.objects.filter(pk=row.pk).update(
        status_code=response.status_code,
        content_type=response.get("Content-Type", "")[:100],
        body=bytes(getattr(response, "content", b"") or b""),
        location=response.get("Location", "")[:500],
    )
