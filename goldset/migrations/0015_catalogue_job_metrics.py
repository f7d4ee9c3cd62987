"""Scoring jobs store the retrieval measures they compute (issue 12 item 10). Jobs scored
before this migration computed the six defaults at their cut-off k; they are recorded so."""

from django.db import migrations, models

# The defaults as they were when these jobs ran (scoring.retrieval.DEFAULT_METRICS).
DEFAULTS = ("recall@{k}", "precision@{k}", "hit@{k}", "mrr@{k}", "mrr", "ndcg@{k}")


def record_defaults(apps, schema_editor):
    ScoringJob = apps.get_model("goldset", "ScoringJob")
    for job in ScoringJob.objects.filter(kind="retrieval").only("pk", "k").iterator():
        ScoringJob.objects.filter(pk=job.pk).update(metrics=[m.format(k=job.k) for m in DEFAULTS])


class Migration(migrations.Migration):
    dependencies = [("goldset", "0014_ux_item_skips")]

    operations = [
        migrations.AddField(
            model_name="scoringjob",
            name="metrics",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(record_defaults, migrations.RunPython.noop),
    ]
