"""Migration 0032 (projects) on a populated database (issue 27): every row of before projects
lands in the default project with no loss — counts unchanged, memberships granted from the role
groups (the strongest role when someone held several), and the frozen gold versions' rows and
files still verify against the checksums recorded when they were frozen.

The database is built at the latest schema by the real services (the demo: corpus, triples with
reviews, answer records with labels and adjudications, frozen versions), migrated back to the
schema before projects, given more rows through the historical models there (people holding
several role groups, a document with a block), then migrated forward again."""

import hashlib

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from goldset.models import GoldVersion, GoldVersionFile, Project, ProjectMembership
from goldset.models.projects import DEFAULT_PROJECT_SLUG
from goldset.services import exports

BEFORE_PROJECTS = [
    ("goldset", "0031_features_trec_qrels_format"),
    ("workbench", "0006_edges_token_refusals_idempotency"),
]
ROLE_RANK = {"annotator": 1, "adjudication_lead": 2, "admin": 3}
NEW_TABLES = {
    "goldset_project",
    "goldset_projectmembership",
    "goldset_projectsettingchange",
    # created later than projects (0043 traces, 0044 pairwise, 0045 version tags): absent at
    # the old schema
    "goldset_receivedtrace",
    "goldset_receivedspan",
    "goldset_unmatchedpassage",
    "goldset_pairwisetask",
    "goldset_pairwisetaskrun",
    "goldset_pairwisepair",
    "goldset_pairassignment",
    "goldset_pairjudgment",
    "goldset_pairskip",
    "goldset_pairadjudication",
    # 0047 pairwise qualification
    "goldset_paircalibrationitem",
    "goldset_paircalibrationanswer",
    "goldset_pairqualification",
    "goldset_versiontag",
    "goldset_versiontagmove",
    # 0048 sampling rules and promotion provenance
    "goldset_samplingrule",
    "goldset_samplingdaycount",
    "goldset_tripleorigin",
    # workbench 0008 identity (sessions, SCIM) and 0009 SAML
    "workbench_usersession",
    "workbench_scimtoken",
    "workbench_scimuser",
    "workbench_scimgroup",
    "workbench_scimgroup_members",
    "workbench_samlassertion",
    "workbench_samlrequest",
}


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _latest():
    executor = MigrationExecutor(connection)
    return [
        node
        for node in executor.loader.graph.leaf_nodes()
        if node[0] in {"goldset", "workbench", "auth", "contenttypes", "sessions", "admin"}
    ]


def _table_counts() -> dict[str, int]:
    counts = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            if not table.startswith(("goldset_", "workbench_", "auth_")):
                continue
            cursor.execute(f'SELECT COUNT(*) FROM "{table}"')
            counts[table] = cursor.fetchone()[0]
    return counts


def _file_checksums() -> dict[tuple, str]:
    """(version number, format, redacted) → sha256 of the stored chunks, read with plain SQL
    (no model: the schema differs on either side of the migration)."""
    sums = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT v.number, f.format, f.redacted, c.data FROM goldset_goldversionfilechunk c "
            "JOIN goldset_goldversionfile f ON f.id = c.file_id "
            "JOIN goldset_goldversion v ON v.id = f.version_id ORDER BY f.id, c.index"
        )
        digests: dict[tuple, hashlib._Hash] = {}
        for number, fmt, redacted, data in cursor.fetchall():
            digests.setdefault((number, fmt, redacted), hashlib.sha256()).update(bytes(data))
    for key, digest in digests.items():
        sums[key] = digest.hexdigest()
    return sums


@pytest.fixture
def populated(tmp_path, postgres, monkeypatch):
    """The demo at the latest schema (its on-commit kicks to the workers are dropped, as the
    other demo tests drop them), without its second project: rows written before projects
    all belong to one installation, and a second project's rows (its own ``gt-00001``, the
    lead's notifications in each project) cannot be taken back to that schema."""
    monkeypatch.setattr("goldset.demo.seed.seed_policy_project", lambda **kwargs: {})
    with transaction.atomic():
        call_command("seed_demo", password="migrate-demo-1", credentials_file=tmp_path / "c.txt")
        connection.run_on_commit = []
    latest = _latest()
    yield latest
    _migrate(latest)  # whatever happened, leave the schema the rest of the suite expects


