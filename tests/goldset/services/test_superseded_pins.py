"""Issue 12 item 1: a triple pinned to a superseded block version never becomes gold silently.

The pin rule (``triples.check_pin``) is exercised through every write path: write, revise,
split and import; re-pinning always pins the current version."""

import json

import pytest

from goldset.exceptions import GoldsetError, ImportRejected
from goldset.models import Triple, TripleRevision, TripleState
from goldset.selectors.curation import newest_versions
from goldset.services.resolution import (
    SplitPart,
    mark_superseded_pins,
    repin_triple,
    revise_triple,
    split_triple,
)
from goldset.services.triples import (
    MAX_SUPERSEDED_REASON,
    SupersededPin,
    check_pin,
    import_triples,
)
from tests.factories import BlockVersionFactory, default_project
from tests.goldset.curation_support import block_version, review, write_triple
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db

REASON = "The audited 2024 policy is what customers signed; v2 is a draft."


@pytest.fixture
def team(make_user):
    return {
        "author": make_user(Role.ANNOTATOR, username="author"),
        "lead": make_user(Role.LEAD, username="lead"),
        **{f"r{i}": make_user(Role.ANNOTATOR, username=f"rev{i}") for i in range(1, 5)},
    }


@pytest.fixture
def superseded():
    """Version 1 of a block that has a version 2 (and the version 2)."""
    v1 = block_version()
    v2 = BlockVersionFactory(block=v1.block, version=2, text="Clause: AES-256-GCM since 2025.")
    return v1, v2


def test_check_pin_accepts_the_current_version_and_drops_a_needless_reason(superseded):
    v1, v2 = superseded
    assert check_pin(block_version=v2) == ""
    assert check_pin(block_version=v2, superseded_reason="not needed") == ""
    single = block_version()
    assert check_pin(block_version=single) == ""


def test_check_pin_refuses_a_superseded_version_without_a_reason(superseded):
    v1, _ = superseded
    with pytest.raises(SupersededPin, match=rf"{v1.block.block_id}@1 is superseded: version 2"):
        check_pin(block_version=v1)
    with pytest.raises(SupersededPin):
        check_pin(block_version=v1, superseded_reason="   ")


def test_check_pin_returns_the_stripped_reason_and_bounds_its_length(superseded):
    v1, _ = superseded
    assert check_pin(block_version=v1, superseded_reason=f"  {REASON}\n") == REASON
    with pytest.raises(GoldsetError, match="too long"):
        check_pin(block_version=v1, superseded_reason="x" * (MAX_SUPERSEDED_REASON + 1))


def test_check_pin_uses_a_known_newest_version_without_a_query(
    superseded, django_assert_num_queries
):
    v1, v2 = superseded
    newest = newest_versions([v1.block_id])
    assert newest == {v1.block_id: 2}
    with django_assert_num_queries(0):
        assert check_pin(block_version=v2, newest=newest[v1.block_id]) == ""
        with pytest.raises(SupersededPin):
            check_pin(block_version=v1, newest=newest[v1.block_id])


def test_writing_against_a_superseded_version_is_refused_and_stores_nothing(team, superseded):
    v1, _ = superseded
    with pytest.raises(SupersededPin):
        write_triple(team["author"], version=v1)
    assert not Triple.objects.exists()
    assert not TripleRevision.objects.exists()


def test_a_reason_lets_the_pin_through_and_is_recorded(team, superseded):
    v1, _ = superseded
    triple = write_triple(team["author"], version=v1, superseded_reason=REASON)
    revision = triple.current_revision
    assert revision.expected_block_version == v1
    assert revision.superseded_reason == REASON
    event = AuditEvent.objects.get(verb="triple_created", object_id=str(triple.pk))
    assert event.detail["superseded_pin"] is True
    assert event.detail["superseded_reason"] == REASON


def test_a_current_pin_records_no_reason(team, superseded):
    _, v2 = superseded
    triple = write_triple(team["author"], version=v2, superseded_reason="ignored")
    assert triple.current_revision.superseded_reason == ""
    event = AuditEvent.objects.get(verb="triple_created", object_id=str(triple.pk))
    assert "superseded_pin" not in event.detail


