"""Indexes that start with the project for the per-project lists of scoring jobs, release
reports and evaluator reports (issue 27: scoping uses indexes that start with the project)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("goldset", "0034_answers_project_indexes")]

    operations = [
        migrations.AddIndex(
            model_name="scoringjob",
            index=models.Index(fields=["project", "-created_at"], name="job_project_recent"),
        ),
        migrations.AddIndex(
            model_name="releasereport",
            index=models.Index(fields=["project", "-created_at"], name="release_project_recent"),
        ),
        migrations.AddIndex(
            model_name="evaluatorreportsnapshot",
            index=models.Index(
                fields=["project", "-created_at"], name="eval_report_project_recent"
            ),
        ),
    ]
