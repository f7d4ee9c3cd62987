"""Project bundles (issue 27, "copy and move"): ``export_project`` writes a project's whole
state with a sha256 per member, ``import_project`` verifies every member and recreates the
project under a new slug with new ids — same counts, frozen versions byte-identical and still
verifying; a tampered member, a slug in use, or an unreadable file is refused with exit 2 and
leaves nothing behind."""

import gzip
import io
import json
import tarfile

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase

from goldset.models import (
    AnswerRecord,
    Block,
    BlockVersion,
    Document,
    GoldVersion,
    GoldVersionFile,
    Label,
    Project,
    ProjectMembership,
    Review,
    Triple,
    TripleRevision,
)
from goldset.services import exports
from goldset.services.project_bundle import BundleRefused, import_bundle, table_plans
from goldset.services.projects import grant_role
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_bundle(tmp_path, postgres):
    with TestCase.captureOnCommitCallbacks(execute=False):
        call_command("seed_demo", password="bundle-demo-1", credentials_file=tmp_path / "c.txt")
    source = Project.objects.get(slug="default")
    source.settings = {"KAPPA_GATE": 0.8}
    source.save(update_fields=["settings"])
    path = tmp_path / "default.tar.gz"
    out = io.StringIO()
    call_command("export_project", "--project", "default", "--out", str(path), stdout=out)
    assert json.loads(out.getvalue())["counts"]["goldset.Triple"] > 0
    return source, path


def _counts(project) -> dict[str, int]:
    return {
        plan.label: plan.model.objects.filter(**{plan.scope: project}).count()
        for plan in table_plans()
    }


def _rewrite(path, out_path, member, change):
    """Copy the bundle with ``member``'s bytes changed by ``change`` (manifest untouched)."""
    with tarfile.open(path, "r:gz") as src, tarfile.open(out_path, "w:gz") as dst:
        for info in src.getmembers():
            data = src.extractfile(info).read()
            if info.name == member:
                data = change(data)
                info.size = len(data)
            dst.addfile(info, io.BytesIO(data))


def test_round_trip_recreates_the_project_with_new_ids(demo_bundle):
    source, path = demo_bundle
    before = _counts(source)
    assert before["goldset.GoldVersion"] >= 1
    assert before["goldset.Label"] > 0 and before["goldset.Review"] > 0

    out = io.StringIO()
    call_command("import_project", str(path), "--slug", "copy", stdout=out)
    summary = json.loads(out.getvalue())
    copy = Project.objects.get(slug="copy")
    assert summary["project"] == "copy"
    assert _counts(copy) == before
    assert _counts(source) == before  # the source is untouched
    assert copy.settings == {"KAPPA_GATE": 0.8}
    assert copy.name == source.name
    assert summary["users_created_inactive"] == []  # same installation: everyone is known

    # New ids everywhere, and every link stays inside the new project.
    assert not set(Triple.objects.filter(project=copy).values_list("pk", flat=True)) & set(
        Triple.objects.filter(project=source).values_list("pk", flat=True)
    )
    assert (
        not TripleRevision.objects.filter(triple__project=copy)
        .exclude(expected_block_version__block__project=copy)
        .exists()
    )
    assert (
        not Triple.objects.filter(project=copy, current_revision__isnull=False)
        .exclude(current_revision__triple__project=copy)
        .exists()
    )
    assert Triple.objects.filter(project=copy, current_revision__isnull=True).count() == (
        Triple.objects.filter(project=source, current_revision__isnull=True).count()
    )
    assert (
        not Label.objects.filter(record__project=copy)
        .exclude(assignment__record__project=copy)
        .exists()
    )
    assert (
        not Review.objects.filter(revision__triple__project=copy)
        .exclude(assignment__revision__triple__project=copy)
        .exists()
    )
    assert not Block.objects.filter(project=copy).exclude(document__project=copy).exists()
    assert (
        not BlockVersion.objects.filter(block__project=copy)
        .exclude(block__document__project=copy)
        .exists()
    )
    assert sorted(Document.objects.filter(project=copy).values_list("document_id", flat=True)) == (
        sorted(Document.objects.filter(project=source).values_list("document_id", flat=True))
    )

    # Same people, same roles (by username), plus nothing else.
    def roles(p):
        return sorted(
            ProjectMembership.objects.filter(project=p).values_list("user__username", "role")
        )

    assert roles(copy) == roles(source)
    # The labels are by the same people, with their times kept.
    assert sorted(
        Label.objects.filter(record__project=copy).values_list(
            "annotator__username", "record__question__question_id", "created_at"
        )
    ) == sorted(
        Label.objects.filter(record__project=source).values_list(
            "annotator__username", "record__question__question_id", "created_at"
        )
    )

    # Frozen versions: same numbers and checksums, sealed, files byte-identical and verifying.
    for version in GoldVersion.objects.filter(project=source).order_by("number"):
        twin = GoldVersion.objects.get(project=copy, number=version.number)
        assert twin.sealed is version.sealed
        assert (twin.rows_sha256, twin.manifest_sha256) == (
            version.rows_sha256,
            version.manifest_sha256,
        )
        assert (twin.parent.number if twin.parent else None) == (
            version.parent.number if version.parent else None
        )
        exports.verify_rows(twin)
        files = GoldVersionFile.objects.filter(version=version)
        assert files.exists()
        for stored in files:
            copied = GoldVersionFile.objects.get(
                version=twin, format=stored.format, redacted=stored.redacted
            )
            assert exports.read_verified_bytes(copied) == exports.read_verified_bytes(stored)
    event = AuditEvent.objects.get(verb="project.import")
    assert event.project_id == copy.pk


