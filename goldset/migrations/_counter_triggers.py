"""The SQL behind ``DashboardCounter`` (migration 0023, sharded in 0025): triggers that keep the
lead dashboards' counts as rows change, for PostgreSQL and SQLite, and the backfill of existing
rows.

Sharding (0025): every label or review bumps the same counter row (today's ``labels_day``), so
with one row per (name, key) concurrent submits queued on that row's lock until the holder
committed. A PostgreSQL writer now adds to one of :data:`SHARDS` rows per key, chosen by its
backend process (one per connection), so two connections rarely touch the same row; readers sum
the shards (at most :data:`SHARDS` rows per key). SQLite has one writer at a time and uses
shard 0.

Statement-level (0025, PostgreSQL): 0023's row-level triggers updated the same counter row once
per inserted row, and PostgreSQL keeps every version of a row a transaction updates until it
commits, each update walking the versions before it — so one statement inserting n rows cost
O(n²) (seeding 1M answer records ran for over 37 minutes; 100k took 106 s, 10k 3 s). The
triggers now run once per statement over its transition tables and add one grouped delta per
key."""

SHARDS = 16
PG_SHARD = f"mod(pg_backend_pid(), {SHARDS})"

# 0028: the shard is the writing transaction's id modulo XACT_SHARDS. With one shard per
# backend, a server with more connections than shards (gunicorn 4 × 8 threads, each with its own
# connection) always had pairs of connections sharing a row, and the load benchmark still saw
# ``Lock transactionid`` waits on ``INSERT INTO goldset_label`` behind another submit's commit.
# Transactions that run at the same time have nearby ids, so they land in different rows unless
# XACT_SHARDS others started in between; all of one transaction's writes go to one shard.
XACT_SHARDS = 64
PG_XACT_SHARD = f"mod(txid_current(), {XACT_SHARDS})"


def upsert(name: str, key: str, delta, *, shard: str | None = None) -> str:
    """Add ``delta`` to counter (name, key); ``shard`` (SQL) is the sharded form of 0025."""
    if shard is None:
        return (
            f"INSERT INTO goldset_dashboardcounter (name, key, n) VALUES ({name}, {key}, {delta}) "
            "ON CONFLICT (name, key) DO UPDATE SET n = goldset_dashboardcounter.n + excluded.n"
        )
    return (
        "INSERT INTO goldset_dashboardcounter (name, key, shard, n) "
        f"VALUES ({name}, {key}, {shard}, {delta}) "
        "ON CONFLICT (name, key, shard) DO UPDATE SET n = goldset_dashboardcounter.n + excluded.n"
    )


def pg_count_function(*, shard: str | None) -> str:
    return f"""
CREATE OR REPLACE FUNCTION goldset_count(p_name text, p_key text, p_delta bigint) RETURNS void AS $$
BEGIN
  {upsert("p_name", "p_key", "p_delta", shard=shard)};
END $$ LANGUAGE plpgsql;
"""


TRIPLE_KEY = "{r}.state || '|' || {r}.tier || '|' || {r}.domain_id || '|' || {r}.source"

POSTGRES = (
    pg_count_function(shard=None)
    + f"""
CREATE OR REPLACE FUNCTION goldset_triple_counter() RETURNS trigger AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM goldset_count('triple', {TRIPLE_KEY.format(r="OLD")}, -1);
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN
    PERFORM goldset_count('triple', {TRIPLE_KEY.format(r="NEW")}, 1);
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER goldset_triple_counter_write AFTER INSERT OR DELETE ON goldset_triple
  FOR EACH ROW EXECUTE FUNCTION goldset_triple_counter();
CREATE TRIGGER goldset_triple_counter_update AFTER UPDATE ON goldset_triple FOR EACH ROW
  WHEN (({TRIPLE_KEY.format(r="OLD")}) IS DISTINCT FROM ({TRIPLE_KEY.format(r="NEW")}))
  EXECUTE FUNCTION goldset_triple_counter();

CREATE OR REPLACE FUNCTION goldset_record_counter() RETURNS trigger AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND NOT OLD.is_calibration THEN
    PERFORM goldset_count('record', OLD.tier, -1);
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') AND NOT NEW.is_calibration THEN
    PERFORM goldset_count('record', NEW.tier, 1);
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER goldset_record_counter_write AFTER INSERT OR DELETE ON goldset_answerrecord
  FOR EACH ROW EXECUTE FUNCTION goldset_record_counter();
CREATE TRIGGER goldset_record_counter_update AFTER UPDATE ON goldset_answerrecord FOR EACH ROW
  WHEN (OLD.tier IS DISTINCT FROM NEW.tier OR OLD.is_calibration IS DISTINCT FROM NEW.is_calibration)
  EXECUTE FUNCTION goldset_record_counter();

CREATE OR REPLACE FUNCTION goldset_label_counter() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM goldset_count('labels_day', to_char(OLD.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), -1);
  ELSE
    PERFORM goldset_count('labels_day', to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 1);
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER goldset_label_counter AFTER INSERT OR DELETE ON goldset_label
  FOR EACH ROW EXECUTE FUNCTION goldset_label_counter();

CREATE OR REPLACE FUNCTION goldset_review_counter() RETURNS trigger AS $$
DECLARE
  r RECORD;
  delta bigint;
  author text;
  day text;
BEGIN
  IF TG_OP = 'DELETE' THEN r := OLD; delta := -1; ELSE r := NEW; delta := 1; END IF;
  day := to_char(r.submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD');
  PERFORM goldset_count('reviews_day', day, delta);
  SELECT t.author_id::text INTO author FROM goldset_triplerevision v
    JOIN goldset_triple t ON t.id = v.triple_id WHERE v.id = r.revision_id;
  IF author IS NOT NULL THEN
    PERFORM goldset_count('author_reviews', author || '|' || day, delta);
    IF r.verdict = 'flag' THEN
      PERFORM goldset_count('author_flags', author || '|' || day, delta);
    END IF;
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER goldset_review_counter AFTER INSERT OR DELETE ON goldset_review
  FOR EACH ROW EXECUTE FUNCTION goldset_review_counter();
"""
)

POSTGRES_DROP = """
DROP TRIGGER IF EXISTS goldset_review_counter ON goldset_review;
DROP TRIGGER IF EXISTS goldset_label_counter ON goldset_label;
DROP TRIGGER IF EXISTS goldset_record_counter_write ON goldset_answerrecord;
DROP TRIGGER IF EXISTS goldset_record_counter_update ON goldset_answerrecord;
DROP TRIGGER IF EXISTS goldset_triple_counter_write ON goldset_triple;
DROP TRIGGER IF EXISTS goldset_triple_counter_update ON goldset_triple;
DROP FUNCTION IF EXISTS goldset_review_counter();
DROP FUNCTION IF EXISTS goldset_label_counter();
DROP FUNCTION IF EXISTS goldset_record_counter();
DROP FUNCTION IF EXISTS goldset_triple_counter();
DROP FUNCTION IF EXISTS goldset_count(text, text, bigint);
"""


