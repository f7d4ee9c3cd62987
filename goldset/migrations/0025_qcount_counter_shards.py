"""Dashboard counters sharded per writer connection: concurrent labels and reviews stopped
queueing on the single row of today's count (see ``_counter_triggers``)."""

from django.db import migrations, models

from goldset.migrations._counter_triggers import (
    drop_sqlite_writers,
    restore_sqlite_writers,
    shard,
    unshard,
)


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0024_evalout_import_kind_evaluator"),
    ]

    operations = [
        migrations.RunPython(drop_sqlite_writers, restore_sqlite_writers),
        migrations.RemoveConstraint(
            model_name="dashboardcounter",
            name="dashboard_counter_unique",
        ),
        migrations.AddField(
            model_name="dashboardcounter",
            name="shard",
            field=models.SmallIntegerField(db_default=0),
        ),
        migrations.AddConstraint(
            model_name="dashboardcounter",
            constraint=models.UniqueConstraint(
                fields=("name", "key", "shard"), name="dashboard_counter_shard_unique"
            ),
        ),
        migrations.RunPython(shard, unshard),
    ]
