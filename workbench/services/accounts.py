"""Accounts: the role groups, login with brute-force protection, and demo users."""

from django.contrib.auth import authenticate, get_user_model, login
from django.contrib.auth.models import Group, Permission
from django.db import transaction

from workbench.roles import ROLE_PERMISSIONS, Role


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
def create_user_with_role(*, username: str, password: str, role: Role, **fields):
    """Create (or reset the password of) a user holding exactly ``role``."""
    User = get_user_model()
    user, _ = User.objects.get_or_create(username=username, defaults=fields)
    user.set_password(password)
    user.is_staff = role == Role.ADMIN
    user.save()
    user.groups.set([Group.objects.get(name=role.value)])
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
