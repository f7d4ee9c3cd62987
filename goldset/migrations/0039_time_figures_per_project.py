"""Time on item per project (issue 27): a person's stored figures are per project, computed
from their decisions in that project, and the ``time_changes`` counter that marks them stale is
keyed ``<project_id>|kind|user_id`` (``_counter_triggers.key_time_changes_by_project``). The
figures stored so far mixed projects: they are dropped, and the next agreement recompute stores
every project's anew (each counter is ahead of a missing figure, so all are stale)."""

import django.db.models.deletion
from django.db import migrations, models

from goldset.migrations import _counter_triggers


def drop_figures(apps, schema_editor):
    apps.get_model("goldset", "TimeOnItemFigure").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("goldset", "0038_triple_numbers")]

    operations = [
        migrations.RunPython(drop_figures, drop_figures),
        migrations.RemoveConstraint(
            model_name="timeonitemfigure",
            name="time_on_item_figure_once",
        ),
        migrations.AddField(
            model_name="timeonitemfigure",
            name="project",
            field=models.ForeignKey(
                default=1,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="goldset.project",
            ),
            preserve_default=False,
        ),
        migrations.AddConstraint(
            model_name="timeonitemfigure",
            constraint=models.UniqueConstraint(
                fields=("project", "kind", "user_id"), name="time_on_item_figure_once_per_project"
            ),
        ),
        migrations.RunPython(
            _counter_triggers.key_time_changes_by_project,
            _counter_triggers.unkey_time_changes_by_project,
        ),
    ]
