"""The two hidden fields every decision form carries (issue 14): the signed opening token and
the client's active milliseconds. Parsing never fails: what cannot be trusted becomes None."""

from goldset.rules.time_on_item import ItemTiming, parse_active_ms, read_opening


def timing_from(data, *, kind: str, object_id: int, user_id: int) -> ItemTiming:
    """The submit's ItemTiming from POST ``data`` (``opened``, ``active_ms``)."""
    return ItemTiming(
        opened_at=read_opening(data.get("opened"), kind=kind, object_id=object_id, user_id=user_id),
        active_ms=parse_active_ms(data.get("active_ms")),
    )
