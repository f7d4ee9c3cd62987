"""Calibration set readiness and versions (seed 004 §3.5, issue 12 item 4): which items the next
annotator to start a domain's calibration is given. Pure: callers pass the set and its items.
The rule itself is described in ``goldset.services.calibration``."""

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