def test_import_creates_missing_people_inactive_without_passwords(demo_bundle):
    source, path = demo_bundle
    User = get_user_model()
    stranger = User.objects.create_user(username="visiting-annotator", password="x-Passw0rd!")
    grant_role(project=source, user=stranger, role="annotator")
    call_command("export_project", "--project", "default", "--out", str(path), stdout=io.StringIO())
    stranger.delete()

    out = io.StringIO()
    call_command("import_project", str(path), "--slug", "elsewhere", stdout=out)
    assert json.loads(out.getvalue())["users_created_inactive"] == ["visiting-annotator"]
    created = User.objects.get(username="visiting-annotator")
    assert not created.is_active
    assert not created.has_usable_password()
    assert not created.groups.exists() and not created.is_staff and not created.is_superuser
    membership = ProjectMembership.objects.get(user=created)
    assert (membership.project.slug, membership.role) == ("elsewhere", "annotator")


@pytest.mark.parametrize(
    "member",
    ["tables/goldset.Label.jsonl", "tables/goldset.GoldVersionFileChunk.jsonl", "project.json"],
)
def test_a_tampered_member_is_refused_and_nothing_is_written(demo_bundle, tmp_path, member):
    _source, path = demo_bundle
    tampered = tmp_path / "tampered.tar.gz"

    def change(data: bytes) -> bytes:
        return data.replace(b'"', b"'", 1) if data else b"{}\n"

    _rewrite(path, tampered, member, change)
    projects = Project.objects.count()
    with pytest.raises(CommandError) as refused:
        call_command("import_project", str(tampered), "--slug", "tampered")
    assert refused.value.returncode == 2
    assert member in str(refused.value)
    assert "checksum" in str(refused.value)
    assert Project.objects.count() == projects
    assert not Project.objects.filter(slug="tampered").exists()


def test_a_member_added_or_removed_is_refused(demo_bundle, tmp_path):
    _source, path = demo_bundle
    extra = tmp_path / "extra.tar.gz"
    with tarfile.open(path, "r:gz") as src, tarfile.open(extra, "w:gz") as dst:
        for info in src.getmembers():
            if info.name == "tables/goldset.Review.jsonl":
                continue  # dropped
            dst.addfile(info, src.extractfile(info))
    with pytest.raises(BundleRefused, match=r"tables/goldset\.Review\.jsonl: listed in the"):
        import_bundle(source=str(extra), slug="missing-member")
    assert not Project.objects.filter(slug="missing-member").exists()


