"""A run is imported, validated, stored and scored without ever being held whole in memory
(issue 10: a 200 MiB run scored by a worker under 1 GB), with the same figures as the scoring
library on the same files.

The bound is on what Python and NumPy allocate (``tracemalloc``; Arrow's buffers are not
traced): importing or scoring an 8 MB run of long lines must allocate less than the run's own
size at any moment (it takes about half: the library's per-row arrays, 1 MiB chunks, the
bootstrap). Holding the run whole as bytes, as text or as a Python object per row (what the
job path did before: about three times its size) breaks the bound.

The same holds for every layout a run or an answer log comes in: a JSONL run, a TREC run
separated by tabs or by runs of spaces (read in bounded blocks, not by the single-space
columnar reader), and a JSONL answer log (validated and scored one record at a time); and the
same run in every layout gives the same figures to the bit."""

import json
import tracemalloc

import pytest
from django.core.files import File

from goldset.models import (
    Block,
    ImportStatus,
    JobStatus,
    ScoreAggregate,
    ScoreQueryResult,
    ScoringJob,
)
from goldset.services.answer_scoring import version_packets
from goldset.services.freeze import store_frozen_version
from goldset.services.import_jobs import run_import_job, submit_import
from goldset.services.scoring_jobs import run_scoring_job
from goldset.services.scoring_runs import text_lines
from scoring.io import read_qrels, read_run
from scoring.probe import score_answers
from scoring.retrieval import default_metrics, evaluate
from tests.factories import default_project, gold_row_for, make_gold_corpus

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
    frozen = store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


def other_blocks(q, depth, distinct):
    if distinct:  # every query ranks its own documents
        return [f"{BLOCK_PREFIX[:-2]}{q:02d}{i:05d}" for i in range(depth)]
    return [f"{BLOCK_PREFIX}{i:05d}" for i in range(depth)]


def ranked_rows(version, depth, distinct):
    """(query, [(document, score text)]) of the test run, best first."""
    for q, expected in enumerate(version.blocks):
        others = other_blocks(q, depth, distinct)
        # The expected block lands at a different rank per query, so the figures vary.
        ranked = others[: q * 7] + [expected] + others[q * 7 : depth - 1]
        yield f"Q-{q:03d}", [(doc, f"{1 / rank:.6f}") for rank, doc in enumerate(ranked, 1)]


def write_run(version, path, layout, depth=DEPTH, distinct=False):
    """The test run in ``layout``: TREC separated by one space (``trec``), by a tab
    (``tab``) or by runs of spaces (``spaces``), or JSONL (one line per query). ``distinct``:
    no document is ranked for two queries (pandas' parser shares the Python string of a value
    it meets again, so repeated ids would hide a reader holding a string per row)."""
    sep = {"trec": " ", "tab": "\t", "spaces": "   "}.get(layout)
    with path.open("w", encoding="utf-8") as out:
        for qid, ranked in ranked_rows(version, depth, distinct):
            if sep is None:
                results = ", ".join(f'{{"doc_id": "{d}", "score": {s}}}' for d, s in ranked)
                out.write(f'{{"query_id": "{qid}", "results": [{results}]}}\n')
                continue
            for rank, (doc, score) in enumerate(ranked, start=1):
                out.write(sep.join([qid, "Q0", doc, str(rank), score, TAG]) + "\n")
    assert depth < DEPTH or path.stat().st_size > 6_000_000
    return path


@pytest.fixture
def run_blocks(version):
    document = Block.objects.get(block_id=version.blocks[0]).document
    others = [f"{BLOCK_PREFIX}{i:05d}" for i in range(DEPTH)]
    Block.objects.bulk_create(
        Block(project_id=document.project_id, document=document, block_id=b) for b in others
    )
    return others


@pytest.fixture
def distinct_blocks(version):
    document = Block.objects.get(block_id=version.blocks[0]).document
    Block.objects.bulk_create(
        Block(project_id=document.project_id, document=document, block_id=b)
        for q in range(QUERIES)
        for b in other_blocks(q, DEPTH, distinct=True)
    )


@pytest.fixture
def run_file(version, run_blocks, tmp_path):
    return write_run(version, tmp_path / "long-lines.trec", "trec")


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
            project=default_project(),
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
            project=default_project(),
            kind="run",
            upload=File(handle, name=run_file.name),
            actor=admin_user,
            options={"version": version.number},
        ).job
    job, peak = traced_peak(lambda: run_import_job(job_id=queued.pk))
    assert job.status == ImportStatus.REJECTED
    assert [(e["line"], e["message"]) for e in job.errors] == [
        (30001, "unknown block id 'unknown-block-id': not in the corpus")
    ]
    assert peak < run_file.stat().st_size


