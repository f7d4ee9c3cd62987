"""The authentication backend every password form goes through.

Django's ``authenticate()`` is what both the workbench login and the Django admin's login call, so
the lockout, the per-address slowdown and the audit of every attempt live here, once: no password
form can skip them. A refused attempt raises ``PermissionDenied`` (``authenticate()`` then returns
``None`` without asking another backend) and leaves the reason on ``request.login_refusal`` for the
form that wants to say why.
"""

from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied

from workbench.client_address import client_address
from workbench.services.audit import record_event
from workbench.services.login_throttle import (
    LoginLocked,
    LoginRefused,
    check_login_allowed,
    record_login_failure,
    record_login_success,
)


class ThrottledModelBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None or password is None or request is None:
            return None
        address = client_address(request)
        detail = {"username": username[:150], "address": address}
        form = "admin" if request.path.startswith("/django-admin/") else "login"
        detail["form"] = form
        try:
            check_login_allowed(username=username, address=address)
        except LoginRefused as exc:
            verb = "login_locked" if isinstance(exc, LoginLocked) else "login_throttled"
            record_event(actor=None, verb=verb, detail=detail)
            request.login_refusal = exc
            raise PermissionDenied(str(exc)) from exc
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            record_login_failure(username=username, address=address)
            record_event(actor=None, verb="login_failed", detail=detail)
            return None
        record_login_success(username=username, address=address)
        record_event(actor=user, verb="login", obj=user, detail=detail)
        return user