def test_an_existing_slug_and_an_unreadable_file_are_refused(demo_bundle, tmp_path):
    _source, path = demo_bundle
    with pytest.raises(CommandError, match="exists already") as refused:
        call_command("import_project", str(path), "--slug", "default")
    assert refused.value.returncode == 2
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(gzip.compress(b"not a tar archive at all" * 40))
    with pytest.raises(CommandError, match="not a readable") as refused:
        call_command("import_project", str(junk), "--slug", "junk")
    assert refused.value.returncode == 2
    assert not Project.objects.filter(slug__in=["junk"]).exists()


def test_a_failure_half_way_leaves_nothing_behind(demo_bundle, tmp_path):
    """All or nothing: a bundle whose rows disagree with its own manifest (a count that does
    not match, found after many tables were inserted) rolls the whole import back."""
    _source, path = demo_bundle
    broken = tmp_path / "broken.tar.gz"
    with tarfile.open(path, "r:gz") as src:
        contents = {i.name: (i, src.extractfile(i).read()) for i in src.getmembers()}
    manifest = json.loads(contents["manifest.json"][1])
    manifest["counts"]["goldset.Triple"] += 1
    with tarfile.open(broken, "w:gz") as dst:
        for name, (info, data) in contents.items():
            if name == "manifest.json":
                data = json.dumps(manifest).encode()
                info.size = len(data)
            dst.addfile(info, io.BytesIO(data))
    records = AnswerRecord.objects.count()
    with pytest.raises(BundleRefused, match="goldset.Triple"):
        import_bundle(source=str(broken), slug="half-way")
    assert not Project.objects.filter(slug="half-way").exists()
    assert AnswerRecord.objects.count() == records


def test_export_to_a_stream_reads_back(demo_bundle):
    """The archive is written front to back (``--out -``): a stream is enough."""
    source, _path = demo_bundle
    buffer = io.BytesIO()
    from goldset.services.project_bundle import export_bundle

    manifest = export_bundle(project=source, out=buffer)
    buffer.seek(0)
    result = import_bundle(source=buffer, slug="from-stream")
    assert result.counts == manifest["counts"]


@pytest.mark.parametrize(
    ("role", "status"), [("admin", 200), ("adjudication_lead", 403), ("annotator", 403)]
)
def test_the_settings_page_download_is_for_the_projects_admins(client, postgres, role, status):
    from tests.factories import DocumentFactory, UserFactory

    DocumentFactory(title="Bundled by the page")
    user = UserFactory(role=role)
    client.force_login(user)
    response = client.get("/p/default/project/bundle.tar.gz")
    assert response.status_code == status
    if status != 200:
        return
    assert response["Content-Type"] == "application/gzip"
    assert 'filename="default-' in response["Content-Disposition"]
    data = b"".join(response.streaming_content)
    result = import_bundle(source=io.BytesIO(data), slug="from-page", by=user)
    assert result.counts["goldset.Document"] == 1
    copy = Project.objects.get(slug="from-page")
    assert ProjectMembership.objects.get(project=copy, user=user).role == "admin"
    page = client.get("/p/default/project/settings/")
    assert b"/p/default/project/bundle.tar.gz" in page.content


def test_the_download_of_another_project_is_404(client, postgres):
    from tests.factories import UserFactory

    other = Project.objects.create(name="Other", slug="other")
    admin = UserFactory(role="admin")
    admin.is_staff = False  # an admin of the default project, not of the installation
    admin.save(update_fields=["is_staff"])
    client.force_login(admin)
    assert client.get("/p/default/project/bundle.tar.gz").status_code == 200
    assert client.get(f"/p/{other.slug}/project/bundle.tar.gz").status_code == 404
