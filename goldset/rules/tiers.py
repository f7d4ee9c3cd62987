"""What a tier requires (DESIGN.md §7, seed 003): how many reviews a triple and how many labels an
answer record need before they settle, and which cases a lead may promote from TRIAGE to GOLD."""

from goldset.conf import tunable
from goldset.models import RecordStatus, Tier, TripleState

TRIPLE, RECORD = "triple", "answer_record"
KINDS = (TRIPLE, RECORD)
# The installation defaults; a project may set its own (GOLD_REVIEWS_PER_TRIPLE,
# TRIAGE_REVIEWS_PER_TRIPLE, GOLD_LABELS_PER_ITEM, TRIAGE_LABELS_PER_ITEM in goldset.conf).
GOLD_REVIEWS, TRIAGE_REVIEWS = 2, 1
GOLD_LABELS, TRIAGE_LABELS = 3, 1
# A TRIAGE case drawn for the spot-check gets a second, independent look.
SPOT_CHECK_REVIEWS = SPOT_CHECK_LABELS = 2

PROMOTABLE_TRIPLE_STATES = (TripleState.PENDING_REVIEW, TripleState.GOLD)
PROMOTABLE_RECORD_STATUSES = (RecordStatus.LABELING, RecordStatus.FINAL)


def required_for(kind: str, tier: str, *, project=None) -> int:
    """Reviews (triple) or labels (answer record) a case of ``tier`` needs in ``project``
    (the installation's numbers without one)."""
    level = "GOLD" if tier == Tier.GOLD else "TRIAGE"
    what = "REVIEWS_PER_TRIPLE" if kind == TRIPLE else "LABELS_PER_ITEM"
    return tunable(f"{level}_{what}", project=project)
