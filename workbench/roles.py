"""The three roles of the workbench and how views check them.

A role is a Django group. ``admin`` is also granted to superusers. Pages declare the roles that may
open them with :func:`role_required`; anonymous users are sent to the login page, users without
the role get 403. Object-level checks (is this item *yours*?) live in selectors and answer 404.
"""

import re
from collections.abc import Iterable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import models


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    LEAD = "adjudication_lead", "Adjudication lead"
    ADMIN = "admin", "Admin"


ALL_ROLES = frozenset(Role)

# Permissions each group holds (app_label.codename). Custom permissions are declared on models.
ROLE_PERMISSIONS: dict[Role, tuple[str, ...]] = {
    Role.ANNOTATOR: ("goldset.view_document",),
    Role.LEAD: ("goldset.view_document", "goldset.lead_quality"),
    Role.ADMIN: (
        "goldset.view_document",
        "goldset.lead_quality",
        "goldset.import_corpus",
        "goldset.view_snippets",
        "workbench.view_auditevent",
    ),
}


def is_installation_admin(user) -> bool:
    """Installation admins (superusers and staff) manage projects and their members, and hold
    the admin role in every project."""
    return bool(user.is_authenticated and (user.is_superuser or user.is_staff))


def roles_of(user) -> frozenset[str]:
    """The role names a user holds *here*: in the request's project once
    ``workbench.middleware.AccessMiddleware`` has resolved it (it stores them on the request's
    user), else in any of the person's projects (installation pages: home, tokens). Cached on
    the user object for the request."""
    if not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_workbench_roles", None)
    if cached is None:
        cached = frozenset(user.project_memberships.values_list("role", flat=True)) & ALL_ROLES
        if is_installation_admin(user):
            cached |= {Role.ADMIN.value}
        user._workbench_roles = cached
    return cached


def roles_in(user, project) -> frozenset[str]:
    """The role names a user holds in ``project`` (a project or its id), wherever the call
    comes from — a request of that project, another project's page, a task or a command.
    Services that decide who may act on a project's object ask this, not :func:`roles_of`.
    Cached on the user object per project."""
    if not user.is_authenticated:
        return frozenset()
    project_id = getattr(project, "pk", project)
    held = user.__dict__.setdefault("_workbench_roles_in", {})
    if project_id not in held:
        roles = user.project_memberships.filter(project_id=project_id).values_list(
            "role", flat=True
        )
        held[project_id] = frozenset(roles) & ALL_ROLES
        if is_installation_admin(user):
            held[project_id] |= {Role.ADMIN.value}
    return held[project_id]


def hold_roles(user, project, roles: frozenset[str]) -> None:
    """Record the roles the request's project gives ``user`` (resolved with the project in one
    statement by the access middleware and the API permission): :func:`roles_of` and
    :func:`roles_in` answer from them for the rest of the request."""
    user._workbench_roles = roles
    user.__dict__.setdefault("_workbench_roles_in", {})[project.pk] = roles


def forget_roles(user) -> None:
    """Drop the roles cached on ``user`` (after their memberships change)."""
    user.__dict__.pop("_workbench_roles", None)
    user.__dict__.pop("_workbench_roles_in", None)


def project_roles(user, role: str | None) -> frozenset[str]:
    """The roles a membership row (``role``, or ``None`` without one) gives ``user``."""
    held = frozenset({role}) & ALL_ROLES if role else frozenset()
    if is_installation_admin(user):
        held |= {Role.ADMIN.value}
    return held


def has_role(user, *roles: Role | str) -> bool:
    return bool(roles_of(user) & {str(r) for r in roles})


