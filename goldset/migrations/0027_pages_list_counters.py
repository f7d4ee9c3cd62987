"""List pages that stay fast (issue 17): the counters the runs, export, customers and
calibration status pages show (kept like the dashboard's, see ``_counter_triggers``), and the
indexes the promotion, runs, customers and calibration status pages read in their order."""

from django.conf import settings
from django.db import migrations, models

from goldset.migrations._counter_triggers import install_page_counters, uninstall_page_counters


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0026_curation_pin_superseded_time_figures"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="answerrecord",
            index=models.Index(
                condition=models.Q(
                    ("is_calibration", False),
                    ("status__in", ["labeling", "final"]),
                    ("tier", "tier_a"),
                ),
                fields=["id"],
                name="answer_record_promotable",
            ),
        ),
        migrations.AddIndex(
            model_name="customer",
            index=models.Index(fields=["name", "id"], name="customer_name"),
        ),
        migrations.AddIndex(
            model_name="labelassignment",
            index=models.Index(
                condition=models.Q(("is_calibration", True)),
                fields=["annotator", "record"],
                name="assignment_calibration",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["imported_at", "id"], name="run_imported"),
        ),
        migrations.AddIndex(
            model_name="triple",
            index=models.Index(
                condition=models.Q(
                    ("current_revision__isnull", False),
                    ("state__in", ["pending_review", "gold"]),
                    ("tier", "tier_a"),
                ),
                fields=["id"],
                name="triple_promotable",
            ),
        ),
        migrations.RunPython(install_page_counters, uninstall_page_counters),
    ]