def _sqlite_triggers(*, sharded: bool) -> list[str]:
    shard = "0" if sharded else None
    target = "(name, key, shard)" if sharded else "(name, key)"
    conflict = f"ON CONFLICT {target} DO UPDATE SET n = goldset_dashboardcounter.n + excluded.n;"

    def count(name: str, key: str, delta: int) -> str:
        return upsert(f"'{name}'", key, delta, shard=shard) + ";"

    def review(row: str, delta: int) -> str:
        day = f"substr({row}.submitted_at, 1, 10)"
        author = (
            "(SELECT t.author_id FROM goldset_triplerevision v JOIN goldset_triple t "
            f"ON t.id = v.triple_id WHERE v.id = {row}.revision_id)"
        )
        return (
            count("reviews_day", day, delta)
            + "INSERT INTO goldset_dashboardcounter (name, key, n) "
            f"SELECT 'author_reviews', {author} || '|' || {day}, {delta} WHERE {author} IS NOT NULL "
            + conflict
            + "INSERT INTO goldset_dashboardcounter (name, key, n) "
            f"SELECT 'author_flags', {author} || '|' || {day}, {delta} "
            f"WHERE {author} IS NOT NULL AND {row}.verdict = 'flag' " + conflict
        )

    return [
        "CREATE TRIGGER goldset_triple_counter_insert AFTER INSERT ON goldset_triple BEGIN "
        + count("triple", TRIPLE_KEY.format(r="NEW"), 1)
        + " END",
        "CREATE TRIGGER goldset_triple_counter_delete AFTER DELETE ON goldset_triple BEGIN "
        + count("triple", TRIPLE_KEY.format(r="OLD"), -1)
        + " END",
        "CREATE TRIGGER goldset_triple_counter_update AFTER UPDATE ON goldset_triple "
        f"WHEN ({TRIPLE_KEY.format(r='OLD')}) IS NOT ({TRIPLE_KEY.format(r='NEW')}) BEGIN "
        + count("triple", TRIPLE_KEY.format(r="OLD"), -1)
        + count("triple", TRIPLE_KEY.format(r="NEW"), 1)
        + " END",
        "CREATE TRIGGER goldset_record_counter_insert AFTER INSERT ON goldset_answerrecord "
        "WHEN NOT NEW.is_calibration BEGIN " + count("record", "NEW.tier", 1) + " END",
        "CREATE TRIGGER goldset_record_counter_delete AFTER DELETE ON goldset_answerrecord "
        "WHEN NOT OLD.is_calibration BEGIN " + count("record", "OLD.tier", -1) + " END",
        "CREATE TRIGGER goldset_record_counter_update AFTER UPDATE ON goldset_answerrecord "
        "WHEN OLD.tier IS NOT NEW.tier OR OLD.is_calibration IS NOT NEW.is_calibration BEGIN "
        "INSERT INTO goldset_dashboardcounter (name, key, n) SELECT 'record', OLD.tier, -1 "
        "WHERE NOT OLD.is_calibration " + conflict + "INSERT INTO goldset_dashboardcounter "
        "(name, key, n) SELECT 'record', NEW.tier, 1 WHERE NOT NEW.is_calibration "
        + conflict
        + " END",
        "CREATE TRIGGER goldset_label_counter_insert AFTER INSERT ON goldset_label BEGIN "
        + count("labels_day", "substr(NEW.created_at, 1, 10)", 1)
        + " END",
        "CREATE TRIGGER goldset_label_counter_delete AFTER DELETE ON goldset_label BEGIN "
        + count("labels_day", "substr(OLD.created_at, 1, 10)", -1)
        + " END",
        "CREATE TRIGGER goldset_review_counter_insert AFTER INSERT ON goldset_review BEGIN "
        + review("NEW", 1)
        + " END",
        "CREATE TRIGGER goldset_review_counter_delete AFTER DELETE ON goldset_review BEGIN "
        + review("OLD", -1)
        + " END",
    ]


SQLITE = _sqlite_triggers(sharded=False)

SQLITE_DROP = [
    f"DROP TRIGGER IF EXISTS {name}"
    for name in (
        "goldset_triple_counter_insert",
        "goldset_triple_counter_delete",
        "goldset_triple_counter_update",
        "goldset_record_counter_insert",
        "goldset_record_counter_delete",
        "goldset_record_counter_update",
        "goldset_label_counter_insert",
        "goldset_label_counter_delete",
        "goldset_review_counter_insert",
        "goldset_review_counter_delete",
    )
]


def backfill(date_sql) -> list[str]:
    """Counts of the rows already there (``date_sql`` turns a timestamp column into YYYY-MM-DD)."""
    return [
        "INSERT INTO goldset_dashboardcounter (name, key, n) "
        f"SELECT 'triple', {TRIPLE_KEY.format(r='t')}, COUNT(*) FROM goldset_triple t "
        f"GROUP BY {TRIPLE_KEY.format(r='t')}",
        "INSERT INTO goldset_dashboardcounter (name, key, n) SELECT 'record', tier, COUNT(*) "
        "FROM goldset_answerrecord WHERE NOT is_calibration GROUP BY tier",
        "INSERT INTO goldset_dashboardcounter (name, key, n) "
        f"SELECT 'labels_day', {date_sql('created_at')}, COUNT(*) FROM goldset_label "
        f"GROUP BY {date_sql('created_at')}",
        "INSERT INTO goldset_dashboardcounter (name, key, n) "
        f"SELECT 'reviews_day', {date_sql('submitted_at')}, COUNT(*) FROM goldset_review "
        f"GROUP BY {date_sql('submitted_at')}",
        "INSERT INTO goldset_dashboardcounter (name, key, n) "
        f"SELECT 'author_reviews', t.author_id || '|' || {date_sql('r.submitted_at')}, COUNT(*) "
        "FROM goldset_review r JOIN goldset_triplerevision v ON v.id = r.revision_id "
        "JOIN goldset_triple t ON t.id = v.triple_id "
        f"GROUP BY t.author_id || '|' || {date_sql('r.submitted_at')}",
        "INSERT INTO goldset_dashboardcounter (name, key, n) "
        f"SELECT 'author_flags', t.author_id || '|' || {date_sql('r.submitted_at')}, COUNT(*) "
        "FROM goldset_review r JOIN goldset_triplerevision v ON v.id = r.revision_id "
        "JOIN goldset_triple t ON t.id = v.triple_id WHERE r.verdict = 'flag' "
        f"GROUP BY t.author_id || '|' || {date_sql('r.submitted_at')}",
    ]


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES)
        statements = backfill(lambda c: f"to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD')")
    elif vendor == "sqlite":
        for sql in SQLITE:
            schema_editor.execute(sql)
        statements = backfill(lambda c: f"substr({c}, 1, 10)")
    else:
        raise RuntimeError(f"no dashboard counter triggers for {vendor}")
    for sql in statements:
        schema_editor.execute(sql)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_DROP)
    else:
        for sql in SQLITE_DROP:
            schema_editor.execute(sql)


