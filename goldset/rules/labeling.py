"""Answer-labeling rules (seed 004, DESIGN.md §6): load balance across annotators and which record
statuses wait on a lead."""

import hashlib

from goldset.models import RecordStatus

# Every annotator sees the records in an order of their own, fixed by this seed.
QUEUE_SHUFFLE_SEED = 6601

# An annotator's cap in a domain is the fair share of its label slots plus this tolerance.
LOAD_TOLERANCE = 0.10

# Records a lead may adjudicate, and those a lead's list shows once adjudicated too.
OPEN_FOR_LEAD = (RecordStatus.NEEDS_ADJUDICATION, RecordStatus.AUDIT)
LEAD_VISIBLE = (*OPEN_FOR_LEAD, RecordStatus.ADJUDICATED)


def shuffle_key(*, seed: int, annotator_id: int, public_id: str) -> str:
    """The sort key of a record in one annotator's queue: stable for (seed, annotator, record)."""
    return hashlib.sha256(f"{seed}:{annotator_id}:{public_id}".encode()).hexdigest()[:16]
