from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.forms import AuthenticationForm
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from workbench.roles import ALL_ROLES, role_required
from workbench.services.accounts import LoginLocked, log_in
from workbench.services.audit import record_event
from workbench.services.health import run_health_checks


@never_cache
def login_view(request):
    if request.user.is_authenticated:
        return redirect("home")
    form = AuthenticationForm(request, data=request.POST or None)
    status = 200
    if request.method == "POST":
        username = request.POST.get("username", "")
        try:
            user = log_in(
                request=request, username=username, password=request.POST.get("password", "")
            )
        except LoginLocked:
            form.add_error(None, "Too many failed attempts. Wait 15 minutes before trying again.")
            status = 429
        else:
            if user is not None:
                target = request.POST.get("next") or request.GET.get("next") or ""
                safe = url_has_allowed_host_and_scheme(
                    target, {request.get_host()}, request.is_secure()
                )
                return redirect(target if target and safe else "home")
            form.is_valid()  # populates the form's own "invalid login" error
    return render(
        request,
        "registration/login.html",
        {"form": form, "next": request.GET.get("next", "")},
        status=status,
    )


@require_POST
def logout_view(request):
    if request.user.is_authenticated:
        record_event(actor=request.user, verb="logout", obj=request.user)
    logout(request)
    messages.info(request, "You are logged out.")
    return redirect("login")


@role_required(*ALL_ROLES)
def home(request):
    return render(request, "workbench/home.html")


@never_cache
def health(request):
    report = run_health_checks()
    status = 200 if report["ok"] else 503
    wants_json = request.GET.get("format") == "json" or (
        "application/json" in request.headers.get("Accept", "")
        and "text/html" not in request.headers.get("Accept", "")
    )
    if wants_json:
        return JsonResponse(report, status=status)
    return render(request, "workbench/health.html", {"report": report}, status=status)
