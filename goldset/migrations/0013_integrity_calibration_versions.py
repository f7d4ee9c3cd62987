from django.db import migrations, models


def seal_started_items(apps, schema_editor):
    """Items already handed to an annotator form version 1 of their set (their references stay
    frozen); items nobody was given become drafts, so a lead can label them at last."""
    CalibrationSet = apps.get_model("goldset", "CalibrationSet")
    CalibrationItem = apps.get_model("goldset", "CalibrationItem")
    LabelAssignment = apps.get_model("goldset", "LabelAssignment")
    handed_out = LabelAssignment.objects.filter(is_calibration=True).values("record_id")
    for calibration_set in CalibrationSet.objects.all():
        sealed = CalibrationItem.objects.filter(
            calibration_set=calibration_set, record_id__in=handed_out
        ).update(set_version=1)
        if sealed:
            calibration_set.version = 1
            calibration_set.save(update_fields=["version"])


class Migration(migrations.Migration):
    """Issue 12 item 4: calibration sets are handed out in sealed versions."""

    dependencies = [
        ("goldset", "0012_integrity_superseded_reason"),
    ]

    operations = [
        migrations.AddField(
            model_name="calibrationset",
            name="version",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationitem",
            name="set_version",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="calibrationresult",
            name="set_version",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(seal_started_items, migrations.RunPython.noop),
    ]
