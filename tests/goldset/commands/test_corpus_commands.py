import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from goldset.models import Block, BlockVersion, Document, Domain
from tests.factories import DomainFactory

pytestmark = pytest.mark.django_db


def test_import_corpus_command_prints_the_summary(tmp_path, capsys):
    DomainFactory(slug="federal_it")
    path = tmp_path / "manifest.jsonl"
    path.write_text(
        json.dumps(
            {
                "document_id": "d1",
                "title": "T",
                "domain": "federal_it",
                "authority": 1,
                "blocks": [{"block_id": "b1", "versions": [{"text": "x"}]}],
            }
        )
        + "\n"
    )
    call_command("import_corpus", str(path))
    assert json.loads(capsys.readouterr().out)["versions_created"] == 1


def test_import_corpus_command_fails_with_the_line_and_stores_nothing(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"document_id": "d1"\n')
    with pytest.raises(
        CommandError, match=r"bad.jsonl: rejected, nothing imported:\nline 1: not valid JSON"
    ):
        call_command("import_corpus", str(path))
    assert Document.objects.count() == 0


def test_seed_demo_builds_the_demo_corpus_and_users(tmp_path, capsys):
    call_command("seed_demo", credentials_file=tmp_path / "creds.txt")
    assert Domain.objects.count() >= 3
    assert Document.objects.count() >= 20
    assert Block.objects.count() >= 100
    multi = {b for b, n in _version_counts().items() if n >= 2}
    assert len(multi) >= 10
    later = BlockVersion.objects.filter(version=2).select_related("block")
    for v2 in later:
        v1 = BlockVersion.objects.get(block=v2.block, version=1)
        assert v2.effective_from > v1.effective_from and v1.effective_to < v2.effective_from
    users = {
        u.username: set(u.groups.values_list("name", flat=True))
        for u in get_user_model().objects.all()
    }
    assert users["admin"] == {"admin"} and users["lead"] == {"adjudication_lead"}
    assert all(users[f"ann{i}"] == {"annotator"} for i in range(1, 7)) and users["author"] == {
        "annotator"
    }
    printed = capsys.readouterr().out
    creds = (tmp_path / "creds.txt").read_text()
    for name in ["admin", "lead", "author", "ann6"]:
        assert name in printed and name in creds


def test_seed_demo_is_deterministic_and_idempotent(tmp_path):
    call_command("seed_demo", password="same-password-1", credentials_file=tmp_path / "c.txt")
    first = list(
        BlockVersion.objects.values_list("block__block_id", "version", "sha256").order_by(
            "block__block_id", "version"
        )
    )
    call_command("seed_demo", credentials_file=tmp_path / "c.txt")
    second = list(
        BlockVersion.objects.values_list("block__block_id", "version", "sha256").order_by(
            "block__block_id", "version"
        )
    )
    assert first == second
    assert get_user_model().objects.get(username="lead").check_password("same-password-1")


def test_seed_demo_generates_random_passwords_without_the_option(tmp_path):
    call_command("seed_demo", credentials_file=tmp_path / "c.txt")
    rows = [line.split() for line in (tmp_path / "c.txt").read_text().splitlines()[1:]]
    passwords = {row[0]: row[1] for row in rows}  # username, password, roles per project
    assert (
        len(set(passwords.values())) == len(passwords) == 11
    )  # 9 in the default project, 2 only in policy-assistant
    assert get_user_model().objects.get(username="ann1").check_password(passwords["ann1"])


def test_seed_demo_loads_the_nist_controls_as_superseded_versions(nist_file, tmp_path):
    call_command("seed_demo", nist=nist_file, credentials_file=tmp_path / "c.txt")
    ac2 = list(BlockVersion.objects.filter(block__block_id="nist-ac-2").order_by("version"))
    assert len(ac2) == 2
    assert str(ac2[0].effective_from) == "2015-01-22" and str(ac2[1].effective_from) == "2020-09-23"
    assert str(ac2[0].effective_to) == "2020-09-22"
    assert ac2[0].text != ac2[1].text
    assert Block.objects.filter(block_id__startswith="nist-").count() == 370


def _version_counts():
    from django.db.models import Count

    return dict(Block.objects.annotate(n=Count("versions")).values_list("block_id", "n"))
