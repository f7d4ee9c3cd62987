"""A person's access as a whole: the sessions they signed in with, their API tokens, their
account being active. An installation admin, the directory (SCIM) and a refused sign-in all end
access through :func:`deactivate_user` or its parts, so the rule has one home: a deactivated
person's sessions are deleted, their tokens revoked and their claimed items freed back to the
pool, while their labels, reviews and audit history stay attributed to them.

Also the notice a week before an API token ends (:func:`notify_expiring_tokens`, run every 6 hours
by the Celery beat entry ``notify-expiring-tokens``)."""

import datetime as dt

from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import DEFAULT_PROJECT_SLUG, NotificationKind, Project, ProjectMembership
from goldset.services.labeling import release_claims_of
from goldset.services.notifications import notify
from goldset.services.reviews import release_review_claims_of
from workbench.models import ApiToken, UserSession
from workbench.roles import forget_roles
from workbench.services.api_tokens import (
    max_lifetime_days,
    revoke_all_api_tokens,
    token_ends_at,
)
from workbench.services.audit import record_event


class IdentityRefused(GoldsetError):
    """An admin's action on a person that is refused (the message says why)."""


# How long before its end a token's owner is told (one notice per token).
EXPIRY_NOTICE = dt.timedelta(days=7)


def remember_session(sender, request, user, **kwargs) -> None:
    """``user_logged_in`` receiver: record the session key of every login (password, OIDC,
    SAML, the test client), so :func:`end_sessions` can find a person's sessions without
    decoding every session row."""
    key = getattr(getattr(request, "session", None), "session_key", None)
    if not key:
        return
    UserSession.objects.update_or_create(session_key=key, defaults={"user": user})
    # Rows of the person's sessions that ended (logged out, expired) go at their next login.
    live = Session.objects.filter(expire_date__gt=timezone.now()).values("session_key")
    UserSession.objects.filter(user=user).exclude(session_key=key).exclude(
        session_key__in=live
    ).delete()


@transaction.atomic
def end_sessions(*, user, by=None, reason: str) -> int:
    """Delete every session ``user`` signed in with: their next request is anonymous. Audited
    (``sessions_ended``, with ``reason``) even when none was open. Returns how many sessions
    were deleted. Idempotent."""
    keys = list(UserSession.objects.filter(user=user).values_list("session_key", flat=True))
    keys += _unrecorded_sessions_of(user)
    deleted, _ = Session.objects.filter(session_key__in=keys).delete()
    UserSession.objects.filter(user=user).delete()
    record_event(
        actor=by,
        verb="sessions_ended",
        obj=user,
        detail={"reason": reason, "sessions": deleted},
    )
    return deleted


def _unrecorded_sessions_of(user) -> list[str]:
    """Keys of ``user``'s live sessions that no ``UserSession`` names: those signed in before
    sign-ins were recorded (workbench 0008). Each such session is read to find its user, so
    this costs one pass over the unrecorded live sessions; there are fewer of them every day
    (none once the last expires), and ending sessions is a rare admin action."""
    recorded = UserSession.objects.values("session_key")
    unrecorded = Session.objects.filter(expire_date__gt=timezone.now()).exclude(
        session_key__in=recorded
    )
    return [
        session.session_key
        for session in unrecorded.iterator(chunk_size=500)
        if session.get_decoded().get("_auth_user_id") == str(user.pk)
    ]


@transaction.atomic
def revoke_tokens_of(*, user, by=None, reason: str) -> int:
    """Revoke every live API token of ``user`` (an admin's action); audited by the token
    service. Returns how many."""
    revoked = revoke_all_api_tokens(user=user, reason=reason)
    if by is not None and by != user:
        record_event(
            actor=by, verb="api_tokens_revoked_by_admin", obj=user, detail={"revoked": revoked}
        )
    return revoked


