"""Accounts: the role groups, login with brute-force protection, sign-in through an OpenID
Connect provider, and demo users."""

import hashlib
import re

from django.contrib.auth import authenticate, get_user_model, login
from django.contrib.auth.models import Group, Permission
from django.db import IntegrityError, transaction
from django.utils import timezone

from goldset.models import DEFAULT_PROJECT_SLUG, Project, ProjectMembership, default_project_id
from workbench.models import OidcIdentity, ScimUser
from workbench.roles import ALL_ROLES, ROLE_PERMISSIONS, ROLE_RANK, Role, forget_roles
from workbench.services.api_tokens import revoke_all_api_tokens
from workbench.services.audit import record_event
from workbench.services.identity import end_sessions


def ensure_roles(*, using: str = "default") -> None:
    """Create the role groups and give each its permissions. Idempotent; safe after every migrate."""
    for role, perms in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.using(using).get_or_create(name=role.value)
        wanted = []
        for dotted in perms:
            app_label, codename = dotted.split(".")
            perm = (
                Permission.objects.using(using)
                .filter(content_type__app_label=app_label, codename=codename)
                .first()
            )
            if perm is not None:
                wanted.append(perm)
        group.permissions.set(wanted)


@transaction.atomic
def create_user_with_role(*, username: str, password: str, role: Role, project=None, **fields):
    """Create (or reset the password of) a user holding exactly ``role`` in ``project`` (the
    default project when ``None``; its admins are also installation admins, staff)."""
    User = get_user_model()
    user, _ = User.objects.get_or_create(username=username, defaults=fields)
    user.set_password(password)
    user.is_staff = role == Role.ADMIN and project is None
    user.save()
    user.groups.set([Group.objects.get(name=role.value)])
    ProjectMembership.objects.update_or_create(
        project_id=project.pk if project is not None else default_project_id(),
        user=user,
        defaults={"role": role.value},
    )
    return user


def log_in(*, request, username: str, password: str):
    """Authenticate and log in through the throttled backend (``workbench.auth``), which counts
    failures, refuses locked accounts and throttled addresses, and audits every attempt.
    Returns the user, or ``None`` for bad credentials; raises ``LoginLocked`` /
    ``LoginThrottled`` (both ``LoginRefused``) when the attempt was refused unchecked."""
    user = authenticate(request, username=username, password=password)
    refusal = getattr(request, "login_refusal", None)
    if refusal is not None:
        raise refusal
    if user is not None:
        login(request, user)
    return user


class SignInRefused(Exception):
    """An identity provider vouched for someone we do not let in (``reason``: ``no_role`` or
    ``inactive``)."""

    def __init__(self, *, reason: str, values: list[str]):
        super().__init__(f"{reason}: claim values {values!r}")
        self.reason = reason
        self.values = values


_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")


def _new_username(*, claims: dict, issuer: str, subject: str) -> str:
    """The provider's preferred username (or e-mail, or subject), made a valid Django username;
    when a local account already has it, a suffix from the subject keeps them apart (an
    identity provider never takes over a local account by naming it)."""
    User = get_user_model()
    wanted = next(
        (
            v
            for v in (claims.get("preferred_username"), claims.get("email"), subject)
            if isinstance(v, str) and v.strip()
        ),
        subject,
    )
    base = _USERNAME_UNSAFE.sub("_", wanted.strip())[:120] or "oidc"
    if not User.objects.filter(username=base).exists():
        return base
    digest = hashlib.sha256(f"{issuer}|{subject}".encode()).hexdigest()[:10]
    return f"{base}-{digest}"


def _text_claim(claims: dict, name: str, limit: int) -> str:
    value = claims.get(name)
    return value.strip()[:limit] if isinstance(value, str) else ""


