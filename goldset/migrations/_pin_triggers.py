"""The SQL behind ``Triple.pin_superseded`` (migration 0026): triggers that keep, for every
triple, whether its current revision pins a block version older than its block's newest, for
PostgreSQL and SQLite, and the backfill of existing rows.

A pin is superseded when a version of the same block with a higher number exists. The flag
changes only when a triple's current revision changes (or a save writes the column), when a
revision's pinned version changes, and when a block version is inserted, deleted or renumbered;
each of these recomputes it from the tables, so a stale in-memory value a service saves back is
corrected in the same statement."""

# The pin of revision {rev} is superseded (false when {rev} is NULL or pins nothing newer).
SUPERSEDED = (
    "COALESCE((SELECT EXISTS (SELECT 1 FROM goldset_blockversion newer "
    "WHERE newer.block_id = pinned.block_id AND newer.version > pinned.version) "
    "FROM goldset_triplerevision rev JOIN goldset_blockversion pinned "
    "ON pinned.id = rev.expected_block_version_id WHERE rev.id = {rev}), {false})"
)

# Triples whose current revision pins a version of block {block}.
PINNED_TO_BLOCK = (
    "current_revision_id IN (SELECT rev.id FROM goldset_triplerevision rev "
    "JOIN goldset_blockversion pinned ON pinned.id = rev.expected_block_version_id "
    "WHERE pinned.block_id = {block})"
)

POSTGRES = f"""
CREATE OR REPLACE FUNCTION goldset_pin_superseded(p_revision bigint) RETURNS boolean AS $$
  SELECT {SUPERSEDED.format(rev="p_revision", false="false")}
$$ LANGUAGE sql STABLE;

-- A triple pinning a block holds a share lock on the block row until it commits; a new
-- version of the block waits for those before its second pass (see goldset_blockversion_pins),
-- and a pin written after the new version's pass waits for it and then sees the new version.
CREATE OR REPLACE FUNCTION goldset_triple_pin() RETURNS trigger AS $$
BEGIN
  IF NEW.current_revision_id IS NOT NULL THEN
    PERFORM 1 FROM goldset_block b WHERE b.id = (SELECT pinned.block_id
      FROM goldset_triplerevision rev JOIN goldset_blockversion pinned
      ON pinned.id = rev.expected_block_version_id WHERE rev.id = NEW.current_revision_id)
      FOR SHARE;
  END IF;
  NEW.pin_superseded := goldset_pin_superseded(NEW.current_revision_id);
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER goldset_triple_pin BEFORE INSERT OR UPDATE OF current_revision_id, pin_superseded
  ON goldset_triple FOR EACH ROW EXECUTE FUNCTION goldset_triple_pin();

CREATE OR REPLACE FUNCTION goldset_revision_pin() RETURNS trigger AS $$
BEGIN
  UPDATE goldset_triple SET pin_superseded = pin_superseded WHERE current_revision_id = NEW.id;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER goldset_revision_pin AFTER UPDATE OF expected_block_version_id
  ON goldset_triplerevision FOR EACH ROW
  WHEN (OLD.expected_block_version_id IS DISTINCT FROM NEW.expected_block_version_id)
  EXECUTE FUNCTION goldset_revision_pin();

-- Setting the column to itself is enough: the triple's own trigger recomputes it. A new
-- version marks the pins it can see, then waits for the transactions still pinning the block
-- (their share locks) and marks again: a pin committed concurrently is never missed, and the
-- triples locked by the first pass are never waited for while holding the block.
CREATE OR REPLACE FUNCTION goldset_blockversion_pins() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE goldset_triple SET pin_superseded = true
      WHERE NOT pin_superseded AND {PINNED_TO_BLOCK.format(block="NEW.block_id")};
    PERFORM 1 FROM goldset_block WHERE id = NEW.block_id FOR NO KEY UPDATE;
    UPDATE goldset_triple SET pin_superseded = true
      WHERE NOT pin_superseded AND {PINNED_TO_BLOCK.format(block="NEW.block_id")};
  ELSE
    UPDATE goldset_triple SET pin_superseded = pin_superseded
      WHERE {PINNED_TO_BLOCK.format(block="OLD.block_id")};
    IF TG_OP = 'UPDATE' AND NEW.block_id IS DISTINCT FROM OLD.block_id THEN
      UPDATE goldset_triple SET pin_superseded = pin_superseded
        WHERE {PINNED_TO_BLOCK.format(block="NEW.block_id")};
    END IF;
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER goldset_blockversion_pins_write AFTER INSERT OR DELETE ON goldset_blockversion
  FOR EACH ROW EXECUTE FUNCTION goldset_blockversion_pins();
CREATE TRIGGER goldset_blockversion_pins_update AFTER UPDATE OF block_id, version
  ON goldset_blockversion FOR EACH ROW
  WHEN (OLD.block_id IS DISTINCT FROM NEW.block_id OR OLD.version IS DISTINCT FROM NEW.version)
  EXECUTE FUNCTION goldset_blockversion_pins();
"""

