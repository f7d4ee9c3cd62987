"""Pairwise gold in the versioned gold (issue 30): a frozen version carries the project's
decided pairs as ``pairwise_gold``, listed in the manifest with its sha256 like every file;
admins download it whole, leads blind (no system or record id, people as pseudonyms)."""

import json

import pytest

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
