"""Dashboard counters sharded by transaction, not by connection: concurrent submits on
connections that shared a shard still queued on its row; and the time-on-item counters of 0026
run once per statement instead of once per row (see ``_counter_triggers``)."""

from django.db import migrations

from goldset.migrations._counter_triggers import (
    shard_by_backend,
    shard_by_transaction,
    time_counters_per_row,
    time_counters_per_statement,
)


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0027_pages_list_counters"),
    ]

    operations = [
        migrations.RunPython(shard_by_transaction, shard_by_backend),
        migrations.RunPython(time_counters_per_statement, time_counters_per_row),
    ]
