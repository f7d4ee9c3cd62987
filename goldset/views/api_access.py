"""The access table (:mod:`workbench.access`) as the API's DRF permission. Its own module:
DRF imports its default permission class while ``rest_framework.views`` is still loading."""

from django.conf import settings
from django.http import Http404
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.throttling import SimpleRateThrottle

from goldset.models.projects import DEFAULT_PROJECT_SLUG
from goldset.selectors.projects import access_project
from workbench.access import entry_for
from workbench.client_address import client_address
from workbench.models import ApiToken, TokenScope
from workbench.roles import hold_roles, roles_of
from workbench.services.api_tokens import authenticate_api_token, record_token_refusal
from workbench.services.idempotency import MAX_KEY_CHARS, claim_api_key, kept_api_answer
from workbench.services.rate_limits import hit_rate_limit


class AccessTablePermission(BasePermission):
    """The role rule of :mod:`workbench.access` for this URL name, after DRF has authenticated
    the caller (session or token): 401 without credentials; 404 when the URL's project is not
    the caller's (or not the token's); 403 for a role the entry does not list in that project.
    The project it resolves is ``request.project`` for the view. Object scope stays in the
    selectors (404). A retried write its own first try took out of reach (the project deleted,
    the caller removed or demoted) gets that try's kept answer, not the 404 or 403."""

    def has_permission(self, request, view):
        try:
            return self._check(request)
        except (exceptions.NotFound, exceptions.PermissionDenied):
            _replay_kept_answer(request)
            raise

    def _check(self, request):
        match = request.resolver_match
        entry = entry_for(match.view_name if match else None)
        if entry is None:
            raise exceptions.NotFound()
        if entry.roles is None:
            return True
        if not request.user or not request.user.is_authenticated:
            raise exceptions.NotAuthenticated()
        if entry.scoped:
            slug = getattr(request._request, "project_slug", None)
            token = request.auth
            try:
                access = access_project(user=request.user, slug=slug)
            except Http404:
                raise exceptions.NotFound() from None
            if isinstance(token, ApiToken) and token.project_id not in (None, access.project.pk):
                raise exceptions.NotFound()
            request._request.project = access.project
            hold_roles(request.user, access.project, access.roles)
        if not roles_of(request.user) & entry.roles:
            raise exceptions.PermissionDenied("Your role does not give access to this endpoint.")
        return True


def _replay_kept_answer(request) -> None:
    """Raise :class:`IdempotentReplay` with the kept answer to this write's key, if any (a
    caller refused now was allowed then: only an answer that ran past every check is kept)."""
    key = request.headers.get("Idempotency-Key", "").strip()
    if request.method not in KEYED_METHODS or not key or not request.user.is_authenticated:
        return
    token = request.auth
    if isinstance(token, ApiToken) and token.project_id is not None:
        slug = getattr(request._request, "project_slug", None) or DEFAULT_PROJECT_SLUG
        if token.project.slug != slug:  # outside the token's one project: nothing replayed
            return
    row = kept_api_answer(
        user=request.user, key=key, method=request.method, path=request.get_full_path()
    )
    if row is not None:
        raise IdempotentReplay(row)


class ApiTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer gst_…``: a personal token (workbench.services.api_tokens)."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        keyword, _, raw = header.partition(" ")
        if keyword != self.keyword or not raw:
            return None
        token = authenticate_api_token(
            raw=raw.strip(), method=request.method, path=request.get_full_path()
        )
        if token is None:
            record_token_refusal(
                address=client_address(request),
                raw=raw.strip(),
                method=request.method,
                path=request.get_full_path(),
            )
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        return token.user, token

    def authenticate_header(self, request):
        return f'{self.keyword} realm="api"'


class TokenScopePermission(BasePermission):
    """A read token may only read (GET, HEAD, OPTIONS)."""

    message = "This token's scope is read; writing needs a write token."

    def has_permission(self, request, view):
        token = request.auth
        if isinstance(token, ApiToken) and token.scope != TokenScope.WRITE:
            return request.method in SAFE_METHODS
        return True


class IdempotentReplay(exceptions.APIException):
    """A repeated request with an ``Idempotency-Key``: its first answer is sent again
    (goldset.views.api_support turns this into that answer)."""

    def __init__(self, row):
        super().__init__("replayed")
        self.row = row


class KeyConflict(exceptions.APIException):
    status_code = 409


class KeyReused(exceptions.APIException):
    status_code = 422


# The writes a key makes safe to retry: a POST creates, a PATCH applies a change to the current
# state (a sampling rule's next version; the same change again is refused as changing nothing),
# a PUT or DELETE answers a repeat differently (200 "unchanged", 404) than its first try.
KEYED_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class IdempotencyKeyPermission(BasePermission):
    """``Idempotency-Key`` on a write (POST, PUT, PATCH, DELETE) by an authenticated caller
    (after the role and scope checks, so a refused caller claims nothing): the first request
    runs, a repeat gets the first answer (workbench.services.idempotency; the answer is kept by
    workbench.middleware)."""

    def has_permission(self, request, view):
        key = request.headers.get("Idempotency-Key", "").strip()
        if request.method not in KEYED_METHODS or not key or not request.user.is_authenticated:
            return True
        if len(key) > MAX_KEY_CHARS:
            raise exceptions.ValidationError(
                {"Idempotency-Key": f"at most {MAX_KEY_CHARS} characters"}
            )
        claim = claim_api_key(
            user=request.user, key=key, method=request.method, path=request.get_full_path()
        )
        if claim.outcome == "first":
            request._request.idempotency_row = claim.row
            return True
        if claim.outcome == "replay":
            raise IdempotentReplay(claim.row)
        if claim.outcome == "running":
            raise KeyConflict("A request with this Idempotency-Key is still running; retry later.")
        raise KeyReused("This Idempotency-Key was used for another request (method or path).")


class PerTokenRateThrottle(SimpleRateThrottle):
    """Requests per token (``API_TOKEN_RATE``, e.g. ``600/min``); session callers per user,
    anonymous callers per address. Counted atomically by
    :func:`workbench.services.rate_limits.hit_rate_limit`, which lets requests through when the
    cache is down (never a 500)."""

    scope = "api"

    def get_rate(self):
        return settings.API_TOKEN_RATE

    def get_cache_key(self, request, view):
        if isinstance(request.auth, ApiToken):
            return f"token-{request.auth.pk}"
        if request.user and request.user.is_authenticated:
            return f"user-{request.user.pk}"
        return f"address-{client_address(request)}"

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        decision = hit_rate_limit(
            key=self.get_cache_key(request, view),
            limit=self.num_requests,
            window_seconds=self.duration,
        )
        self._retry_after = decision.retry_after
        return decision.allowed

    def wait(self):
        return max(1.0, self._retry_after)


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """The token in the OpenAPI schema: an HTTP bearer scheme."""

    target_class = ApiTokenAuthentication
    name = "apiToken"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(
            header_name="Authorization", token_prefix="Bearer"
        )