FOLD_SHARDS = [
    "INSERT INTO goldset_dashboardcounter (name, key, shard, n) "
    "SELECT name, key, 0, SUM(n) FROM goldset_dashboardcounter WHERE shard <> 0 GROUP BY name, key "
    "ON CONFLICT (name, key, shard) DO UPDATE SET n = goldset_dashboardcounter.n + excluded.n",
    "DELETE FROM goldset_dashboardcounter WHERE shard <> 0",
]


def drop_sqlite_writers(apps, schema_editor):
    """SQLite remakes a table to change its constraints, which fails while triggers on other
    tables name it: 0025 drops them first and :func:`shard` creates them again."""
    if schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE_DROP:
            schema_editor.execute(sql)


def restore_sqlite_writers(apps, schema_editor):
    """Reverse of :func:`drop_sqlite_writers`: the 0023 triggers, on the unsharded table."""
    if schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE:
            schema_editor.execute(sql)


def shard(apps, schema_editor):
    """0025: writers spread over :data:`SHARDS` rows per key (runs after the ``shard`` column
    and the (name, key, shard) constraint exist)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_DROP)
        schema_editor.execute(PG_STATEMENT_TRIGGERS)
        return
    for sql in _sqlite_triggers(sharded=True):
        schema_editor.execute(sql)


def unshard(apps, schema_editor):
    """Reverse of :func:`shard`: shards folded into shard 0 (while the (name, key, shard)
    constraint still exists), PostgreSQL's writer back to one row per key, SQLite's triggers
    dropped until :func:`restore_sqlite_writers`."""
    for sql in FOLD_SHARDS:
        schema_editor.execute(sql)
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_STATEMENT_DROP)
        schema_editor.execute(POSTGRES)
        return
    for sql in SQLITE_DROP:
        schema_editor.execute(sql)


# ---------------------------------------------------------------- statement-level (0025)
# Each counted table: (counter name, key SQL, joins, condition) per counter, ``{r}`` the row.
_REVIEW_AUTHOR = (
    "JOIN goldset_triplerevision v ON v.id = {r}.revision_id "
    "JOIN goldset_triple t ON t.id = v.triple_id"
)
_REVIEW_DAY = "to_char({r}.submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
COUNTED = {
    "goldset_triple": [("triple", TRIPLE_KEY, "", "")],
    "goldset_answerrecord": [("record", "{r}.tier", "", "NOT {r}.is_calibration")],
    "goldset_label": [
        ("labels_day", "to_char({r}.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')", "", "")
    ],
    "goldset_review": [
        ("reviews_day", _REVIEW_DAY, "", ""),
        ("author_reviews", "t.author_id || '|' || " + _REVIEW_DAY, _REVIEW_AUTHOR,
         "t.author_id IS NOT NULL"),
        ("author_flags", "t.author_id || '|' || " + _REVIEW_DAY, _REVIEW_AUTHOR,
         "t.author_id IS NOT NULL AND {r}.verdict = 'flag'"),
    ],
}  # fmt: skip


def _deltas(counters, rows: str, sign: int) -> str:
    selects = []
    for name, key, joins, condition in counters:
        sql = f"SELECT '{name}' AS name, {key.format(r='r')} AS key, {sign} AS d FROM {rows} r"
        sql += f" {joins.format(r='r')}" if joins else ""
        sql += f" WHERE {condition.format(r='r')}" if condition else ""
        selects.append(sql)
    return " UNION ALL ".join(selects)


def _apply(deltas: str, shard: str) -> str:
    """One upsert per key the statement changed (ordered, so writers meeting in a shard lock
    its rows in the same order)."""
    return (
        "INSERT INTO goldset_dashboardcounter (name, key, shard, n) "
        f"SELECT name, key, {shard}, sum(d) FROM ({deltas}) AS deltas "
        "GROUP BY name, key HAVING sum(d) <> 0 ORDER BY name, key "
        "ON CONFLICT (name, key, shard) DO UPDATE SET n = goldset_dashboardcounter.n + excluded.n"
    )


def _pg_statement_functions(shard: str, counted=None) -> str:
    """The counting functions (``goldset_count`` and one per counted table), writing to the
    shard ``shard`` (SQL)."""
    sql = [pg_count_function(shard=shard)]
    for table, counters in (COUNTED if counted is None else counted).items():
        function = f"{table}_counts"
        both = _deltas(counters, "old_rows", -1) + " UNION ALL " + _deltas(counters, "new_rows", 1)
        sql.append(f"""
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {_apply(_deltas(counters, "new_rows", 1), shard)};
  ELSIF TG_OP = 'DELETE' THEN
    {_apply(_deltas(counters, "old_rows", -1), shard)};
  ELSE
    {_apply(both, shard)};
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
""")
    return "".join(sql)


def _pg_statement_trigger_trio(name: str, table: str, function: str) -> str:
    """The three statement-level triggers (``<name>_insert|delete|update``) that run ``function``
    on ``table`` with the transition tables ``new_rows`` and ``old_rows``."""
    return f"""
