"""Freezing gold versions with the low-level atomic service: determinism, diff, manifest,
immutability at the database, checksums on read."""

import json

import pytest
from django.db import connection, transaction
from django.db.utils import DatabaseError

from goldset.exceptions import GoldsetError
from goldset.models import ExportFormat, GoldVersion, GoldVersionFileChunk, GoldVersionRow
from goldset.services import exports
from goldset.services.freeze import store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus

pytestmark = pytest.mark.django_db


def rows_for(versions, *, prefix="T"):
    return [gold_row_for(bv, triple_id=f"{prefix}-{i:04d}") for i, bv in enumerate(versions)]


def file_bytes(version, fmt, redacted=False):
    stored = version.files.get(format=fmt, redacted=redacted)
    return exports.read_verified_bytes(stored), stored.sha256


def test_freezing_the_same_rows_again_gives_identical_files_and_checksums(admin_user):
    versions = make_gold_corpus(7)
    v1 = store_frozen_version(
        project=default_project(),
        rows=rows_for(versions),
        actor=admin_user,
        filters={"domain": None},
    )
    store_frozen_version(project=default_project(), rows=rows_for(versions[:3]), actor=admin_user)
    v2 = store_frozen_version(
        project=default_project(),
        rows=rows_for(versions),
        actor=admin_user,
        filters={"domain": None},
    )
    assert (v1.number, v2.number) == (1, 3)
    assert v1.rows_sha256 == v2.rows_sha256
    for fmt, redacted in [
        (ExportFormat.GOLD_JSONL, False),
        (ExportFormat.UNRAG_JSON, False),
        (ExportFormat.UNRAG_JSON, True),
        (ExportFormat.PROBE_QUESTIONS, False),
        (ExportFormat.PROBE_PACKETS, False),
        (ExportFormat.PROBE_PACKETS, True),
    ]:
        assert file_bytes(v1, fmt, redacted) == file_bytes(v2, fmt, redacted)
    assert v2.manifest["diff"]["added"] == [f"T-{i:04d}" for i in range(3, 7)]


def test_a_freeze_identical_to_the_last_version_says_so_and_creates_nothing(admin_user):
    from goldset.services.freeze import NothingToFreeze
    from workbench.models import AuditEvent

    versions = make_gold_corpus(4)
    v1 = store_frozen_version(project=default_project(), rows=rows_for(versions), actor=admin_user)
    events = AuditEvent.objects.count()
    with pytest.raises(NothingToFreeze, match="identical to v1 \\(4 triples, same checksums\\)"):
        store_frozen_version(
            project=default_project(),
            rows=rows_for(versions),
            actor=admin_user,
            note="double click",
        )
    assert list(GoldVersion.objects.values_list("number", flat=True)) == [v1.number]
    assert GoldVersionRow.objects.count() == 4 and AuditEvent.objects.count() == events


def test_after_a_change_the_diff_lists_exactly_the_changed_ids(admin_user):
    versions = make_gold_corpus(6)
    rows = rows_for(versions)
    store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    rows[1]["expected_answer"] = "A corrected answer."
    rows[3]["question"] = "A reworded question?"
    del rows[5]
    rows.append(gold_row_for(versions[5], triple_id="T-new"))
    v2 = store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    assert v2.manifest["diff"] == {
        "against": 1,
        "added": ["T-new"],
        "removed": ["T-0005"],
        "changed": ["T-0001", "T-0003"],
    }


