"""On PostgreSQL the audit log refuses UPDATE and DELETE at the database, not only in Python."""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION workbench_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% on %.% is not allowed: rows are append-only', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER workbench_auditevent_append_only
    BEFORE UPDATE OR DELETE ON workbench_auditevent
    FOR EACH ROW EXECUTE FUNCTION workbench_refuse_change();
"""
BACKWARD = """
DROP TRIGGER IF EXISTS workbench_auditevent_append_only ON workbench_auditevent;
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD, params=None)


class Migration(migrations.Migration):
    dependencies = [("workbench", "0001_initial")]
    operations = [migrations.RunPython(forward, backward)]
