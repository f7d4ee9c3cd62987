"""Readers: every format, detection, and precise errors (file, line, problem)."""

from __future__ import annotations

import io
import json

import pytest

from scoring.errors import InputError
from scoring.io import detect_format, read_qrels, read_run

UNRAG = {
    "version": "1",
    "id": "my-dataset",
    "defaults": {"topK": 10, "scopePrefix": "eval:mydata:", "mode": "retrieve"},
    "queries": [
        {
            "id": "q_return_window",
            "query": "How long do I have to return an item?",
            "relevant": {"sourceIds": ["eval:mydata:doc:refund-policy"]},
        },
        {"id": "q_unrelated", "query": "Weather?", "relevant": {"sourceIds": []}},
    ],
}

GOLD_LINE = {
    "id": "t-001",
    "question": "What is the refund window?",
    "expected_block": {
        "block_id": "blk-9",
        "document_id": "doc-1",
        "version": 2,
        "page_range": "3-4",
        "sha256": "ab" * 32,
    },
    "expected_answer": "30 days",
    "metadata": {"domain": "support"},
}


def test_trec_qrels_and_run_from_path(write):
    qrels = read_qrels(write("q.txt", "q1 0 d1 1\nq1 0 NA 0\n\nq2 0 d3 2\n"))
    assert qrels.query_id.tolist() == ["q1", "q1", "q2"]
    assert qrels.doc_id.tolist() == ["d1", "NA", "d3"]
    assert qrels.relevance.tolist() == [1, 0, 2]
    run = read_run(write("r.txt", "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1e-3 tag\n"))
    assert run.score.tolist() == [2.5, 0.001]


def test_readers_accept_file_objects_and_line_iterables():
    run = read_run(io.StringIO("q1 Q0 d1 1 2.5 t\n"))
    assert run.doc_id.tolist() == ["d1"]
    qrels = read_qrels(["q1 0 d1 1", "q1 0 d2 0"])
    assert qrels.relevance.tolist() == [1, 0]
    binary = read_qrels(io.BytesIO(b'{"query_id": "q", "doc_id": "d", "relevance": 2}\n'))
    assert binary.relevance.tolist() == [2]


def test_jsonl_formats():
    qrels = read_qrels(['{"query_id": "q1", "doc_id": "a", "relevance": 1}'])
    assert qrels.queries.tolist() == ["q1"]
    run = read_run(['{"query_id": "q1", "results": [{"doc_id": "a", "score": 0.5}]}'])
    assert (run.doc_id.tolist(), run.score.tolist()) == (["a"], [0.5])


def test_gold_jsonl_export_maps_triple_id_to_expected_block():
    qrels = read_qrels([json.dumps(GOLD_LINE)])
    assert (qrels.query_id.tolist(), qrels.doc_id.tolist()) == (["t-001"], ["blk-9"])
    assert qrels.relevance.tolist() == [1]


def test_unrag_dataset_keeps_queries_without_relevant_documents(write):
    qrels = read_qrels(write("ds.json", json.dumps(UNRAG, indent=2)))
    assert qrels.queries.tolist() == ["q_return_window", "q_unrelated"]
    assert qrels.doc_id.tolist() == ["eval:mydata:doc:refund-policy"]


@pytest.mark.parametrize(
    ("content", "kind", "fmt"),
    [
        ("q1 0 d1 1\n", "qrels", "trec"),
        ('{"query_id": "q", "doc_id": "d", "relevance": 1}\n', "qrels", "jsonl"),
        (json.dumps(GOLD_LINE) + "\n", "qrels", "gold"),
        (json.dumps(UNRAG, indent=2), "qrels", "unrag"),
        (json.dumps(UNRAG), "qrels", "unrag"),
        ('{"query_id": "q", "results": []}\n', "run", "jsonl"),
    ],
)
def test_format_is_detected_from_content(content, kind, fmt):
    assert detect_format(io.StringIO(content), kind=kind) == fmt


