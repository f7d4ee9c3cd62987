"""Commands name versions by tag too (issue 29): ``tag_version`` sets, moves, deletes and lists a
project's tags (audited like the page); ``score_run``, ``export_gold`` and ``release_report``
take a tag or ``latest`` wherever they took a number, and say which tag they could not find."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from goldset.models import ScoringJob, VersionTag, VersionTagMove
from goldset.services.freeze import store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def blocks(admin_user):
    """v1 (three triples) and v2 (two), both in the default project."""
    versions = make_gold_corpus(3)
    for subset in (versions, versions[:2]):
        rows = [gold_row_for(bv, triple_id=f"T{i}") for i, bv in enumerate(subset)]
        store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    return versions


def run(*args) -> dict | list:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_tag_version_sets_moves_lists_and_deletes(blocks, admin_user):
    created = run(
        "tag_version", "release", "--version", "1", "--note", "ok", "--user", admin_user.username
    )
    assert created == {
        "tag": "release",
        "version": 1,
        "previous": None,
        "created": True,
        "changed": True,
    }
    moved = run("tag_version", "release", "--version", "latest")
    assert (moved["version"], moved["previous"], moved["changed"]) == (2, 1, True)
    assert run("tag_version") == [{"tag": "release", "version": 2}]
    assert run("tag_version", "release", "--delete", "--note", "gone") == {
        "tag": "release",
        "deleted": True,
    }
    assert not VersionTag.objects.exists()
    assert [m.action for m in VersionTagMove.objects.all()] == ["deleted", "moved", "created"]
    events = AuditEvent.objects.filter(verb__startswith="version_tag_").order_by("pk")
    assert [e.actor for e in events] == [admin_user, None, None]


def test_tag_version_refuses_with_exit_2(blocks, make_user):
    for args, message in [
        (("tag_version", "Release", "--version", "1"), "cannot name a tag"),
        (("tag_version", "ci", "--version", "9"), "no frozen gold version v9 in default"),
        (("tag_version", "ci"), "give --version REF"),
        (("tag_version", "ci", "--delete"), "no tag 'ci'"),
        (("tag_version", "ci", "--version", "1", "--user", "nobody"), "no user 'nobody'"),
    ]:
        with pytest.raises(CommandError, match=message) as refused:
            call_command(*args, stdout=StringIO())
        assert refused.value.returncode == 2
    lead = make_user(Role.LEAD, username="a-lead")
    with pytest.raises(CommandError, match="only a project admin"):
        call_command("tag_version", "ci", "--version", "1", "--user", lead.username)
    assert not VersionTag.objects.exists()


def test_score_run_and_export_gold_take_a_tag(blocks, admin_user, tmp_path):
    run("tag_version", "ci", "--version", "1")
    trec = tmp_path / "run.trec"
    trec.write_text(f"T0 Q0 {blocks[0].block.block_id} 1 1.0 s\n")
    scored = run("score_run", str(trec), "--version", "ci")
    assert ScoringJob.objects.get(pk=scored["job"]).version.number == 1
    out = tmp_path / "manifest.json"
    call_command(
        "export_gold", "--version", "ci", "--format", "manifest", "-o", str(out), stderr=StringIO()
    )
    assert json.loads(out.read_text())["gold_version"] == 1
    call_command(
        "export_gold",
        "--version",
        "latest",
        "--format",
        "manifest",
        "-o",
        str(out),
        stderr=StringIO(),
    )
    assert json.loads(out.read_text())["gold_version"] == 2
    with pytest.raises(CommandError, match="no frozen gold version tagged 'nightly' in default"):
        call_command("score_run", str(trec), "--version", "nightly")
    with pytest.raises(CommandError, match="no frozen gold version tagged 'nightly' in default"):
        call_command("export_gold", "--version", "nightly", "--format", "manifest")
    with pytest.raises(CommandError, match="tagged 'nightly' in default") as refused:
        call_command("release_report", "--gold-version", "nightly", "--run", "x")
    assert refused.value.returncode == 2