def import_and_score(path, version, actor, capture, *, resamples=None):
    """Upload ``path`` as a run to score, run the import job, then the scoring job (with
    ``resamples`` bootstrap resamples instead of the job's default); returns (scoring job,
    import peak, scoring peak)."""
    with path.open("rb") as handle, capture(execute=False):
        queued = submit_import(
            project=default_project(),
            kind="run",
            upload=File(handle, name=path.name),
            actor=actor,
            options={"version": version.number, "name": path.name, "k": 10},
        ).job
    with capture(execute=False):
        imported, import_peak = traced_peak(lambda: run_import_job(job_id=queued.pk))
    assert imported.status == ImportStatus.SUCCEEDED, (imported.message, imported.errors)
    if resamples is not None:
        ScoringJob.objects.filter(pk=imported.summary["scoring_job"]).update(resamples=resamples)
    scored, scoring_peak = traced_peak(
        lambda: run_scoring_job(job_id=imported.summary["scoring_job"])
    )
    assert scored.status == JobStatus.SUCCEEDED, scored.error
    return scored, import_peak, scoring_peak


def stored_figures(job):
    aggregates = {
        (a.stratum, a.metric): (a.value, a.ci_low, a.ci_high, a.n)
        for a in ScoreAggregate.objects.filter(job=job)
    }
    per_query = {
        r.query_id: (r.metrics, r.retrieved) for r in ScoreQueryResult.objects.filter(job=job)
    }
    return aggregates, per_query


@pytest.mark.parametrize("layout", ["jsonl", "tab", "spaces"])
def test_a_run_in_any_layout_is_imported_and_scored_in_memory_well_under_its_size(
    layout, version, distinct_blocks, admin_user, tmp_path, django_capture_on_commit_callbacks
):
    path = write_run(version, tmp_path / f"long-lines.{layout}", layout, distinct=True)
    size = path.stat().st_size
    scored, import_peak, scoring_peak = import_and_score(
        path, version, admin_user, django_capture_on_commit_callbacks
    )
    assert scored.run_format == ("jsonl" if layout == "jsonl" else "trec")
    # Read in bounded blocks: a whole copy of the run (or a Python object per row) would
    # exceed the run's size on its own.
    assert import_peak < size, (import_peak, size)
    assert scoring_peak < size, (scoring_peak, size)
    per_query = stored_figures(scored)[1]
    assert per_query["Q-001"][0]["mrr@10"] == 1 / 8 and per_query["Q-002"][0]["mrr@10"] == 0.0


def test_the_same_run_in_every_layout_gives_the_same_figures(
    version, run_blocks, admin_user, tmp_path, django_capture_on_commit_callbacks
):
    figures = {}
    for layout in ("trec", "tab", "spaces", "jsonl"):
        path = write_run(version, tmp_path / f"same.{layout}", layout, depth=40)
        scored = import_and_score(path, version, admin_user, django_capture_on_commit_callbacks)[0]
        figures[layout] = stored_figures(scored)
    aggregates, per_query = figures["trec"]
    assert len(per_query) == QUERIES and aggregates[("all", "mrr@10")][1] is not None
    assert per_query["Q-001"][0]["mrr@10"] == 1 / 8
    # Per-query values, aggregates and bootstrap intervals, to the bit.
    assert figures["tab"] == figures["trec"]
    assert figures["spaces"] == figures["trec"]
    assert figures["jsonl"] == figures["trec"]


ANSWER_SYSTEMS = 40


def write_answer_log(version, passages, path):
    """An answer log of ~8 MB: every question of ``version`` answered by ANSWER_SYSTEMS
    systems, each record with a long answer and the text of its 20 retrieved passages."""
    with path.open("w", encoding="utf-8") as out:
        for s in range(ANSWER_SYSTEMS):
            for q, expected in enumerate(version.blocks):
                # Systems find the expected block for more or fewer questions.
                retrieved = [expected, *passages[s : s + 19]] if q % (s % 5 + 2) else passages[:20]
                record = {
                    "question_id": f"Q-{q:03d}",
                    "system_id": f"sys-{s:02d}",
                    "answer": f"Answer {q}/{s}: " + "the lane needs approval. " * 160,
                    "citations": [retrieved[0]],
                    "retrieved_passages": [
                        {"passage_id": p, "rank": r, "text": f"passage {p}: " + "x" * 600}
                        for r, p in enumerate(retrieved, start=1)
                    ],
                    "latency_ms": 800 + 10 * s + q,
                    "cost_usd": 0.002,
                }
                out.write(json.dumps(record) + "\n")
    assert path.stat().st_size > 8_000_000
    return path


