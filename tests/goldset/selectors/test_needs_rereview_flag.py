"""Issue 17: the "needs re-review" list reads the trigger-kept ``Triple.pin_superseded`` flag
through its partial index, and names exactly the triples the old whole-table rule named (a
subquery of every live triple's block's newest version), on varied and on random data."""

import random

import pytest
from django.db.models import F, OuterRef, Q, Subquery

from goldset.models import BlockVersion, Triple, TripleRevision, TripleState
from goldset.rules.triple_states import CLOSED, needs_rereview_q
from goldset.selectors.curation import list_needs_rereview, page_needs_rereview
from goldset.services.freeze import FreezeFilters, freeze_gold_version
from goldset.services.resolution import mark_superseded_pins, repin_triple, retire_triple
from tests.factories import BlockFactory, BlockVersionFactory, default_project
from tests.goldset.curation_support import block_version, review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db

REASON = "The signed contract quotes this version."


def old_needs_rereview():
    """The rule as it was before issue 17 (verbatim): every live triple's pin compared with
    its block's newest version by a correlated subquery, plus triples marked needs_rereview."""
    newest = (
        BlockVersion.objects.filter(
            block_id=OuterRef("current_revision__expected_block_version__block_id")
        )
        .order_by("-version")
        .values("version")[:1]
    )
    return (
        Triple.objects.exclude(state__in=CLOSED)
        .annotate(newest_version=Subquery(newest))
        .filter(
            Q(current_revision__expected_block_version__version__lt=F("newest_version"))
            | Q(state=TripleState.NEEDS_REREVIEW)
        )
        .order_by("updated_at", "id")
    )


def assert_same_as_before():
    old = list(old_needs_rereview().values_list("pk", "newest_version"))
    new = list(list_needs_rereview(project=default_project()).values_list("pk", "newest_version"))
    assert new == old
    # and the flag is exactly "pinned version < newest version" on every triple
    for triple in Triple.objects.select_related("current_revision__expected_block_version"):
        revision = triple.current_revision
        expected = (
            revision is not None
            and BlockVersion.objects.filter(
                block_id=revision.expected_block_version.block_id,
                version__gt=revision.expected_block_version.version,
            ).exists()
        )
        assert triple.pin_superseded is expected, triple.external_id
    return [pk for pk, _ in new]


def test_the_partial_index_holds_the_rule():
    (index,) = [i for i in Triple._meta.indexes if i.name == "triple_needs_rereview"]
    assert str(Triple.objects.filter(index.condition).query) == str(
        Triple.objects.filter(needs_rereview_q()).query
    )


@pytest.fixture
def team(make_user):
    return {
        "author": make_user(Role.ANNOTATOR, username="author"),
        "lead": make_user(Role.LEAD, username="lead"),
        "admin": make_user(Role.ADMIN, username="admin"),
        "r1": make_user(Role.ANNOTATOR, username="rev1"),
        "r2": make_user(Role.ANNOTATOR, username="rev2"),
    }


def _gold(team, version, **fields):
    triple = write_triple(team["author"], version=version, **fields)
    review(team["r1"], triple)
    review(team["r2"], triple)
    triple.refresh_from_db()
    assert triple.state == TripleState.GOLD
    return triple


def test_varied_data_gives_the_same_list_as_the_old_rule(team):
    twice = block_version()  # a block superseded twice
    single = block_version()
    current = _gold(team, single)
    on_v1 = _gold(team, twice)
    # a frozen gold version holds these two; freezing changes nothing about re-review
    freeze_gold_version(project=default_project(), filters=FreezeFilters(), actor=team["admin"])
    v2 = BlockVersionFactory(block=twice.block, version=2, text="Second text.")
    on_v2 = write_triple(team["author"], version=v2)  # pending review
    v3 = BlockVersionFactory(block=twice.block, version=3, text="Third text.")
    on_v3 = write_triple(team["author"], version=v3)
    reasoned = write_triple(team["author"], version=v2, superseded_reason=REASON)
    assert {t.pk for t in [on_v1, on_v2, reasoned]} == set(assert_same_as_before())
    assert not Triple.objects.get(pk=on_v3.pk).pin_superseded
    assert not Triple.objects.get(pk=current.pk).pin_superseded

    # the import service's marking: gold/pending pins become needs_rereview (still listed)
    marked = mark_superseded_pins(superseding_version_ids=[v3.pk])
    assert set(marked) >= {on_v1.pk, on_v2.pk}
    listed = assert_same_as_before()
    assert on_v1.pk in listed

    # re-pinned: pinned to v3 now, back in review, off the list; retired: closed, off the list
    repin_triple(triple=Triple.objects.get(pk=on_v1.pk), actor=team["lead"])
    retire_triple(triple=Triple.objects.get(pk=on_v2.pk), actor=team["lead"], note="gone")
    listed = assert_same_as_before()
    assert on_v1.pk not in listed and on_v2.pk not in listed

    # closed states (dropped, split, revoked) never listed, even on a superseded pin
    for state in (TripleState.DROPPED, TripleState.SPLIT, TripleState.REVOKED):
        stale = write_triple(team["author"], version=twice, superseded_reason=REASON)
        Triple.objects.filter(pk=stale.pk).update(state=state)
    # un-pinned triples: listed only while marked needs_rereview
    bare_marked = write_triple(team["author"], version=single)
    Triple.objects.filter(pk=bare_marked.pk).update(
        current_revision=None, state=TripleState.NEEDS_REREVIEW
    )
    bare = write_triple(team["author"], version=single)
    Triple.objects.filter(pk=bare.pk).update(current_revision=None)
    listed = assert_same_as_before()
    assert bare_marked.pk in listed and bare.pk not in listed


