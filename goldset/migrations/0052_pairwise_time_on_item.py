"""Time on item for pairwise judgments (issue 30): a fourth kind of timed decision,
``pair_judgment``, whose stored per-person figures the agreement recompute refreshes when the
``time_changes`` counter moves (kept by the triggers :mod:`._counter_triggers` installs here,
as for labels, reviews and adjudications)."""

from django.db import migrations, models

from goldset.migrations import _counter_triggers

KINDS = [
    ("label", "Answer label"),
    ("review", "Triple review"),
    ("adjudication", "Adjudication"),
    ("pair_judgment", "Pairwise judgment"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0051_trace_capped_counted"),
    ]

    operations = [
        migrations.AlterField(
            model_name="fastdecision",
            name="kind",
            field=models.CharField(choices=KINDS, max_length=16),
        ),
        migrations.AlterField(
            model_name="timeonitemfigure",
            name="kind",
            field=models.CharField(choices=KINDS, max_length=16),
        ),
        migrations.RunPython(
            _counter_triggers.install_pair_time_changes,
            _counter_triggers.drop_pair_time_changes,
        ),
    ]
