"""SAML 2.0 sign-in pages (404 unless ``SAML_ENABLED``); the rules are in
:mod:`workbench.services.saml`. The assertion consumer takes the IdP's cross-site POST, so it is
CSRF-exempt: the signed, audience-bound, single-use assertion is what authenticates it."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from workbench.client_address import client_address
from workbench.services import saml
from workbench.services.audit import record_event

SESSION_KEY = "saml_session"
BACKEND = "workbench.auth.ThrottledModelBackend"


def _enabled():
    if not settings.SAML_ENABLED:
        raise Http404("SAML sign-in is not configured.")


def _failure(request, exc: saml.SamlRefused):
    context = {"reason": exc.reason, "message": str(exc), "provider": settings.SAML_PROVIDER_NAME}
    return render(request, "registration/saml_failed.html", context, status=exc.status)


@require_GET
def saml_metadata(request):
    """The SP's metadata, at a stable URL the IdP is given (or reads) once."""
    _enabled()
    return HttpResponse(saml.sp_metadata(), content_type="application/samlmetadata+xml")


@never_cache
@require_GET
def saml_login(request):
    """SP-initiated sign-in: to the IdP with a request whose answer comes back to the ACS."""
    _enabled()
    target = request.GET.get("next", "")
    safe = url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure())
    try:
        return HttpResponseRedirect(saml.start_sign_in(relay_state=target if safe else ""))
    except saml.SamlRefused as exc:
        return _failure(request, exc)


@csrf_exempt
@never_cache
@require_POST
def saml_acs(request):
    """The IdP's answer (HTTP-POST binding): signs in, or a 4xx page saying why not."""
    _enabled()
    try:
        user, relay_state, session_info = saml.finish_sign_in(
            raw=request.POST.get("SAMLResponse", ""), address=client_address(request)
        )
    except saml.SamlRefused as exc:
        return _failure(request, exc)
    login(request, user, backend=BACKEND)
    request.session[SESSION_KEY] = session_info
    safe = url_has_allowed_host_and_scheme(relay_state, {request.get_host()}, request.is_secure())
    return redirect(relay_state if relay_state and safe else "home")


@require_POST
def saml_logout(request):
    """Logs out here, then at the IdP (single logout) when the session came from it."""
    _enabled()
    session_info = request.session.get(SESSION_KEY) or {}
    if request.user.is_authenticated:
        record_event(actor=request.user, verb="logout", obj=request.user)
    logout(request)
    try:
        target = saml.start_logout(session_info=session_info)
    except saml.SamlRefused as exc:
        return _failure(request, exc)
    if target is None:
        messages.info(request, "You are logged out.")
        return redirect("login")
    # A link, not a redirect: the logout form's CSP form-action does not list the IdP.
    return render(request, "registration/saml_logout.html", {"target": target})


@never_cache
@require_GET
def saml_sls(request):
    """Single logout service: the IdP's LogoutRequest (ends the person's sessions here, answers
    with a LogoutResponse) or its LogoutResponse to ours."""
    _enabled()
    try:
        if "SAMLRequest" in request.GET:
            target = saml.handle_logout_request(
                raw=request.GET["SAMLRequest"],
                relay_state=request.GET.get("RelayState", ""),
                sigalg=request.GET.get("SigAlg", ""),
                signature=request.GET.get("Signature", ""),
            )
            return HttpResponseRedirect(target)
        if "SAMLResponse" in request.GET:
            saml.handle_logout_response(raw=request.GET["SAMLResponse"])
            messages.info(request, "You are logged out here and at your identity provider.")
            return redirect("login")
    except saml.SamlRefused as exc:
        record_event(
            actor=None,
            verb="saml_logout_refused",
            detail={"reason": exc.reason, "message": str(exc)[:500]},
        )
        return _failure(request, exc)
    return _failure(request, saml.SamlRefused("malformed", "no SAML message"))
