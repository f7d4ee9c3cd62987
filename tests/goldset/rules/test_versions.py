"""When a pin is superseded has one home (``goldset.rules.versions.is_superseded``); the
trigger-kept ``Triple.pin_superseded`` flag (SQL, it cannot call Python) says the same for every
triple, and the badges on the pages ask the rule through ``|superseded_by``."""

import pytest
from django.template import Context, Template

from goldset.models import BlockVersion, Triple
from goldset.rules.versions import is_superseded
from goldset.selectors.curation import newest_block_version, newest_versions
from tests.factories import BlockVersionFactory
from tests.goldset.curation_support import block_version, write_triple
from workbench.roles import Role


@pytest.mark.parametrize(
    "pinned,newest,superseded",
    [(1, 1, False), (1, 2, True), (2, 1, False), (3, None, False), (1, 3, True)],
)
def test_a_pin_is_superseded_when_its_block_has_a_newer_version(pinned, newest, superseded):
    assert is_superseded(pinned=pinned, newest=newest) is superseded


@pytest.mark.parametrize("pinned,newest,shown", [(1, 2, True), (2, 2, False), (2, None, False)])
def test_the_badge_asks_the_rule(pinned, newest, shown):
    html = Template("{% if v|superseded_by:newest %}superseded{% endif %}").render(
        Context({"v": pinned, "newest": newest})
    )
    assert ("superseded" in html) is shown


@pytest.mark.django_db
def test_the_database_flag_and_the_newest_version_agree_with_the_rule(make_user):
    author = make_user(Role.ANNOTATOR, username="author")
    old = block_version()
    on_v1 = write_triple(author, version=old, superseded_reason="")
    v2 = BlockVersionFactory(block=old.block, version=2, text="Second text.")
    on_v2 = write_triple(author, version=v2)
    on_v1_reasoned = write_triple(author, version=old, superseded_reason="The contract says so.")
    other = write_triple(author)
    assert newest_block_version(old.block_id) == v2
    assert newest_versions([old.block_id]) == {old.block_id: 2}
    newest = newest_versions(BlockVersion.objects.values_list("block_id", flat=True))
    triples = Triple.objects.select_related("current_revision__expected_block_version")
    for triple in triples.filter(pk__in=[on_v1.pk, on_v2.pk, on_v1_reasoned.pk, other.pk]):
        pinned = triple.current_revision.expected_block_version
        assert triple.pin_superseded is is_superseded(
            pinned=pinned.version, newest=newest[pinned.block_id]
        ), triple.external_id
    assert Triple.objects.get(pk=on_v1.pk).pin_superseded
    assert not Triple.objects.get(pk=on_v2.pk).pin_superseded
