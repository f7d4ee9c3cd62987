"""Issue 27: the answer-labeling list queries filter on the project first, so their indexes
start with it (the lead queue, the promotion list, the runs page) and a project's few
calibration records are counted from their own index (runs and export pages)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0032_projects"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="answerrecord",
            name="answer_record_lead_queue",
        ),
        migrations.RemoveIndex(
            model_name="answerrecord",
            name="answer_record_promotable",
        ),
        migrations.RemoveIndex(
            model_name="run",
            name="run_imported",
        ),
        migrations.AddIndex(
            model_name="answerrecord",
            index=models.Index(
                condition=models.Q(("is_calibration", False)),
                fields=["project", "status", "created_at", "id"],
                name="answer_record_lead_queue",
            ),
        ),
        migrations.AddIndex(
            model_name="answerrecord",
            index=models.Index(
                condition=models.Q(("is_calibration", True)),
                fields=["project", "status"],
                name="answer_record_calibration",
            ),
        ),
        migrations.AddIndex(
            model_name="answerrecord",
            index=models.Index(
                condition=models.Q(
                    ("is_calibration", False),
                    ("status__in", ["labeling", "final"]),
                    ("tier", "tier_a"),
                ),
                fields=["project", "id"],
                name="answer_record_promotable",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["project", "imported_at", "id"], name="run_imported"),
        ),
    ]
