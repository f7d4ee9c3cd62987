"""Keyset pagination: a page is "the next N rows after this key" in an indexed order, so a page
deep in a million rows costs what the first one does and no request counts the whole list."""

import base64
import json
from dataclasses import dataclass

from django.db.models import Q
from django.http import Http404


@dataclass(frozen=True)
class KeysetPage:
    items: list
    next_cursor: str | None
    first: bool

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)

    @property
    def object_list(self) -> list:
        """The rows, under the name Django's paginator pages use."""
        return self.items


def _encode(values) -> str:
    raw = json.dumps([v if isinstance(v, int | str) else str(v) for v in values])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode(cursor: str, fields, model) -> list:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
        if not isinstance(values, list) or len(values) != len(fields):
            raise ValueError(cursor)
        return [
            model._meta.get_field(f.lstrip("-")).to_python(v)
            for f, v in zip(fields, values, strict=True)
        ]
    except Exception as exc:  # any malformed cursor is a client error, never a 500
        raise Http404("Unknown page.") from exc


def _flip(field: str) -> str:
    return field[1:] if field.startswith("-") else f"-{field}"


def _after(fields, values) -> Q:
    """Rows strictly after ``values`` in (f1, f2, …) order; a field named "-f" descends."""
    condition = Q()
    for i, field in enumerate(fields):
        name, op = (field[1:], "lt") if field.startswith("-") else (field, "gt")
        step = Q(**{f"{name}__{op}": values[i]})
        for prior, value in zip(fields[:i], values[:i], strict=True):
            step &= Q(**{prior.lstrip("-"): value})
        condition |= step
    return condition


def keyset_page(
    queryset,
    *,
    fields: tuple[str, ...],
    cursor: str | None,
    size: int,
    descending: bool = False,
) -> KeysetPage:
    """The ``size`` rows of ``queryset`` after ``cursor`` in ``fields`` order (ascending, or
    descending for "-field"; ``descending`` reverses every field; the last field must be unique,
    e.g. ``id``). Reads size + 1 rows; raises Http404 for a bad cursor."""
    if descending:
        fields = tuple(_flip(f) for f in fields)
    rows = queryset.order_by(*fields)
    if cursor:
        rows = rows.filter(_after(fields, _decode(cursor, fields, queryset.model)))
    items = list(rows[: size + 1])
    more = len(items) > size
    items = items[:size]
    next_cursor = _encode([getattr(items[-1], f.lstrip("-")) for f in fields]) if more else None
    return KeysetPage(items=items, next_cursor=next_cursor, first=not cursor)
