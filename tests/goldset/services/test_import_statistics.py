"""Issue 24: an import refreshes the planner statistics of the tables it filled
(``refresh_statistics``), so the next import's look-ups by id probe the indexes instead of
scanning tables whose size the planner still takes for the old one."""

import json

import pytest
from django.core.files.base import ContentFile
from django.db import connection, transaction

from goldset.models import BlockVersion, ImportStatus, OutboxMessage
from goldset.rules.jobs import import_dedupe_key
from goldset.services.import_jobs import run_import_job, submit_import
from tests.factories import DomainFactory, default_project

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
DOCUMENTS = 120


def manifest(n: int, *, bad_line: int | None = None) -> bytes:
    lines = [
        json.dumps(
            {
                "document_id": f"stat-{i}",
                "title": f"Document {i}",
                "domain": "federal_it",
                "authority": 0.5,
                "blocks": [{"block_id": f"stat-blk-{i}", "versions": [{"text": f"text {i}"}]}],
            }
        )
        for i in range(n)
    ]
    if bad_line is not None:
        lines[bad_line - 1] = '{"document_id": '
    return ("\n".join(lines) + "\n").encode()


def analyzed(table: str) -> tuple[int, float]:
    """(manual ANALYZE runs, the planner's row count) of ``table``."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT s.analyze_count, c.reltuples FROM pg_stat_user_tables s "
            "JOIN pg_class c ON c.oid = s.relid WHERE s.relname = %s",
            [table],
        )
        return cursor.fetchone()


def queued_corpus(content: bytes, admin_user):
    with transaction.atomic():
        job = submit_import(
            project=default_project(),
            kind="corpus",
            upload=ContentFile(content, name="c.jsonl"),
            actor=admin_user,
        ).job
        OutboxMessage.objects.filter(dedupe_key=import_dedupe_key(job.pk)).delete()
    return job


def test_an_imported_corpus_leaves_its_tables_analyzed(postgres, admin_user):
    DomainFactory(slug="federal_it")
    runs_before, _ = analyzed("goldset_blockversion")
    job = queued_corpus(manifest(DOCUMENTS), admin_user)
    ended = run_import_job(job_id=job.pk)
    assert ended.status == ImportStatus.SUCCEEDED, ended.message
    runs_after, rows = analyzed("goldset_blockversion")
    assert runs_after == runs_before + 1  # our ANALYZE, not autovacuum's (autoanalyze_count)
    assert rows == BlockVersion.objects.count() == DOCUMENTS  # the planner knows the new size
    for table in ("goldset_document", "goldset_block"):
        assert analyzed(table)[1] == DOCUMENTS


def test_a_rejected_file_analyzes_nothing(postgres, admin_user):
    DomainFactory(slug="federal_it")
    runs_before, _ = analyzed("goldset_blockversion")
    job = queued_corpus(manifest(DOCUMENTS, bad_line=7), admin_user)
    ended = run_import_job(job_id=job.pk)
    assert ended.status == ImportStatus.REJECTED
    assert analyzed("goldset_blockversion")[0] == runs_before
