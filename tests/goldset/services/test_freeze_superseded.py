"""Issue 12 item 1 at freeze: gold triples pinned to superseded block versions are listed in the
preview and left out unless the admin confirms them; the manifest says which and whether."""

import json

import pytest

from goldset.models import ExportFormat
from goldset.services import exports
from goldset.services.freeze import (
    FreezeFilters,
    freeze_gold_version,
    preview_freeze,
    superseded_pins,
)
from goldset.services.triples import import_triples
from tests.factories import BlockVersionFactory, default_project
from tests.goldset.curation_support import block_version, review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db
REASON = "Customers signed the 2024 wording."


@pytest.fixture
def team(make_user):
    return {
        "admin": make_user(Role.ADMIN, username="boss"),
        "author": make_user(Role.ANNOTATOR, username="author"),
        **{f"r{i}": make_user(Role.ANNOTATOR, username=f"rev{i}") for i in range(1, 3)},
    }


def gold(team, **fields):
    triple = write_triple(team["author"], **fields)
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    return triple


@pytest.fixture
def pins(team):
    """One current pin, one reasoned superseded pin, one gold triple whose block gained a
    version without a corpus import (so nothing marked it)."""
    current = gold(team, version=block_version())
    old = block_version()
    BlockVersionFactory(block=old.block, version=2, text="Newer wording.")
    reasoned = gold(team, version=old, superseded_reason=REASON)
    stale = gold(team, version=block_version())
    BlockVersionFactory(
        block=stale.current_revision.expected_block_version.block, version=2, text="v2"
    )
    return current, reasoned, stale


def test_preview_lists_superseded_pins_and_leaves_them_out(pins):
    current, reasoned, stale = pins
    preview = preview_freeze(project=default_project(), filters=FreezeFilters())
    assert preview.count == 1
    assert preview.diff.added == [current.external_id]
    assert [
        (r.triple_id, r.pinned_version, r.newest_version, r.reason) for r in preview.superseded
    ] == [
        (reasoned.external_id, 1, 2, REASON),
        (stale.external_id, 1, 2, ""),
    ]
    assert preview.include_superseded is False


def test_freeze_leaves_superseded_pins_out_and_the_manifest_lists_them(team, pins):
    current, reasoned, stale = pins
    version = freeze_gold_version(
        project=default_project(), filters=FreezeFilters(), actor=team["admin"]
    )
    assert list(version.rows.values_list("triple_id", flat=True)) == [current.external_id]
    listed = version.manifest["superseded_pins"]
    assert listed["included"] is False
    assert [t["id"] for t in listed["triples"]] == [reasoned.external_id, stale.external_id]
    assert listed["triples"][0] == {
        "id": reasoned.external_id,
        "block_id": reasoned.current_revision.expected_block_version.block.block_id,
        "pinned_version": 1,
        "current_version": 2,
        "reason": REASON,
    }
    assert version.filters["include_superseded"] is False


def test_confirmed_freeze_includes_them_with_the_reason_in_the_row(team, pins):
    current, reasoned, stale = pins
    filters = FreezeFilters(include_superseded=True)
    assert preview_freeze(project=default_project(), filters=filters).count == 3
    version = freeze_gold_version(project=default_project(), filters=filters, actor=team["admin"])
    assert version.row_count == 3
    assert version.manifest["superseded_pins"]["included"] is True
    gold_file = version.files.get(format=ExportFormat.GOLD_JSONL)
    rows = {
        r["id"]: r
        for r in map(json.loads, exports.read_verified_bytes(gold_file).decode().splitlines())
    }
    assert rows[reasoned.external_id]["metadata"]["superseded_reason"] == REASON
    assert "superseded_reason" not in rows[current.external_id]["metadata"]
    assert "superseded_reason" not in rows[stale.external_id]["metadata"]


def test_a_frozen_row_with_a_reason_reimports(team, pins):
    _, reasoned, _ = pins
    version = freeze_gold_version(
        project=default_project(),
        filters=FreezeFilters(include_superseded=True),
        actor=team["admin"],
    )
    gold_file = version.files.get(format=ExportFormat.GOLD_JSONL)
    line = next(
        r
        for r in map(json.loads, exports.read_verified_bytes(gold_file).decode().splitlines())
        if r["id"] == reasoned.external_id
    )
    line["id"] = "reimported-1"
    summary = import_triples(
        project=default_project(), source=json.dumps(line), actor=team["admin"], on_behalf=True
    )
    assert summary.created == ["reimported-1"]


def test_without_superseded_pins_the_preview_lists_none(team):
    gold(team, version=block_version())
    assert superseded_pins(FreezeFilters(), project=default_project()) == []
    assert preview_freeze(project=default_project(), filters=FreezeFilters()).superseded == []
