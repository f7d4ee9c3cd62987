"""Projects and their members (DESIGN.md §15): create, copy policy from another project, grant
and remove roles, archive, delete (refused once a version is frozen)."""

import re

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import GoldVersion, Project, ProjectMembership, ProjectSettingChange
from goldset.models.projects import RESERVED_SLUGS
from goldset.services.project_copy import copy_policy
from workbench.roles import ROLE_RANK, Role, forget_roles
from workbench.services.audit import record_event

# A project slug (the API's schema documents it with this pattern; check_slug applies it).
SLUG_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"
_SLUG = re.compile(SLUG_PATTERN)


class ProjectRefused(GoldsetError):
    """A project change the rules do not allow (the message says which rule; ``field`` names
    the input at fault, when one is)."""

    def __init__(self, message: str, *, field: str = ""):
        super().__init__(message)
        self.field = field


def check_slug(slug: str) -> str:
    """A project slug: lower-case letters, digits and inner hyphens, at most 64, not reserved."""
    if not _SLUG.match(slug or ""):
        raise ProjectRefused(
            "slug: lower-case letters, digits and hyphens (not first or last), at most 64",
            field="slug",
        )
    if slug in RESERVED_SLUGS:
        raise ProjectRefused(f"slug: {slug!r} is reserved", field="slug")
    return slug


@transaction.atomic
def create_project(*, name: str, slug: str, description: str = "", by, copy_from=None) -> Project:
    """A new project; ``by`` (an installation admin) becomes its admin. With ``copy_from`` the
    new project starts from that project's policy, in the same transaction: its settings, and
    its domains (names only), guidelines in force and routing rules in force
    (:func:`goldset.services.project_copy.copy_policy`) — never its data (corpus, triples,
    records, versions…). Audited (``project.create`` naming the source, and
    ``project.copy_policy`` with the counts). A slug that is malformed, reserved or taken (even
    by a concurrent create) is :class:`ProjectRefused` naming ``slug``."""
    check_slug(slug)
    taken = ProjectRefused(f"slug: a project {slug!r} exists already", field="slug")
    if Project.objects.filter(slug=slug).exists():
        raise taken
    try:
        with transaction.atomic():
            project = Project.objects.create(
                name=name.strip() or slug,
                slug=slug,
                description=description,
                settings=dict(copy_from.settings) if copy_from is not None else {},
            )
    except IntegrityError:  # created meanwhile by another request
        raise taken from None
    ProjectMembership.objects.create(project=project, user=by, role=Role.ADMIN.value)
    record_event(
        actor=by,
        verb="project.create",
        object_type="project",
        object_id=project.slug,
        detail={"name": project.name, "copied_from": copy_from.slug if copy_from else None},
        project=project,
    )
    if copy_from is not None:
        copy_policy(source=copy_from, target=project, by=by)
    return project


@transaction.atomic
def grant_role(*, project: Project, user, role: Role | str, by=None) -> ProjectMembership:
    """``user`` holds exactly ``role`` in ``project`` (added, or their role changed). Effective
    on the user's next request (roles are read per request). Refuses to demote the last admin
    (:class:`ProjectRefused`, nothing changed), as :func:`remove_member` refuses to remove them."""
    role = Role(role)
    membership, created = ProjectMembership.objects.select_for_update().get_or_create(
        project=project, user=user, defaults={"role": role.value}
    )
    before = None if created else membership.role
    if before == Role.ADMIN.value and role != Role.ADMIN:
        check_keeps_an_admin(project=project)
    if not created and membership.role != role.value:
        membership.role = role.value
        membership.save(update_fields=["role"])
    if before != role.value:
        record_event(
            actor=by,
            verb="project.member",
            object_type="user",
            object_id=str(user.pk),
            detail={"project": project.slug, "role": role.value, "before": before},
            project=project,
        )
    forget_roles(user)
    return membership


def check_keeps_an_admin(*, project: Project) -> None:
    """Before one of ``project``'s admins stops being one (removed or given another role):
    :class:`ProjectRefused` when they are its last. Inside the caller's transaction; the lock on
    the project row makes two such changes in one project take turns, so two admins demoted or
    removed at once cannot both pass the count."""
    Project.objects.select_for_update().filter(pk=project.pk).values_list("pk").first()
    if ProjectMembership.objects.filter(project=project, role=Role.ADMIN.value).count() <= 1:
        raise ProjectRefused("A project keeps at least one admin.")


@transaction.atomic
def remove_member(*, project: Project, user, by=None) -> bool:
    """``user`` no longer belongs to ``project``; refuses to remove the last admin."""
    membership = (
        ProjectMembership.objects.select_for_update().filter(project=project, user=user).first()
    )
    if membership is None:
        return False
    if membership.role == Role.ADMIN.value:
        check_keeps_an_admin(project=project)
    membership.delete()
    record_event(
        actor=by,
        verb="project.member_removed",
        object_type="user",
        object_id=str(user.pk),
        detail={"project": project.slug, "role": membership.role},
        project=project,
    )
    forget_roles(user)
    return True


def strongest(roles) -> Role | None:
    """The strongest of several roles (a person holds one role per project)."""
    return max((Role(r) for r in roles), key=ROLE_RANK.__getitem__, default=None)


@transaction.atomic
def update_project_details(*, project: Project, name: str, description: str, by) -> Project:
    """A project's name and description (the slug never changes: it is in every URL). Saving
    the values it has changes nothing and records nothing."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    before = {"name": project.name, "description": project.description}
    name = name.strip() or project.slug
    if before == {"name": name, "description": description}:
        return project
    project.name, project.description = name, description
    project.save(update_fields=["name", "description"])
    record_event(
        actor=by,
        verb="project.update",
        object_type="project",
        object_id=project.slug,
        detail={"before": before, "after": {"name": project.name, "description": description}},
        project=project,
    )
    return project


@transaction.atomic
def set_archived(*, project: Project, archived: bool, by) -> Project:
    """Archive (everything stays readable) or restore a project. Asking for the state it is in
    changes nothing (an archived project keeps the time it was archived) and records nothing."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    if project.archived == archived:
        return project
    project.archived_at = timezone.now() if archived else None
    project.save(update_fields=["archived_at"])
    record_event(
        actor=by,
        verb="project.archive" if archived else "project.restore",
        object_type="project",
        object_id=project.slug,
        project=project,
    )
    return project


@transaction.atomic
def delete_project(*, project: Project, by) -> None:
    """Delete a project that holds no frozen gold version (those are kept for ever: archive the
    project instead) and no other data either (its corpus, triples, records… would go with it:
    archive it, or export it as a bundle first). Memberships and settings go with it; its audit
    events stay (the log is append-only)."""
    if GoldVersion.objects.filter(project=project).exists():
        raise ProjectRefused(
            "This project has frozen gold versions: it cannot be deleted (archive it instead)."
        )
    slug = project.slug
    ProjectSettingChange.objects.filter(project=project).delete()
    ProjectMembership.objects.filter(project=project).delete()
    try:
        with transaction.atomic():
            project.delete()
    except ProtectedError:
        raise ProjectRefused(
            "This project holds data (corpus, triples, records or jobs): archive it instead."
        ) from None
    record_event(actor=by, verb="project.delete", object_type="project", object_id=slug)
