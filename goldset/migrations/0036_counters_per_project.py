from django.db import migrations, models

from goldset.migrations import _counter_triggers


class Migration(migrations.Migration):
    """The quality area per project: dashboard and list-page counters keyed by project
    (``<project_id>|…``, ``goldset/migrations/_counter_triggers.py``), so a project's pages read
    its own counts; notifications fold per project (the unread-thread constraint and the list
    and badge indexes start with the project); the fast-decision list's index starts with the
    project."""

    dependencies = [("goldset", "0035_versions_project_indexes")]

    operations = [
        migrations.RemoveConstraint(
            model_name="notification",
            name="notification_unread_key_once",
        ),
        migrations.RemoveIndex(
            model_name="fastdecision",
            name="fast_decision_time",
        ),
        migrations.RemoveIndex(
            model_name="notification",
            name="notification_list",
        ),
        migrations.RemoveIndex(
            model_name="notification",
            name="notification_unread",
        ),
        migrations.AddIndex(
            model_name="fastdecision",
            index=models.Index(
                fields=["project", "created_at", "id"], name="fast_decision_project_time"
            ),
        ),
        migrations.AddIndex(
            model_name="notification",
            index=models.Index(
                fields=["project", "recipient", "created_at", "id"],
                name="notification_project_list",
            ),
        ),
        migrations.AddIndex(
            model_name="notification",
            index=models.Index(
                condition=models.Q(("read_at__isnull", True)),
                fields=["project", "recipient", "kind"],
                name="notification_project_unread",
            ),
        ),
        migrations.AddConstraint(
            model_name="notification",
            constraint=models.UniqueConstraint(
                condition=models.Q(("read_at__isnull", True), models.Q(("key", ""), _negated=True)),
                fields=("project", "recipient", "key"),
                name="notification_unread_key_once_per_project",
            ),
        ),
        migrations.RunPython(
            _counter_triggers.key_counters_by_project,
            _counter_triggers.unkey_counters_by_project,
        ),
    ]
