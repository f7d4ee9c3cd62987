"""Issue 29: ``Domain.created_at`` for the API's ``updated_since``. SQLite rebuilds the domain
table to add the column, so the project guards that name it are dropped first and installed
again after (``_project_guards``' note)."""

import django.utils.timezone
from django.db import migrations, models

from goldset.migrations import _project_guards


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0048_sampling_rules"),
    ]

    operations = [
        migrations.RunPython(
            _project_guards.suspend_sqlite_0049, _project_guards.resume_sqlite_0049
        ),
        migrations.AddField(
            model_name="domain",
            name="created_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.RunPython(
            _project_guards.resume_sqlite_0049, _project_guards.suspend_sqlite_0049
        ),
    ]