def role_required(*roles: Role | str):
    """Decorator: login required, then one of ``roles`` (403 otherwise)."""
    allowed: Iterable[str] = {str(r) for r in roles}

    def decorator(view):
        @wraps(view)
        @login_required
        def wrapper(request, *args, **kwargs):
            if not roles_of(request.user) & set(allowed):
                raise PermissionDenied("Your role does not give access to this page.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


# ---------------------------------------------------------------- roles from an identity provider

# When a sign-in's claim names several roles, the strongest wins.
ROLE_RANK: dict[Role, int] = {Role.ANNOTATOR: 1, Role.LEAD: 2, Role.ADMIN: 3}
# The names OIDC_ROLE_MAP accepts for each role ("lead" is short for "adjudication_lead").
ROLE_NAMES: dict[str, Role] = {
    "annotator": Role.ANNOTATOR,
    "lead": Role.LEAD,
    "adjudication_lead": Role.LEAD,
    "admin": Role.ADMIN,
}


def parse_role_map(text: str) -> dict[str, Role]:
    """``OIDC_ROLE_MAP`` (``value:role,value:project-slug:role,…``) as {key: role}, the key
    being what precedes the last ``:``.

    ``value:role`` gives the role in the default project; ``value:project-slug:role`` in that
    project (``gs-cust-annot:customer-bot:annotator``). A claim value may itself contain ``:``
    (URNs): a key matches a claim value exactly (the default project), or as ``<claim
    value>:<slug>`` (the project ``slug``; see :func:`project_roles_from_claims`). Raises
    ``ValueError`` naming the first bad pair (no role, an unknown role, an empty value, a key
    mapped twice)."""
    mapping: dict[str, Role] = {}
    for raw in text.split(","):
        pair = raw.strip()
        if not pair:
            continue
        value, sep, role_name = pair.rpartition(":")
        value, role_name = value.strip(), role_name.strip().lower()
        if not sep or not value:
            raise ValueError(f"OIDC_ROLE_MAP: {pair!r} is not 'claim-value:role'")
        if role_name not in ROLE_NAMES:
            known = ", ".join(sorted(ROLE_NAMES))
            raise ValueError(f"OIDC_ROLE_MAP: {pair!r} names no role (one of: {known})")
        if value in mapping:
            raise ValueError(f"OIDC_ROLE_MAP: {value!r} is mapped twice")
        mapping[value] = ROLE_NAMES[role_name]
    return mapping


def claim_values(claims, claim: str) -> list[str]:
    """The strings a claim carries: a string, or the strings of a list. ``claim`` may be a dotted
    path into nested objects (``realm_access.roles``). Anything else (numbers, objects, nulls,
    nested lists, a missing claim) carries nothing: garbage never grants a role."""
    value = claims
    for part in claim.split("."):
        if not isinstance(value, dict) or part not in value:
            return []
        value = value[part]
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, str)]
    return []


def role_from_claims(claims, *, claim: str, role_map: dict[str, Role]) -> Role | None:
    """The role an identity provider's claims give: the strongest role any value of ``claim``
    maps to, or ``None`` (no value maps: the sign-in is refused). Values match exactly."""
    roles = [role_map[v] for v in claim_values(claims, claim) if v in role_map]
    return max(roles, key=ROLE_RANK.__getitem__, default=None)


_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")


def _project_key(key: str) -> tuple[str, str] | None:
    """``(claim value, project slug)`` for a key of the form ``value:slug``, else None."""
    value, sep, slug = key.rpartition(":")
    return (value, slug) if sep and value and _SLUG.match(slug) else None


def mapped_project_slugs(role_map: dict[str, Role]) -> frozenset[str]:
    """Every project slug the map may name (``value:slug:role``): the projects whose
    memberships a sign-in sets and removes. Only existing projects count, where it is used."""
    return frozenset(found[1] for key in role_map if (found := _project_key(key)))


def project_roles_from_claims(claims, *, claim: str, role_map: dict[str, Role]) -> dict[str, Role]:
    """The roles the claims give in named projects: ``{slug: strongest role}`` for every key
    ``<value>:<slug>`` whose value the claim carries (exactly). The default project's role is
    :func:`role_from_claims`'s."""
    values = set(claim_values(claims, claim))
    found: dict[str, Role] = {}
    for key, role in role_map.items():
        parts = _project_key(key)
        if parts is None or parts[0] not in values:
            continue
        held = found.get(parts[1])
        found[parts[1]] = role if held is None else max(held, role, key=ROLE_RANK.__getitem__)
    return found