POSTGRES_DROP = """
DROP TRIGGER IF EXISTS goldset_blockversion_pins_update ON goldset_blockversion;
DROP TRIGGER IF EXISTS goldset_blockversion_pins_write ON goldset_blockversion;
DROP TRIGGER IF EXISTS goldset_revision_pin ON goldset_triplerevision;
DROP TRIGGER IF EXISTS goldset_triple_pin ON goldset_triple;
DROP FUNCTION IF EXISTS goldset_blockversion_pins();
DROP FUNCTION IF EXISTS goldset_revision_pin();
DROP FUNCTION IF EXISTS goldset_triple_pin();
DROP FUNCTION IF EXISTS goldset_pin_superseded(bigint);
"""


def _sqlite_recompute(where: str) -> str:
    computed = SUPERSEDED.format(rev="goldset_triple.current_revision_id", false="0")
    return (
        f"UPDATE goldset_triple SET pin_superseded = {computed} "
        f"WHERE {where} AND pin_superseded IS NOT {computed};"
    )


# SQLite triggers cannot change NEW: they write the computed value after the row is stored.
# Recursive triggers are off (SQLite's default), and the IS NOT guard stops any second pass.
SQLITE = [
    "CREATE TRIGGER goldset_triple_pin_insert AFTER INSERT ON goldset_triple BEGIN "
    + _sqlite_recompute("id = NEW.id")
    + " END",
    "CREATE TRIGGER goldset_triple_pin_update AFTER UPDATE OF current_revision_id, pin_superseded "
    "ON goldset_triple BEGIN " + _sqlite_recompute("id = NEW.id") + " END",
    "CREATE TRIGGER goldset_revision_pin AFTER UPDATE OF expected_block_version_id "
    "ON goldset_triplerevision BEGIN " + _sqlite_recompute("current_revision_id = NEW.id") + " END",
    "CREATE TRIGGER goldset_blockversion_pins_insert AFTER INSERT ON goldset_blockversion BEGIN "
    + _sqlite_recompute(PINNED_TO_BLOCK.format(block="NEW.block_id"))
    + " END",
    "CREATE TRIGGER goldset_blockversion_pins_delete AFTER DELETE ON goldset_blockversion BEGIN "
    + _sqlite_recompute(PINNED_TO_BLOCK.format(block="OLD.block_id"))
    + " END",
    "CREATE TRIGGER goldset_blockversion_pins_update AFTER UPDATE OF block_id, version "
    "ON goldset_blockversion BEGIN "
    + _sqlite_recompute(PINNED_TO_BLOCK.format(block="OLD.block_id"))
    + _sqlite_recompute(PINNED_TO_BLOCK.format(block="NEW.block_id"))
    + " END",
]

SQLITE_DROP = [
    f"DROP TRIGGER IF EXISTS {name}"
    for name in (
        "goldset_triple_pin_insert",
        "goldset_triple_pin_update",
        "goldset_revision_pin",
        "goldset_blockversion_pins_insert",
        "goldset_blockversion_pins_delete",
        "goldset_blockversion_pins_update",
    )
]


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES)
        schema_editor.execute(
            "UPDATE goldset_triple SET pin_superseded = true "
            "WHERE goldset_pin_superseded(current_revision_id)"
        )
    elif vendor == "sqlite":
        for sql in SQLITE:
            schema_editor.execute(sql)
        schema_editor.execute(_sqlite_recompute("1 = 1"))
    else:
        raise RuntimeError(f"no pin triggers for {vendor}")


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_DROP)
    else:
        for sql in SQLITE_DROP:
            schema_editor.execute(sql)