CREATE TRIGGER {name}_insert AFTER INSERT ON {table}
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER {name}_delete AFTER DELETE ON {table}
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER {name}_update AFTER UPDATE ON {table}
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION {function}();
"""


def _pg_statement_triggers(counted=COUNTED) -> str:
    sql = [_pg_statement_functions(PG_SHARD, counted)]
    for table in counted:
        function = f"{table}_counts"
        sql.append(_pg_statement_trigger_trio(function, table, function))
    return "".join(sql)


def _pg_statement_drop(counted=COUNTED) -> str:
    return "".join(
        f"DROP TRIGGER IF EXISTS {table}_counts_{event} ON {table};"
        for table in counted
        for event in ("insert", "delete", "update")
    ) + "".join(f"DROP FUNCTION IF EXISTS {table}_counts();" for table in counted)


PG_STATEMENT_TRIGGERS = _pg_statement_triggers()
PG_STATEMENT_DROP = _pg_statement_drop()


def shard_by_transaction(apps, schema_editor):
    """0028: the counting functions (the dashboard's and 0027's list pages') write to the
    transaction's shard; the triggers stay."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_pg_statement_functions(PG_XACT_SHARD, WITH_PAGES))


def shard_by_backend(apps, schema_editor):
    """Reverse of :func:`shard_by_transaction`: 0025's functions (rows keep their shards)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_pg_statement_functions(PG_SHARD, WITH_PAGES))


def _sqlite_count(name: str, key: str, delta: int) -> str:
    """SQLite's sharded upsert (shard 0: one writer at a time)."""
    return upsert(f"'{name}'", key, delta, shard="0") + ";"


# ---------------------------------------------------------------- time on item (migration 0026)
# ``time_changes`` / ``kind|user_id``: bumped (+1, never −1) whenever a timed decision of that
# person is inserted, deleted or changes its active time or person, so a stored
# ``TimeOnItemFigure`` computed at an older value is stale. ``fast`` / ``user_id|kind``: flagged
# fast decisions.

TIMED = (("goldset_label", "label", "annotator_id"),
         ("goldset_review", "review", "reviewer_id"),
         ("goldset_adjudication", "adjudication", "lead_id"))  # fmt: skip


def _time_key(kind: str, row: str, who: str) -> str:
    return f"'{kind}|' || {row}.{who}"


def _time_postgres() -> str:
    sql = []
    for table, kind, who in TIMED:
        function = f"goldset_time_changes_{kind}"
        sql.append(f"""
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.active_ms IS NOT NULL THEN
    PERFORM goldset_count('time_changes', {_time_key(kind, "OLD", who)}, 1);
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.active_ms IS NOT NULL THEN
    PERFORM goldset_count('time_changes', {_time_key(kind, "NEW", who)}, 1);
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER {function}_write AFTER INSERT OR DELETE ON {table}
  FOR EACH ROW EXECUTE FUNCTION {function}();
CREATE TRIGGER {function}_update AFTER UPDATE ON {table} FOR EACH ROW
  WHEN (OLD.active_ms IS DISTINCT FROM NEW.active_ms OR OLD.{who} IS DISTINCT FROM NEW.{who})
  EXECUTE FUNCTION {function}();
""")
    sql.append("""
CREATE OR REPLACE FUNCTION goldset_fast_counter() RETURNS trigger AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM goldset_count('fast', OLD.annotator_id || '|' || OLD.kind, -1);
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN
    PERFORM goldset_count('fast', NEW.annotator_id || '|' || NEW.kind, 1);
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER goldset_fast_counter_write AFTER INSERT OR DELETE ON goldset_fastdecision
  FOR EACH ROW EXECUTE FUNCTION goldset_fast_counter();
CREATE TRIGGER goldset_fast_counter_update AFTER UPDATE ON goldset_fastdecision FOR EACH ROW
  WHEN (OLD.annotator_id IS DISTINCT FROM NEW.annotator_id OR OLD.kind IS DISTINCT FROM NEW.kind)
  EXECUTE FUNCTION goldset_fast_counter();
""")
    return "".join(sql)


def _time_postgres_drop() -> str:
    lines = []
    for table, kind, _ in TIMED:
        function = f"goldset_time_changes_{kind}"
        lines += [
            f"DROP TRIGGER IF EXISTS {function}_write ON {table};",
            f"DROP TRIGGER IF EXISTS {function}_update ON {table};",
            f"DROP FUNCTION IF EXISTS {function}();",
        ]
    lines += [
        "DROP TRIGGER IF EXISTS goldset_fast_counter_write ON goldset_fastdecision;",
        "DROP TRIGGER IF EXISTS goldset_fast_counter_update ON goldset_fastdecision;",
        "DROP FUNCTION IF EXISTS goldset_fast_counter();",
    ]
    return "\n".join(lines)


def _sqlite_bump(kind: str, row: str, who: str) -> str:
    return (
        "INSERT INTO goldset_dashboardcounter (name, key, n) "
        f"SELECT 'time_changes', {_time_key(kind, row, who)}, 1 WHERE {row}.active_ms IS NOT NULL "
        "ON CONFLICT (name, key, shard) DO UPDATE SET n = goldset_dashboardcounter.n + excluded.n;"
    )


def _time_sqlite() -> list[str]:
    sql = []
    for table, kind, who in TIMED:
        name = f"goldset_time_changes_{kind}"
        sql += [
            f"CREATE TRIGGER {name}_insert AFTER INSERT ON {table} BEGIN "
            + _sqlite_bump(kind, "NEW", who)
            + " END",
            f"CREATE TRIGGER {name}_delete AFTER DELETE ON {table} BEGIN "
            + _sqlite_bump(kind, "OLD", who)
            + " END",
            f"CREATE TRIGGER {name}_update AFTER UPDATE ON {table} "
            f"WHEN OLD.active_ms IS NOT NEW.active_ms OR OLD.{who} IS NOT NEW.{who} BEGIN "
            + _sqlite_bump(kind, "OLD", who)
            + _sqlite_bump(kind, "NEW", who)
            + " END",
        ]
    fast = {row: f"{row}.annotator_id || '|' || {row}.kind" for row in ("OLD", "NEW")}
    sql += [
        "CREATE TRIGGER goldset_fast_counter_insert AFTER INSERT ON goldset_fastdecision BEGIN "
        + _sqlite_count("fast", fast["NEW"], 1)
        + " END",
        "CREATE TRIGGER goldset_fast_counter_delete AFTER DELETE ON goldset_fastdecision BEGIN "
        + _sqlite_count("fast", fast["OLD"], -1)
        + " END",
        "CREATE TRIGGER goldset_fast_counter_update AFTER UPDATE ON goldset_fastdecision "
        "WHEN OLD.annotator_id IS NOT NEW.annotator_id OR OLD.kind IS NOT NEW.kind BEGIN "
        + _sqlite_count("fast", fast["OLD"], -1)
        + _sqlite_count("fast", fast["NEW"], 1)
        + " END",
    ]
    return sql


def _time_backfill() -> list[str]:
    statements = [
        "INSERT INTO goldset_dashboardcounter (name, key, n) "
        f"SELECT 'time_changes', {_time_key(kind, 't', who)}, COUNT(*) FROM {table} t "
        f"WHERE t.active_ms IS NOT NULL GROUP BY t.{who}"
        for table, kind, who in TIMED
    ]
    statements.append(
        "INSERT INTO goldset_dashboardcounter (name, key, n) "
        "SELECT 'fast', annotator_id || '|' || kind, COUNT(*) FROM goldset_fastdecision "
        "GROUP BY annotator_id || '|' || kind"
    )
    return statements


def install_time_counters(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_time_postgres())
    elif vendor == "sqlite":
        for sql in _time_sqlite():
            schema_editor.execute(sql)
    else:
        raise RuntimeError(f"no time-on-item counter triggers for {vendor}")
    for sql in _time_backfill():
        schema_editor.execute(sql)


def uninstall_time_counters(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_time_postgres_drop())
    else:
        for _, kind, _ in TIMED:
            for suffix in ("insert", "delete", "update"):
                schema_editor.execute(
                    f"DROP TRIGGER IF EXISTS goldset_time_changes_{kind}_{suffix}"
                )
        for suffix in ("insert", "delete", "update"):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS goldset_fast_counter_{suffix}")
    schema_editor.execute(
        "DELETE FROM goldset_dashboardcounter WHERE name IN ('time_changes', 'fast')"
    )


def sqlite_suspend(apps, schema_editor):
    """SQLite rebuilds a table to add a column, and renaming the rebuilt table fails while a
    trigger names a table that is briefly missing: the dashboard triggers are dropped around
    such a migration (PostgreSQL alters in place: nothing to do). SQLite also drops a rebuilt
    table's own triggers: a later migration that rebuilds goldset_triple, goldset_triplerevision
    or goldset_blockversion must drop and recreate ``_pin_triggers.SQLITE`` the same way, and one
    that rebuilds the label, review, adjudication or fast-decision table the time-on-item ones,
    and one that rebuilds the triple, answer record or item-skip table the list pages' ones
    (``_sqlite_page_triggers``, migration 0027)."""
    if schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE_DROP:
            schema_editor.execute(sql)


def sqlite_resume(apps, schema_editor):
    """Recreate what :func:`sqlite_suspend` dropped, in their sharded form (0025; the counters
    themselves are untouched)."""
    if schema_editor.connection.vendor == "sqlite":
        for sql in _sqlite_triggers(sharded=True):
            schema_editor.execute(sql)


# ---------------------------------------------------------------- list pages (migration 0027)
# Counts the admin and lead list pages show, so no request groups a growing table:
# ``record_status`` / ``status`` — production answer records by status (runs and export pages);
# ``run_status`` / ``run_id|status`` — every record of a run by status (the runs page);
# ``customer_triples`` / ``customer_id|state`` — a customer's triples by state (customers page);
# ``skips`` / ``annotator_id`` — records an annotator skipped (calibration status page).
# Same counter rows, shards and statement-level writers as 0025; SQLite adds row triggers.
PAGES_COUNTED = {
    "goldset_triple": [
        ("customer_triples", "{r}.customer_id || '|' || {r}.state", "",
         "{r}.customer_id IS NOT NULL"),
    ],
    "goldset_answerrecord": [
        ("record_status", "{r}.status", "", "NOT {r}.is_calibration"),
        ("run_status", "{r}.run_id || '|' || {r}.status", "", ""),
    ],
    "goldset_itemskip": [("skips", "CAST({r}.annotator_id AS text)", "", "")],
}  # fmt: skip
WITH_PAGES = {
    table: COUNTED.get(table, []) + PAGES_COUNTED.get(table, [])
    for table in (*COUNTED, *PAGES_COUNTED)
}


def _sqlite_page_triggers() -> list[str]:
    def bump(name, key, condition, row, delta):
        where = condition.format(r=row) if condition else "1"
        return (
            "INSERT INTO goldset_dashboardcounter (name, key, shard, n) "
            f"SELECT '{name}', {key.format(r=row)}, 0, {delta} WHERE {where} "
            "ON CONFLICT (name, key, shard) DO UPDATE SET n = goldset_dashboardcounter.n + "
            "excluded.n;"
        )

    sql = []
    for table, counters in PAGES_COUNTED.items():
        for name, key, _, condition in counters:
            trigger = f"{table}_{name}"
            changed = f"({key.format(r='OLD')}) IS NOT ({key.format(r='NEW')})"
            if condition:
                changed += f" OR ({condition.format(r='OLD')}) IS NOT ({condition.format(r='NEW')})"
            sql += [
                f"CREATE TRIGGER {trigger}_insert AFTER INSERT ON {table} BEGIN "
                + bump(name, key, condition, "NEW", 1)
                + " END",
                f"CREATE TRIGGER {trigger}_delete AFTER DELETE ON {table} BEGIN "
                + bump(name, key, condition, "OLD", -1)
                + " END",
                f"CREATE TRIGGER {trigger}_update AFTER UPDATE ON {table} WHEN {changed} BEGIN "
                + bump(name, key, condition, "OLD", -1)
                + bump(name, key, condition, "NEW", 1)
                + " END",
            ]
    return sql


def _page_backfill() -> list[str]:
    statements = []
    for table, counters in PAGES_COUNTED.items():
        for name, key, _, condition in counters:
            where = f" WHERE {condition.format(r='t')}" if condition else ""
            statements.append(
                "INSERT INTO goldset_dashboardcounter (name, key, n) "
                f"SELECT '{name}', {key.format(r='t')}, COUNT(*) FROM {table} t{where} "
                f"GROUP BY {key.format(r='t')}"
            )
    return statements


def install_page_counters(apps, schema_editor):
    """0027: the list pages' counters, written like the dashboard's, then backfilled."""
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_STATEMENT_DROP)
        schema_editor.execute(_pg_statement_triggers(WITH_PAGES))
    elif vendor == "sqlite":
        for sql in _sqlite_page_triggers():
            schema_editor.execute(sql)
    else:
        raise RuntimeError(f"no list page counter triggers for {vendor}")
    for sql in _page_backfill():
        schema_editor.execute(sql)