def test_gold_jsonl_is_canonical_and_the_manifest_records_counts_files_and_redaction(admin_user):
    versions = make_gold_corpus(4)
    rows = rows_for(versions)
    rows[0]["metadata"]["source"] = "customer_permissioned"
    version = store_frozen_version(
        project=default_project(),
        rows=rows,
        actor=admin_user,
        filters={"public_only": False},
        seeds={"bootstrap": 8821},
    )
    data, sha = file_bytes(version, ExportFormat.GOLD_JSONL)
    lines = data.decode().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [r["id"] for r in rows]
    assert lines[0] == json.dumps(
        rows[0], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    manifest = version.manifest
    assert manifest["counts"]["triples"] == 4
    assert manifest["counts"]["by_domain"] == {"federal_it": 1, "supply_chain": 3}
    assert manifest["counts"]["by_source"] == {"customer_permissioned": 1, "public_rfp": 3}
    assert (
        manifest["seeds"] == {"bootstrap": 8821} and manifest["created_by"] == admin_user.username
    )
    listed = {(f["format"], f["redacted"]): f["sha256"] for f in manifest["files"]}
    assert listed[("gold_jsonl", False)] == sha == version.rows_sha256
    assert ("unrag_json", True) in listed and ("probe_packets", True) in listed
    assert manifest["redaction"]["permission"] == "goldset.view_snippets"
    stored_manifest, _ = file_bytes(version, ExportFormat.MANIFEST)
    assert json.loads(stored_manifest) == manifest


def test_a_duplicate_triple_or_missing_block_rejects_the_whole_freeze(admin_user):
    versions = make_gold_corpus(3)
    rows = rows_for(versions)
    rows.append(dict(rows[0]))
    with pytest.raises(GoldsetError, match="appears twice"):
        store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    bad = rows_for(versions)
    bad[2]["expected_block"]["version"] = 9
    with pytest.raises(GoldsetError, match="not in the corpus"):
        store_frozen_version(project=default_project(), rows=bad, actor=admin_user)
    assert not GoldVersion.objects.exists() and not GoldVersionRow.objects.exists()


def test_unrag_export_redacts_snippets_for_the_redacted_variant(admin_user):
    versions = make_gold_corpus(2)
    version = store_frozen_version(
        project=default_project(), rows=rows_for(versions), actor=admin_user
    )
    full = json.loads(file_bytes(version, ExportFormat.UNRAG_JSON)[0])
    redacted = json.loads(file_bytes(version, ExportFormat.UNRAG_JSON, True)[0])
    assert full["documents"][0]["content"] == versions[0].text
    assert "content" not in redacted["documents"][0]
    assert redacted["documents"][0]["loaderRef"].startswith("goldset:block-version:")
    packets = [
        json.loads(x) for x in file_bytes(version, ExportFormat.PROBE_PACKETS, True)[0].splitlines()
    ]
    assert all(p["gold_evidence"][0]["text"] is None for p in packets)


def test_tampering_with_a_stored_chunk_is_detected_before_any_byte_is_served(admin_user):
    version = store_frozen_version(
        project=default_project(), rows=rows_for(make_gold_corpus(3)), actor=admin_user
    )
    stored = version.files.get(format=ExportFormat.GOLD_JSONL)
    chunk = stored.chunks.get(index=0)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # A superuser bypassing the triggers, as a tamperer with database access would.
            cursor.execute("SET LOCAL session_replication_role = replica")
            cursor.execute(
                "UPDATE goldset_goldversionfilechunk SET data = %s WHERE id = %s",
                [b"tampered\n", chunk.pk],
            )
            cursor.execute("SET LOCAL session_replication_role = origin")
    else:
        GoldVersionFileChunk.objects.filter(pk=chunk.pk).update(data=b"tampered\n")
    with pytest.raises(exports.ChecksumMismatch, match="integrity check"):
        exports.verified_chunks(stored)


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE goldset_goldversionrow SET line = '{}' WHERE version_id = %s",
        "DELETE FROM goldset_goldversionrow WHERE version_id = %s",
        "UPDATE goldset_goldversionfile SET sha256 = 'x' WHERE version_id = %s",
        "DELETE FROM goldset_goldversionfilechunk WHERE file_id IN (SELECT id FROM goldset_goldversionfile WHERE version_id = %s)",
        "UPDATE goldset_goldversion SET note = 'edited' WHERE id = %s",
        "DELETE FROM goldset_goldversion WHERE id = %s",
        "INSERT INTO goldset_goldversionrow (version_id, position, triple_id, line, sha256, domain, tier, source, task_type, block_id) VALUES (%s, 999, 'sneaked', '{}', 'x', '', '', '', '', '')",
    ],
)
def test_sql_writes_to_a_frozen_version_fail_on_postgresql(postgres, admin_user, sql):
    version = store_frozen_version(
        project=default_project(), rows=rows_for(make_gold_corpus(2)), actor=admin_user
    )
    with pytest.raises(DatabaseError, match="not allowed"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql, [version.pk])
    assert GoldVersionRow.objects.filter(version=version).count() == 2


@pytest.mark.parametrize(
    "table",
    [
        "workbench_auditevent",
        "goldset_goldversion",
        "goldset_goldversionrow",
        "goldset_goldversionfile",
        "goldset_goldversionfilechunk",
    ],
)
def test_truncate_is_refused_on_every_protected_table(postgres, admin_user, table):
    from workbench.models import AuditEvent

    store_frozen_version(
        project=default_project(), rows=rows_for(make_gold_corpus(2)), actor=admin_user
    )
    rows_before = GoldVersionRow.objects.count()
    events_before = AuditEvent.objects.count()
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred FK checks pending
        cursor.execute("SET LOCAL goldset.allow_truncate = 'off'")  # as any real session
        with pytest.raises(DatabaseError, match="TRUNCATE on public.* is not allowed"):
            with transaction.atomic():
                cursor.execute(f"TRUNCATE {table} CASCADE")
        cursor.execute("SET LOCAL goldset.allow_truncate = 'on'")
    assert GoldVersionRow.objects.count() == rows_before == 2
    assert AuditEvent.objects.count() == events_before > 0