def test_a_stale_in_memory_triple_saved_back_keeps_the_flag(team):
    v1 = block_version()
    triple = write_triple(team["author"], version=v1)
    loaded = Triple.objects.get(pk=triple.pk)
    assert loaded.pin_superseded is False
    BlockVersionFactory(block=v1.block, version=2, text="Newer.")
    loaded.save()  # writes the stale False back: the trigger recomputes it
    assert Triple.objects.get(pk=triple.pk).pin_superseded is True
    assert assert_same_as_before() == [triple.pk]


def test_deleting_the_newest_version_and_moving_a_pin_recompute_the_flag(team):
    v1 = block_version()
    other = block_version()
    triple = write_triple(team["author"], version=v1)
    v2 = BlockVersionFactory(block=v1.block, version=2, text="Newer.")
    assert assert_same_as_before() == [triple.pk]
    v2.delete()  # nothing pins it: the pin is current again
    assert assert_same_as_before() == []
    BlockVersionFactory(block=other.block, version=2, text="Other newer.")
    TripleRevision.objects.filter(pk=triple.current_revision_id).update(
        expected_block_version=other
    )
    assert assert_same_as_before() == [triple.pk]
    BlockVersion.objects.filter(pk=other.pk).update(version=3)  # renumbered past v2
    assert assert_same_as_before() == []


def test_random_histories_give_the_same_list_as_the_old_rule(team):
    rng = random.Random(1717)
    blocks = [BlockFactory() for _ in range(6)]
    newest = {}
    for block in blocks:
        BlockVersionFactory(block=block, version=1)
        newest[block.pk] = 1
    triples = []
    states = [s for s in TripleState if s != TripleState.NEEDS_REREVIEW] + [
        TripleState.NEEDS_REREVIEW
    ] * 3
    for step in range(60):
        action = rng.random()
        block = rng.choice(blocks)
        if action < 0.35:
            version = BlockVersion.objects.get(
                block=block, version=rng.randint(1, newest[block.pk])
            )
            triples.append(write_triple(team["author"], version=version, superseded_reason=REASON))
        elif action < 0.6:
            newest[block.pk] += 1
            BlockVersionFactory(block=block, version=newest[block.pk])
        elif action < 0.85 and triples:
            Triple.objects.filter(pk=rng.choice(triples).pk).update(
                state=rng.choice(states), resolution="consensus"
            )
        elif triples:
            # point the triple at another of its revisions' pins, as a revise would
            triple = rng.choice(triples)
            version = BlockVersion.objects.get(
                block=block, version=rng.randint(1, newest[block.pk])
            )
            revision = TripleRevision.objects.create(
                project_id=triple.project_id,
                triple=triple,
                number=TripleRevision.objects.filter(triple=triple).count() + 1,
                question="Q?",
                expected_block_version=version,
                expected_answer="A.",
                created_by=team["author"],
                reviewers_needed=2,
            )
            Triple.objects.filter(pk=triple.pk).update(current_revision=revision)
        if step % 10 == 9:
            assert_same_as_before()
    assert assert_same_as_before()  # the history left something to list


def test_keyset_pages_walk_the_whole_list_in_order(team):
    v1 = block_version()
    made = [write_triple(team["author"], version=v1) for _ in range(7)]
    BlockVersionFactory(block=v1.block, version=2, text="Newer.")
    seen, cursor = [], None
    while True:
        page = page_needs_rereview(project=default_project(), cursor=cursor, size=3)
        seen += [t.pk for t in page]
        if not page.next_cursor:
            break
        cursor = page.next_cursor
    assert seen == list(old_needs_rereview().values_list("pk", flat=True))
    assert sorted(seen) == sorted(t.pk for t in made)
