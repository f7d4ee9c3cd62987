"""Issue 14: a GIN index for full-text search of block text (``goldset.selectors.corpus.
search_blocks``), on exactly the expression the search uses — PostgreSQL only (SQLite searches by
substring and skips that SQL); and ``ReviewSkip``, a reviewer's skip of a revision with a reason."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

INDEX = "blockversion_text_fts"
CREATE = (
    f"CREATE INDEX IF NOT EXISTS {INDEX} ON goldset_blockversion USING gin "
    "(to_tsvector('english'::regconfig, COALESCE((text)::text, '')))"
)
DROP = f"DROP INDEX IF EXISTS {INDEX}"


def _on_postgres(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0020_timing_time_on_item_guidelines"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(_on_postgres(CREATE), _on_postgres(DROP)),
        migrations.CreateModel(
            name="ReviewSkip",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("reason", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "reviewer",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="review_skips",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "revision",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="skips",
                        to="goldset.triplerevision",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
                "indexes": [
                    models.Index(fields=["reviewer", "created_at"], name="review_skip_time")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("revision", "reviewer"), name="review_skip_revision_reviewer"
                    )
                ],
            },
        ),
    ]
