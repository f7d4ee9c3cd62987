"""The triple state machine (DESIGN.md §5, seed 000): every state change of a triple goes through
:func:`transition`, which refuses any move the table below does not list."""

from django.db.models import Q

from goldset.exceptions import GoldsetError
from goldset.models import Triple, TripleState

S = TripleState

# state -> the states it may move to. A state with no way out is closed for good.
TRANSITIONS: dict[str, frozenset[str]] = {
    # Reviews resolve it (gold, discussion, or dropped when both flag); a newer block version
    # makes its pin stale; a customer's revocation removes it.
    S.PENDING_REVIEW: frozenset({S.GOLD, S.IN_DISCUSSION, S.DROPPED, S.NEEDS_REREVIEW, S.REVOKED}),
    # Discussion ends in a revision (back to review), a drop or a split.
    S.IN_DISCUSSION: frozenset({S.PENDING_REVIEW, S.DROPPED, S.SPLIT, S.REVOKED}),
    # A flagged spot-check reopens it; a promotion to GOLD sends it back for its missing review.
    # Pinned to superseded text (issue 12), a lead re-pins it (back to review) or retires it.
    S.GOLD: frozenset({S.IN_DISCUSSION, S.PENDING_REVIEW, S.NEEDS_REREVIEW, S.RETIRED, S.REVOKED}),
    # Re-pinned to the newest block version (back to review) or retired.
    S.NEEDS_REREVIEW: frozenset({S.PENDING_REVIEW, S.RETIRED, S.REVOKED}),
    S.DROPPED: frozenset(),
    S.SPLIT: frozenset(),
    S.RETIRED: frozenset(),
    S.REVOKED: frozenset(),
}
CLOSED = tuple(state for state, targets in TRANSITIONS.items() if not targets)


def needs_rereview_q() -> Q:
    """The triples that need re-review (issue 12, DESIGN.md §4): every live triple (not in a
    closed state) whose current revision pins a block version that is no longer the block's
    newest (``Triple.pin_superseded``, kept by database triggers), whether a later corpus
    import marked it or it was written against superseded text with a reason, plus triples
    still marked ``needs_rereview``. The ``triple_needs_rereview`` partial index holds exactly
    these rows."""
    return ~Q(state__in=CLOSED) & (Q(pin_superseded=True) | Q(state=TripleState.NEEDS_REREVIEW))


class TransitionRefused(GoldsetError):
    """A triple was asked to move between two states the state machine does not connect."""


def may_transition(current: str, target: str) -> bool:
    return target in TRANSITIONS[current]


def transition(triple: Triple, target: str) -> str:
    """Move ``triple`` (in memory; the caller saves it) to ``target``, keeping where it came from
    in ``previous_state``. Returns the previous state; raises :class:`TransitionRefused`."""
    current = triple.state
    if not may_transition(current, target):
        raise TransitionRefused(
            f"{triple.external_id or 'The triple'} cannot go from "
            f"{TripleState(current).label.lower()} to {TripleState(target).label.lower()}."
        )
    triple.previous_state, triple.state = current, target
    return current
