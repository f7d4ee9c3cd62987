"""The retriever's score of a retrieved passage matched to the corpus (issue 28): a trace sends
one per document, and it was kept only for the passages outside the corpus. Nullable: uploaded
answer logs and the records stored before carry none."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0052_pairwise_time_on_item"),
    ]

    operations = [
        migrations.AddField(
            model_name="retrievedpassage",
            name="score",
            field=models.FloatField(blank=True, null=True),
        ),
    ]
