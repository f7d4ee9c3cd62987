"""The SQL behind migration 0037 (project guards, issue 27): triggers that refuse a row naming a
row of another project, for PostgreSQL and SQLite, whatever wrote it (a service, an ORM
``.update()``, raw SQL, ``COPY``).

The services refuse such a reference first with a clear message (``CrossProjectReference``, a
4xx); these triggers hold the same rule under them. Each :class:`Guard` is one pair: a column
of ``table`` whose target must be in the row's project (``where`` finds the violation, with
``{r}`` the written row), checked when the row is inserted (``on_insert``) or one of
``watched`` changes. The reverse guards check the other end: a referenced row whose
``project_id`` changes while rows of its old project still name it.

A violation raises SQLSTATE 23514 (check_violation) on PostgreSQL, with the table, the column
and the guard's name in the error's fields, and ``RAISE(ABORT, …)`` on SQLite: both surface as
``django.db.IntegrityError``. The message names the table and the column.

PostgreSQL checks an insert once per statement over its transition table (a ``COPY`` of an
answer log is one join, not a function call per row) and an update per row, only when a watched
column changed (the trigger's ``WHEN``). A missing target passes: the foreign key (deferred to
the commit) refuses it.

SQLite rebuilds a table to change its constraints, which fails while triggers on other tables
name it (see ``_projects.suspend_sqlite_triggers``): a later migration that rebuilds one of the
tables named here (any table of :data:`GUARDS`, or one their ``tables`` join) drops the guards
first and installs them after: ``RunPython(suspend_sqlite, resume_sqlite)`` before its
operations, ``RunPython(resume_sqlite, suspend_sqlite)`` after them."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Guard:
    table: str
    column: str  # the column the message names
    watched: tuple[str, ...]  # an update of these is checked
    tables: str  # FROM list of the tables ``where`` joins
    where: str  # true for a cross-project row ``{r}``
    on_insert: bool = True
    name: str = ""

    @property
    def key(self) -> str:
        return self.name or f"{self.table}__{self.column}"

    @property
    def message(self) -> str:
        return f"cross-project reference: {self.table}.{self.column} names a row of another project"


def _direct(table: str, column: str, target: str, *, alias: str = "ref") -> list[Guard]:
    """``table.column`` → ``target``, both with a ``project_id``: the forward guard and the
    reverse one (the target's ``project_id`` changes under rows that name it)."""
    return [
        Guard(
            table=table,
            column=column,
            watched=(column, "project_id"),
            tables=f"{target} {alias}",
            where=f"{alias}.id = {{r}}.{column} AND {alias}.project_id <> {{r}}.project_id",
        ),
        Guard(
            table=target,
            column="project_id",
            watched=("project_id",),
            tables=f"{table} x",
            where=f"x.{column} = {{r}}.id AND x.project_id <> {{r}}.project_id",
            on_insert=False,
            name=f"{target}__from_{table}__{column}",
        ),
    ]


GUARDS: list[Guard] = [
    # A triple's domain, customer and parent are of its project.
    *_direct("goldset_triple", "domain_id", "goldset_domain"),
    *_direct("goldset_triple", "customer_id", "goldset_customer"),
    *_direct("goldset_triple", "parent_id", "goldset_triple"),
    # A revision pins a block version of its triple's project (the block's project: the nearest
    # table with one).
    Guard(
        table="goldset_triplerevision",
        column="expected_block_version_id",
        watched=("expected_block_version_id", "triple_id"),
        tables="goldset_blockversion v, goldset_block b, goldset_triple t",
        where=(
            "v.id = {r}.expected_block_version_id AND b.id = v.block_id "
            "AND t.id = {r}.triple_id AND b.project_id <> t.project_id"
        ),
    ),
    Guard(
        table="goldset_triple",
        column="project_id",
        watched=("project_id",),
        tables="goldset_triplerevision rev, goldset_blockversion v, goldset_block b",
        where=(
            "rev.triple_id = {r}.id AND v.id = rev.expected_block_version_id "
            "AND b.id = v.block_id AND b.project_id <> {r}.project_id"
        ),
        on_insert=False,
        name="goldset_triple__from_goldset_triplerevision__expected_block_version_id",
    ),
    Guard(
        table="goldset_block",
        column="project_id",
        watched=("project_id",),
        tables="goldset_blockversion v, goldset_triplerevision rev, goldset_triple t",
        where=(
            "v.block_id = {r}.id AND rev.expected_block_version_id = v.id "
            "AND t.id = rev.triple_id AND t.project_id <> {r}.project_id"
        ),
        on_insert=False,
        name="goldset_block__from_goldset_triplerevision__expected_block_version_id",
    ),
    Guard(
        table="goldset_blockversion",
        column="block_id",
        watched=("block_id",),
        tables="goldset_block b, goldset_triplerevision rev, goldset_triple t",
        where=(
            "b.id = {r}.block_id AND rev.expected_block_version_id = {r}.id "
            "AND t.id = rev.triple_id AND t.project_id <> b.project_id"
        ),
        on_insert=False,
        name="goldset_blockversion__from_goldset_triplerevision__expected_block_version_id",
    ),
    # An answer record's run, question and domain are of its project.
    *_direct("goldset_answerrecord", "run_id", "goldset_run"),
    *_direct("goldset_answerrecord", "question_id", "goldset_question"),
    *_direct("goldset_answerrecord", "domain_id", "goldset_domain"),
    # A scoring job scores against a gold version of its project, with a PCS calibration of it;
    # so does a release report.
    *_direct("goldset_scoringjob", "version_id", "goldset_goldversion"),
    *_direct("goldset_scoringjob", "calibration_id", "goldset_pcscalibration"),
    *_direct("goldset_releasereport", "version_id", "goldset_goldversion"),
    *_direct("goldset_releasereport", "calibration_id", "goldset_pcscalibration"),
    *_direct("goldset_goldversion", "parent_id", "goldset_goldversion"),
    # A calibration set is of its domain's project; its items are records of that project.
    *_direct("goldset_calibrationset", "domain_id", "goldset_domain"),
    Guard(
        table="goldset_calibrationitem",
        column="record_id",
        watched=("record_id", "calibration_set_id"),
        tables="goldset_answerrecord a, goldset_calibrationset s",
        where=(
            "a.id = {r}.record_id AND s.id = {r}.calibration_set_id "
            "AND a.project_id <> s.project_id"
        ),
    ),
    Guard(
        table="goldset_answerrecord",
        column="project_id",
        watched=("project_id",),
        tables="goldset_calibrationitem i, goldset_calibrationset s",
        where="i.record_id = {r}.id AND s.id = i.calibration_set_id AND s.project_id <> {r}.project_id",
        on_insert=False,
        name="goldset_answerrecord__from_goldset_calibrationitem__record_id",
    ),
    Guard(
        table="goldset_calibrationset",
        column="project_id",
        watched=("project_id",),
        tables="goldset_calibrationitem i, goldset_answerrecord a",
        where=(
            "i.calibration_set_id = {r}.id AND a.id = i.record_id "
            "AND a.project_id <> {r}.project_id"
        ),
        on_insert=False,
        name="goldset_calibrationset__from_goldset_calibrationitem__record_id",
    ),
]


def _tables() -> dict[str, list[Guard]]:
    by_table: dict[str, list[Guard]] = {}
    for guard in GUARDS:
        by_table.setdefault(guard.table, []).append(guard)
    return by_table


def _violation(guard: Guard, row: str) -> str:
    """EXISTS over the guard's tables for the row ``row`` (``NEW``)."""
    return f"EXISTS (SELECT 1 FROM {guard.tables} WHERE {guard.where.format(r=row)})"


def _changed(columns, *, sqlite: bool = False) -> str:
    op = "IS NOT" if sqlite else "IS DISTINCT FROM"
    return " OR ".join(f"OLD.{c} {op} NEW.{c}" for c in columns)


def _watched(guards: list[Guard]) -> list[str]:
    return list(dict.fromkeys(c for g in guards for c in g.watched))


def _pg_raise(guard: Guard) -> str:
    return (
        f"RAISE EXCEPTION '{guard.message}' USING ERRCODE = 'check_violation', "
        f"TABLE = '{guard.table}', COLUMN = '{guard.column}', CONSTRAINT = '{guard.key}';"
    )


def _pg_table(table: str, guards: list[Guard]) -> str:
    inserted = [g for g in guards if g.on_insert]
    sql = ""
    if inserted:
        checks = "".join(
            f"  IF EXISTS (SELECT 1 FROM new_rows r, {g.tables} WHERE {g.where.format(r='r')}) "
            f"THEN\n    {_pg_raise(g)}\n  END IF;\n"
            for g in inserted
        )
        sql += f"""
CREATE OR REPLACE FUNCTION {table}_project_guard_insert() RETURNS trigger AS $$
BEGIN
{checks}  RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER {table}_project_guard_insert AFTER INSERT ON {table}
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
  EXECUTE FUNCTION {table}_project_guard_insert();
"""
    checks = "".join(
        f"  IF ({_changed(g.watched)}) AND {_violation(g, 'NEW')} THEN\n    {_pg_raise(g)}\n"
        "  END IF;\n"
        for g in guards
    )
    watched = _watched(guards)
    sql += f"""
CREATE OR REPLACE FUNCTION {table}_project_guard_update() RETURNS trigger AS $$
BEGIN
{checks}  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER {table}_project_guard_update BEFORE UPDATE OF {", ".join(watched)} ON {table}
  FOR EACH ROW WHEN ({_changed(watched)})
  EXECUTE FUNCTION {table}_project_guard_update();
"""
    return sql


def postgres() -> str:
    return "".join(_pg_table(table, guards) for table, guards in _tables().items())


def postgres_drop() -> str:
    sql = ""
    for table in _tables():
        for event in ("insert", "update"):
            sql += (
                f"DROP TRIGGER IF EXISTS {table}_project_guard_{event} ON {table};\n"
                f"DROP FUNCTION IF EXISTS {table}_project_guard_{event}();\n"
            )
    return sql


def _sqlite_raise(guard: Guard) -> str:
    return f"SELECT RAISE(ABORT, '{guard.message}');"


def sqlite() -> list[str]:
    sql = []
    for guard in GUARDS:
        if guard.on_insert:
            sql.append(
                f"CREATE TRIGGER {guard.key}_guard_insert BEFORE INSERT ON {guard.table} "
                f"WHEN {_violation(guard, 'NEW')} BEGIN {_sqlite_raise(guard)} END"
            )
        sql.append(
            f"CREATE TRIGGER {guard.key}_guard_update BEFORE UPDATE OF {', '.join(guard.watched)} "
            f"ON {guard.table} WHEN ({_changed(guard.watched, sqlite=True)}) "
            f"AND {_violation(guard, 'NEW')} BEGIN {_sqlite_raise(guard)} END"
        )
    return sql


def sqlite_drop() -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {guard.key}_guard_{event}"
        for guard in GUARDS
        for event in ("insert", "update")
    ]


