"""Pairwise gold in the versioned gold (issue 30): a frozen version carries the project's
decided pairs as ``pairwise_gold``, listed in the manifest with its sha256 like every file;
admins download it whole, leads blind (no system or record id, people as pseudonyms), on the
page and through the API alike; ``export_gold --format pairwise_gold`` writes it verified."""

import hashlib
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from goldset.models import ExportFormat, PairStatus, PairwisePair
from goldset.services import exports
from goldset.services.blinded_downloads import serve_version_file
from goldset.services.freeze import FreezeFilters, freeze_gold_version
from tests.factories import default_project
from tests.goldset.curation_support import review, write_triple
from tests.goldset.pairwise_support import (
    CANARY_SYSTEMS,
    build_runs,
    judge_next,
    make_task,
    reviewers,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def frozen(team, lead):
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    runs, _, _ = build_runs(n_systems=2, n_questions=2)
    task = make_task(runs, actor=lead, name="Gold pairs")
    people = reviewers(3, prefix="pw-gold")
    for person in people:
        judge_next(person, "a")
        judge_next(person, "b")
    version = freeze_gold_version(
        project=default_project(), filters=FreezeFilters(), actor=team["admin"]
    )
    return version, task, people


def _lines(raw: bytes) -> list[dict]:
    return [json.loads(line) for line in raw.decode().splitlines()]


def test_a_frozen_version_carries_the_decided_pairs_with_a_checksum(frozen):
    version, task, people = frozen
    stored = version.files.get(format=ExportFormat.PAIRWISE_GOLD, redacted=False)
    listed = {f["format"]: f for f in version.manifest["files"]}
    assert listed["pairwise_gold"]["sha256"] == stored.sha256
    rows = _lines(exports.read_verified_bytes(stored))
    decided = PairwisePair.objects.filter(task=task, status=PairStatus.FINAL).order_by("position")
    assert [r["pair"] for r in rows] == [p.public_id for p in decided]
    assert len(rows) == 2
    first = rows[0]
    assert first["task"] == "Gold pairs" and first["source"] == "majority"
    assert {first["system_a"], first["system_b"]} <= set(CANARY_SYSTEMS)
    assert [j["reviewer"] for j in first["judgments"]] == [p.username for p in people]
    assert first["adjudication"] is None


def test_leads_download_it_blind_and_admins_whole(frozen, team, lead):
    version, _, people = frozen
    blind = b"".join(
        serve_version_file(user=lead, version=version, fmt="pairwise_gold", via="page").chunks
    )
    text = blind.decode()
    for canary in ("CANARYSYS", "pw-q"):
        assert canary not in text
    for person in people:
        assert person.username not in text
    rows = _lines(blind)
    assert set(rows[0]) == {
        "task", "pair", "question_id", "status", "preference", "source", "judgments", "adjudication",
    }  # fmt: skip
    whole = b"".join(
        serve_version_file(
            user=team["admin"], version=version, fmt="pairwise_gold", via="page"
        ).chunks
    )
    assert "CANARYSYS" in whole.decode()


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_the_api_download_is_the_pages_file_for_each_role(frozen, client_for, team, lead):
    """``GET /api/v1/versions/{ref}/download/pairwise_gold/`` (by number and by ``latest``): the
    same bytes and checksum as the page's download, blind for a lead, whole for an admin; an
    annotator may not."""
    version, task, people = frozen
    stored = version.files.get(format=ExportFormat.PAIRWISE_GOLD, redacted=False)
    api = reverse("api:version_download", args=[version.number, "pairwise_gold"])
    page = reverse("exports:download", args=[version.number, "pairwise_gold"])
    admin = client_for(team["admin"])
    response = admin.get(api)
    assert response.status_code == 200 and response["X-Checksum-SHA256"] == stored.sha256
    whole = _body(response)
    assert whole == exports.read_verified_bytes(stored) == _body(admin.get(page))
    assert "CANARYSYS" in whole.decode()
    latest = admin.get(reverse("api:version_download", args=["latest", "pairwise_gold"]))
    assert _body(latest) == whole
    as_lead = client_for(lead).get(api)
    assert as_lead.status_code == 200
    blind = _body(as_lead)
    assert blind == _body(client_for(lead).get(page))
    text = blind.decode()
    for canary in ("CANARYSYS", "CANARYRUN", "pw-q"):
        assert canary not in text
    for person in people:
        assert person.username not in text
    assert [r["pair"] for r in _lines(blind)] == [r["pair"] for r in _lines(whole)]
    assert client_for(team["r1"]).get(api).status_code == 403


def test_export_gold_writes_the_pairwise_gold_verified(frozen, tmp_path, capsys):
    """``manage.py export_gold --version REF --format pairwise_gold``: the frozen file's bytes
    (checksum verified), to a file or stdout; a version without the file is an error."""
    version, task, _ = frozen
    stored = version.files.get(format=ExportFormat.PAIRWISE_GOLD, redacted=False)
    target = tmp_path / "pairwise.jsonl"
    call_command("export_gold", "--version", "v1", "--format", "pairwise_gold", "-o", str(target))
    assert target.read_bytes() == exports.read_verified_bytes(stored)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == stored.sha256
    assert f"sha256 {stored.sha256}" in capsys.readouterr().err
    rows = _lines(target.read_bytes())
    assert {r["task"] for r in rows} == {task.name} and len(rows) == 2
    call_command("export_gold", "--version", "latest", "--format", "pairwise_gold")
    assert capsys.readouterr().out.encode() == target.read_bytes()
    with pytest.raises(CommandError, match="has no redacted pairwise_gold file"):
        call_command("export_gold", "--version", "1", "--format", "pairwise_gold", "--redacted")
