"""What a tier requires (DESIGN.md §7, seed 003): how many reviews a triple and how many labels an
answer record need before they settle, and which cases a lead may promote from TRIAGE to GOLD."""

from goldset.models import RecordStatus, Tier, TripleState

TRIPLE, RECORD = "triple", "answer_record"
KINDS = (TRIPLE, RECORD)
GOLD_REVIEWS, TRIAGE_REVIEWS = 2, 1
GOLD_LABELS, TRIAGE_LABELS = 3, 1
# A TRIAGE case drawn for the spot-check gets a second, independent look.
SPOT_CHECK_REVIEWS = SPOT_CHECK_LABELS = 2

PROMOTABLE_TRIPLE_STATES = (TripleState.PENDING_REVIEW, TripleState.GOLD)
PROMOTABLE_RECORD_STATUSES = (RecordStatus.LABELING, RecordStatus.FINAL)


def required_for(kind: str, tier: str) -> int:
    """Reviews (triple) or labels (answer record) a case of ``tier`` needs."""
    if kind == TRIPLE:
        return GOLD_REVIEWS if tier == Tier.GOLD else TRIAGE_REVIEWS
    return GOLD_LABELS if tier == Tier.GOLD else TRIAGE_LABELS
