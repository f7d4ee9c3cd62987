from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from goldset.models import DEFAULT_PROJECT_SLUG
from goldset.selectors.agreement import count_alerts_by_project
from goldset.selectors.inbox import get_inbox
from goldset.selectors.projects import list_projects_for
from workbench.access import entry_for
from workbench.forms import INVALID_LOGIN, PASSWORDS_OFF, ApiTokenForm, LoginForm
from workbench.roles import ALL_ROLES, Role, has_role, role_required, roles_of
from workbench.services.accounts import log_in
from workbench.services.api_tokens import (
    create_api_token,
    list_api_tokens,
    max_lifetime_days,
    revoke_api_token,
)
from workbench.services.audit import record_event
from workbench.services.health import run_health_checks
from workbench.services.liveness import check_liveness
from workbench.services.login_throttle import AccountThrottled, LoginLocked, LoginRefused


@never_cache
def login_view(request):
    if request.user.is_authenticated:
        return redirect("home")
    form = LoginForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            user = log_in(request=request, **form.cleaned_data)
        except LoginRefused as exc:
            form.add_error(None, _refusal_message(exc))
            status = 429
        else:
            if user is not None:
                target = request.POST.get("next") or request.GET.get("next") or ""
                safe = url_has_allowed_host_and_scheme(
                    target, {request.get_host()}, request.is_secure()
                )
                return redirect(target if target and safe else "home")
            if settings.LOCAL_PASSWORDS_ENABLED:
                form.add_error(None, INVALID_LOGIN)
            else:  # the backend refused (and audited) without checking the password
                form.add_error(None, PASSWORDS_OFF)
                status = 403
    return render(
        request,
        "registration/login.html",
        {"form": form, "next": request.GET.get("next", "")},
        status=status,
    )


def _refusal_message(exc: LoginRefused) -> str:
    if isinstance(exc, LoginLocked):
        minutes = max(1, round(exc.retry_after / 60))
        return f"Too many failed attempts. Wait {minutes} minute(s) before trying again."
    if isinstance(exc, AccountThrottled):
        return f"Too many failed attempts on this account. Wait {exc.retry_after} s before trying again."
    return f"Too many attempts from your network. Wait {exc.retry_after} s before trying again."


@require_POST
def logout_view(request):
    if request.user.is_authenticated:
        record_event(actor=request.user, verb="logout", obj=request.user)
    logout(request)
    messages.info(request, "You are logged out.")
    return redirect("login")


# Who sees a project's open alerts beside its queues (those who may open the Alerts page).
ALERT_ROLES = frozenset({Role.LEAD, Role.ADMIN})


@role_required(*ALL_ROLES)
def home(request):
    """A project's home (``/p/<slug>/``): the inbox (what waits for the user there, per role)
    above the role's pages. At ``/``: the projects home, each project with its role and what
    waits there (its inbox: a fixed number of queries per project) and, for its leads and
    admins, its open alerts (count and worst kind: two queries for all the projects) — or, for
    someone whose only project is the default one, that project's home."""
    if request.project is None:
        projects = list_projects_for(user=request.user)
        if len(projects) != 1 or projects[0].project.slug != DEFAULT_PROJECT_SLUG:
            alerts = count_alerts_by_project(
                projects=[a.project for a in projects if a.roles & ALERT_ROLES]
            )
            cards = [
                (
                    access,
                    get_inbox(user=request.user, project=access.project, roles=access.roles),
                    alerts.get(access.project.pk),
                )
                for access in projects
            ]
            return render(request, "workbench/projects_home.html", {"cards": cards})
        request.project = projects[0].project
        request.member_projects = (request.project,)  # the top bar's project menu
    roles = roles_of(request.user)
    inbox = get_inbox(user=request.user, project=request.project, roles=roles)
    alerts = (
        count_alerts_by_project(projects=[request.project])[request.project.pk]
        if roles & ALERT_ROLES
        else None
    )
    return render(request, "workbench/home.html", {"inbox": inbox, "alerts": alerts})


def _may_see_health_details(request) -> bool:
    token = settings.HEALTH_TOKEN
    offered = request.headers.get("X-Health-Token", "")
    if token and offered and constant_time_compare(offered, token):
        return True
    return has_role(request.user, Role.ADMIN)


@never_cache
def health(request):
    """Anonymous callers (and anyone without the role or token) get the cheap, memoised liveness
    answer; admins and holders of ``HEALTH_TOKEN`` get the detailed report."""
    detailed = _may_see_health_details(request)
    report = run_health_checks() if detailed else check_liveness()
    status = 200 if report["ok"] else 503
    wants_json = request.GET.get("format") == "json" or (
        "application/json" in request.headers.get("Accept", "")
        and "text/html" not in request.headers.get("Accept", "")
    )
    if wants_json:
        return JsonResponse(report, status=status)
    context = {"report": report, "detailed": detailed}
    return render(request, "workbench/health.html", context, status=status)


