"""REST API v1: projects, their settings and their members (issue 27), through the services the
project pages call (``goldset.services.projects``, ``project_settings``, ``project_copy``): the
slug rule, the copy of another project's policy, the parsing and rules of each setting, the
audit trail, the last admin a project keeps and the refusal to delete a project that holds
frozen versions are theirs, and who may do what is the pages' (``workbench.access``).

``projects/`` lists the caller's projects and creates one (installation admins). A project's
own endpoints live under its prefix like every other endpoint: ``/api/v1/projects/<slug>/`` is
the project itself (read by its members, changed by its admins, deleted by installation
admins), ``…/settings/`` its protocol settings and ``…/members/`` its members (its admins);
without the prefix they answer for the default project, as every endpoint does.

The request shapes check types and lengths only (a 400 naming the field; so is a field the
body may not have); what a value must be is the service's to say (a 422 naming the field)."""

import json

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from goldset.forms.projects import MemberForm, ProjectDetailsForm, ProjectForm
from goldset.selectors.projects import (
    access_project,
    find_membership,
    get_member,
    list_members,
    list_projects_for,
)
from goldset.services.project_settings import (
    list_settings_in_force,
    project_tunable_names,
    update_project_settings,
)
from goldset.services.projects import (
    SLUG_PATTERN,
    ProjectRefused,
    create_project,
    delete_project,
    grant_role,
    remove_member,
    set_archived,
    strongest,
    update_project_details,
)
from goldset.views import api_serializers as s
from goldset.views.api_support import (
    Problem,
    api_url,
    check_page_role,
    check_query,
    checked_body,
    form_errors,
    parse_updated_since,
    project_api_url,
)
from workbench.models import ApiToken
from workbench.roles import Role, is_installation_admin, roles_of

TAGS = ["projects"]

# ---------------------------------------------------------------- shapes


class ProjectDetailSerializer(s.ProjectSerializer):
    """A project as its members read it: the list's fields, when it was created and archived."""

    created_at = serializers.DateTimeField(source="project.created_at")
    archived_at = serializers.DateTimeField(source="project.archived_at", allow_null=True)


@extend_schema_field({"type": "string", "pattern": SLUG_PATTERN})
class SlugText(serializers.CharField):
    """A project slug: its rule is the service's (``check_slug``: a 422 naming ``slug``); the
    schema shows the pattern."""


class NewProjectSerializer(serializers.Serializer):
    """A new project: the project creation page's form."""

    name = serializers.CharField(max_length=ProjectForm.base_fields["name"].max_length)
    slug = SlugText(help_text=str(ProjectForm.base_fields["slug"].help_text))
    description = serializers.CharField(allow_blank=True, default="")
    copy_from = serializers.CharField(
        allow_blank=True,
        allow_null=True,
        default=None,
        help_text="The slug of a project of yours to start from: its settings, domains, "
        "guidelines in force and routing rules in force are copied.",
    )


class ProjectChangeSerializer(serializers.Serializer):
    """A change of the fields sent: the settings page's details form and its archive switch."""

    name = serializers.CharField(
        max_length=ProjectDetailsForm.base_fields["name"].max_length, required=False
    )
    description = serializers.CharField(allow_blank=True, required=False)
    archived = serializers.BooleanField(
        required=False, help_text="Archive (everything stays readable) or restore the project."
    )


class SettingSerializer(serializers.Serializer):
    """One per-project protocol setting as the settings page shows it."""

    name = serializers.CharField()
    doc = serializers.CharField()
    default = serializers.JSONField(help_text="The installation's value (from the environment).")
    own = serializers.CharField(
        allow_null=True,
        help_text="The project's value as text; null when it keeps the installation's.",
    )
    value = serializers.JSONField(help_text="The value in force in the project.")
    overridden = serializers.BooleanField(help_text="True when the project sets its own value.")


def _settings_request_serializer():
    """The PATCH body as the schema documents it: each per-project setting, optional."""
    fields = {
        name: serializers.CharField(
            required=False,
            allow_null=True,
            allow_blank=True,
            help_text="The value as the environment's text (a number or JSON object is taken "
            "too); null or empty: back to the installation's value.",
        )
        for name in project_tunable_names()
    }
    return type("ProjectSettingsChangeSerializer", (serializers.Serializer,), fields)


ProjectSettingsChangeSerializer = _settings_request_serializer()


class MemberSerializer(serializers.Serializer):
    """A member of the project and the role they hold in it."""

    id = serializers.IntegerField(source="user_id", help_text="The person's user id.")
    username = serializers.CharField(source="user.username")
    role = serializers.ChoiceField(choices=Role.choices)
    created_at = serializers.DateTimeField(help_text="Member since.")


