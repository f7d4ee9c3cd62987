"""Personal API tokens: created (shown once) and revoked by their owner, stored as a sha256,
scoped read or write, with an optional expiry (at most ``API_TOKEN_MAX_LIFETIME_DAYS`` when that
is set, which also ends older tokens that long after their creation); every use is audited. A
user whose sign-in through the identity provider is refused loses every token
(:func:`revoke_all_api_tokens`)."""

import datetime as dt
import hashlib
import secrets

from django.db import transaction
from django.http import Http404
from django.utils import timezone

from goldset.conf import tunable
from goldset.selectors.projects import access_project
from workbench.models import ApiToken, ThrottleScope, TokenScope
from workbench.services.audit import record_event
from workbench.services.idempotency import claim_form_token
from workbench.services.login_throttle import lock_counter

TOKEN_PREFIX = "gst_"
# last_used_at is written at most this often per token: an active token costs no write per call.
LAST_USED_RESOLUTION = dt.timedelta(seconds=60)
# Refused tokens are audited at most once per address this often, with the count since the last.
REFUSAL_EVENT_INTERVAL = dt.timedelta(seconds=60)


def max_lifetime_days() -> int:
    """The longest lifetime of a token in days (0: no limit)."""
    return int(tunable("API_TOKEN_MAX_LIFETIME_DAYS") or 0)


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


@transaction.atomic
def create_api_token(
    *,
    user,
    name: str,
    scope: str = TokenScope.READ,
    project=None,
    expires_in_days: int | None = None,
    form_token: str | None = None,
) -> tuple[ApiToken, str | None]:
    """A new token for ``user``, limited to ``project`` (one of the user's projects) or valid
    in every project the user belongs to (``None``; it reaches a project only while they are a
    member, with their role there); returns it and the plaintext, which is never stored or
    shown again. ``expires_in_days=None`` means no expiry. A ``form_token`` already used by
    ``user`` (a double-submitted form) creates nothing: the first submit's token and ``None``
    (its plaintext was in the first answer only). Http404 for a project the user is not in."""
    if scope not in TokenScope.values:
        raise ValueError(f"unknown scope {scope!r}")
    if project is not None:
        access_project(user=user, slug=project.slug)  # Http404 unless a member
    claim = claim_form_token(user=user, token=form_token, kind="api_token")
    if claim is not None and not claim.first:
        return ApiToken.objects.get(pk=claim.row.object_id), None
    longest = max_lifetime_days()
    if longest:
        expires_in_days = min(expires_in_days or longest, longest)
    prefix = secrets.token_hex(4)
    raw = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    expires_at = timezone.now() + dt.timedelta(days=expires_in_days) if expires_in_days else None
    token = ApiToken.objects.create(
        user=user,
        name=name.strip()[:80] or "token",
        prefix=prefix,
        digest=_digest(raw),
        scope=scope,
        project=project,
        expires_at=expires_at,
    )
    record_event(
        actor=user,
        verb="api_token_created",
        obj=token,
        detail={
            "prefix": prefix,
            "scope": scope,
            "project": project.slug if project is not None else None,
            "expires_at": str(expires_at or ""),
        },
    )
    if claim is not None:
        claim.record(token)
    return token, raw


@transaction.atomic
def revoke_api_token(*, user, token_id: int) -> ApiToken:
    """Revokes one of ``user``'s own tokens (Http404 for anyone else's). Idempotent."""
    token = ApiToken.objects.select_for_update().filter(pk=token_id, user=user).first()
    if token is None:
        raise Http404("No such token.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        record_event(
            actor=user, verb="api_token_revoked", obj=token, detail={"prefix": token.prefix}
        )
    return token


def authenticate_api_token(*, raw: str, method: str, path: str) -> ApiToken | None:
    """The live token ``raw`` names (not revoked, not expired, owner active), or None. Records an
    ``api_token_used`` audit event for each use and refreshes ``last_used_at``."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    token = (
        ApiToken.objects.select_related("user").filter(digest=_digest(raw), revoked_at=None).first()
    )
    now = timezone.now()
    if token is None or not token.user.is_active:
        return None
    if token.expires_at is not None and token.expires_at <= now:
        return None
    longest = max_lifetime_days()
    if longest and token.created_at + dt.timedelta(days=longest) <= now:
        return None
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    record_event(
        actor=token.user,
        verb="api_token_used",
        obj=token,
        detail={"prefix": token.prefix, "method": method, "path": path[:300]},
    )
    return token


def revoke_all_api_tokens(*, user, reason: str) -> int:
    """Revoke every live token of ``user`` (inside the caller's transaction), with one audit
    event naming them and ``reason``. Returns how many were revoked."""
    live = list(ApiToken.objects.select_for_update().filter(user=user, revoked_at=None))
    if not live:
        return 0
    ApiToken.objects.filter(pk__in=[t.pk for t in live]).update(revoked_at=timezone.now())
    record_event(
        actor=user,
        verb="api_tokens_revoked",
        obj=user,
        detail={"reason": reason, "prefixes": [t.prefix for t in live]},
    )
    return len(live)


def list_api_tokens(*, user) -> list[ApiToken]:
    """``user``'s tokens, newest first, each with ``ends_at``: when it stops working (its expiry,
    or earlier the maximum lifetime; None: never)."""
    tokens = list(
        ApiToken.objects.filter(user=user).select_related("project").order_by("-created_at", "-id")
    )
    longest = max_lifetime_days()
    for token in tokens:
        token.ends_at = token_ends_at(token, longest=longest)
    return tokens


def token_ends_at(token: ApiToken, *, longest: int | None = None):
    """When ``token`` stops working: its expiry, or earlier the installation's maximum
    lifetime (``API_TOKEN_MAX_LIFETIME_DAYS``; ``longest`` when the caller read it); None:
    never."""
    longest = max_lifetime_days() if longest is None else longest
    ends = [token.expires_at] if token.expires_at else []
    if longest:
        ends.append(token.created_at + dt.timedelta(days=longest))
    return min(ends) if ends else None


@transaction.atomic
def record_token_refusal(*, address: str, raw: str, method: str, path: str) -> bool:
    """Audit an API call whose token was refused (unknown, revoked, expired, owner inactive):
    at most one ``api_token_refused`` event per address per ``REFUSAL_EVENT_INTERVAL``, whose
    ``refusals`` counts the refusals from that address since its previous event (this one
    included), so 300 bad tokens leave a trace without flooding the log. Counted in the
    database (a locked row per address), like the lockout. Returns whether an event was written.
    Only the token's public prefix is kept, never the token."""
    now = timezone.now()
    row = lock_counter(scope=ThrottleScope.TOKEN_ADDRESS, key=address[:160], now=now)
    row.failures += 1
    written = row.blocked_until is None or row.blocked_until <= now
    if written:
        parts = raw.split("_")
        record_event(
            actor=None,
            verb="api_token_refused",
            detail={
                "address": address,
                "refusals": row.failures,
                "since": row.window_started_at.isoformat(),
                "prefix": parts[1][:16] if raw.startswith(TOKEN_PREFIX) and len(parts) > 2 else "",
                "method": method,
                "path": path[:300],
            },
        )
        row.failures, row.window_started_at = 0, now
        row.blocked_until = now + REFUSAL_EVENT_INTERVAL
    row.save(update_fields=["failures", "window_started_at", "blocked_until"])
    return written
