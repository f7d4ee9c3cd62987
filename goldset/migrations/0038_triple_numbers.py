"""Triple ids are numbered per project (issue 27: ``gt-00042`` is per project). Each project
keeps the last number it gave; the data step starts it past the highest ``gt-`` number its
triples already hold (until now they were the global primary key), so no new id repeats an old
one."""

from django.db import migrations, models


def start_counters(apps, schema_editor):
    Project = apps.get_model("goldset", "Project")
    Triple = apps.get_model("goldset", "Triple")
    for project_id in Project.objects.values_list("pk", flat=True):
        names = (
            Triple.objects.filter(project_id=project_id, external_id__startswith="gt-")
            .values_list("external_id", flat=True)
            .iterator(chunk_size=5000)
        )
        last = max((int(n[3:]) for n in names if n[3:].isdigit()), default=0)
        Project.objects.filter(pk=project_id).update(last_triple_number=last)


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0037_project_guards"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="last_triple_number",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.RunPython(start_counters, migrations.RunPython.noop),
    ]
