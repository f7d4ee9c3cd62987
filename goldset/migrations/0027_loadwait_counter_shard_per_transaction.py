"""Dashboard counters sharded by transaction, not by connection: concurrent submits on
connections that shared a shard still queued on its row (see ``_counter_triggers``)."""

from django.db import migrations

from goldset.migrations._counter_triggers import shard_by_backend, shard_by_transaction


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0026_curation_pin_superseded_time_figures"),
    ]

    operations = [
        migrations.RunPython(shard_by_transaction, shard_by_backend),
    ]
