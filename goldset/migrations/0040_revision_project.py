import django.db.models.deletion
from django.db import migrations, models

BACKFILL = (
    "UPDATE goldset_triplerevision SET project_id = (SELECT t.project_id FROM goldset_triple t"
    " WHERE t.id = goldset_triplerevision.triple_id)"
)


def require_project(apps, schema_editor):
    """NOT NULL in place on PostgreSQL. SQLite would rebuild the table for it, which drops the
    triggers on it (0026's pins, 0036's project counters): there the column stays nullable in
    the database, and the model still requires it (every writer sets it)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "ALTER TABLE goldset_triplerevision ALTER COLUMN project_id SET NOT NULL"
        )


def allow_no_project(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "ALTER TABLE goldset_triplerevision ALTER COLUMN project_id DROP NOT NULL"
        )


class Migration(migrations.Migration):
    """Revisions carry their triple's project (issue 27), and the review claim's open-slots
    index starts with it: a project's claim walks its own open revisions only, where the index
    on (created_at, id) walked past every older open revision of every other project (measured:
    2.6 s past 200,000 open revisions of two other projects)."""

    dependencies = [("goldset", "0039_time_figures_per_project")]

    operations = [
        migrations.AddField(
            model_name="triplerevision",
            name="project",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="goldset.project",
            ),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="triplerevision",
                    name="project",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="goldset.project",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(require_project, allow_no_project)],
        ),
        migrations.RemoveIndex(model_name="triplerevision", name="revision_open_slots"),
        migrations.AddIndex(
            model_name="triplerevision",
            index=models.Index(
                condition=models.Q(("assigned_count__lt", models.F("reviewers_needed"))),
                fields=["project", "created_at", "id"],
                name="revision_open_slots",
            ),
        ),
    ]