@transaction.atomic
def deactivate_user(*, user, by=None, reason: str) -> dict:
    """End ``user``'s access at once: the account is made inactive, its sessions deleted, its
    API tokens revoked and its unlabeled and unreviewed claims handed back to the pool. Labels,
    reviews, memberships and audit history stay. Idempotent (a second call changes nothing but
    is audited). Returns what was ended, as counts. An admin cannot deactivate themselves
    (:class:`IdentityRefused`): someone else must, so nobody locks the last admin out by a slip."""
    if by is not None and by.pk == user.pk:
        raise IdentityRefused("You cannot deactivate yourself; ask another installation admin.")
    was_active = user.is_active
    if was_active:
        user.is_active = False
        user.save(update_fields=["is_active"])
    forget_roles(user)
    ended = {
        "sessions": end_sessions(user=user, by=by, reason=reason),
        "tokens": revoke_all_api_tokens(user=user, reason=reason),
        "claims": len(release_claims_of(annotator=user)),
        "review_claims": release_review_claims_of(reviewer=user),
    }
    record_event(
        actor=by,
        verb="user_deactivated",
        obj=user,
        detail={"reason": reason, "was_active": was_active, **ended},
    )
    return ended


@transaction.atomic
def reactivate_user(*, user, by=None, reason: str) -> None:
    """Let ``user`` sign in again (tokens stay revoked: they make new ones). Audited."""
    if not user.is_active:
        user.is_active = True
        user.save(update_fields=["is_active"])
        record_event(actor=by, verb="user_reactivated", obj=user, detail={"reason": reason})


def _notice_project(token: ApiToken, projects_by_user: dict) -> Project | None:
    if token.project is not None:
        return token.project
    return projects_by_user.get(token.user_id)


@transaction.atomic
def notify_expiring_tokens(*, now: dt.datetime | None = None) -> int:
    """Tell each owner of a live token that ends within :data:`EXPIRY_NOTICE` (inbox, and
    e-mail for those who chose it), once per token (``expiry_notified_at``): a later run
    notifies nobody of that token again. The notice goes to the token's project, or for a
    token of all projects to the person's default project membership (else their first
    project). Returns the number of tokens notified. Constant queries per token."""
    now = now or timezone.now()
    longest = max_lifetime_days()
    horizon = now + EXPIRY_NOTICE
    ends_soon = Q(expires_at__lte=horizon, expires_at__gt=now)
    if longest:
        created_before = horizon - dt.timedelta(days=longest)
        ends_soon |= Q(created_at__lte=created_before)
    candidates = (
        ApiToken.objects.select_for_update(of=("self",), skip_locked=True)
        .filter(ends_soon, revoked_at=None, expiry_notified_at=None, user__is_active=True)
        .select_related("project", "user")
    )
    due = [t for t in candidates if (end := token_ends_at(t, longest=longest)) and now < end]
    if not due:
        return 0
    projects_by_user = _home_projects({t.user_id for t in due if t.project is None})
    notified = 0
    for token in due:
        project = _notice_project(token, projects_by_user)
        if project is None:
            continue
        end = token_ends_at(token, longest=longest)
        notify(
            project=project,
            recipients=[token.user_id],
            kind=NotificationKind.TOKEN_EXPIRING,
            text=f"Your API token “{token.name}” (gst_{token.prefix}_…) stops working on "
            f"{end:%Y-%m-%d %H:%M} UTC. Create a new one before then.",
            link="/tokens/",
            key=f"token_expiring:{token.pk}",
        )
        notified += 1
    ApiToken.objects.filter(pk__in=[t.pk for t in due]).update(expiry_notified_at=now)
    return notified


def _home_projects(user_ids: set[int]) -> dict[int, Project]:
    """Each user's default project if they belong to it, else their first project by slug."""
    found: dict[int, Project] = {}
    memberships = (
        ProjectMembership.objects.filter(user_id__in=user_ids)
        .select_related("project")
        .order_by("user_id", "project__slug")
    )
    for m in memberships:
        if m.user_id not in found or m.project.slug == DEFAULT_PROJECT_SLUG:
            found[m.user_id] = m.project
    return found
