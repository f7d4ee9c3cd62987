"""Accounts: the role groups, login with brute-force protection, and demo users."""

import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import authenticate, get_user_model, login
from django.contrib.auth.models import Group, Permission
from django.core.cache import cache
from django.db import transaction

from workbench.roles import ROLE_PERMISSIONS, Role
from workbench.services.audit import record_event


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


class LoginLocked(Exception):
    """Too many failed attempts for this username or address; try again later."""


@dataclass(frozen=True)
class _Keys:
    user: str
    addr: str


def _keys(username: str, address: str) -> _Keys:
    digest = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    return _Keys(user=f"login-fail:user:{digest}", addr=f"login-fail:addr:{address}")


def _locked(keys: _Keys) -> bool:
    limit = settings.LOGIN_MAX_FAILURES
    # An address gets more room than one username, so a shared office NAT is not locked by one typo.
    return (cache.get(keys.user, 0) >= limit) or (cache.get(keys.addr, 0) >= limit * 4)


def _count_failure(keys: _Keys) -> None:
    ttl = settings.LOGIN_LOCKOUT_SECONDS
    for key in (keys.user, keys.addr):
        if cache.add(key, 1, ttl) is False:
            try:
                cache.incr(key)
            except ValueError:
                cache.set(key, 1, ttl)


def log_in(*, request, username: str, password: str):
    """Authenticate and log in. Raises :class:`LoginLocked` after ``LOGIN_MAX_FAILURES`` failures
    for the username (or 4× that from one address) within ``LOGIN_LOCKOUT_SECONDS``; even a correct
    password is refused while locked. Returns the user, or ``None`` for bad credentials.
    Every attempt is recorded in the audit log."""
    address = request.META.get("REMOTE_ADDR", "")
    keys = _keys(username, address)
    if _locked(keys):
        record_event(actor=None, verb="login_locked", detail={"username": username})
        raise LoginLocked
    user = authenticate(request, username=username, password=password)
    if user is None:
        _count_failure(keys)
        record_event(actor=None, verb="login_failed", detail={"username": username})
        return None
    cache.delete(keys.user)
    login(request, user)
    record_event(actor=user, verb="login", obj=user)
    return user
