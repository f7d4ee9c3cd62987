import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    """Version tags (issue 29): a project's names for its sealed gold versions, and the history
    of every creation, move and deletion (``goldset.services.version_tags``)."""

    dependencies = [
        ("goldset", "0044_pairwise"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="VersionTag",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=64)),
                ("note", models.CharField(blank=True, max_length=300)),
                ("moved_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "moved_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="goldset.project",
                    ),
                ),
                (
                    "version",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="tags",
                        to="goldset.goldversion",
                    ),
                ),
            ],
            options={
                "ordering": ["name"],
                "indexes": [
                    models.Index(fields=["project", "version"], name="version_tag_by_version")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "name"), name="version_tag_name_per_project"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("name", ""), _negated=True),
                        name="version_tag_name_not_empty",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="VersionTagMove",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=64)),
                ("note", models.CharField(blank=True, max_length=300)),
                ("moved_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "from_version",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="goldset.goldversion",
                    ),
                ),
                (
                    "moved_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="goldset.project",
                    ),
                ),
                (
                    "to_version",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="goldset.goldversion",
                    ),
                ),
            ],
            options={
                "ordering": ["-moved_at", "-id"],
                "indexes": [
                    models.Index(
                        fields=["project", "name", "-moved_at"], name="version_tag_move_history"
                    ),
                    models.Index(fields=["project", "-moved_at"], name="version_tag_move_recent"),
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("from_version__isnull", False),
                            ("to_version__isnull", False),
                            _connector="OR",
                        ),
                        name="version_tag_move_has_a_version",
                    )
                ],
            },
        ),
    ]
