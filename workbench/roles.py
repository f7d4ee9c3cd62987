"""The three roles of the workbench and how views check them.

A role is a Django group. ``admin`` is also granted to superusers. Pages declare the roles that may
open them with :func:`role_required`; anonymous users are sent to the login page, users without
the role get 403. Object-level checks (is this item *yours*?) live in selectors and answer 404.
"""

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


def roles_of(user) -> frozenset[str]:
    """The role names a user holds; cached on the user object for the request."""
    if not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_workbench_roles", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True)) & ALL_ROLES
        if user.is_superuser:
            cached |= {Role.ADMIN.value}
        user._workbench_roles = cached
    return cached


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
