"""A GIN index for full-text search of block text (``goldset.selectors.corpus.search_blocks``),
on exactly the expression the search uses. PostgreSQL only: other databases (SQLite) search by
substring and skip this migration's SQL."""

from django.db import migrations

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
    dependencies = [("goldset", "0016_evalfix_calibration_heartbeat")]

    operations = [migrations.RunPython(_on_postgres(CREATE), _on_postgres(DROP))]
