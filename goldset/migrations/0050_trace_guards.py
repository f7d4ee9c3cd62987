"""Issue 28 under projects (issue 27): database guards for the traces' references — a trace's
answer record and sampling rule, a promoted triple's origin — both ways, as for every other
same-project pair (``_project_guards.GUARDS_TRACES``). Migration 0049 suspended and resumed
the guards in force before this one; its SQLite rebuild ran before these existed."""

from django.db import migrations

from goldset.migrations import _project_guards


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0049_domain_created_at"),
    ]

    operations = [
        migrations.RunPython(
            _project_guards.install_traces_0050, _project_guards.uninstall_traces_0050
        ),
    ]
