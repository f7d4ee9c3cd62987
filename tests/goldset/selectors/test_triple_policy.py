"""The visibility policy and what each party may do on a triple in discussion, in one place."""

import pytest
from django.http import Http404

from goldset.selectors.curation import get_triple_for, may_discuss, triple_actions_for
from tests.factories import default_project
from tests.goldset.curation_support import review, write_triple

pytestmark = pytest.mark.django_db


@pytest.fixture
def discussed(team):
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "flag", ["answer_not_entailed"], entailment_direction="overstated")
    triple.refresh_from_db()
    return triple


@pytest.mark.parametrize(
    ("who", "post", "decide"),
    [("author", True, True), ("lead", True, True), ("admin", True, True), ("r2", True, False)],
)
def test_parties_to_a_discussion_and_what_each_may_do(team, discussed, who, post, decide):
    user = team[who]
    assert may_discuss(user=user, triple=discussed)
    assert get_triple_for(project=default_project(), user=user, pk=discussed.pk) == discussed
    actions = triple_actions_for(user=user, triple=discussed)
    assert (actions["can_post"], actions["can_drop"], actions["can_decide"]) == (post, post, decide)
    assert actions["can_verify"] is False


@pytest.mark.parametrize("who", ["r1", "r3"])
def test_a_confirming_or_unrelated_reviewer_never_learns_the_triple_exists(team, discussed, who):
    assert not may_discuss(user=team[who], triple=discussed)
    with pytest.raises(Http404):
        get_triple_for(project=default_project(), user=team[who], pk=discussed.pk)