class NewMemberSerializer(serializers.Serializer):
    """A person to add (or whose role to set): the members page's form."""

    username = serializers.CharField(max_length=MemberForm.base_fields["username"].max_length)
    role = serializers.ChoiceField(choices=Role.choices)


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


MEMBER_PARAMETER = OpenApiParameter(
    "member",
    str,
    OpenApiParameter.PATH,
    description="A member's username, or (when no member has it as username) their user id.",
)


def _project_body(project, user) -> dict:
    role = strongest(roles_of(user))
    return ProjectDetailSerializer({"project": project, "role": role.value if role else ""}).data


def _conflict(exc: ProjectRefused) -> Problem:
    """A rule of the project's state refused the change (frozen versions, the last admin)."""
    return Problem(status_code=409, title="Conflict", detail=str(exc))


def _not_under_a_prefix(request) -> None:
    """``projects/`` is the installation's list: not under a project's prefix (404 there)."""
    if getattr(request, "project_slug", None):
        raise Problem(status_code=404, title="Not Found", detail="No such endpoint.")


def _check_creator(request) -> None:
    """Installation admins create projects (as the New project page), with a token valid in
    every project (a token limited to one project acts in that project only)."""
    if not is_installation_admin(request.user):
        raise Problem(
            status_code=403,
            title="Forbidden",
            detail="Only an installation admin creates projects.",
        )
    if isinstance(request.auth, ApiToken) and request.auth.project_id is not None:
        raise Problem(
            status_code=403,
            title="Forbidden",
            detail="This token is limited to one project: it cannot create projects.",
        )


def _copy_source(request, slug: str | None):
    """The project ``copy_from`` names, one the caller may reach (the page offers those); a
    422 naming ``copy_from`` otherwise."""
    if not slug:
        return None
    try:
        return access_project(user=request.user, slug=slug).project
    except Http404 as exc:
        raise Problem(
            status_code=422,
            title="Unprocessable request",
            detail=f"copy_from: no project of yours has the slug {slug!r}",
            errors=[{"field": "copy_from", "message": "no project of yours"}],
        ) from exc


# ---------------------------------------------------------------- projects


def _changed_since(project, moment) -> bool:
    """Whether ``project`` was created or archived at or after ``moment`` (its change times)."""
    return project.created_at >= moment or (
        project.archived_at is not None and project.archived_at >= moment
    )


class ProjectList(APIView):
    """The installation's projects: those the caller belongs to, and a new one."""

    @extend_schema(
        operation_id="projects_list",
        tags=TAGS,
        responses={200: s.ProjectSerializer(many=True)},
        parameters=[
            OpenApiParameter(
                "updated_since",
                OpenApiTypes.DATETIME,
                description="Only projects created or archived at or after this moment (RFC 3339).",
            )
        ],
    )
    def get(self, request):
        """The projects the caller belongs to (every project for installation admins), by
        name, each with the caller's role in it and the prefix of its API; a token limited to
        one project lists that project only. ``updated_since``: those created or archived
        since."""
        check_query(request, allowed=("updated_since",))
        _not_under_a_prefix(request)
        raw = request.query_params.get("updated_since")
        since = parse_updated_since(raw) if raw is not None else None
        token = request.auth
        rows = []
        for access in list_projects_for(user=request.user):
            if isinstance(token, ApiToken) and token.project_id not in (None, access.project.pk):
                continue
            if since is not None and not _changed_since(access.project, since):
                continue
            role = strongest(access.roles)
            rows.append({"project": access.project, "role": role.value if role else ""})
        return Response(s.ProjectSerializer(rows, many=True).data)

    @extend_schema(
        operation_id="projects_create",
        tags=TAGS,
        request=NewProjectSerializer,
        responses={
            201: OpenApiResponse(
                ProjectDetailSerializer, description="Created; you are its admin."
            ),
            422: OpenApiResponse(
                description="A malformed, reserved or taken slug, or a ``copy_from`` that names "
                "no project of yours (the field is named in errors)."
            ),
        },
    )
    def post(self, request):
        """Create a project (installation admins, with a token valid in every project), as the
        *New project* page does: you become its admin; with ``copy_from`` it starts from that
        project's settings, domains, guidelines and routing rules. Audited as
        ``project.create`` (and ``project.copy_policy``)."""
        check_query(request, allowed=())
        _not_under_a_prefix(request)
        _check_creator(request)
        data = checked_body(request, NewProjectSerializer, what="a new project")
        # a refused slug is ProjectRefused naming ``slug``: a 422 (api_support's handler)
        project = create_project(
            name=data["name"],
            slug=data["slug"],
            description=data["description"],
            by=request.user,
            copy_from=_copy_source(request, data["copy_from"]),
        )
        return Response(
            ProjectDetailSerializer({"project": project, "role": Role.ADMIN.value}).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": project_api_url(project.slug, "api:project")},
        )