def test_format_override_wins():
    with pytest.raises(InputError, match="expected 4 fields"):
        read_qrels(['{"query_id": "q", "doc_id": "d", "relevance": 1}'], fmt="trec")


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0\n", 2, "expected 6 fields"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t extra\n", 2, "expected 6 fields"),
        ("q1 Q0 d1 1 2.0 t\n\nq1 Q0 d2 2 high t\n", 3, "score must be a number"),
        ("q1 Q0 d1 1 nan t\n", 1, "finite number"),
        ("q1 Q0 d1 1 2.0 t\nq2 Q0 d1 1 2.0 t\nq1 Q0 d1 3 1.0 t\n", 3, "listed twice"),
    ],
)
def test_trec_run_errors_name_the_line(write, content, line, message):
    path = write("run.txt", content)
    with pytest.raises(InputError) as info:
        read_run(path)
    assert (info.value.file, info.value.line) == (path, line)
    assert message in info.value.message


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", 2, "expected 4 fields"),
        ("q1 0 d1 1\nq1 0 d2 yes\n", 2, "relevance must be an integer"),
        ("q1 0 d1 1\nq1 0 d2 1.5\n", 2, "relevance must be an integer"),
        ("q1 0 d1 1\nq1 0 d1 0\n", 2, "listed twice"),
    ],
)
def test_trec_qrels_errors_name_the_line(write, content, line, message):
    path = write("qrels.txt", content)
    with pytest.raises(InputError) as info:
        read_qrels(path)
    assert info.value.line == line
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (['{"query_id": "q", "doc_id": "d", "relevance": 1}', "{oops"], 2, "invalid JSON"),
        (
            ['{"query_id": "q", "doc_id": "d", "relevance": "1"}'],
            1,
            "'relevance' must be an integer",
        ),
        (['{"query_id": "", "doc_id": "d", "relevance": 1}'], 1, "'query_id'"),
        (["[1, 2]"], 1, "expected a JSON object"),
    ],
)
def test_jsonl_qrels_errors(lines, line, message):
    with pytest.raises(InputError) as info:
        read_qrels(lines, fmt="jsonl")
    assert info.value.line == line
    assert message in info.value.message


def test_jsonl_run_errors():
    with pytest.raises(InputError, match="line 2: results\\[0\\].score"):
        read_run(
            [
                '{"query_id": "q", "results": [{"doc_id": "a", "score": 1}]}',
                '{"query_id": "r", "results": [{"doc_id": "a", "score": "x"}]}',
            ]
        )
    with pytest.raises(InputError, match="listed twice"):
        read_run(
            [
                '{"query_id": "q", "results": [{"doc_id": "a", "score": 1}, {"doc_id": "a", "score": 2}]}'
            ]
        )


def test_gold_errors():
    broken = dict(GOLD_LINE, expected_block={"document_id": "x"})
    with pytest.raises(InputError, match="line 2: 'expected_block.block_id'"):
        read_qrels([json.dumps(GOLD_LINE), json.dumps(broken)])
    with pytest.raises(InputError, match="appears twice"):
        read_qrels([json.dumps(GOLD_LINE), json.dumps(GOLD_LINE)])


def test_unrag_errors_name_the_line(write):
    bad_version = write("v.json", json.dumps(dict(UNRAG, version="2"), indent=2))
    with pytest.raises(InputError) as info:
        read_qrels(bad_version)
    assert info.value.line == 2 and 'expected "1"' in info.value.message
    queries = [UNRAG["queries"][0], {"id": "q2", "relevant": {}}]
    bad_query = write("q.json", json.dumps(dict(UNRAG, queries=queries), indent=2))
    with pytest.raises(InputError) as info:
        read_qrels(bad_query)
    assert "queries[1].relevant.sourceIds" in info.value.message
    assert bad_query_line(bad_query) == info.value.line
    with pytest.raises(InputError, match="invalid JSON"):
        read_qrels(write("broken.json", '{\n  "version": "1",\n  "queries": [\n'))


def bad_query_line(path: str) -> int:
    lines = open(path, encoding="utf-8").read().splitlines()
    return next(i for i, text in enumerate(lines, start=1) if '"q2"' in text) - 1