def _in_discussion(team, version):
    triple = write_triple(team["author"], version=version)
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "flag", ["wrong_source_block"])
    assert triple.state == TripleState.IN_DISCUSSION
    return triple


def test_revising_onto_a_superseded_version_needs_a_reason(team, superseded):
    v1, v2 = superseded
    triple = _in_discussion(team, v2)
    kwargs = {"question": "Which cipher?", "expected_answer": "AES-256.", "block_version": v1}
    with pytest.raises(SupersededPin):
        revise_triple(triple=triple, actor=team["author"], **kwargs)
    triple.refresh_from_db()
    assert (triple.state, triple.current_revision.number) == (TripleState.IN_DISCUSSION, 1)
    revision = revise_triple(
        triple=triple, actor=team["author"], superseded_reason=REASON, **kwargs
    )
    assert (revision.number, revision.superseded_reason) == (2, REASON)
    event = AuditEvent.objects.get(verb="triple_revised", object_id=str(triple.pk))
    assert event.detail["superseded_reason"] == REASON


def test_splitting_onto_a_superseded_version_needs_a_reason_for_that_part(team, superseded):
    v1, v2 = superseded
    triple = _in_discussion(team, v2)
    other = block_version()
    parts = [SplitPart("Which cipher?", v1, "AES-256."), SplitPart("Key size?", other, "256.")]
    with pytest.raises(SupersededPin):
        split_triple(triple=triple, actor=team["author"], parts=parts)
    assert Triple.objects.count() == 1
    parts = [
        SplitPart("Which cipher?", v1, "AES-256.", REASON),
        SplitPart("Key size?", other, "256.", REASON),
    ]
    children = split_triple(triple=triple, actor=team["author"], parts=parts)
    reasons = [c.current_revision.superseded_reason for c in children]
    assert reasons == [REASON, ""]


def test_repinning_pins_the_current_version_without_a_reason(team):
    v1 = block_version()
    triple = write_triple(team["author"], version=v1)
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    v2 = BlockVersionFactory(block=v1.block, version=2, text="Clause v2.")
    mark_superseded_pins(superseding_version_ids=[v2.pk])
    revision = repin_triple(triple=triple, actor=team["lead"])
    assert (revision.expected_block_version, revision.superseded_reason) == (v2, "")


def _line(v, **meta) -> str:
    return json.dumps(
        {
            "question": "Which cipher protects data at rest?",
            "expected_block": {"block_id": v.block.block_id, "version": v.version},
            "expected_answer": "AES-256.",
            "metadata": {
                "domain": v.block.document.domain.slug,
                "task_type": "factual_qa",
                "source": "public_rfp",
                "added_by": "author",
                **meta,
            },
        }
    )


def test_import_refuses_a_superseded_pin_without_a_reason_naming_line_and_field(team, superseded):
    v1, v2 = superseded
    text = "\n".join([_line(v2), _line(v1)])
    with pytest.raises(ImportRejected) as caught:
        import_triples(project=default_project(), source=text, actor=team["author"])
    assert caught.value.errors == [
        f"line 2: expected_block.version: {v1.block.block_id} v1 is superseded by v2; "
        "pin v2 or give metadata.superseded_reason"
    ]
    assert not Triple.objects.exists()


def test_import_with_a_reason_records_it(team, superseded):
    v1, v2 = superseded
    text = "\n".join([_line(v2), _line(v1, superseded_reason=REASON)])
    summary = import_triples(project=default_project(), source=text, actor=team["author"])
    assert len(summary.created) == 2
    reasons = sorted(TripleRevision.objects.values_list("superseded_reason", flat=True))
    assert reasons == ["", REASON]


def test_import_reports_an_overlong_reason_on_its_field(team, superseded):
    v1, _ = superseded
    text = _line(v1, superseded_reason="x" * (MAX_SUPERSEDED_REASON + 1))
    with pytest.raises(ImportRejected) as caught:
        import_triples(project=default_project(), source=text, actor=team["author"])
    assert caught.value.errors[0].startswith("line 1: metadata.superseded_reason: ")
