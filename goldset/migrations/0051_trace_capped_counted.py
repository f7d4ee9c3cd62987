"""Issue 28: a trace remembers the UTC day it was counted as capped and by which rules, so a batch
sent again (or a later span) does not count it against the daily counters twice. Two nullable
columns without a default: SQLite adds them with ALTER TABLE (no table rebuild, so the project
guards' triggers on ``goldset_receivedtrace`` stay in force)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0050_trace_guards"),
    ]

    operations = [
        migrations.AddField(
            model_name="receivedtrace",
            name="capped_on",
            field=models.DateField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="receivedtrace",
            name="capped_rules",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
