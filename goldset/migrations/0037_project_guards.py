from django.db import migrations

from goldset.migrations import _project_guards


class Migration(migrations.Migration):
    """Cross-project references refused by the database (issue 27): triggers on the key
    same-project pairs (a revision's pinned block version, a triple's domain and customer, an
    answer record's run and question, a scoring job's or release report's gold version and PCS
    calibration, a calibration set's domain and items), see
    ``goldset/migrations/_project_guards.py``. Refuses to run while stored rows break one."""

    dependencies = [("goldset", "0036_counters_per_project")]

    operations = [
        migrations.RunPython(_project_guards.install, _project_guards.uninstall),
    ]
