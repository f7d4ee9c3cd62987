"""Answer-labeling rules (seed 004, DESIGN.md §6): load balance across annotators and which record
statuses wait on a lead."""

import hashlib

from goldset.models import RecordStatus

# Every annotator sees the records in an order of their own, fixed by this seed.
QUEUE_SHUFFLE_SEED = 6601

# Records a lead may adjudicate, and those a lead's list shows once adjudicated too.
OPEN_FOR_LEAD = (RecordStatus.NEEDS_ADJUDICATION, RecordStatus.AUDIT)
LEAD_VISIBLE = (*OPEN_FOR_LEAD, RecordStatus.ADJUDICATED)


QUEUE_RANK_MODULUS = 16**15  # 60 bits: a rank fits a signed 64-bit column


def queue_rank(*, public_id: str, seed: int = QUEUE_SHUFFLE_SEED) -> int:
    """A record's place in the seeded shuffle every queue shares; stored on the record."""
    return int(hashlib.sha256(f"{seed}:{public_id}".encode()).hexdigest()[:15], 16)


def queue_offset(*, annotator_id: int, seed: int = QUEUE_SHUFFLE_SEED) -> int:
    """Where an annotator's queue starts in the shared shuffle (fixed by seed and annotator)."""
    return int(hashlib.sha256(f"{seed}:annotator:{annotator_id}".encode()).hexdigest()[:15], 16)


def shuffle_key(*, seed: int, annotator_id: int, public_id: str) -> str:
    """The sort key of a record in one annotator's queue: stable for (seed, annotator, record).

    Each annotator's queue is the shared seeded shuffle rotated to start at their own seeded
    offset, so annotators work different parts of the pool and the claim can walk one stored,
    indexed rank instead of hashing every record per annotator."""
    rank = queue_rank(public_id=public_id, seed=seed)
    offset = queue_offset(annotator_id=annotator_id, seed=seed)
    return f"{(rank - offset) % QUEUE_RANK_MODULUS:016x}"


def undo_closed(*, submitted_at, now, window_seconds: int) -> str | None:
    """Why a person can no longer take back a decision submitted at ``submitted_at`` (a label,
    a pairwise judgment, a triple review: one rule for all), or None while the undo window is
    open: undo is possible for ``window_seconds`` (the project's ``LABEL_UNDO_WINDOW_SECONDS``
    or ``REVIEW_UNDO_WINDOW_SECONDS``) after the submit."""
    if (now - submitted_at).total_seconds() > window_seconds:
        return f"Undo is possible for {window_seconds // 60} min after a submit; that has passed."
    return None