def sign_in_with_provider(
    *,
    issuer: str,
    subject: str,
    claims: dict,
    role: Role | None,
    provider: str,
    values: list[str],
    project_roles: dict[str, Role] | None = None,
    mapped_projects: frozenset[str] = frozenset(),
    method: str = "oidc",
):
    """The user an OpenID Connect (or SAML: ``method="saml"``, the IdP's entity id as
    ``issuer`` and the NameID as ``subject``) sign-in stands for, created on the first sign-in and updated on
    every one: e-mail and name from the claims, and exactly ``role`` in the default project
    (is_staff for admins there), so a role changed at the provider takes effect at the next
    sign-in. ``role`` is what ``workbench.roles.role_from_claims`` made of the claim's
    ``values``; ``project_roles`` ({slug: role}, from ``project_roles_from_claims``) are the
    roles in named projects. The memberships of every project the role map names
    (``mapped_projects``) are set at each sign-in: granted or changed where the claims give a
    role, removed where they no longer do; other projects' memberships (granted on their
    members page) are left alone. Slugs of projects that do not exist are ignored.

    Without a role in any existing project the sign-in is refused (:class:`SignInRefused`,
    raised after the refusal committed): a user who had signed in before loses every mapped
    role at once, since the provider has withdrawn them. A user deactivated here is refused too (roles kept). Either refusal revokes
    every API token of the user, so someone removed at the provider does not keep calling the
    API. Every sign-in and every refusal is audited; a role change is its own event.
    Atomic; locks the identity row, so simultaneous first sign-ins make one user."""
    detail = {"method": method, "provider": provider, "issuer": issuer, "subject": subject}
    if _directory_account(issuer=issuer, subject=subject) is not None:
        return _sign_in_directory_account(issuer=issuer, subject=subject, detail=detail)
    inactive = OidcIdentity.objects.filter(
        issuer=issuer, subject=subject, user__is_active=False
    ).exists()
    project_roles = dict(project_roles or {})
    if DEFAULT_PROJECT_SLUG in project_roles:  # "value:default:role" is "value:role"
        given = project_roles.pop(DEFAULT_PROJECT_SLUG)
        role = given if role is None else max(role, given, key=ROLE_RANK.__getitem__)
    managed = {
        p.slug: p
        for p in Project.objects.filter(slug__in=set(mapped_projects) | set(project_roles)).exclude(
            slug=DEFAULT_PROJECT_SLUG
        )
    }
    named = {managed[slug]: given for slug, given in project_roles.items() if slug in managed}
    if (role is None and not named) or inactive:
        reason = "inactive" if inactive else "no_role"
        _refuse_sign_in(
            issuer=issuer,
            subject=subject,
            detail=detail,
            values=values,
            reason=reason,
            managed=list(managed.values()),
        )
        raise SignInRefused(reason=reason, values=values)
    return _sign_in(
        issuer=issuer,
        subject=subject,
        claims=claims,
        role=role,
        detail=detail,
        named=named,
        managed=list(managed.values()),
    )


def _directory_account(*, issuer: str, subject: str):
    """The account the directory (SCIM) provisioned for this sign-in, if any: the one already
    linked to the provider's subject, or the one whose SCIM ``externalId`` is the subject (Okta's
    user id, Entra ID's object id when mapped so), which the first sign-in links."""
    identity = (
        OidcIdentity.objects.select_related("user__scim")
        .filter(issuer=issuer, subject=subject)
        .first()
    )
    if identity is not None:
        link = getattr(identity.user, "scim", None)
        return identity.user if link is not None and link.deleted_at is None else None
    link = (
        ScimUser.objects.select_related("user")
        .filter(external_id=subject, deleted_at=None)
        .exclude(external_id="")
        .first()
    )
    return link.user if link is not None else None


def _sign_in_directory_account(*, issuer: str, subject: str, detail: dict):
    """A sign-in of a person the directory provisions: their roles are the directory's (SCIM
    groups), so the sign-in changes none; it is refused (tokens revoked, sessions ended) when
    the account is inactive or holds no role in any project."""
    with transaction.atomic():
        user = _directory_account(issuer=issuer, subject=subject)
        identity, created = OidcIdentity.objects.get_or_create(
            issuer=issuer, subject=subject, defaults={"user": user}
        )
        reason = ""
        if not user.is_active:
            reason = "inactive"
        elif not ProjectMembership.objects.filter(user=user).exists():
            reason = "no_role"
        if not reason:
            identity.last_sign_in_at = timezone.now()
            identity.save(update_fields=["last_sign_in_at"])
            record_event(
                actor=user,
                verb="login",
                obj=user,
                detail={**detail, "roles": "directory", "linked": created},
            )
            return user
        revoke_all_api_tokens(user=user, reason=f"{detail['method']}_sign_in_refused:{reason}")
        end_sessions(user=user, reason=f"{detail['method']}_sign_in_refused:{reason}")
        record_event(
            actor=user,
            verb="login_refused",
            obj=user,
            detail={**detail, "reason": reason, "roles": "directory"},
        )
    raise SignInRefused(reason=reason, values=[])


