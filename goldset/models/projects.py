"""Projects: one installation holds many gold sets (DESIGN.md §15).

A project owns its data and policy (every root table carries ``project``), its members hold a role
*in the project* (:class:`ProjectMembership`), and its protocol numbers are installation defaults
(``goldset/conf.py``) overridden per project (:attr:`Project.settings`, every change kept in
:class:`ProjectSettingChange`). The rows that existed before projects belong to the project whose
slug is :data:`DEFAULT_PROJECT_SLUG` (migration 0032).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

DEFAULT_PROJECT_SLUG = "default"
# The roles a member may hold: ``workbench.roles.Role``'s choices (models sit below the rules
# layer, so they are spelled here; tests/goldset/test_projects_core.py checks they are equal).
MEMBER_ROLES = [
    ("annotator", "Annotator"),
    ("adjudication_lead", "Adjudication lead"),
    ("admin", "Admin"),
]
# URL segments a project slug may not take (``/p/<slug>/`` is safe, but the API's
# ``/api/v1/projects/<slug>/`` shares a namespace with the project list).
RESERVED_SLUGS = frozenset({"new", "api", "static", "admin"})


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=64, unique=True)
    description = models.TextField(blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    # Overrides of the installation defaults: {tunable name: value as JSON}; goldset.conf
    # validates each key and value (only tunables declared per-project may appear).
    settings = models.JSONField(default=dict, blank=True)
    # The last number given to a triple of this project (``gt-00042``: item ids are per
    # project); goldset.services.triples.take_triple_ids is its one writer.
    last_triple_number = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "slug"]

    def __str__(self):
        return self.slug

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


def default_project_id() -> int:
    """The default project's id, for rows created without a project (the rows of before
    projects, and code that has not been handed one): created on first use."""
    project, _ = Project.objects.get_or_create(
        slug=DEFAULT_PROJECT_SLUG, defaults={"name": "Default project"}
    )
    return project.pk


class ProjectMembership(models.Model):
    """One person's role in one project (the strongest role wins: one row per person)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    role = models.CharField(max_length=32, choices=MEMBER_ROLES)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "user_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="project_member_once"),
            models.CheckConstraint(
                condition=Q(role__in=[value for value, _ in MEMBER_ROLES]),
                name="project_member_role_known",
            ),
        ]
        indexes = [models.Index(fields=["user", "project"], name="project_member_by_user")]

    def __str__(self):
        return f"{self.user_id}@{self.project_id}:{self.role}"


class ProjectSettingChange(models.Model):
    """The audit trail of a project's settings: who changed which value, from what, to what."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="setting_changes")
    name = models.CharField(max_length=100)
    old_value = models.JSONField(null=True, blank=True)  # None: the installation default
    new_value = models.JSONField(null=True, blank=True)  # None: back to the default
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-changed_at", "-id"]
        indexes = [models.Index(fields=["project", "-changed_at"], name="project_setting_by_time")]

    def __str__(self):
        return f"{self.project_id} {self.name}: {self.old_value!r} → {self.new_value!r}"
