"""Projects a person may reach, fetched and authorized in one call (DESIGN.md §15)."""

from dataclasses import dataclass

from django.http import Http404

from goldset.models import DEFAULT_PROJECT_SLUG, Project, ProjectMembership
from workbench.roles import is_installation_admin, project_roles


@dataclass(frozen=True)
class ProjectAccess:
    project: Project
    roles: frozenset[str]
    # The projects the person is a member of, by name (the top bar's project menu), the
    # project itself among them; filled by :func:`access_project` only.
    member_projects: tuple[Project, ...] = ()


def _by_name(project: Project) -> tuple[str, str]:
    return (project.name.casefold(), project.slug)


def access_project(*, user, slug: str | None) -> ProjectAccess:
    """The project ``slug`` (the default project when ``None``) and the roles ``user`` holds in
    it, with the projects the user is a member of (``member_projects``, by name: the project
    menu), in one statement (the user's memberships, a handful of rows); :class:`Http404` when
    it does not exist or the user is not a member (installation admins are members of every
    project: one more statement when they hold no membership of it, and the menu lists it
    beside their memberships). Archived projects stay readable."""
    slug = slug or DEFAULT_PROJECT_SLUG
    memberships = list(ProjectMembership.objects.select_related("project").filter(user_id=user.pk))
    members = sorted((m.project for m in memberships), key=_by_name)
    for membership in memberships:
        if membership.project.slug == slug:
            roles = project_roles(user, membership.role)
            return ProjectAccess(membership.project, roles, tuple(members))
    if is_installation_admin(user):
        project = Project.objects.filter(slug=slug).first()
        if project is not None:
            menu = tuple(sorted([*members, project], key=_by_name))
            return ProjectAccess(project, project_roles(user, None), menu)
    raise Http404("No such project.")


def list_projects_for(*, user) -> list[ProjectAccess]:
    """The projects ``user`` belongs to (every project for installation admins), by name, each
    with the roles held in it."""
    held = {
        m.project_id: m
        for m in ProjectMembership.objects.select_related("project").filter(user_id=user.pk)
    }
    if is_installation_admin(user):
        projects = list(Project.objects.all())
    else:
        projects = sorted((m.project for m in held.values()), key=lambda p: (p.name, p.slug))
    return [
        ProjectAccess(p, project_roles(user, held[p.pk].role if p.pk in held else None))
        for p in projects
    ]


def list_members(*, project) -> list[ProjectMembership]:
    """A project's members with their users, by username."""
    return list(
        ProjectMembership.objects.select_related("user")
        .filter(project=project)
        .order_by("user__username")
    )


def get_member(*, project, key: str) -> ProjectMembership:
    """The membership in ``project`` of the person ``key`` names: their username, else (when
    ``key`` is a number and no member has it as username) their user id. :class:`Http404` when
    no member of the project matches."""
    members = ProjectMembership.objects.select_related("user").filter(project=project)
    membership = members.filter(user__username=key).first()
    if membership is None and key.isascii() and key.isdigit() and len(key) <= 18:
        membership = members.filter(user_id=int(key)).first()
    if membership is None:
        raise Http404("No such member of this project.")
    return membership


def find_membership(*, project, user) -> ProjectMembership | None:
    """``user``'s membership in ``project``, or None."""
    return ProjectMembership.objects.filter(project=project, user=user).first()