def test_an_answer_log_is_imported_and_scored_in_memory_well_under_its_size(
    version, run_blocks, admin_user, tmp_path, django_capture_on_commit_callbacks
):
    path = write_answer_log(version, run_blocks, tmp_path / "answers.jsonl")
    size = path.stat().st_size
    scored, import_peak, scoring_peak = import_and_score(
        path, version, admin_user, django_capture_on_commit_callbacks
    )
    assert scored.kind == "answers"
    # Validated and scored one record at a time: the per-answer results are kept, never the
    # records (the answers' text and passages).
    assert import_peak < size, (import_peak, size)
    assert scoring_peak < size, (scoring_peak, size)

    # The same figures as the library scoring the records held in memory.
    packets = version_packets(version)
    with path.open(encoding="utf-8") as lines:
        report = score_answers(packets, [json.loads(line) for line in lines])
    per_answer = {r.query_id: r.metrics for r in ScoreQueryResult.objects.filter(job=scored)}
    assert len(per_answer) == QUERIES * ANSWER_SYSTEMS
    assert per_answer == {
        f"{a.system_id}/{a.question_id}": {"final_pcs": a.final_pcs, "raw_pcs": a.raw_pcs}
        for a in report.answers
    }
    means = {
        a.stratum: a.value for a in ScoreAggregate.objects.filter(job=scored, metric="mean_pcs")
    }
    assert means == {f"system:{k}": v.mean_pcs for k, v in report.systems.items()}
    assert len(set(means.values())) > 1


WIDE_QUESTIONS, WIDE_SYSTEMS = 400, 30


@pytest.fixture
def wide_version(admin_user):
    """A gold version of WIDE_QUESTIONS questions (an answer log's usual shape: a few systems,
    many questions)."""
    versions = make_gold_corpus(WIDE_QUESTIONS)
    rows = [gold_row_for(bv, triple_id=f"W-{i:04d}") for i, bv in enumerate(versions)]
    frozen = store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


def write_many_answers(version, path):
    """~10 MB of short answer records, 12,000 answers: a score per answer (components,
    families, caps: about 2.5 KB as Python objects) held until the end would outweigh the
    file."""
    blocks = version.blocks
    with path.open("w", encoding="utf-8") as out:
        for s in range(WIDE_SYSTEMS):
            for q, expected in enumerate(blocks):
                other = blocks[(q + s + 1) % len(blocks)]
                retrieved = [expected, other] if (q + s) % 3 else [other, expected]
                record = {
                    "question_id": f"W-{q:04d}",
                    "system_id": f"sys-{s:02d}",
                    "answer": f"Answer {q}/{s}: " + "approval is needed. " * 30,
                    "citations": [retrieved[0]],
                    "retrieved_passages": [
                        {"passage_id": p, "rank": r} for r, p in enumerate(retrieved, start=1)
                    ],
                    "latency_ms": 800 + 37 * s + q,
                    "cost_usd": 0.002,
                }
                out.write(json.dumps(record) + "\n")
    assert path.stat().st_size > 8_000_000
    return path


def test_an_answer_log_of_many_answers_is_scored_without_keeping_each_answers_score(
    wide_version, admin_user, tmp_path, django_capture_on_commit_callbacks
):
    """Per answer the job keeps only the numbers the system figures are computed from (PCS,
    unsafe probability, components: 8 bytes each) and writes each answer's result row to a
    temporary file until it is stored; the figures equal the library's to the bit."""
    version = wide_version
    path = write_many_answers(version, tmp_path / "many.jsonl")
    size = path.stat().st_size
    # Few resamples: the bootstrap's own working set is bounded by its chunk (scoring.stats),
    # not by the log, and at 10,000 resamples of 400 answers it would hide what is kept.
    scored, import_peak, scoring_peak = import_and_score(
        path, version, admin_user, django_capture_on_commit_callbacks, resamples=200
    )
    assert scored.kind == "answers"
    # Kept per answer: about 200 bytes (before: the whole score, about 1.5 KB, 60 MB here).
    assert scoring_peak < size / 2, (scoring_peak, size)

    packets = version_packets(version)
    with path.open(encoding="utf-8") as lines:
        report = score_answers(packets, [json.loads(line) for line in lines])
    stored = {r.query_id: r for r in ScoreQueryResult.objects.filter(job=scored)}
    assert len(stored) == WIDE_QUESTIONS * WIDE_SYSTEMS
    assert {k: r.metrics for k, r in stored.items()} == {
        f"{a.system_id}/{a.question_id}": {"final_pcs": a.final_pcs, "raw_pcs": a.raw_pcs}
        for a in report.answers
    }
    first = report.answers[0]
    assert stored[f"{first.system_id}/{first.question_id}"].detail["caps"] == first.caps
    aggregates = {
        (a.stratum, a.metric): a.value
        for a in ScoreAggregate.objects.filter(job=scored).exclude(metric="mean_pcs")
    }
    expected = {}
    for system_id, summary in report.systems.items():
        stratum = f"system:{system_id}"
        expected[(stratum, "unsafe_rate")] = summary.unsafe_rate
        expected[(stratum, "gate_pass_rate")] = summary.gate_pass_rate
        for name, value in summary.component_means.items():
            expected[(stratum, f"mean {name}")] = value
    assert aggregates == expected
    assert scored.summary["systems"] == report.systems_dict()
    assert scored.summary["n_answers"] == len(report.answers)