@never_cache
@role_required(*ALL_ROLES)
def api_tokens(request):
    """The user's API tokens; POST creates one and shows it once (never stored in clear)."""
    max_days = max_lifetime_days()
    projects = [access.project for access in list_projects_for(user=request.user)]
    form = ApiTokenForm(request.POST or None, max_days=max_days, projects=projects)
    token, created = None, None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            token, created = create_api_token(user=request.user, **form.cleaned_data)
            form = ApiTokenForm(max_days=max_days, projects=projects)
        else:
            status = 422
    context = {
        "form": form,
        "created": created,
        "repeated": token if token is not None and created is None else None,
        "tokens": list_api_tokens(user=request.user),
        "max_days": max_days,
        "now": timezone.now(),
    }
    return render(request, "workbench/api_tokens.html", context, status=status)


@require_POST
@role_required(*ALL_ROLES)
def api_token_revoke(request, pk):
    token = revoke_api_token(user=request.user, token_id=pk)
    messages.success(request, f"Token {token.prefix} is revoked.")
    return redirect("api_tokens")


ROLE_ORDER = (Role.ANNOTATOR, Role.LEAD, Role.ADMIN)


def permission_denied(request, exception=None):
    """The 403 page (``handler403``): the normal navigation, and the role(s) the page needs
    (from the access table), so the user knows whom to ask."""
    match = getattr(request, "resolver_match", None)
    entry = entry_for(match.view_name if match else None)
    needed = [Role(r).label for r in ROLE_ORDER if entry and entry.roles and r in entry.roles]
    context = {"needed": needed, "path": request.path}
    return render(request, "403.html", context, status=403)


# ---------------------------------------------------------------- OpenID Connect sign-in


class _OidcEnabledMixin:
    """The sign-in URLs exist only while ``OIDC_ENABLED`` is on (404 otherwise)."""

    def dispatch(self, request, *args, **kwargs):
        if not settings.OIDC_ENABLED:
            raise Http404("Sign-in through an identity provider is not configured.")
        return super().dispatch(request, *args, **kwargs)


class OidcAuthenticateView(_OidcEnabledMixin, OIDCAuthenticationRequestView):
    """Sends the browser to the provider (state, nonce and PKCE kept in the session)."""


class OidcCallbackView(_OidcEnabledMixin, OIDCAuthenticationCallbackView):
    """The provider's redirect back: signs in (workbench.auth.RoleMappingOIDCBackend), or shows
    why not on a page: no role for the user's claims (403), the provider's own error or a
    failed exchange or check (400), an account deactivated here (403)."""

    def get(self, request):
        try:
            return super().get(request)
        except SuspiciousOperation:  # a state this browser never started (replay, old tab)
            return self._failure_page("state", status=400)

    def login_failure(self):
        failure = getattr(self.request, "oidc_failure", None)
        if failure is not None:
            reason = failure.reason
        elif self.request.GET.get("error"):
            reason = "provider_error"
        else:
            reason = "state"
        refused = reason in ("no_role", "inactive")
        return self._failure_page(reason, status=403 if refused else 400)

    def _failure_page(self, reason: str, *, status: int):
        context = {
            "reason": reason,
            "provider": settings.OIDC_PROVIDER_NAME,
            "provider_error": self.request.GET.get("error", "")[:100],
        }
        return render(self.request, "registration/oidc_failed.html", context, status=status)


@require_POST
def oidc_logout(request):
    """Logs out here, then at the provider when it has an end-session endpoint
    (``OIDC_OP_LOGOUT_ENDPOINT``, RP-initiated logout)."""
    if not settings.OIDC_ENABLED:
        raise Http404("Sign-in through an identity provider is not configured.")
    id_token = request.session.get("oidc_id_token")
    if request.user.is_authenticated:
        record_event(actor=request.user, verb="logout", obj=request.user)
    logout(request)
    if settings.OIDC_OP_LOGOUT_ENDPOINT and id_token:
        query = urlencode(
            {
                "id_token_hint": id_token,
                "client_id": settings.OIDC_RP_CLIENT_ID,
                "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
            }
        )
        return HttpResponseRedirect(f"{settings.OIDC_OP_LOGOUT_ENDPOINT}?{query}")
    messages.info(request, "You are logged out.")
    return redirect("login")