def violations(schema_editor) -> list[str]:
    """The guards the rows already stored break (none is expected: the services refuse them)."""
    broken = []
    with schema_editor.connection.cursor() as cursor:
        for guard in GUARDS:
            if not guard.on_insert:
                continue  # the reverse of a forward guard: the same pairs
            cursor.execute(
                f"SELECT 1 FROM {guard.table} r, {guard.tables} "
                f"WHERE {guard.where.format(r='r')} LIMIT 1"
            )
            if cursor.fetchone():
                broken.append(f"{guard.table}.{guard.column}")
    return broken


def install(apps, schema_editor):
    broken = violations(schema_editor)
    if broken:
        raise RuntimeError(
            "rows naming a row of another project, fix them before migrating: " + ", ".join(broken)
        )
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(postgres())
    elif vendor == "sqlite":
        for sql in sqlite():
            schema_editor.execute(sql)
    else:
        raise RuntimeError(f"no project guard triggers for {vendor}")


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(postgres_drop())
    else:
        for sql in sqlite_drop():
            schema_editor.execute(sql)


def suspend_sqlite(apps, schema_editor):
    """Before a later migration rebuilds a guarded table on SQLite (see the module's note)."""
    if schema_editor.connection.vendor == "sqlite":
        uninstall(apps, schema_editor)


def resume_sqlite(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for sql in sqlite():
            schema_editor.execute(sql)
