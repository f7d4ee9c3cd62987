"""The triple state machine: its table, the moves it refuses, and services going through it."""

import pytest

from goldset.exceptions import GoldsetError
from goldset.models import Project, Triple, TripleState
from goldset.rules.triple_states import CLOSED, TRANSITIONS, TransitionRefused, transition
from goldset.services.customers import grant_customer_permission, revoke_customer_permission
from goldset.services.resolution import drop_triple, retire_triple
from tests.factories import CustomerFactory
from tests.goldset.curation_support import review, write_triple

S = TripleState

# Rules are pure: the triple needs a project, never the database.
UNSAVED_PROJECT = Project(slug="rules", name="Rules")


def test_every_state_has_a_row_and_every_target_is_a_state():
    assert set(TRANSITIONS) == set(S.values)
    assert all(targets <= set(S.values) for targets in TRANSITIONS.values())


def test_closed_states_are_exactly_those_with_no_way_out():
    assert set(CLOSED) == {S.DROPPED, S.SPLIT, S.RETIRED, S.REVOKED}


@pytest.mark.parametrize("closed", [S.DROPPED, S.SPLIT, S.RETIRED, S.REVOKED])
@pytest.mark.parametrize("target", list(S.values))
def test_a_closed_triple_never_moves(closed, target):
    triple = Triple(project=UNSAVED_PROJECT, external_id="t-closed", state=closed)
    with pytest.raises(TransitionRefused, match="cannot go from"):
        transition(triple, target)
    assert triple.state == closed


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (S.PENDING_REVIEW, S.SPLIT),  # only a discussion splits a compound claim
        (S.PENDING_REVIEW, S.RETIRED),  # only a stale pin is retired
        (S.GOLD, S.DROPPED),  # gold is reopened for discussion, never dropped outright
        (S.GOLD, S.SPLIT),
        (S.IN_DISCUSSION, S.GOLD),  # a discussion's outcome goes back through review
        (S.NEEDS_REREVIEW, S.GOLD),  # a stale pin is never silently moved back to gold
        (S.NEEDS_REREVIEW, S.DROPPED),
    ],
)
def test_moves_the_protocol_does_not_have_are_refused(current, target):
    triple = Triple(project=UNSAVED_PROJECT, external_id="t-1", state=current, previous_state="")
    with pytest.raises(TransitionRefused):
        transition(triple, target)
    assert (triple.state, triple.previous_state) == (current, "")


def test_an_allowed_move_keeps_where_the_triple_came_from():
    triple = Triple(project=UNSAVED_PROJECT, external_id="t-2", state=S.PENDING_REVIEW)
    assert transition(triple, S.GOLD) == S.PENDING_REVIEW
    assert (triple.state, triple.previous_state) == (S.GOLD, S.PENDING_REVIEW)


@pytest.mark.django_db
def test_a_revocation_moves_open_triples_and_leaves_closed_ones(team):
    customer = CustomerFactory(slug="acme")
    grant_customer_permission(customer=customer, actor=team["admin"])
    dropped = write_triple(team["author"], source="customer_permissioned", customer=customer)
    review(team["r1"], dropped, "confirm")
    review(team["r2"], dropped, "flag", ["answer_not_entailed"])
    drop_triple(triple=dropped, actor=team["author"], reason="not entailed")
    open_one = write_triple(team["author"], source="customer_permissioned", customer=customer)

    revoked = revoke_customer_permission(customer=customer, actor=team["admin"])

    open_one.refresh_from_db()
    dropped.refresh_from_db()
    assert revoked == [open_one.pk]
    assert (open_one.state, open_one.previous_state) == (S.REVOKED, S.PENDING_REVIEW)
    assert dropped.state == S.DROPPED


@pytest.mark.django_db
def test_a_service_asked_for_a_refused_move_changes_nothing(team):
    triple = write_triple(team["author"])
    with pytest.raises(GoldsetError, match="not needs re-review"):
        retire_triple(triple=triple, actor=team["lead"])
    triple.refresh_from_db()
    assert triple.state == S.PENDING_REVIEW
