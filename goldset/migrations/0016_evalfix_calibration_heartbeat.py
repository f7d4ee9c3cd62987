"""PCS calibrations get a heartbeat, attempts and a notice, so the reconciler can take over
a calibration whose worker was lost."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0015_catalogue_job_metrics"),
    ]

    operations = [
        migrations.AddField(
            model_name="pcscalibration",
            name="attempts",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="pcscalibration",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="pcscalibration",
            name="notice",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="pcscalibration",
            name="started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="pcscalibration",
            name="worker",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddIndex(
            model_name="pcscalibration",
            index=models.Index(
                fields=["status", "heartbeat_at"], name="calibration_status_heartbeat"
            ),
        ),
    ]