def uninstall_page_counters(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_pg_statement_drop(WITH_PAGES))
        schema_editor.execute(PG_STATEMENT_TRIGGERS)
    else:
        for table, counters in PAGES_COUNTED.items():
            for name, *_ in counters:
                for event in ("insert", "delete", "update"):
                    schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_{name}_{event}")
    names = ", ".join(f"'{name}'" for c in PAGES_COUNTED.values() for name, *_ in c)
    schema_editor.execute(f"DELETE FROM goldset_dashboardcounter WHERE name IN ({names})")


# ---------------------------------------------------------------- statement-level time (0028)
# 0026's ``time_changes`` and ``fast`` triggers ran once per row, bumping the same person's
# counter row once per row of a statement: quadratic for a bulk write by one person, as 0023's
# counters were. On PostgreSQL they now run once per statement over the transition tables, with
# the same counts: ``time_changes`` +1 per timed row inserted or deleted and +1 for the old and
# the new person of a row whose active time or person changed; ``fast`` −1/+1 per flag.


def _time_bumps(kind: str, who: str, event: str) -> str:
    """The person key of every bump a statement makes (one row per bump)."""
    key = _time_key(kind, "r", who)
    if event == "INSERT":
        return f"SELECT {key} AS key FROM new_rows r WHERE r.active_ms IS NOT NULL"
    if event == "DELETE":
        return f"SELECT {key} AS key FROM old_rows r WHERE r.active_ms IS NOT NULL"
    changed = (
        "FROM old_rows o JOIN new_rows n ON n.id = o.id "
        f"WHERE (o.active_ms IS DISTINCT FROM n.active_ms OR o.{who} IS DISTINCT FROM n.{who})"
    )
    return (
        f"SELECT {_time_key(kind, 'o', who)} AS key {changed} AND o.active_ms IS NOT NULL "
        f"UNION ALL SELECT {_time_key(kind, 'n', who)} AS key {changed} "
        "AND n.active_ms IS NOT NULL"
    )


