"""Writing an import's rows: one ``COPY`` per table and batch on PostgreSQL, a bulk ``INSERT``
elsewhere.

Django's ``bulk_create`` spends most of a large import's write stage in Python, not in the
database: compiling one multi-row ``INSERT`` (a placeholder and a ``get_db_prep_save`` per
value) and psycopg quoting every parameter into it (a profiled 40 MB answer log: 122 s of 351 s
in ``bulk_create``, of which the server's share was about a third). ``COPY … FROM STDIN``
streams the values as they are, row by row. What ``bulk_create`` does besides is done here too:
``auto_now``/``auto_now_add`` fields are stamped, JSON fields are encoded with the field's
encoder, and with ``ids`` the primary keys are taken from the table's sequence first (one
query), so the rows that refer to these can be written next, as ``RETURNING`` would allow.
Triggers and constraints apply to ``COPY`` as to ``INSERT``.

:func:`insert_rows` takes the rows as tuples instead of model instances: an importer writing
hundreds of thousands of rows spends more in ``Model.__init__`` (every field's default, one by
one) than the database spends storing them."""

import enum
import json
from collections.abc import Sequence

from django.db import connection, models
from django.db.models.expressions import RawSQL
from django.utils import timezone


def one_of(values, *, of: str = "text") -> list | RawSQL:
    """The right-hand side of ``field__in=`` for an import batch's thousands of ids (``of``:
    the column's type, ``text`` or ``bigint`` for keys): on PostgreSQL one array parameter
    (``IN (SELECT unnest(%s::text[]))``) instead of a placeholder per value, which Django
    prepares and psycopg splits one by one (about three quarters of the client's time of such
    a query); elsewhere the list."""
    values = list(values)
    if connection.vendor != "postgresql":
        return values
    if of not in ("text", "bigint"):
        raise ValueError(f"one_of: unknown column type {of!r}")
    return RawSQL(f"SELECT unnest(%s::{of}[])", [values])


def insert(model: type[models.Model], objs: list, *, ids: bool = False) -> list:
    """Store unsaved instances of ``model``; with ``ids`` each gets its primary key. Returns
    ``objs``. Inside the caller's transaction; raises what the database raises."""
    if not objs:
        return objs
    if connection.vendor != "postgresql":
        return model.objects.bulk_create(objs)
    meta = model._meta
    if ids:
        _reserve_ids(meta, objs)
    fields = [f for f in meta.concrete_fields if ids or not f.primary_key]
    now = timezone.now()
    stamped = [
        f.attname
        for f in fields
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
    ]
    encoders = {f.attname: f.encoder for f in fields if isinstance(f, models.JSONField)}
    names = [f.attname for f in fields]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(meta.db_table)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for obj in objs:
                for name in stamped:
                    setattr(obj, name, now)
                copy.write_row([_value(obj, name, encoders) for name in names])
    for obj in objs:
        obj._state.adding, obj._state.db = False, connection.alias
    return objs


def _value(obj, name: str, encoders: dict):
    value = getattr(obj, name)
    if value is None:
        return None
    if name in encoders:
        return json.dumps(value, cls=encoders[name])
    if isinstance(value, enum.Enum):
        return value.value  # a TextChoices member is stored as its value, never its name
    return value


def _defaults(meta, given: list) -> list[tuple]:
    """(field, value) of every concrete field of ``meta`` not in ``given`` (nor the primary
    key): its default, computed once for all rows, or now for ``auto_now``/``auto_now_add``.
    A field whose default is a callable (a fresh value per row) must be given."""
    now = timezone.now()
    filled = []
    for field in meta.concrete_fields:
        if field in given or field.primary_key:
            continue
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            value = now
        elif field.has_default() and callable(field.default):
            raise ValueError(f"{meta.label}.{field.name} has a default per row: name it")
        else:
            value = field.get_default()
        filled.append((field, value.value if isinstance(value, enum.Enum) else value))
    return filled


def insert_missing_rows(model: type[models.Model], names: Sequence[str], rows: list[tuple]) -> None:
    """Store the ``rows`` (as :func:`insert_rows` takes them) that no unique constraint of
    ``model`` already holds, leaving the others as they are: on PostgreSQL one ``INSERT …
    SELECT FROM unnest(…) ON CONFLICT DO NOTHING`` with an array parameter per given column
    (``bulk_create(ignore_conflicts=True)`` compiles a placeholder per value: a fifth of the
    receiver's time for a request's trace rows); elsewhere that ``bulk_create``. Inside the
    caller's transaction."""
    if not rows:
        return
    meta = model._meta
    given = [meta.get_field(name) for name in names]
    if connection.vendor != "postgresql":
        model.objects.bulk_create(
            [model(**dict(zip(names, row, strict=True))) for row in rows], ignore_conflicts=True
        )
        return
    filled = _defaults(meta, given)
    arrays = [[] for _ in given]
    for row in rows:
        for index, value in enumerate(row):
            arrays[index].append(_column_value(given[index], value))
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in [*given, *(f for f, _ in filled)])
    casts = ", ".join(f"%s::{_array_type(field)}" for field in given)
    constants = "".join(f", %s::{_array_type(field)[:-2]}" for field, _ in filled)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(meta.db_table)} ({columns}) "
            f"SELECT *{constants} FROM unnest({casts}) ON CONFLICT DO NOTHING",
            [*(_column_value(field, value) for field, value in filled), *arrays],
        )


