"""Guidelines in the task (issue 14): the leads' pages that write them, and what every work page
(label, review, adjudication) adds to its context: the guideline panel and the timing fields."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import GoldsetError
from goldset.forms.guidelines import GuidelineForm
from goldset.models import GuidelineTask
from goldset.rules.time_on_item import opening_token, read_opening
from goldset.selectors.guidelines import (
    get_guideline_in_force,
    get_guideline_page,
    list_guidelines,
)
from goldset.services.guidelines import save_guideline
from workbench.roles import Role, role_required

LEADS = (Role.LEAD, Role.ADMIN)


def task_panel(
    request, *, kind: str, object_id: int, task: str, domain_id=None, domain_slug=""
) -> dict:
    """Context for a work page: ``guideline`` (the version in force, or None), ``opening`` (the
    signed opening token; a re-rendered form keeps the one it was posted with, so its clock does
    not restart) and ``idle_ms`` (the client's idle cut-off)."""
    user_id = request.user.pk
    posted = request.POST.get("opened") if request.method == "POST" else None
    keep = read_opening(posted, kind=kind, object_id=object_id, user_id=user_id) is not None
    return {
        "guideline": get_guideline_in_force(
            task=task, domain_id=domain_id, domain_slug=domain_slug, project=request.project
        ),
        "opening": posted
        if keep
        else opening_token(kind=kind, object_id=object_id, user_id=user_id, now=timezone.now()),
        "idle_ms": tunable("ACTIVE_IDLE_GAP_SECONDS") * 1000,
    }


@role_required(*LEADS)
def guideline_list(request):
    return render(
        request, "guidelines/list.html", {"rows": list_guidelines(project=request.project)}
    )


@role_required(*LEADS)
def guideline_edit(request, domain, task):
    domain, versions = get_guideline_page(project=request.project, domain_slug=domain, task=task)
    current = versions[0] if versions else None
    form = GuidelineForm(request.POST or None, initial={"body": current.body if current else ""})
    if request.method == "POST" and form.is_valid():
        try:
            version, created = save_guideline(
                actor=request.user, domain=domain, task=task, **form.cleaned_data
            )
        except GoldsetError as exc:
            form.add_error(None, str(exc))
        else:
            if created:
                messages.success(request, f"Version {version.version} is now in force.")
            else:
                messages.info(request, f"No change: version {version.version} stays in force.")
            return redirect("guidelines:edit", domain=domain.slug, task=task)
    context = {
        "domain": domain,
        "task": task,
        "task_label": GuidelineTask(task).label,
        "versions": versions,
        "current": current,
        "form": form,
    }
    return render(request, "guidelines/edit.html", context)


@role_required(*LEADS)
def guideline_version(request, domain, task, version):
    domain, versions = get_guideline_page(project=request.project, domain_slug=domain, task=task)
    shown = next((v for v in versions if v.version == version), None)
    if shown is None:
        raise Http404("No such version.")
    context = {
        "domain": domain,
        "task": task,
        "task_label": GuidelineTask(task).label,
        "shown": shown,
        "current": versions[0],
    }
    return render(request, "guidelines/version.html", context)
