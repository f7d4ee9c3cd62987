"""Tags: names a project gives its sealed gold versions (``release-2026q4``, ``ci``), so a pipeline
names "the version we release against" instead of a number or whatever was frozen last.

A tag points at one sealed version of its own project and is moved only by a project admin
(``goldset.services.version_tags``, the one writer); every creation, move and deletion leaves a
:class:`VersionTagMove` row, kept by name so a deleted and recreated tag keeps one history."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

TAG_NAME_MAX = 64
NOTE_MAX = 300


class VersionTag(models.Model):
    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=TAG_NAME_MAX)
    version = models.ForeignKey(
        "goldset.GoldVersion", on_delete=models.PROTECT, related_name="tags"
    )
    # the note, person and time of the change that put the tag where it is
    note = models.CharField(max_length=NOTE_MAX, blank=True)
    moved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    moved_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], name="version_tag_name_per_project"
            ),
            models.CheckConstraint(condition=~Q(name=""), name="version_tag_name_not_empty"),
        ]
        indexes = [models.Index(fields=["project", "version"], name="version_tag_by_version")]

    def __str__(self):
        return f"{self.name} → v{self.version_id}"


class VersionTagMove(models.Model):
    """One change of a tag: created (no ``from_version``), moved, or deleted (no ``to_version``)."""

    project = models.ForeignKey("goldset.Project", on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=TAG_NAME_MAX)
    from_version = models.ForeignKey(
        "goldset.GoldVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    to_version = models.ForeignKey(
        "goldset.GoldVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    note = models.CharField(max_length=NOTE_MAX, blank=True)
    moved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    moved_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-moved_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(from_version__isnull=False) | Q(to_version__isnull=False),
                name="version_tag_move_has_a_version",
            )
        ]
        indexes = [
            models.Index(fields=["project", "name", "-moved_at"], name="version_tag_move_history"),
            models.Index(fields=["project", "-moved_at"], name="version_tag_move_recent"),
        ]

    def __str__(self):
        return f"{self.name}: v{self.from_version_id} → v{self.to_version_id}"

    @property
    def action(self) -> str:
        if self.from_version_id is None:
            return "created"
        if self.to_version_id is None:
            return "deleted"
        return "moved"