def test_missing_and_empty_files(write):
    with pytest.raises(InputError, match="file not found"):
        read_run("/nonexistent/run.txt")
    with pytest.raises(InputError, match="empty"):
        read_run(write("empty.txt", "\n\n"))


@pytest.mark.parametrize(
    "content",
    [
        "q1\tQ0\td1\t1\t2.5\ttag\nq1\tQ0\td2\t2\t1e-3\ttag\n",
        "q1  Q0 d1   1 2.5 tag\nq1 Q0 d2 2 1e-3 tag\n",
        "  q1 Q0 d1 1 2.5 tag  \n\n   \nq1 Q0 d2 2 1e-3 tag",
        "q1 Q0 d1 1 2.5 tag\r\nq1 Q0 d2 2 1e-3 tag\r\n",
    ],
)
def test_trec_run_any_whitespace_layout_reads_the_same(write, content):
    # Single-space files take the pyarrow path, the others pandas' \s+ parser: same result.
    plain = read_run(write("plain.txt", "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1e-3 tag\n"))
    other = read_run(write("other.txt", content))
    assert other.query_id.tolist() == plain.query_id.tolist() == ["q1", "q1"]
    assert other.doc_id.tolist() == plain.doc_id.tolist() == ["d1", "d2"]
    assert other.score.tolist() == plain.score.tolist() == [2.5, 0.001]


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        # Six fields only because one is empty: a missing Q0 or a trailing blank.
        ("q1 Q0 d1 1 2.0 t\nq1  d2 2 1.0 t\n", 2, "expected 6 fields"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 \n", 2, "expected 6 fields"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2  1.0 t\n", 2, "expected 6 fields"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 inf t\n", 2, "finite number"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 NA t\n", 2, "score must be a number"),
    ],
)
def test_trec_run_fast_path_rejects_what_pandas_rejects(write, content, line, message):
    path = write("run.txt", content)
    with pytest.raises(InputError) as info:
        read_run(path)
    assert (info.value.line, message in info.value.message) == (line, True)


def test_duplicates_are_confirmed_on_strings_when_hashes_collide(write, colliding_fingerprints):
    # All document hashes equal: distinct documents must not be reported as duplicates ...
    run = read_run(write("ok.txt", "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq2 Q0 a 1 1.0 t\n"))
    assert run.doc_id.tolist() == ["a", "b", "a"]
    qrels = read_qrels(write("q.txt", "q1 0 a 1\nq1 0 b 0\n"))
    assert qrels.relevance.tolist() == [1, 0]
    # ... and a real duplicate is still found, on its line.
    with pytest.raises(InputError) as info:
        read_run(write("dup.txt", "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq1 Q0 a 3 0.5 t\n"))
    assert (info.value.line, "listed twice" in info.value.message) == (3, True)


@pytest.mark.parametrize(
    "layout",
    ["{q}\t0\t{d}\t1", "{q}  0 {d} 1", "{q} 0 {d} 1 ", " {q} 0 {d} 1", "{q} 0 {d} 1"],
)
def test_trec_query_ids_stay_strings_on_every_path(write, layout):
    """`07`, `7`, `7.0` and `2` are four queries, on the pyarrow and the pandas path alike."""
    ids = ["07", "7", "7.0", "2"]
    lines = [layout.format(q=q, d=f"d{i}") for i, q in enumerate(ids)]
    qrels = read_qrels(write("q.txt", "\n".join(lines) + "\n"))
    assert qrels.query_id.tolist() == ids
    assert sorted(qrels.queries.tolist()) == sorted(ids)
    run_lines = [
        layout.replace(" 1", " 1 0.5 tag")
        .replace("\t1", "\t1\t0.5\ttag")
        .replace("\t0\t", "\tQ0\t")
        .replace(" 0 ", " Q0 ")
        .format(q=q, d="0" + str(i))
        for i, q in enumerate(ids)
    ]
    run = read_run(write("r.txt", "\n".join(run_lines) + "\n"))
    assert run.query_id.tolist() == ids
    assert run.doc_id.tolist() == ["00", "01", "02", "03"]