@transaction.atomic
def _refuse_sign_in(
    *, issuer: str, subject: str, detail: dict, values: list[str], reason: str, managed: list
) -> None:
    identity = (
        OidcIdentity.objects.select_for_update()
        .select_related("user")
        .filter(issuer=issuer, subject=subject)
        .first()
    )
    user = identity.user if identity else None
    if user is not None and reason == "no_role":
        _set_role(user, None)
        _set_project_roles(user, named={}, managed=managed)
    if user is not None:  # the provider no longer vouches for them: tokens and sessions end
        revoke_all_api_tokens(user=user, reason=f"{detail['method']}_sign_in_refused:{reason}")
        end_sessions(user=user, reason=f"{detail['method']}_sign_in_refused:{reason}")
    record_event(
        actor=user,
        verb="login_refused",
        object_type="auth.user" if user else "",
        object_id=user.pk if user else "",
        detail={**detail, "reason": reason, "claim_values": [v[:200] for v in values[:20]]},
    )


@transaction.atomic
def _sign_in(
    *,
    issuer: str,
    subject: str,
    claims: dict,
    role: Role | None,
    detail: dict,
    named: dict,
    managed: list,
):
    identity = (
        OidcIdentity.objects.select_for_update()
        .select_related("user")
        .filter(issuer=issuer, subject=subject)
        .first()
    )
    if identity is None:
        identity = _create_identity(issuer=issuer, subject=subject, claims=claims)
        detail = {**detail, "created": True}
    user = identity.user
    user.email = _text_claim(claims, "email", 254)
    user.first_name = _text_claim(claims, "given_name", 150)
    user.last_name = _text_claim(claims, "family_name", 150)
    user.save(update_fields=["email", "first_name", "last_name"])
    previous = _set_role(user, role)
    before, after = _set_project_roles(user, named=named, managed=managed)
    identity.last_sign_in_at = timezone.now()
    identity.save(update_fields=["last_sign_in_at"])
    now_held = {role.value} if role else set()
    if previous != now_held or before != after:
        changes = {"from": sorted(previous), "to": sorted(now_held)}
        if before != after:
            changes["projects"] = {"from": before, "to": after}
        record_event(actor=user, verb="role_changed", obj=user, detail={**detail, **changes})
    login_detail = {**detail, "role": role.value if role else None}
    if after:
        login_detail["projects"] = after
    record_event(actor=user, verb="login", obj=user, detail=login_detail)
    return user


def _set_project_roles(user, *, named: dict, managed: list) -> tuple[dict, dict]:
    """Give ``user`` exactly the roles ``named`` ({Project: role}) in the ``managed`` projects
    (those the role map names): granted or changed, or removed where no longer named. Returns
    the roles held in those projects before and after, as {slug: role}."""
    rows = ProjectMembership.objects.filter(user=user, project__in=managed).select_related(
        "project"
    )
    before = {m.project.slug: m.role for m in rows}
    for project in managed:
        given = named.get(project)
        if given is None:
            ProjectMembership.objects.filter(user=user, project=project).delete()
        else:
            ProjectMembership.objects.update_or_create(
                project=project, user=user, defaults={"role": given.value}
            )
    forget_roles(user)
    return before, {p.slug: named[p].value for p in managed if p in named}


def _create_identity(*, issuer: str, subject: str, claims: dict) -> OidcIdentity:
    User = get_user_model()
    try:
        with transaction.atomic():
            user = User(username=_new_username(claims=claims, issuer=issuer, subject=subject))
            user.set_unusable_password()
            user.save()
            return OidcIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    except IntegrityError:  # a simultaneous first sign-in created it: use theirs
        return (
            OidcIdentity.objects.select_for_update()
            .select_related("user")
            .get(issuer=issuer, subject=subject)
        )


def _set_role(user, role: Role | None) -> set[str]:
    """Give ``user`` exactly ``role`` (or none) in the default project; returns the roles held
    there before."""
    previous = set(user.groups.filter(name__in=ALL_ROLES).values_list("name", flat=True))
    others = list(user.groups.exclude(name__in=ALL_ROLES))
    user.groups.set(others + ([Group.objects.get(name=role.value)] if role else []))
    if role is None:
        ProjectMembership.objects.filter(user=user, project_id=default_project_id()).delete()
    else:
        ProjectMembership.objects.update_or_create(
            project_id=default_project_id(), user=user, defaults={"role": role.value}
        )
    if user.is_staff != (role == Role.ADMIN):
        user.is_staff = role == Role.ADMIN
        user.save(update_fields=["is_staff"])
    forget_roles(user)
    return previous
