"""Block versions (seed 000, issue 12): when a pin is superseded, in one place.

A pin (a revision's expected block version, an answer's cited or evidence passage) is
*superseded* when its block has a newer version than the pinned one. :func:`is_superseded` is
the rule; services (``check_pin``, the re-pin and re-review steps of resolution) and templates
(the ``|superseded_by`` filter on the badge) ask it. "The newest version of a block" is read in
one place too, ``goldset.selectors.curation`` (``newest_version_of`` as a subquery,
``newest_versions`` for many blocks at once). The database keeps ``Triple.pin_superseded`` with
the same comparison in SQL (``goldset/migrations/_pin_triggers.py``, a trigger cannot call
Python); ``tests/goldset/rules/test_versions.py`` holds the two equal."""


def is_superseded(*, pinned: int, newest: int | None) -> bool:
    """Whether a pin to version ``pinned`` is superseded when the block's newest version is
    ``newest`` (None: the block's versions are unknown, so nothing supersedes the pin)."""
    return newest is not None and pinned < newest
