"""The inbox pages: notifications (list, badge, open, mark read), notification settings, and
calibration retakes (the annotator's request, the leads' page and decision)."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from goldset.exceptions import GoldsetError
from goldset.forms.inbox import NotificationSettingsForm, RetakeDecisionForm, RetakeRequestForm
from goldset.models import Domain
from goldset.selectors import inbox as selectors
from goldset.services import calibration as calibration_services
from goldset.services import notifications as services
from goldset.views.htmx import wants_fragment
from workbench.roles import ALL_ROLES, Role, role_required

PAGE_SIZE = 25
LEADS = (Role.LEAD, Role.ADMIN)


@role_required(*ALL_ROLES)
@vary_on_headers("HX-Request")
def notifications(request):
    unread_only = request.GET.get("unread") == "1"
    page = selectors.list_notifications(
        user=request.user,
        project=request.project,
        cursor=request.GET.get("after"),
        size=PAGE_SIZE,
        unread_only=unread_only,
        kind=request.GET.get("kind", ""),
    )
    template = "inbox/notifications.html"
    if wants_fragment(request, "notification-list"):
        template += "#notification-list"
    return render(request, template, {"page": page, "unread_only": unread_only})


@never_cache
@role_required(*ALL_ROLES)
def badge(request):
    """The nav's unread count, loaded after the page so no page pays for it."""
    unread = selectors.count_unread(user=request.user, project=request.project)
    return render(request, "inbox/badge.html", {"unread": unread, "cap": selectors.COUNT_CAP})


@role_required(*ALL_ROLES)
def open_notification(request, pk):
    """Follow a notification's link, marking it read on the way."""
    notification = selectors.get_notification_for(user=request.user, project=request.project, pk=pk)
    services.mark_read(user=request.user, project=request.project, notification_id=notification.pk)
    link = notification.link
    if link and url_has_allowed_host_and_scheme(link, allowed_hosts=None):
        return redirect(link)
    return redirect("inbox:notifications")


@require_POST
@role_required(*ALL_ROLES)
def mark_read(request, pk):
    notification = selectors.get_notification_for(user=request.user, project=request.project, pk=pk)
    services.mark_read(user=request.user, project=request.project, notification_id=notification.pk)
    return redirect(_back(request))


@require_POST
@role_required(*ALL_ROLES)
def mark_all_read(request):
    n = services.mark_all_read(user=request.user, project=request.project)
    messages.success(request, f"{n} notification(s) marked read." if n else "Nothing was unread.")
    return redirect(_back(request))


def _back(request) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return reverse("inbox:notifications")


@role_required(*ALL_ROLES)
def notification_settings(request):
    initial = {"email": selectors.wants_email(user=request.user)}
    form = NotificationSettingsForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        services.set_email_preference(user=request.user, email=form.cleaned_data["email"])
        on = form.cleaned_data["email"]
        messages.success(request, "E-mail notifications are on." if on else "E-mail is off.")
        return redirect("inbox:settings")
    return render(request, "inbox/settings.html", {"form": form})


# ---------------------------------------------------------------- calibration retakes


@require_POST
@role_required(Role.ANNOTATOR)
def request_retake(request, domain):
    domain = get_object_or_404(Domain, project=request.project, slug=domain)
    form = RetakeRequestForm(request.POST)
    if not form.is_valid():
        messages.error(request, "; ".join(e for errs in form.errors.values() for e in errs))
    else:
        try:
            calibration_services.request_retake(
                annotator=request.user, domain=domain, message=form.cleaned_data["message"]
            )
        except GoldsetError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Your {domain.name} retake request went to the leads.")
    return redirect(reverse("answers:calibration") + f"#calibration-{domain.slug}")


@role_required(*LEADS)
def retakes(request):
    project = request.project
    pending = selectors.list_retakes(
        project=project, pending=True, cursor=request.GET.get("after"), size=PAGE_SIZE
    )
    answered = selectors.list_retakes(project=project, pending=False, cursor=None, size=10)
    context = {"page": pending, "answered": answered, "form": RetakeDecisionForm()}
    return render(request, "inbox/retakes.html", context)


@require_POST
@role_required(*LEADS)
def decide_retake(request, pk):
    retake = selectors.get_retake(project=request.project, pk=pk)
    form = RetakeDecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose grant or decline and give a reason.")
        return redirect("inbox:retakes")
    grant = form.cleaned_data["decision"] == "grant"
    try:
        calibration_services.decide_retake(
            lead=request.user, retake=retake, grant=grant, reason=form.cleaned_data["reason"]
        )
    except GoldsetError as exc:
        messages.error(request, str(exc))
    else:
        who, domain = retake.annotator, retake.domain.name
        name = services.display_name(who)
        messages.success(
            request,
            f"Retake granted: {name} starts a fresh draw of the {domain} set."
            if grant
            else f"Retake declined; {name} is told why.",
        )
    return redirect("inbox:retakes")
