"""Migration 0032 (projects): the default project every existing row moves into, its members
(from the role groups), and SQLite's triggers kept across the table rebuilds it needs."""

from goldset.migrations import _counter_triggers, _pin_triggers

DEFAULT_PROJECT_PK = 1  # the rows of before projects take this id (migration default)
ROLE_RANK = {"annotator": 1, "adjudication_lead": 2, "admin": 3}


def create_default_project(apps, schema_editor):
    """The project every row of before projects belongs to (slug ``default``)."""
    Project = apps.get_model("goldset", "Project")
    Project.objects.using(schema_editor.connection.alias).get_or_create(
        pk=DEFAULT_PROJECT_PK, defaults={"slug": "default", "name": "Default project"}
    )
    if schema_editor.connection.vendor == "postgresql":
        # The row took an explicit id: the sequence must not hand it out again.
        schema_editor.execute(
            "SELECT setval(pg_get_serial_sequence('goldset_project', 'id'), "
            "(SELECT MAX(id) FROM goldset_project))"
        )


def grant_memberships(apps, schema_editor):
    """Everyone who held a role (a group) holds it in the default project (the strongest one
    when several)."""
    alias = schema_editor.connection.alias
    Membership = apps.get_model("goldset", "ProjectMembership")
    User = apps.get_model(*_user_model().split("."))
    best: dict[int, str] = {}
    rows = User.groups.through.objects.using(alias).filter(group__name__in=ROLE_RANK)
    for user_id, role in rows.values_list("user_id", "group__name"):
        if ROLE_RANK[role] > ROLE_RANK.get(best.get(user_id, ""), 0):
            best[user_id] = role
    Membership.objects.using(alias).bulk_create(
        Membership(project_id=DEFAULT_PROJECT_PK, user_id=user_id, role=role)
        for user_id, role in sorted(best.items())
    )


def _user_model() -> str:
    from django.conf import settings

    return settings.AUTH_USER_MODEL


def suspend_sqlite_triggers(apps, schema_editor):
    """SQLite rebuilds the tables whose unique columns become unique per project, which drops
    their triggers and fails while other triggers name them: every trigger family is dropped
    first and recreated (with its counters recomputed) by :func:`resume_sqlite_triggers`.
    PostgreSQL alters in place: nothing to do."""
    if schema_editor.connection.vendor != "sqlite":
        return
    _counter_triggers.sqlite_suspend(apps, schema_editor)
    _counter_triggers.uninstall_page_counters(apps, schema_editor)
    _counter_triggers.uninstall_time_counters(apps, schema_editor)
    _pin_triggers.uninstall(apps, schema_editor)


def resume_sqlite_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    _counter_triggers.sqlite_resume(apps, schema_editor)
    _counter_triggers.install_page_counters(apps, schema_editor)
    _counter_triggers.install_time_counters(apps, schema_editor)
    _pin_triggers.install(apps, schema_editor)
