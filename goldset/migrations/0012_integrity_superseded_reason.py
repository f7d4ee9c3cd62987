from django.db import migrations, models


class Migration(migrations.Migration):
    """Issue 12 item 1: a revision pinned to a superseded block version records why."""

    dependencies = [
        ("goldset", "0011_evals_evaluators"),
    ]

    operations = [
        migrations.AddField(
            model_name="triplerevision",
            name="superseded_reason",
            field=models.TextField(blank=True),
        ),
    ]
