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
Triggers and constraints apply to ``COPY`` as to ``INSERT``."""

import enum
import json

from django.db import connection, models
from django.utils import timezone


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


def _reserve_ids(meta, objs: list) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [meta.db_table, meta.pk.column, len(objs)],
        )
        for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
            obj.pk = pk
