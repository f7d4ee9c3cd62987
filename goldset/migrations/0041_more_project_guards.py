from django.db import migrations

from goldset.migrations import _project_guards


class Migration(migrations.Migration):
    """The remaining same-project pairs refused by the database (issue 27): a document's and a
    question's domain, a block's document, a run's system, a revision's triple and a triple's
    current revision, quality-tracker entries, the block versions pinned by evidence, citations
    and retrieved passages, a judge's output and its record, a discussion message's revision, a
    label's or adjudication's guideline version; see ``goldset/migrations/_project_guards.py``.
    Refuses to run while stored rows break one."""

    dependencies = [("goldset", "0040_revision_project")]

    operations = [
        migrations.RunPython(_project_guards.install_0041, _project_guards.uninstall_0041),
    ]