def _time_bump_apply(bumps: str) -> str:
    return (
        "INSERT INTO goldset_dashboardcounter (name, key, shard, n) "
        f"SELECT 'time_changes', key, {PG_XACT_SHARD}, count(*) FROM ({bumps}) AS bumps "
        "GROUP BY key ORDER BY key "
        "ON CONFLICT (name, key, shard) DO UPDATE SET n = goldset_dashboardcounter.n + excluded.n"
    )


_FAST = [("fast", "{r}.annotator_id || '|' || {r}.kind", "", "")]


def _time_statement_postgres() -> str:
    sql = []
    for table, kind, who in TIMED:
        function = f"goldset_time_changes_{kind}"
        sql.append(f"""
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {_time_bump_apply(_time_bumps(kind, who, "INSERT"))};
  ELSIF TG_OP = 'DELETE' THEN
    {_time_bump_apply(_time_bumps(kind, who, "DELETE"))};
  ELSE
    {_time_bump_apply(_time_bumps(kind, who, "UPDATE"))};
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
""")
        sql.append(_pg_statement_trigger_trio(function, table, function))
    both = _deltas(_FAST, "old_rows", -1) + " UNION ALL " + _deltas(_FAST, "new_rows", 1)
    sql.append(f"""
CREATE OR REPLACE FUNCTION goldset_fast_counter() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {_apply(_deltas(_FAST, "new_rows", 1), PG_XACT_SHARD)};
  ELSIF TG_OP = 'DELETE' THEN
    {_apply(_deltas(_FAST, "old_rows", -1), PG_XACT_SHARD)};
  ELSE
    {_apply(both, PG_XACT_SHARD)};
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
""")
    sql.append(
        _pg_statement_trigger_trio(
            "goldset_fast_counter", "goldset_fastdecision", "goldset_fast_counter"
        )
    )
    return "".join(sql)


def _time_statement_drop() -> str:
    lines = []
    for table, kind, _ in TIMED:
        function = f"goldset_time_changes_{kind}"
        lines += [f"DROP TRIGGER IF EXISTS {function}_{e} ON {table};" for e in _EVENTS]
    lines += [f"DROP TRIGGER IF EXISTS goldset_fast_counter_{e} ON goldset_fastdecision;"
              for e in _EVENTS]  # fmt: skip
    return "\n".join(lines)


_EVENTS = ("insert", "delete", "update")


def time_counters_per_statement(apps, schema_editor):
    """0028 on PostgreSQL: 0026's row triggers replaced by statement triggers (same counts)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_time_postgres_drop())
        schema_editor.execute(_time_statement_postgres())


def time_counters_per_row(apps, schema_editor):
    """Reverse of :func:`time_counters_per_statement`: 0026's row triggers."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_time_statement_drop())
        schema_editor.execute(_time_postgres())


# ---------------------------------------------------------------- per project (migration 0036)
# Every counter a project page reads is keyed by the project first: ``<project_id>|<key>``
# (``triple`` / ``<project>|state|tier|domain_id|source``, ``labels_day`` / ``<project>|day``, …),
# so a lead of project A reads A's rows only (``counter_rows(..., project=)``). The project comes
# from the counted row (triples, answer records, fast decisions) or from its parent (a label's or
# a skip's answer record, a review's triple). ``time_changes`` stays per person (its figures,
# ``TimeOnItemFigure``, are per person). Same rows, shards and writers as before: PostgreSQL's
# statement functions are replaced (the triggers stay), SQLite's row triggers are recreated.

_RECORD = "JOIN goldset_answerrecord a ON a.id = {r}.record_id"


def _project_counted(day) -> dict:
    """(name, key, joins, condition) per counted table, ``day`` turning a timestamp column into
    ``YYYY-MM-DD`` in the vendor's SQL."""
    review_day = day("{r}.submitted_at")
    author = "t.project_id || '|' || t.author_id || '|' || " + review_day
    return {
        "goldset_triple": [
            ("triple", "{r}.project_id || '|' || " + TRIPLE_KEY, "", ""),
            ("customer_triples", "{r}.project_id || '|' || {r}.customer_id || '|' || {r}.state",
             "", "{r}.customer_id IS NOT NULL"),
        ],
        "goldset_answerrecord": [
            ("record", "{r}.project_id || '|' || {r}.tier", "", "NOT {r}.is_calibration"),
            ("record_status", "{r}.project_id || '|' || {r}.status", "",
             "NOT {r}.is_calibration"),
            ("run_status", "{r}.project_id || '|' || {r}.run_id || '|' || {r}.status", "", ""),
        ],
        "goldset_label": [
            ("labels_day", "a.project_id || '|' || " + day("{r}.created_at"), _RECORD, ""),
        ],
        "goldset_review": [
            ("reviews_day", "t.project_id || '|' || " + review_day, _REVIEW_AUTHOR, ""),
            ("author_reviews", author, _REVIEW_AUTHOR, "t.author_id IS NOT NULL"),
            ("author_flags", author, _REVIEW_AUTHOR,
             "t.author_id IS NOT NULL AND {r}.verdict = 'flag'"),
        ],
        "goldset_itemskip": [("skips", "a.project_id || '|' || {r}.annotator_id", _RECORD, "")],
    }  # fmt: skip


_PROJECT_FAST = [("fast", "{r}.project_id || '|' || {r}.annotator_id || '|' || {r}.kind", "", "")]
PROJECT_COUNTER_NAMES = (
    "triple", "customer_triples", "record", "record_status", "run_status", "labels_day",
    "reviews_day", "author_reviews", "author_flags", "skips", "fast",
)  # fmt: skip


def _pg_day(column: str) -> str:
    return f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')"


def _sqlite_day(column: str) -> str:
    return f"substr({column}, 1, 10)"


def _pg_fast_function(counters) -> str:
    both = _deltas(counters, "old_rows", -1) + " UNION ALL " + _deltas(counters, "new_rows", 1)
    return f"""
CREATE OR REPLACE FUNCTION goldset_fast_counter() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {_apply(_deltas(counters, "new_rows", 1), PG_XACT_SHARD)};
  ELSIF TG_OP = 'DELETE' THEN
    {_apply(_deltas(counters, "old_rows", -1), PG_XACT_SHARD)};
  ELSE
    {_apply(both, PG_XACT_SHARD)};
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
"""


# Columns whose change moves a row from one key to another (SQLite's update triggers fire on
# these only; PostgreSQL's statement triggers net out unchanged keys).
_WATCHED = {
    "goldset_triple": ("project_id", "state", "tier", "domain_id", "source", "customer_id"),
    "goldset_answerrecord": ("project_id", "tier", "is_calibration", "status", "run_id"),
    "goldset_label": ("record_id", "created_at"),
    "goldset_review": ("revision_id", "submitted_at", "verdict"),
    "goldset_itemskip": ("record_id", "annotator_id"),
    "goldset_fastdecision": ("project_id", "annotator_id", "kind"),
}


