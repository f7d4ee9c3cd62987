"""The authentication backends: every password form, and OpenID Connect sign-in.

Django's ``authenticate()`` is what both the workbench login and the Django admin's login call, so
the lockout, the per-address slowdown and the audit of every attempt live here, once: no password
form can skip them. A refused attempt raises ``PermissionDenied`` (``authenticate()`` then returns
``None`` without asking another backend) and leaves the reason on ``request.login_refusal`` for the
form that wants to say why. With ``LOCAL_PASSWORDS_ENABLED`` off no password is even checked.

:class:`RoleMappingOIDCBackend` signs in through the identity provider (mozilla-django-oidc's
authorization-code flow, with PKCE) and hands the verified claims to
``workbench.services.accounts.sign_in_with_provider``. Whatever goes wrong (the provider
unreachable, a bad token, no role) ends as ``None`` with the reason on ``request.oidc_failure``,
which the callback view shows: never a 500.
"""

import logging

import jwt
import requests
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import ImproperlyConfigured, PermissionDenied, SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from workbench.client_address import client_address
from workbench.roles import (
    claim_values,
    mapped_project_slugs,
    parse_role_map,
    project_roles_from_claims,
    role_from_claims,
)
from workbench.services.accounts import SignInRefused, sign_in_with_provider
from workbench.services.audit import record_event
from workbench.services.login_throttle import (
    LoginLocked,
    LoginRefused,
    check_login_allowed,
    record_login_failure,
    record_login_success,
)

logger = logging.getLogger(__name__)


class ThrottledModelBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None or password is None or request is None:
            return None
        address = client_address(request)
        detail = {"username": username[:150], "address": address}
        form = "admin" if request.path.startswith("/django-admin/") else "login"
        detail["form"] = form
        if not settings.LOCAL_PASSWORDS_ENABLED:
            record_event(
                actor=None, verb="login_refused", detail={**detail, "reason": "passwords_off"}
            )
            return None
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


class OidcSignInFailed(Exception):
    """Why a sign-in through the identity provider did not sign anyone in (shown on a page)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class RoleMappingOIDCBackend(OIDCAuthenticationBackend):
    """OpenID Connect sign-in with the role taken from a claim at every sign-in.

    Users are found by the ID token's issuer and subject (``OidcIdentity``), never by e-mail.
    The ID token must be signed with ``OIDC_RP_SIGN_ALGO`` by a key of the provider's JWKS, be
    addressed to our client id (``aud``), name ``OIDC_OP_ISSUER`` as its issuer (``iss``: a
    required setting, printed by ``manage.py oidc_discover`` from the discovery document) and
    carry an expiry (``exp``, checked by PyJWT); the user info must be about the same subject. The role claim is read from the user info and the
    ID token (user info wins)."""

    def __init__(self, *args, **kwargs):
        self.misconfigured = ""
        try:
            super().__init__(*args, **kwargs)
        except ImproperlyConfigured as exc:  # a password login must not fail with it
            self.misconfigured = str(exc)

    def authenticate(self, request, **kwargs):
        if request is None or "password" in kwargs or "username" in kwargs:
            return None
        if not settings.OIDC_ENABLED:
            return None
        try:
            if self.misconfigured and "code" in request.GET:
                raise OidcSignInFailed("configuration", self.misconfigured)
            return super().authenticate(request, **kwargs)
        except OidcSignInFailed as exc:
            failure = exc
        except (requests.RequestException, SuspiciousOperation, jwt.PyJWTError) as exc:
            failure = OidcSignInFailed("provider", f"{type(exc).__name__}: {exc}")
        except (ValueError, KeyError, TypeError) as exc:  # a malformed answer from the provider
            failure = OidcSignInFailed("provider", f"malformed answer: {type(exc).__name__}")
        request.oidc_failure = failure
        if failure.reason not in ("no_role", "inactive"):  # the service audits refusals
            record_event(
                actor=None,
                verb="login_failed",
                detail={
                    "method": "oidc",
                    "provider": settings.OIDC_PROVIDER_NAME,
                    "reason": failure.reason,
                    "message": str(failure)[:500],
                    "address": client_address(request),
                },
            )
        logger.warning("OIDC sign-in failed (%s): %s", failure.reason, failure)
        return None

    def verify_token(self, token, **kwargs):
        payload = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise OidcSignInFailed("token", "the ID token is not addressed to this application")
        if not settings.OIDC_OP_ISSUER:
            raise OidcSignInFailed("configuration", "OIDC_OP_ISSUER is not set")
        if "iss" not in payload:
            raise OidcSignInFailed("token", "the ID token names no issuer")
        if payload["iss"] != settings.OIDC_OP_ISSUER:
            raise OidcSignInFailed("token", "the ID token comes from another issuer")
        exp = payload.get("exp")
        if not isinstance(exp, int | float) or isinstance(exp, bool):
            raise OidcSignInFailed("token", "the ID token has no expiry")
        if not isinstance(payload.get("sub"), str) or not payload["sub"]:
            raise OidcSignInFailed("token", "the ID token names no subject")
        return payload

    def verify_claims(self, claims):
        return True  # the subject is checked in get_or_create_user; the role by the service

    def get_or_create_user(self, access_token, id_token, payload):
        user_info = self.get_userinfo(access_token, id_token, payload)
        if not isinstance(user_info, dict) or user_info.get("sub") != payload["sub"]:
            raise OidcSignInFailed("token", "the user info is about another subject")
        claims = {**payload, **user_info}
        try:
            role_map = parse_role_map(settings.OIDC_ROLE_MAP)
        except ValueError as exc:
            raise OidcSignInFailed("configuration", str(exc)) from exc
        claim = settings.OIDC_ROLE_CLAIM
        try:
            return sign_in_with_provider(
                issuer=str(payload.get("iss", "")),
                subject=payload["sub"],
                claims=claims,
                role=role_from_claims(claims, claim=claim, role_map=role_map),
                provider=settings.OIDC_PROVIDER_NAME,
                values=claim_values(claims, claim),
                project_roles=project_roles_from_claims(claims, claim=claim, role_map=role_map),
                mapped_projects=mapped_project_slugs(role_map),
            )
        except SignInRefused as exc:
            message = (
                "this account is deactivated in the workbench"
                if exc.reason == "inactive"
                else f"no value of the {claim!r} claim gives a role here"
            )
            raise OidcSignInFailed(exc.reason, message) from exc