def _column_value(field, value):
    """``value`` of ``field`` as its column takes it in a parameter."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(field, models.JSONField) and value is not None:
        return json.dumps(value, cls=field.encoder)
    return value


def _reserve_ids(meta, objs: list) -> None:
    for obj, pk in zip(objs, _next_ids(meta, len(objs)), strict=True):
        obj.pk = pk


def _next_ids(meta, count: int) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [meta.db_table, meta.pk.column, count],
        )
        return [pk for (pk,) in cursor.fetchall()]


def insert_rows(
    model: type[models.Model], names: Sequence[str], rows: list[tuple], *, ids: bool = False
) -> list[int] | None:
    """Store ``rows``, each a tuple of the values of the fields ``names`` (attnames, as a model
    instance holds them: JSON fields as Python values, choices as their stored values). Every
    other field takes its default, computed once for all rows: a field whose default is a
    callable (a fresh value per row) must be named. ``auto_now``/``auto_now_add`` fields are
    stamped. With ``ids`` returns the new primary keys in row order. Inside the caller's
    transaction; raises what the database raises."""
    if not rows:
        return [] if ids else None
    meta = model._meta
    given = [meta.get_field(name) for name in names]
    if connection.vendor != "postgresql":
        created = model.objects.bulk_create(
            model(**dict(zip(names, row, strict=True))) for row in rows
        )
        return [obj.pk for obj in created] if ids else None
    filled = _defaults(meta, given)
    fields = [*given, *(field for field, _ in filled)]
    constant = tuple(
        json.dumps(value, cls=field.encoder)
        if isinstance(field, models.JSONField) and value is not None
        else value
        for field, value in filled
    )
    encoded = [
        (index, field.encoder)
        for index, field in enumerate(given)
        if isinstance(field, models.JSONField)
    ]
    new_ids = None
    if ids:
        new_ids = _next_ids(meta, len(rows))
        fields.insert(0, meta.pk)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(meta.db_table)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for number, row in enumerate(rows):
                if encoded:
                    row = list(row)
                    for index, encoder in encoded:
                        if row[index] is not None:
                            row[index] = json.dumps(row[index], cls=encoder)
                    row = tuple(row)
                copy.write_row(((new_ids[number],) if ids else ()) + row + constant)
    return new_ids


def update_rows(model: type[models.Model], names: Sequence[str], rows: list[tuple]) -> None:
    """Set the fields ``names`` (attnames) of existing rows of ``model``: each of ``rows`` is
    ``(primary key, *values)``, the values as a model instance holds them. On PostgreSQL one
    ``UPDATE … FROM unnest(…)`` with an array parameter per column, where ``bulk_update`` builds
    a ``CASE WHEN`` per field and row (200 rows of 11 fields: most of a traces mapping batch's
    time went into resolving those expressions); elsewhere ``bulk_update``. Inside the caller's
    transaction; ``auto_now`` fields are not stamped (name them)."""
    if not rows:
        return
    meta = model._meta
    fields = [meta.get_field(name) for name in names]
    if connection.vendor != "postgresql":
        objs = []
        for pk, *values in rows:
            obj = model(pk=pk)
            for field, value in zip(fields, values, strict=True):
                setattr(obj, field.attname, value)
            objs.append(obj)
        model.objects.bulk_update(objs, [f.name for f in fields])
        return
    quote = connection.ops.quote_name
    columns = [meta.pk, *fields]
    arrays = [[] for _ in columns]
    for row in rows:
        for index, value in enumerate(row):
            arrays[index].append(_column_value(columns[index], value))
    casts = ", ".join(f"%s::{_array_type(field)}" for field in columns)
    aliases = ", ".join(f"c{index}" for index in range(len(columns)))
    sets = ", ".join(f"{quote(field.column)} = v.c{n}" for n, field in enumerate(fields, start=1))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(meta.db_table)} AS t SET {sets} "
            f"FROM unnest({casts}) AS v({aliases}) WHERE t.{quote(meta.pk.column)} = v.c0",
            arrays,
        )


def _array_type(field) -> str:
    """The SQL array type of ``field``'s column (a key: the type keys refer to it with)."""
    if field.is_relation:
        return f"{field.target_field.rel_db_type(connection)}[]"
    if field.primary_key:
        return f"{field.rel_db_type(connection)}[]"
    return f"{field.db_type(connection)}[]"
