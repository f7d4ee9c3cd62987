from django.db import migrations

from goldset.migrations import _counter_triggers


class Migration(migrations.Migration):
    """Dashboard and list-page counters keyed by project (``<project_id>|…``), so a project's
    pages read its own counts (``goldset/migrations/_counter_triggers.py``)."""

    dependencies = [("goldset", "0032_projects")]

    operations = [
        migrations.RunPython(
            _counter_triggers.key_counters_by_project,
            _counter_triggers.unkey_counters_by_project,
        )
    ]
