"""The import job's progress bar follows the file through both stages, by bytes read: the
validate stage fills 0-50 % and the store stage 50-100 %, and another connection (the job
page's) sees the store stage move although it runs inside one transaction. Before, the store
stage's updates were skipped (they would have stayed invisible until commit), so the page
said "validating 50 %" until the import ended."""

import json

import psycopg
import pytest
from django.core.files.base import ContentFile
from django.db import connection, transaction

from goldset.models import Document, ImportJob, ImportStatus, OutboxMessage
from goldset.rules.jobs import import_dedupe_key
from goldset.services.corpus import CorpusImporter
from goldset.services.import_jobs import run_import_job, submit_import
from tests.factories import DomainFactory, default_project
from tests.waiting import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
DOCUMENTS = 6000  # six batches of 1,000


def manifest(n: int) -> bytes:
    return "".join(
        json.dumps(
            {
                "document_id": f"prog-{i}",
                "title": f"Document {i}",
                "domain": "federal_it",
                "authority": 0.5,
                "blocks": [{"block_id": f"prog-blk-{i}", "versions": [{"text": f"text {i}"}]}],
            }
        )
        + "\n"
        for i in range(n)
    ).encode()


def page_view(job_id: int):
    """What the job page reads: the job row through a connection of its own."""
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        dbname=db["NAME"],
        autocommit=True,
    ) as other:
        return other.execute(
            "SELECT stage, progress FROM goldset_importjob WHERE id = %s", [job_id]
        ).fetchone()


def test_the_store_stage_moves_the_progress_bar_by_bytes_seen_from_another_connection(
    postgres, admin_user, monkeypatch
):
    DomainFactory(slug="federal_it")
    with transaction.atomic():
        job = submit_import(
            project=default_project(),
            kind="corpus",
            upload=ContentFile(manifest(DOCUMENTS), name="p.jsonl"),
            actor=admin_user,
        ).job
        OutboxMessage.objects.filter(dedupe_key=import_dedupe_key(job.pk)).delete()
    seen: list[tuple[str, int]] = []
    validating: list[int] = []
    real_write, real_check = CorpusImporter.write, CorpusImporter.check

    def check(self, batch, problems):
        if not self.writing:
            validating.append(page_view(job.pk)[1])
        return real_check(self, batch, problems)

    def write(self, plan):
        # Each batch of the store stage waits until the page sees a figure past the last one.
        last = seen[-1][1] if seen else 49

        def moved():
            stage, percent = page_view(job.pk)
            if stage == "writing" and percent > last:
                seen.append((stage, percent))
                return True
            return False

        if len(seen) < 5:
            wait_until(moved, timeout=30, what=lambda: f"progress past {last}: {page_view(job.pk)}")
        real_write(self, plan)

    monkeypatch.setattr(CorpusImporter, "write", write)
    monkeypatch.setattr(CorpusImporter, "check", check)
    ended = run_import_job(job_id=job.pk)
    assert ended.status == ImportStatus.SUCCEEDED, ended.message
    assert Document.objects.count() == DOCUMENTS
    percents = [p for _, p in seen]
    assert len(percents) == 5 and percents == sorted(set(percents)), percents
    # 50 as the stage starts, then a sixth of the other half per batch of the six.
    assert percents[0] == 50 and 80 <= percents[-1] <= 99, percents
    # The validate stage moved too, by bytes, and stayed under half.
    assert validating == sorted(validating) and 0 <= validating[0] < validating[-1] <= 50, (
        validating
    )
    assert ImportJob.objects.get(pk=job.pk).progress == 100
