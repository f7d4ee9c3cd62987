"""Project pages (DESIGN.md §15): create (installation admins), a project's details and members
(its admins). The project is ``request.project``, resolved with the caller's membership by
workbench.middleware.AccessMiddleware."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from goldset.forms.projects import (
    MemberForm,
    ProjectDetailsForm,
    ProjectForm,
    ProjectSettingsForm,
)
from goldset.selectors.projects import list_members, list_projects_for
from goldset.services.project_settings import (
    SettingRefused,
    list_setting_changes,
    list_settings_in_force,
    project_tunable_names,
    update_project_settings,
)
from goldset.services.projects import (
    ProjectRefused,
    create_project,
    delete_project,
    grant_role,
    remove_member,
    set_archived,
    update_project_details,
)
from workbench.project_urls import project_home_url, root_url
from workbench.roles import Role, is_installation_admin, role_required


@role_required(Role.ADMIN)
def create(request):
    """A new project (installation admins only), optionally from another project's policy."""
    if not is_installation_admin(request.user):
        return render(request, "403.html", status=403)
    mine = [a.project for a in list_projects_for(user=request.user)]
    form = ProjectForm(request.POST or None, projects=mine)
    status = 200
    if request.method == "POST":
        # a double-click is harmless: the second create finds the slug taken
        if form.is_valid():
            data = form.cleaned_data
            try:
                project = create_project(
                    name=data["name"],
                    slug=data["slug"],
                    description=data["description"],
                    by=request.user,
                    copy_from=data["copy_from"],
                )
            except ProjectRefused as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Project {project.name} created.")
                return redirect(project_home_url(project))
        status = 422
    return render(request, "projects/create.html", {"form": form}, status=status)


HISTORY_PAGE_SIZE = 25


def _settings_page(request, *, form=None, protocol_form=None, status=200):
    """The settings page: details, the protocol settings (each with its doc, the installation
    default, the project's value and the value in force), their history, archiving."""
    project = request.project
    if form is None:
        form = ProjectDetailsForm(
            initial={"name": project.name, "description": project.description}
        )
    rows = list_settings_in_force(project=project)
    if protocol_form is None:
        protocol_form = ProjectSettingsForm(
            names=project_tunable_names(), initial={r.name: r.own or "" for r in rows}
        )
    history = Paginator(list_setting_changes(project=project), HISTORY_PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {
        "form": form,
        "protocol_form": protocol_form,
        "settings_rows": [(row, protocol_form[row.name]) for row in rows],
        "page": history,
    }
    return render(request, "projects/settings.html", context, status=status)


@role_required(Role.ADMIN)
def settings_page(request):
    """The project's name and description, its protocol settings, and archiving."""
    project = request.project
    if request.method == "POST":
        form = ProjectDetailsForm(request.POST)
        if form.is_valid():
            update_project_details(project=project, by=request.user, **form.cleaned_data)
            messages.success(request, "Project details saved.")
            return redirect("projects:settings")
        return _settings_page(request, form=form, status=422)
    return _settings_page(request)


@require_POST
@role_required(Role.ADMIN)
def protocol_settings(request):
    """Save the project's protocol settings: a changed field sets the value, an emptied one (or
    a row's Reset button, ``reset=<name>``) goes back to the installation default. A refused
    value re-renders the page (422) naming the setting and its rule; nothing is saved."""
    project = request.project
    names = project_tunable_names()
    own = project.settings or {}
    if "reset" in request.POST:
        form = ProjectSettingsForm({n: own.get(n, "") for n in names}, names=names)
        form.is_valid()
        changes = {request.POST["reset"]: None}
    else:
        form = ProjectSettingsForm(request.POST, names=names)
        form.is_valid()  # text fields: always valid; the service checks the values
        changes = {n: form.cleaned_data.get(n) or None for n in names if n in request.POST}
    changed = sorted(n for n, text in changes.items() if text != own.get(n))
    try:
        update_project_settings(project=project, changes=changes, by=request.user)
    except SettingRefused as exc:
        if exc.name in form.fields:
            form.add_error(exc.name, f"must be {exc.rule}")
        form.add_error(None, str(exc))
        return _settings_page(request, protocol_form=form, status=422)
    if changed:
        messages.success(request, f"Settings saved: {', '.join(changed)}.")
    else:
        messages.info(request, "No setting changed.")
    return redirect("projects:settings")


@require_POST
@role_required(Role.ADMIN)
def archive(request):
    archived = request.POST.get("archived") == "1"
    set_archived(project=request.project, archived=archived, by=request.user)
    messages.success(request, "Project archived." if archived else "Project restored.")
    return redirect("projects:settings")


@require_POST
@role_required(Role.ADMIN)
def delete(request):
    """Delete an empty project (installation admins; the slug typed again to confirm)."""
    project = request.project
    if not is_installation_admin(request.user):
        return render(request, "403.html", status=403)
    if request.POST.get("confirm_slug") != project.slug:
        messages.error(request, "Type the project's slug to confirm the deletion.")
        return redirect("projects:settings")
    try:
        delete_project(project=project, by=request.user)
    except ProjectRefused as exc:
        messages.error(request, str(exc))
        return redirect("projects:settings")
    messages.success(request, f"Project {project.name} deleted.")
    return redirect(root_url("home"))


@role_required(Role.ADMIN)
def members(request):
    """Who holds which role in the project; add a person or change their role."""
    form = MemberForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            user, role = form.cleaned_data["user"], form.cleaned_data["role"]
            try:
                grant_role(project=request.project, user=user, role=role, by=request.user)
            except ProjectRefused as exc:  # the last admin's demotion
                form.add_error("role", str(exc))
            else:
                messages.success(request, f"{user.username} is {Role(role).label}.")
                return redirect("projects:members")
        status = 422
    context = {"form": form, "members": list_members(project=request.project)}
    return render(request, "projects/members.html", context, status=status)


@require_POST
@role_required(Role.ADMIN)
def member_remove(request, user_id: int):
    membership = get_object_or_404(
        request.project.memberships.select_related("user"), user_id=user_id
    )
    try:
        remove_member(project=request.project, user=membership.user, by=request.user)
    except ProjectRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{membership.user.username} removed from the project.")
    return redirect("projects:members")
