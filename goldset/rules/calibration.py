"""Calibration set readiness and versions (seed 004 §3.5, issue 12 item 4): which items the next
annotator to start a domain's calibration is given. Pure: callers pass the set and its items.
The rule itself is described in ``goldset.services.calibration``."""

import hashlib
import random
from dataclasses import dataclass

from goldset.models import CalibrationItem, CalibrationSet

MIN_CALIBRATION_ITEMS = 4


@dataclass(frozen=True)
class Readiness:
    ready: bool
    problems: list[str]


def check_set_ready(calibration_set: CalibrationSet, items=None) -> Readiness:
    """A set (or the given ``items`` of it) is usable when it has enough items, every item has a
    reference label, and the references use at least two grounding levels and both
    severe-safety values (else κ is 0/0)."""
    items = list(calibration_set.items.all() if items is None else items)
    problems = []
    if len(items) < MIN_CALIBRATION_ITEMS:
        problems.append(f"needs at least {MIN_CALIBRATION_ITEMS} items (has {len(items)})")
    missing = sum(1 for i in items if not i.has_reference)
    if missing:
        problems.append(f"{missing} item(s) have no reference label yet")
    referenced = [i for i in items if i.has_reference]
    if referenced and len({i.reference_grounding for i in referenced}) < 2:
        problems.append("reference grounding labels must use at least two levels")
    if referenced and len({i.reference_severe_safety for i in referenced}) < 2:
        problems.append("reference labels must include severe-safety and non-severe items")
    return Readiness(not problems, problems)


@dataclass(frozen=True)
class Offer:
    """What the next annotator to start a set is given: ``version`` and its items; ``seals``
    lists the drafts that starting seals into that (new) version."""

    version: int
    items: list[CalibrationItem]
    seals: list[CalibrationItem]


def offer_for(calibration_set: CalibrationSet, items=None) -> Offer | None:
    """The version the next starter gets (``goldset.services.calibration``), or None when none is
    ready. ``items`` are the set's items when the caller already loaded them. Reads only."""
    items = list(calibration_set.items.all() if items is None else items)
    sealed = [i for i in items if i.set_version is not None]
    drafts = [i for i in items if i.set_version is None]
    if drafts and check_set_ready(calibration_set, sealed + drafts).ready:
        return Offer(calibration_set.version + 1, sealed + drafts, drafts)
    if sealed:
        return Offer(calibration_set.version, sealed, [])
    return None


# ---------------------------------------------------------------- retakes (issue 14)

RETAKE_DRAW_SEED = 5407


def retake_seed(*, annotator_id: int, domain_id: int, attempt: int) -> int:
    """The recorded seed of a retake's draw: fixed by who retakes which domain for which time,
    so the same request always draws the same items from the same pool."""
    digest = hashlib.sha256(
        f"{RETAKE_DRAW_SEED}:{annotator_id}:{domain_id}:{attempt}".encode()
    ).hexdigest()
    return int(digest[:7], 16)  # 28 bits: fits the assignments' shuffle_seed column


def draw_retake(
    items: list[CalibrationItem], *, seen_record_ids: set[int], size: int, seed: int
) -> list[CalibrationItem]:
    """A fresh draw of ``size`` items from ``items`` (the pool a starter would be offered) for a
    retake: items the annotator has not labelled come first, in an order shuffled by ``seed``;
    seen items only fill up what the pool cannot give. The draw must stay a usable set
    (:func:`check_set_ready` on its own items: two grounding levels, both severe-safety values),
    so a drawn item is swapped for the next candidate that brings a missing value when needed.
    Pure and deterministic: the same pool, seen items, size and seed give the same draw."""
    rng = random.Random(seed)
    fresh = sorted((i for i in items if i.record_id not in seen_record_ids), key=lambda i: i.pk)
    seen = sorted((i for i in items if i.record_id in seen_record_ids), key=lambda i: i.pk)
    rng.shuffle(fresh)
    rng.shuffle(seen)
    order = fresh + seen
    size = max(min(size, len(order)), 0)
    drawn, rest = order[:size], order[size:]
    for _ in range(len(rest)):
        missing = _missing_value(drawn)
        if missing is None:
            break
        donor = next((i for i in rest if missing(i)), None)
        if donor is None:
            break
        # Give up the last-drawn item whose value the draw holds more than once.
        for k in range(len(drawn) - 1, -1, -1):
            if _redundant(drawn, drawn[k]):
                rest.remove(donor)
                rest.append(drawn[k])
                drawn[k] = donor
                break
        else:
            break
    return drawn


def _missing_value(drawn: list[CalibrationItem]):
    """A predicate for an item that brings a value the draw lacks, or None when none lacks."""
    grounding = {i.reference_grounding for i in drawn}
    severe = {i.reference_severe_safety for i in drawn}
    if len(severe) < 2:
        return lambda i: i.reference_severe_safety not in severe
    if len(grounding) < 2:
        return lambda i: i.reference_grounding not in grounding
    return None


def _redundant(drawn: list[CalibrationItem], item: CalibrationItem) -> bool:
    others = [i for i in drawn if i is not item]
    return any(i.reference_severe_safety == item.reference_severe_safety for i in others) and any(
        i.reference_grounding == item.reference_grounding for i in others
    )