def _sqlite_project_counted() -> dict:
    return _project_counted(_sqlite_day) | {"goldset_fastdecision": _PROJECT_FAST}


def _sqlite_project_bump(counter, row: str, delta: int) -> str:
    name, key, joins, condition = counter
    where = f"({key.format(r=row)}) IS NOT NULL"
    if condition:
        where += f" AND {condition.format(r=row)}"
    source = f" FROM (SELECT 1) AS one {joins.format(r=row)}" if joins else ""
    return (
        "INSERT INTO goldset_dashboardcounter (name, key, shard, n) "
        f"SELECT '{name}', {key.format(r=row)}, 0, {delta}{source} WHERE {where} "
        "ON CONFLICT (name, key, shard) DO UPDATE SET n = goldset_dashboardcounter.n + excluded.n;"
    )


def _sqlite_project_triggers() -> list[str]:
    sql = []
    for table, counters in _sqlite_project_counted().items():
        changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in _WATCHED[table])
        inserts = "".join(_sqlite_project_bump(c, "NEW", 1) for c in counters)
        deletes = "".join(_sqlite_project_bump(c, "OLD", -1) for c in counters)
        sql += [
            f"CREATE TRIGGER {table}_project_counts_insert AFTER INSERT ON {table} "
            f"BEGIN {inserts} END",
            f"CREATE TRIGGER {table}_project_counts_delete AFTER DELETE ON {table} "
            f"BEGIN {deletes} END",
            f"CREATE TRIGGER {table}_project_counts_update AFTER UPDATE ON {table} "
            f"WHEN {changed} BEGIN {deletes}{inserts} END",
        ]
    return sql


SQLITE_PROJECT_DROP = [
    f"DROP TRIGGER IF EXISTS {table}_project_counts_{event}"
    for table in _WATCHED
    for event in _EVENTS
]


def _sqlite_unprojected_drop() -> list[str]:
    """The SQLite counter triggers before 0036 (0025's, 0027's list pages', 0026's fast)."""
    pages = [
        f"DROP TRIGGER IF EXISTS {table}_{name}_{event}"
        for table, counters in PAGES_COUNTED.items()
        for name, *_ in counters
        for event in _EVENTS
    ]
    fast = [f"DROP TRIGGER IF EXISTS goldset_fast_counter_{event}" for event in _EVENTS]
    return SQLITE_DROP + pages + fast


def _sqlite_unprojected_fast() -> list[str]:
    return [s for s in _time_sqlite() if "goldset_fast_counter_" in s]


def _project_backfill(counted: dict) -> list[str]:
    names = ", ".join(f"'{n}'" for n in PROJECT_COUNTER_NAMES)
    statements = [f"DELETE FROM goldset_dashboardcounter WHERE name IN ({names})"]
    for table, counters in counted.items():
        for name, key, joins, condition in counters:
            where = f" WHERE ({key.format(r='r')}) IS NOT NULL"
            where += f" AND {condition.format(r='r')}" if condition else ""
            statements.append(
                "INSERT INTO goldset_dashboardcounter (name, key, shard, n) "
                f"SELECT '{name}', {key.format(r='r')}, 0, COUNT(*) FROM {table} r "
                f"{joins.format(r='r')}{where} GROUP BY {key.format(r='r')}"
            )
    return statements


def key_counters_by_project(apps, schema_editor):
    """0036: every project page's counter keyed ``<project_id>|…``, recounted."""
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        counted = _project_counted(_pg_day)
        schema_editor.execute(_pg_statement_functions(PG_XACT_SHARD, counted))
        schema_editor.execute(_pg_fast_function(_PROJECT_FAST))
    elif vendor == "sqlite":
        counted = _project_counted(_sqlite_day)
        for sql in _sqlite_unprojected_drop():
            schema_editor.execute(sql)
        for sql in _sqlite_project_triggers():
            schema_editor.execute(sql)
    else:
        raise RuntimeError(f"no dashboard counter triggers for {vendor}")
    for sql in _project_backfill(counted | {"goldset_fastdecision": _PROJECT_FAST}):
        schema_editor.execute(sql)


def unkey_counters_by_project(apps, schema_editor):
    """Reverse of :func:`key_counters_by_project`: 0028's writers and keys, recounted."""
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_pg_statement_functions(PG_XACT_SHARD, WITH_PAGES))
        schema_editor.execute(_pg_fast_function(_FAST))
        day = _pg_day
    else:
        for sql in SQLITE_PROJECT_DROP:
            schema_editor.execute(sql)
        for sql in [*_sqlite_triggers(sharded=True), *_sqlite_page_triggers()]:
            schema_editor.execute(sql)
        for sql in _sqlite_unprojected_fast():
            schema_editor.execute(sql)
        day = _sqlite_day
    unprojected = {
        table: [(n, k.replace("to_char({r}.submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
                              day("{r}.submitted_at")), j, c) for n, k, j, c in counters]
        for table, counters in WITH_PAGES.items()
    }  # fmt: skip
    unprojected["goldset_label"] = [("labels_day", day("{r}.created_at"), "", "")]
    for sql in _project_backfill(unprojected | {"goldset_fastdecision": _FAST}):
        schema_editor.execute(sql)


# ---------------------------------------------------------------- time on item per project (0038)
# ``time_changes`` keyed ``<project_id>|kind|user_id``: a person's stored figures are per project
# (``TimeOnItemFigure.project``), so a lead of project A reads times of A's decisions only. The
# project comes from the decision's parent (a label's or an adjudication's answer record, a
# review's triple). Same bumps as 0026/0028 otherwise: PostgreSQL's statement functions are
# replaced (the triggers stay), SQLite's row triggers are recreated.

_TIME_PARENT = {
    "label": (_RECORD, "a.project_id"),
    "review": (_REVIEW_AUTHOR, "t.project_id"),
    "adjudication": (_RECORD, "a.project_id"),
    "pair_judgment": ("JOIN goldset_pairwisepair pp ON pp.id = {r}.pair_id", "pp.project_id"),
}


def _project_time_key(kind: str, who: str, row: str) -> tuple[str, str]:
    """(key SQL, joins SQL) of a decision row ``row`` of ``kind``."""
    joins, project = _TIME_PARENT[kind]
    return f"{project} || '|{kind}|' || {row}.{who}", joins.format(r=row)


def _project_time_bumps(kind: str, who: str, event: str) -> str:
    """0028's bumps (:func:`_time_bumps`), keyed by the decision's project."""
    if event in ("INSERT", "DELETE"):
        rows = "new_rows" if event == "INSERT" else "old_rows"
        key, joins = _project_time_key(kind, who, "r")
        return f"SELECT {key} AS key FROM {rows} r {joins} WHERE r.active_ms IS NOT NULL"
    changed = f"(o.active_ms IS DISTINCT FROM n.active_ms OR o.{who} IS DISTINCT FROM n.{who})"
    selects = []
    for row in ("o", "n"):
        key, joins = _project_time_key(kind, who, row)
        selects.append(
            f"SELECT {key} AS key FROM old_rows o JOIN new_rows n ON n.id = o.id {joins} "
            f"WHERE {changed} AND {row}.active_ms IS NOT NULL"
        )
    return " UNION ALL ".join(selects)