class ProjectDetail(APIView):
    """The project of the URL's prefix (``/api/v1/projects/<slug>/``; unprefixed, the default
    project)."""

    @extend_schema(
        operation_id="projects_retrieve", tags=TAGS, responses={200: ProjectDetailSerializer}
    )
    def get(self, request):
        """The project: name, description, archived, your role in it (its members)."""
        check_query(request, allowed=())
        return Response(_project_body(request.project, request.user))

    @extend_schema(
        operation_id="projects_partial_update",
        tags=TAGS,
        request=ProjectChangeSerializer,
        responses={200: ProjectDetailSerializer},
    )
    def patch(self, request):
        """Change the fields sent (the project's admins): ``name`` and ``description`` as the
        settings page's details form (audited as ``project.update``), ``archived`` as its
        archive switch (``project.archive`` / ``project.restore``; everything stays readable).
        A value the project already has changes nothing. The slug never changes."""
        check_query(request, allowed=())
        check_page_role(request, "projects:settings", "change the project")
        data = checked_body(request, ProjectChangeSerializer, what="a project")
        project = request.project
        if "archived" in data:
            check_page_role(request, "projects:archive", "archive the project")
        if "name" in data or "description" in data:
            project = update_project_details(
                project=project,
                name=data.get("name", project.name),
                description=data.get("description", project.description),
                by=request.user,
            )
        if "archived" in data:
            project = set_archived(project=project, archived=data["archived"], by=request.user)
        return Response(_project_body(project, request.user))

    @extend_schema(
        operation_id="projects_destroy",
        tags=TAGS,
        responses={
            204: OpenApiResponse(description="Deleted."),
            409: OpenApiResponse(
                description="The project holds frozen gold versions or other data: archive it."
            ),
        },
    )
    def delete(self, request):
        """Delete the project (installation admins), as the settings page does: refused (409)
        when it holds frozen gold versions or any other data (archive it instead); its
        memberships and settings go with it, its audit events stay. Audited as
        ``project.delete``."""
        check_query(request, allowed=())
        check_page_role(request, "projects:delete", "delete the project")
        if not is_installation_admin(request.user):
            raise Problem(
                status_code=403,
                title="Forbidden",
                detail="Only an installation admin deletes projects.",
            )
        try:
            delete_project(project=request.project, by=request.user)
        except ProjectRefused as exc:
            raise _conflict(exc) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)


# ---------------------------------------------------------------- settings


def _settings(project) -> list:
    return SettingSerializer(list_settings_in_force(project=project), many=True).data


def _setting_changes(request) -> dict[str, str | None]:
    """The body's ``{name: value}`` as the settings service takes them: text, or None (back to
    the installation's value); a number, a boolean or a JSON object as its JSON text."""
    if not isinstance(request.data, dict):
        raise Problem(
            status_code=400,
            title="Bad Request",
            detail="The body must be a JSON object: {setting name: value}.",
        )
    changes = {}
    for name, value in request.data.items():
        if value is None or isinstance(value, str):
            changes[name] = value
        else:
            changes[name] = json.dumps(value)
    return changes


class ProjectSettings(APIView):
    """The project's protocol settings (its admins), as the settings page shows and changes
    them."""

    @extend_schema(
        operation_id="projects_settings_retrieve",
        tags=TAGS,
        responses={200: SettingSerializer(many=True)},
    )
    def get(self, request):
        """Every per-project setting in the order of the settings page: its doc, the
        installation's value, the project's own text (null: it keeps the installation's),
        the value in force and whether the project overrides it."""
        check_query(request, allowed=())
        return Response(_settings(request.project))

    @extend_schema(
        operation_id="projects_settings_partial_update",
        tags=TAGS,
        request=ProjectSettingsChangeSerializer,
        responses={
            200: SettingSerializer(many=True),
            422: OpenApiResponse(
                description="A value its setting refuses, or a name that is no per-project "
                "setting: the setting is named in errors and nothing is saved."
            ),
        },
    )
    def patch(self, request):
        """Set (text) or reset (null or empty: the installation's value) the settings named,
        all or nothing, through the settings page's service: each value is parsed and checked
        against its setting's rule, each change kept in the settings history (old and new
        value, who, when) and audited as ``project.settings``. Answers the settings in
        force."""
        check_query(request, allowed=())
        changes = _setting_changes(request)
        project = update_project_settings(project=request.project, changes=changes, by=request.user)
        return Response(_settings(project))


