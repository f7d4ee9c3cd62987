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
first and installs them after (``sqlite_pause`` with the guards then in force; ``suspend_sqlite``
/ ``resume_sqlite`` for all of today's): ``RunPython(suspend, resume)`` before its
operations, ``RunPython(resume, suspend)`` after them."""

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


GUARDS_0037: list[Guard] = [
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


def _pinned(table: str, owner: str, owner_table: str, column: str = "block_version_id"):
    """``table.column`` pins a block version whose block must be of the project of the row's
    ``owner`` (``owner_table``, with a ``project_id``): the forward guard, and the reverse ones
    (the owner's or the block's ``project_id`` changes, or the version moves to another block)."""
    pinned = f"{table}__{column}"
    return [
        Guard(
            table=table,
            column=column,
            watched=(column, owner),
            tables=f"{owner_table} o, goldset_blockversion v, goldset_block b",
            where=(
                f"o.id = {{r}}.{owner} AND v.id = {{r}}.{column} AND b.id = v.block_id "
                "AND b.project_id <> o.project_id"
            ),
        ),
        Guard(
            table=owner_table,
            column="project_id",
            watched=("project_id",),
            tables=f"{table} x, goldset_blockversion v, goldset_block b",
            where=(
                f"x.{owner} = {{r}}.id AND v.id = x.{column} AND b.id = v.block_id "
                "AND b.project_id <> {r}.project_id"
            ),
            on_insert=False,
            name=f"{owner_table}__from_{pinned}",
        ),
        Guard(
            table="goldset_block",
            column="project_id",
            watched=("project_id",),
            tables=f"goldset_blockversion v, {table} x, {owner_table} o",
            where=(
                f"v.block_id = {{r}}.id AND x.{column} = v.id AND o.id = x.{owner} "
                "AND o.project_id <> {r}.project_id"
            ),
            on_insert=False,
            name=f"goldset_block__from_{pinned}",
        ),
        Guard(
            table="goldset_blockversion",
            column="block_id",
            watched=("block_id",),
            tables=f"goldset_block b, {table} x, {owner_table} o",
            where=(
                f"b.id = {{r}}.block_id AND x.{column} = {{r}}.id AND o.id = x.{owner} "
                "AND o.project_id <> b.project_id"
            ),
            on_insert=False,
            name=f"goldset_blockversion__from_{pinned}",
        ),
    ]


def _pair(table: str, first: str, first_table: str, second: str, second_table: str):
    """A row without a project names two rows that must be of one project (``second`` is the
    column the message names): the forward guard and the reverse ones (either target's
    ``project_id`` changes under it)."""
    return [
        Guard(
            table=table,
            column=second,
            watched=(first, second),
            tables=f"{first_table} f, {second_table} s",
            where=f"f.id = {{r}}.{first} AND s.id = {{r}}.{second} AND f.project_id <> s.project_id",
        ),
        *(
            Guard(
                table=target,
                column="project_id",
                watched=("project_id",),
                tables=f"{table} x, {other_table} o",
                where=(
                    f"x.{own} = {{r}}.id AND o.id = x.{other} AND o.project_id <> {{r}}.project_id"
                ),
                on_insert=False,
                name=f"{target}__from_{table}__{own}",
            )
            for target, own, other_table, other in (
                (first_table, first, second_table, second),
                (second_table, second, first_table, first),
            )
        ),
    ]


def _guideline(table: str) -> list[Guard]:
    """A label's or an adjudication's guideline version is of its record's project (the
    version's domain's project)."""
    return [
        Guard(
            table=table,
            column="guideline_id",
            watched=("guideline_id", "record_id"),
            tables="goldset_answerrecord a, goldset_guidelineversion g, goldset_domain d",
            where=(
                "a.id = {r}.record_id AND g.id = {r}.guideline_id AND d.id = g.domain_id "
                "AND d.project_id <> a.project_id"
            ),
        ),
        Guard(
            table="goldset_guidelineversion",
            column="domain_id",
            watched=("domain_id",),
            tables=f"goldset_domain d, {table} x, goldset_answerrecord a",
            where=(
                "d.id = {r}.domain_id AND x.guideline_id = {r}.id AND a.id = x.record_id "
                "AND a.project_id <> d.project_id"
            ),
            on_insert=False,
            name=f"goldset_guidelineversion__from_{table}__guideline_id",
        ),
    ]


# Migration 0041: the remaining same-project pairs.
GUARDS_0041: list[Guard] = [
    # The corpus: a document's domain, a block's document, a question's domain.
    *_direct("goldset_document", "domain_id", "goldset_domain"),
    *_direct("goldset_block", "document_id", "goldset_document"),
    *_direct("goldset_question", "domain_id", "goldset_domain"),
    # A run's system; a revision's triple and a triple's current revision.
    *_direct("goldset_run", "system_id", "goldset_system"),
    *_direct("goldset_triplerevision", "triple_id", "goldset_triple"),
    *_direct("goldset_triple", "current_revision_id", "goldset_triplerevision"),
    *_direct("goldset_qualitytrackerentry", "triple_id", "goldset_triple"),
    *_direct("goldset_qualitytrackerentry", "revision_id", "goldset_triplerevision"),
    # Evidence, citations and retrieved passages pin block versions of their owner's project.
    *_pinned("goldset_evidencepassage", "question_id", "goldset_question"),
    *_pinned("goldset_answercitation", "record_id", "goldset_answerrecord"),
    *_pinned("goldset_retrievedpassage", "record_id", "goldset_answerrecord"),
    # A judge's output is on a record of the evaluator's project; a discussion message names a
    # revision of its triple's project.
    *_pair(
        "goldset_evaluatoroutput",
        "evaluator_id",
        "goldset_evaluator",
        "record_id",
        "goldset_answerrecord",
    ),
    *_pair(
        "goldset_discussionmessage",
        "triple_id",
        "goldset_triple",
        "revision_id",
        "goldset_triplerevision",
    ),
    *_guideline("goldset_label"),
    *_guideline("goldset_adjudication"),
]

# In force after migration 0041.
GUARDS: list[Guard] = GUARDS_0037 + GUARDS_0041


def _tables(guards: list[Guard]) -> dict[str, list[Guard]]:
    by_table: dict[str, list[Guard]] = {}
    for guard in guards:
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


def postgres(guards: list[Guard] = GUARDS) -> str:
    return "".join(_pg_table(table, listed) for table, listed in _tables(guards).items())


def postgres_drop(guards: list[Guard] = GUARDS) -> str:
    sql = ""
    for table in _tables(guards):
        for event in ("insert", "update"):
            sql += (
                f"DROP TRIGGER IF EXISTS {table}_project_guard_{event} ON {table};\n"
                f"DROP FUNCTION IF EXISTS {table}_project_guard_{event}();\n"
            )
    return sql


def _sqlite_raise(guard: Guard) -> str:
    return f"SELECT RAISE(ABORT, '{guard.message}');"


def sqlite(guards: list[Guard] = GUARDS) -> list[str]:
    sql = []
    for guard in guards:
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


def sqlite_drop(guards: list[Guard] = GUARDS) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {guard.key}_guard_{event}"
        for guard in guards
        for event in ("insert", "update")
    ]


def violations(schema_editor, guards: list[Guard] = GUARDS) -> list[str]:
    """The guards the rows already stored break (none is expected: the services refuse them)."""
    broken = []
    with schema_editor.connection.cursor() as cursor:
        for guard in guards:
            if not guard.on_insert:
                continue  # the reverse of a forward guard: the same pairs
            cursor.execute(
                f"SELECT 1 FROM {guard.table} r, {guard.tables} "
                f"WHERE {guard.where.format(r='r')} LIMIT 1"
            )
            if cursor.fetchone():
                broken.append(f"{guard.table}.{guard.column}")
    return broken


def _install(schema_editor, guards: list[Guard]):
    broken = violations(schema_editor, guards)
    if broken:
        raise RuntimeError(
            "rows naming a row of another project, fix them before migrating: " + ", ".join(broken)
        )
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(postgres(guards))
    elif vendor == "sqlite":
        for sql in sqlite(guards):
            schema_editor.execute(sql)
    else:
        raise RuntimeError(f"no project guard triggers for {vendor}")


def _uninstall(schema_editor, guards: list[Guard]):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(postgres_drop(guards))
    else:
        for sql in sqlite_drop(guards):
            schema_editor.execute(sql)


def install(apps, schema_editor):
    """Migration 0037: the first set."""
    _install(schema_editor, GUARDS_0037)


def uninstall(apps, schema_editor):
    _uninstall(schema_editor, GUARDS_0037)


def install_0041(apps, schema_editor):
    """Migration 0041: every guard (a table's PostgreSQL trigger checks all of its guards, so
    the first set's triggers are replaced, not added to)."""
    _uninstall(schema_editor, GUARDS_0037)
    _install(schema_editor, GUARDS)


def uninstall_0041(apps, schema_editor):
    _uninstall(schema_editor, GUARDS)
    _install(schema_editor, GUARDS_0037)


def sqlite_pause(guards: list[Guard]):
    """(suspend, resume) for a migration that rebuilds a guarded table on SQLite (see the
    module's note): ``guards`` are those in force when it runs — a later migration's guards
    must not be created early by an earlier one's resume."""

    def suspend(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            _uninstall(schema_editor, guards)

    def resume(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for sql in sqlite(guards):
                schema_editor.execute(sql)

    return suspend, resume


# Pairwise review (issue 30, migration 0044_pairwise): forward guards on the new tables only (a
# reverse guard would add to the per-table functions of goldset_answerrecord, goldset_run and
# goldset_question, which GUARDS installs; see the coordinator's note in the branch report).
# A pair's two records are answers to the pair's question in the pair's project.
def _pair_record(column: str) -> Guard:
    return Guard(
        table="goldset_pairwisepair",
        column=column,
        watched=(column, "question_id", "project_id"),
        tables="goldset_answerrecord ref",
        where=(
            f"ref.id = {{r}}.{column} AND (ref.project_id <> {{r}}.project_id "
            "OR ref.question_id <> {r}.question_id)"
        ),
    )


GUARDS_PAIRWISE: list[Guard] = [
    _direct("goldset_pairwisetask", "gold_version_id", "goldset_goldversion")[0],
    _direct("goldset_pairwisepair", "task_id", "goldset_pairwisetask")[0],
    _direct("goldset_pairwisepair", "question_id", "goldset_question")[0],
    _pair_record("record_a_id"),
    _pair_record("record_b_id"),
    Guard(
        table="goldset_pairwisetaskrun",
        column="run_id",
        watched=("task_id", "run_id"),
        tables="goldset_pairwisetask t, goldset_run s",
        where="t.id = {r}.task_id AND s.id = {r}.run_id AND t.project_id <> s.project_id",
    ),
]


def install_pairwise(apps, schema_editor):
    _install(schema_editor, GUARDS_PAIRWISE)


def uninstall_pairwise(apps, schema_editor):
    _uninstall(schema_editor, GUARDS_PAIRWISE)


# Migration 0047 (pairwise qualification): the reverse side of the pairwise guards — a referenced
# row (a task, a question, an answer record, a run, a gold version, a pair) whose project (or,
# for a record, question) changes while pairwise rows of its old project still name it — and
# the calibration pairs' guards, both ways. A table's PostgreSQL trigger checks all of its
# guards, so 0047 replaces the triggers of every table GUARDS and these name.
def _records_reverse(table: str) -> Guard:
    """An answer record's project or question changes under a pair (or calibration pair) of
    ``table`` that names it as A or B."""
    return Guard(
        table="goldset_answerrecord",
        column="project_id",
        watched=("project_id", "question_id"),
        tables=f"{table} x",
        where=(
            "(x.record_a_id = {r}.id OR x.record_b_id = {r}.id) "
            "AND (x.project_id <> {r}.project_id OR x.question_id <> {r}.question_id)"
        ),
        on_insert=False,
        name=f"goldset_answerrecord__from_{table}__records",
    )


def _calibration_record(column: str) -> Guard:
    return Guard(
        table="goldset_paircalibrationitem",
        column=column,
        watched=(column, "question_id", "project_id"),
        tables="goldset_answerrecord ref",
        where=(
            f"ref.id = {{r}}.{column} AND (ref.project_id <> {{r}}.project_id "
            "OR ref.question_id <> {r}.question_id)"
        ),
    )


GUARDS_PAIRWISE_REVERSE: list[Guard] = [
    _direct("goldset_pairwisetask", "gold_version_id", "goldset_goldversion")[1],
    _direct("goldset_pairwisepair", "task_id", "goldset_pairwisetask")[1],
    _direct("goldset_pairwisepair", "question_id", "goldset_question")[1],
    _records_reverse("goldset_pairwisepair"),
    Guard(
        table="goldset_pairwisetask",
        column="project_id",
        watched=("project_id",),
        tables="goldset_pairwisetaskrun x, goldset_run s",
        where="x.task_id = {r}.id AND s.id = x.run_id AND s.project_id <> {r}.project_id",
        on_insert=False,
        name="goldset_pairwisetask__from_goldset_pairwisetaskrun__run_id",
    ),
    Guard(
        table="goldset_run",
        column="project_id",
        watched=("project_id",),
        tables="goldset_pairwisetaskrun x, goldset_pairwisetask t",
        where="x.run_id = {r}.id AND t.id = x.task_id AND t.project_id <> {r}.project_id",
        on_insert=False,
        name="goldset_run__from_goldset_pairwisetaskrun__run_id",
    ),
]
GUARDS_PAIR_CALIBRATION: list[Guard] = [
    *_direct("goldset_paircalibrationitem", "question_id", "goldset_question"),
    *_direct("goldset_paircalibrationitem", "source_pair_id", "goldset_pairwisepair"),
    _calibration_record("record_a_id"),
    _calibration_record("record_b_id"),
    _records_reverse("goldset_paircalibrationitem"),
]
# In force after migration 0047 (with GUARDS).
GUARDS_PAIRWISE_0047: list[Guard] = (
    GUARDS_PAIRWISE + GUARDS_PAIRWISE_REVERSE + GUARDS_PAIR_CALIBRATION
)


def install_pairwise_0047(apps, schema_editor):
    """Migration 0047: every guard again, the pairwise reverse side and calibration pairs
    added (tables' triggers are replaced, not added to)."""
    _uninstall(schema_editor, GUARDS + GUARDS_PAIRWISE)
    _install(schema_editor, GUARDS + GUARDS_PAIRWISE_0047)


def uninstall_pairwise_0047(apps, schema_editor):
    _uninstall(schema_editor, GUARDS + GUARDS_PAIRWISE_0047)
    _install(schema_editor, GUARDS + GUARDS_PAIRWISE)


# Migration 0050 (production traces, issue 28): a trace's answer record and sampling rule, and a
# promoted triple's origin (its triple and record), are rows of the trace's (origin's) project;
# the reverse side too (a record, triple or rule cannot move away from them). The tables of
# goldset_answerrecord and goldset_triple already have triggers: they are replaced.
GUARDS_TRACES: list[Guard] = [
    *_direct("goldset_receivedtrace", "record_id", "goldset_answerrecord"),
    *_direct("goldset_receivedtrace", "sampling_rule_id", "goldset_samplingrule"),
    *_direct("goldset_tripleorigin", "triple_id", "goldset_triple"),
    *_direct("goldset_tripleorigin", "record_id", "goldset_answerrecord"),
]
# Every guard in force after the newest guard migration: what a migration that rebuilds a
# guarded table on SQLite suspends and resumes (``suspend_sqlite``), and what it must be
# ordered after.
GUARDS_IN_FORCE: list[Guard] = GUARDS + GUARDS_PAIRWISE_0047 + GUARDS_TRACES
# For a migration after 0050 that rebuilds a guarded table on SQLite:
# ``RunPython(suspend_sqlite, resume_sqlite)`` before its operations, the reverse after.
suspend_sqlite, resume_sqlite = sqlite_pause(GUARDS_IN_FORCE)
# Migration 0049 (Domain.created_at) ran before the traces' guards existed.
suspend_sqlite_0049, resume_sqlite_0049 = sqlite_pause(GUARDS + GUARDS_PAIRWISE_0047)


def install_traces_0050(apps, schema_editor):
    """Migration 0050: every guard again with the traces' added."""
    _uninstall(schema_editor, GUARDS + GUARDS_PAIRWISE_0047)
    _install(schema_editor, GUARDS_IN_FORCE)


def uninstall_traces_0050(apps, schema_editor):
    _uninstall(schema_editor, GUARDS_IN_FORCE)
    _install(schema_editor, GUARDS + GUARDS_PAIRWISE_0047)