def _pg_time_functions(bumps, timed=TIMED) -> str:
    """The ``goldset_time_changes_<kind>`` statement functions of ``timed`` (the three of
    :data:`TIMED` by default), ``bumps(kind, who, event)`` giving each event's person keys."""
    sql = []
    for _, kind, who in timed:
        sql.append(f"""
CREATE OR REPLACE FUNCTION goldset_time_changes_{kind}() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {_time_bump_apply(bumps(kind, who, "INSERT"))};
  ELSIF TG_OP = 'DELETE' THEN
    {_time_bump_apply(bumps(kind, who, "DELETE"))};
  ELSE
    {_time_bump_apply(bumps(kind, who, "UPDATE"))};
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
""")
    return "".join(sql)


def _sqlite_project_time_bump(kind: str, who: str, row: str) -> str:
    key, joins = _project_time_key(kind, who, row)
    return (
        "INSERT INTO goldset_dashboardcounter (name, key, shard, n) "
        f"SELECT 'time_changes', {key}, 0, 1 FROM (SELECT 1) AS one {joins} "
        f"WHERE {row}.active_ms IS NOT NULL AND ({key}) IS NOT NULL "
        "ON CONFLICT (name, key, shard) DO UPDATE SET n = goldset_dashboardcounter.n + excluded.n;"
    )


def _sqlite_project_time_triggers(timed=TIMED) -> list[str]:
    sql = []
    for table, kind, who in timed:
        name = f"goldset_time_changes_{kind}"
        old, new = (_sqlite_project_time_bump(kind, who, row) for row in ("OLD", "NEW"))
        sql += [
            f"CREATE TRIGGER {name}_insert AFTER INSERT ON {table} BEGIN {new} END",
            f"CREATE TRIGGER {name}_delete AFTER DELETE ON {table} BEGIN {old} END",
            f"CREATE TRIGGER {name}_update AFTER UPDATE ON {table} "
            f"WHEN OLD.active_ms IS NOT NEW.active_ms OR OLD.{who} IS NOT NEW.{who} "
            f"BEGIN {old}{new} END",
        ]
    return sql


_SQLITE_TIME_DROP = [
    f"DROP TRIGGER IF EXISTS goldset_time_changes_{kind}_{event}"
    for _, kind, _ in TIMED
    for event in _EVENTS
]


def _project_time_backfill() -> list[str]:
    statements = ["DELETE FROM goldset_dashboardcounter WHERE name = 'time_changes'"]
    for table, kind, who in TIMED:
        key, joins = _project_time_key(kind, who, "r")
        statements.append(
            "INSERT INTO goldset_dashboardcounter (name, key, shard, n) "
            f"SELECT 'time_changes', {key}, 0, COUNT(*) FROM {table} r {joins} "
            f"WHERE r.active_ms IS NOT NULL GROUP BY {key}"
        )
    return statements


def key_time_changes_by_project(apps, schema_editor):
    """0038: ``time_changes`` keyed ``<project_id>|kind|user_id``, recounted."""
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_pg_time_functions(_project_time_bumps))
    elif vendor == "sqlite":
        for sql in _SQLITE_TIME_DROP + _sqlite_project_time_triggers():
            schema_editor.execute(sql)
    else:
        raise RuntimeError(f"no time-on-item counter triggers for {vendor}")
    for sql in _project_time_backfill():
        schema_editor.execute(sql)


def unkey_time_changes_by_project(apps, schema_editor):
    """Reverse of :func:`key_time_changes_by_project`: 0028's keys (``kind|user_id``)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_pg_time_functions(_time_bumps))
    else:
        for sql in _SQLITE_TIME_DROP:
            schema_editor.execute(sql)
        for sql in _time_sqlite():
            if "goldset_time_changes_" in sql:
                schema_editor.execute(sql)
    schema_editor.execute("DELETE FROM goldset_dashboardcounter WHERE name = 'time_changes'")
    for sql in _time_backfill()[: len(TIMED)]:
        schema_editor.execute(sql)


# ---------------------------------------------------------------- pairwise judgments (0052)
# A pairwise judgment (issue 30) is a timed decision like a label: ``time_changes`` keyed
# ``<project_id>|pair_judgment|reviewer_id`` (the project is the judged pair's), bumped by the
# same statement functions (PostgreSQL) and row triggers (SQLite) as the three kinds above, so
# a reviewer's stored pairwise figures go stale when one of their timed judgments comes, goes or
# changes. A separate list from ``TIMED``: earlier migrations, which run before the table
# exists, keep installing exactly what they did.

PAIR_TIMED = (("goldset_pairjudgment", "pair_judgment", "reviewer_id"),)


def install_pair_time_changes(apps, schema_editor):
    """0052: the ``time_changes`` triggers on pairwise judgments, and the existing timed
    judgments counted."""
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_pg_time_functions(_project_time_bumps, PAIR_TIMED))
        for table, kind, _ in PAIR_TIMED:
            function = f"goldset_time_changes_{kind}"
            schema_editor.execute(_pg_statement_trigger_trio(function, table, function))
    elif vendor == "sqlite":
        for sql in _sqlite_project_time_triggers(PAIR_TIMED):
            schema_editor.execute(sql)
    else:
        raise RuntimeError(f"no time-on-item counter triggers for {vendor}")
    for table, kind, who in PAIR_TIMED:
        key, joins = _project_time_key(kind, who, "r")
        schema_editor.execute(
            "INSERT INTO goldset_dashboardcounter (name, key, shard, n) "
            f"SELECT 'time_changes', {key}, 0, COUNT(*) FROM {table} r {joins} "
            f"WHERE r.active_ms IS NOT NULL GROUP BY {key}"
        )


def drop_pair_time_changes(apps, schema_editor):
    """Reverse of :func:`install_pair_time_changes` (its counters and stored figures go too)."""
    postgres = schema_editor.connection.vendor == "postgresql"
    for table, kind, _ in PAIR_TIMED:
        function = f"goldset_time_changes_{kind}"
        for event in _EVENTS:
            on = f" ON {table}" if postgres else ""
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {function}_{event}{on}")
        if postgres:
            schema_editor.execute(f"DROP FUNCTION IF EXISTS {function}()")
        counters = apps.get_model("goldset", "DashboardCounter").objects
        counters.filter(name="time_changes", key__contains=f"|{kind}|").delete()
        apps.get_model("goldset", "TimeOnItemFigure").objects.filter(kind=kind).delete()
