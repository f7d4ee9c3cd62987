"""A run is imported, validated, stored and scored without ever being held whole in memory
(issue 10: a 200 MiB run scored by a worker under 1 GB), with the same figures as the scoring
library on the same files.

The bound is on what Python and NumPy allocate (``tracemalloc``; Arrow's buffers are not
traced): importing or scoring an 8 MB run of long lines must allocate less than the run's own
size at any moment (it takes about half: the library's per-row arrays, 1 MiB chunks, the
bootstrap). Holding the run whole as bytes, as text or as a Python object per row (what the
job path did before: about three times its size) breaks the bound."""

import tracemalloc

import pytest
from django.core.files import File

from goldset.models import Block, ImportStatus, JobStatus, ScoreAggregate, ScoreQueryResult
from goldset.services.freeze import store_frozen_version
from goldset.services.import_jobs import run_import_job, submit_import
from goldset.services.scoring_jobs import run_scoring_job
from goldset.services.scoring_runs import text_lines
from scoring.io import read_qrels, read_run
from scoring.retrieval import default_metrics, evaluate
from tests.factories import gold_row_for, make_gold_corpus

pytestmark = pytest.mark.django_db

QUERIES = 12
DEPTH = 3000
# 150-character block ids and a 60-character tag: ~240 bytes a line, 36,000 lines, ~8.6 MB.
BLOCK_PREFIX = "memory-bound-" + "x" * 132
TAG = "system-" + "t" * 53


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(QUERIES)
    rows = [gold_row_for(bv, triple_id=f"Q-{i:03d}") for i, bv in enumerate(versions)]
    frozen = store_frozen_version(rows=rows, actor=admin_user)
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


@pytest.fixture
def run_file(version, tmp_path):
    document = Block.objects.get(block_id=version.blocks[0]).document
    others = [f"{BLOCK_PREFIX}{i:05d}" for i in range(DEPTH)]
    Block.objects.bulk_create(Block(document=document, block_id=b) for b in others)
    path = tmp_path / "long-lines.trec"
    with path.open("w", encoding="utf-8") as out:
        for q, expected in enumerate(version.blocks):
            # The expected block lands at a different rank per query, so the figures vary.
            ranked = others[: q * 7] + [expected] + others[q * 7 : DEPTH - 1]
            for rank, doc in enumerate(ranked, start=1):
                out.write(f"Q-{q:03d} Q0 {doc} {rank} {1 / rank:.6f} {TAG}\n")
    assert path.stat().st_size > 8_000_000
    return path


def traced_peak(work):
    """(result, peak bytes Python and NumPy allocated while ``work`` ran)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_run_is_imported_and_scored_in_memory_well_under_its_size(
    version, run_file, admin_user, tmp_path, django_capture_on_commit_callbacks
):
    size = run_file.stat().st_size
    with run_file.open("rb") as handle, django_capture_on_commit_callbacks(execute=False):
        queued = submit_import(
            kind="run",
            upload=File(handle, name=run_file.name),
            actor=admin_user,
            options={"version": version.number, "name": "long lines", "k": 10},
        ).job
    with django_capture_on_commit_callbacks(execute=False):
        imported, import_peak = traced_peak(lambda: run_import_job(job_id=queued.pk))
    assert imported.status == ImportStatus.SUCCEEDED, (imported.message, imported.errors)
    job_id = imported.summary["scoring_job"]

    scored, scoring_peak = traced_peak(lambda: run_scoring_job(job_id=job_id))
    assert scored.status == JobStatus.SUCCEEDED, scored.error
    assert scored.run_size == size
    # Validation + storage, then scoring: each about half the run's size (the library's
    # per-row arrays and 1 MiB chunks); one whole copy of the run would exceed it alone.
    assert import_peak < size, (import_peak, size)
    assert scoring_peak < size, (scoring_peak, size)

    # The same figures as the library reading the same files.
    gold = tmp_path / "gold.jsonl"
    gold.write_bytes(version.files.get(format="gold_jsonl").chunks.get().data)
    expected = evaluate(
        read_qrels(gold), read_run(run_file), k=10, metrics=default_metrics(10), all_queries=True
    )
    stored = {a.metric: a.value for a in ScoreAggregate.objects.filter(job=scored, stratum="all")}
    assert stored == expected.aggregate
    per_query = {r.query_id: r.metrics for r in ScoreQueryResult.objects.filter(job=scored)}
    assert per_query == expected.per_query_dict()
    assert per_query["Q-000"]["mrr@10"] == 1.0 and per_query["Q-001"]["mrr@10"] == 1 / 8
    assert per_query["Q-002"]["mrr@10"] == 0.0
    worst = ScoreQueryResult.objects.get(job=scored, query_id="Q-011")
    assert worst.retrieved == [f"{BLOCK_PREFIX}{i:05d}" for i in range(10)]


def test_an_unknown_block_deep_in_a_large_run_is_named_without_reading_it_whole(
    version, run_file, admin_user, django_capture_on_commit_callbacks
):
    lines = list(text_lines(run_file))
    doc = lines[30_000].split()[2]
    lines[30_000] = lines[30_000].replace(doc, "unknown-block-id")
    run_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with run_file.open("rb") as handle, django_capture_on_commit_callbacks(execute=False):
        queued = submit_import(
            kind="run",
            upload=File(handle, name=run_file.name),
            actor=admin_user,
            options={"version": version.number},
        ).job
    job, peak = traced_peak(lambda: run_import_job(job_id=queued.pk))
    assert job.status == ImportStatus.REJECTED
    assert [e["message"] for e in job.errors] == [
        "long-lines.trec, line 30001: unknown block id 'unknown-block-id': not in the corpus"
    ]
    assert peak < run_file.stat().st_size