# ---------------------------------------------------------------- members


def _checked_member(data: dict):
    """The members page's form over the body: a username no active person has is a 422
    naming ``username``."""
    form = MemberForm(data)
    if not form.is_valid():
        errors = form_errors(form)
        raise Problem(
            status_code=422,
            title="Unprocessable request",
            detail="; ".join(f"{e['field']}: {e['message']}" for e in errors),
            errors=errors,
        )
    return form.cleaned_data["user"]


class MemberList(APIView):
    """The project's members (its admins), as the members page lists and adds them."""

    @extend_schema(
        operation_id="projects_members_list",
        tags=TAGS,
        responses={200: MemberSerializer(many=True)},
    )
    def get(self, request):
        """Every member and their role, by username (a small list, answered whole as the
        members page shows it)."""
        check_query(request, allowed=())
        return Response(MemberSerializer(list_members(project=request.project), many=True).data)

    @extend_schema(
        operation_id="projects_members_create",
        tags=TAGS,
        request=NewMemberSerializer,
        responses={
            200: OpenApiResponse(MemberSerializer, description="Already a member: role set."),
            201: OpenApiResponse(MemberSerializer, description="Added."),
            409: OpenApiResponse(
                description="A new role for the project's last admin: a project keeps one."
            ),
            422: OpenApiResponse(description="No active person has this username."),
        },
    )
    def post(self, request):
        """Add a person with a role, or set the role of a member (the members page's form):
        201 when added, 200 when they were a member already. Audited as ``project.member``
        (when the role changed); effective at the person's next request."""
        check_query(request, allowed=())
        data = checked_body(request, NewMemberSerializer, what="a membership")
        user = _checked_member(data)
        created = find_membership(project=request.project, user=user) is None
        try:
            membership = grant_role(
                project=request.project, user=user, role=data["role"], by=request.user
            )
        except ProjectRefused as exc:
            raise _conflict(exc) from exc
        body = MemberSerializer(membership).data
        if not created:
            return Response(body)
        return Response(
            body,
            status=status.HTTP_201_CREATED,
            headers={"Location": api_url(request, "api:project_member", member=user.username)},
        )


class MemberDetail(APIView):
    """One member (its admins): read, change the role, remove."""

    @extend_schema(
        operation_id="projects_members_retrieve",
        tags=TAGS,
        parameters=[MEMBER_PARAMETER],
        responses={200: MemberSerializer},
    )
    def get(self, request, member):
        """The member and their role; 404 when the person is not a member."""
        check_query(request, allowed=())
        return Response(MemberSerializer(get_member(project=request.project, key=member)).data)

    @extend_schema(
        operation_id="projects_members_partial_update",
        tags=TAGS,
        parameters=[MEMBER_PARAMETER],
        request=MemberRoleSerializer,
        responses={
            200: MemberSerializer,
            409: OpenApiResponse(description="The project's last admin: a project keeps one."),
        },
    )
    def patch(self, request, member):
        """Set the member's role (``annotator``, ``adjudication_lead``, ``admin``), as the
        members page does: audited as ``project.member`` when it changed; effective at their
        next request; 409 for another role of the project's last admin."""
        check_query(request, allowed=())
        membership = get_member(project=request.project, key=member)
        data = checked_body(request, MemberRoleSerializer, what="a membership")
        try:
            membership = grant_role(
                project=request.project, user=membership.user, role=data["role"], by=request.user
            )
        except ProjectRefused as exc:
            raise _conflict(exc) from exc
        return Response(MemberSerializer(membership).data)

    @extend_schema(
        operation_id="projects_members_destroy",
        tags=TAGS,
        parameters=[MEMBER_PARAMETER],
        responses={
            204: OpenApiResponse(description="Removed."),
            409: OpenApiResponse(description="The project's last admin: a project keeps one."),
        },
    )
    def delete(self, request, member):
        """Remove the member from the project (the members page's Remove): audited as
        ``project.member_removed``; 409 for the project's last admin."""
        check_query(request, allowed=())
        membership = get_member(project=request.project, key=member)
        try:
            remove_member(project=request.project, user=membership.user, by=request.user)
        except ProjectRefused as exc:
            raise _conflict(exc) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)