@pytest.mark.django_db(transaction=True)
def test_rows_of_before_projects_move_into_the_default_project(populated):
    latest = populated
    assert GoldVersion.objects.filter(sealed=True).exists()
    files_before = _file_checksums()
    assert files_before

    old = _migrate(BEFORE_PROJECTS)
    with connection.cursor() as cursor:
        columns = [
            c.name for c in connection.introspection.get_table_description(cursor, "goldset_triple")
        ]
        tables = set(connection.introspection.table_names(cursor))
    assert "project_id" not in columns and not tables & NEW_TABLES

    # More rows through the historical models: people holding several role groups (the
    # strongest wins), one holding none, and corpus written at the old schema.
    User = old.get_model("auth", "User")
    Group = old.get_model("auth", "Group")
    groups = {name: Group.objects.get_or_create(name=name)[0] for name in ROLE_RANK}
    both = User.objects.create(username="ann-and-lead", password="!")
    both.groups.add(groups["annotator"], groups["adjudication_lead"])
    boss = User.objects.create(username="admin-and-ann", password="!")
    boss.groups.add(groups["admin"], groups["annotator"])
    User.objects.create(username="no-role", password="!")
    Domain = old.get_model("goldset", "Domain")
    Document = old.get_model("goldset", "Document")
    Block = old.get_model("goldset", "Block")
    BlockVersion = old.get_model("goldset", "BlockVersion")
    domain = Domain.objects.order_by("pk").first()
    document = Document.objects.create(
        document_id="pre-projects-doc",
        title="Written before projects",
        domain=domain,
        authority="0.500",
    )
    block = Block.objects.create(block_id="pre-projects-doc#1", document=document)
    BlockVersion.objects.create(
        block=block, version=1, text="Old text.", sha256=hashlib.sha256(b"Old text.").hexdigest()
    )
    expected_roles: dict[str, str] = {}
    Membership = User.groups.through
    for username, group in Membership.objects.filter(group__name__in=ROLE_RANK).values_list(
        "user__username", "group__name"
    ):
        if ROLE_RANK[group] > ROLE_RANK.get(expected_roles.get(username, ""), 0):
            expected_roles[username] = group
    assert expected_roles["ann-and-lead"] == "adjudication_lead"
    assert expected_roles["admin-and-ann"] == "admin"
    counts_before = _table_counts()

    _migrate(latest)

    counts_after = _table_counts()
    assert {t: n for t, n in counts_after.items() if t not in NEW_TABLES} == counts_before
    default = Project.objects.get(slug=DEFAULT_PROJECT_SLUG)
    assert list(Project.objects.values_list("slug", flat=True)) == [DEFAULT_PROJECT_SLUG]
    from django.apps import apps

    owned = 0
    for model in apps.get_models():
        field = next(
            (f for f in model._meta.concrete_fields if f.name == "project" and not f.null), None
        )
        if (
            field is None
            or model is ProjectMembership
            or model._meta.label == "goldset.ProjectSettingChange"
        ):
            continue
        rows = model.objects.count()
        assert model.objects.filter(project=default).count() == rows, model._meta.label
        owned += rows
    assert owned > 300  # the demo's rows, all of them in the default project

    roles = dict(
        ProjectMembership.objects.filter(project=default).values_list("user__username", "role")
    )
    assert roles == expected_roles
    assert "no-role" not in roles
    assert roles["lead"] == "adjudication_lead" and roles["ann1"] == "annotator"

    # The frozen versions are the same bytes and verify against their recorded checksums.
    assert _file_checksums() == files_before
    for version in GoldVersion.objects.filter(sealed=True):
        assert version.project_id == default.pk
        exports.verify_rows(version)
        for stored in GoldVersionFile.objects.filter(version=version):
            exports.verify_file(stored)
