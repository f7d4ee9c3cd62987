"""The readers that stream (JSONL runs, TREC runs separated by tabs or runs of spaces) read a
file in bounded blocks and give what reading it whole gave: the same rows and figures, and the
same first error with its line, wherever the block boundaries fall.

``small_blocks`` shrinks the blocks to a few lines so that every file here spans many blocks
and batches (the defaults are 256 KiB and 4,096 rows)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import scoring.io
from scoring.errors import InputError
from scoring.io import read_qrels, read_run
from scoring.retrieval import default_metrics, evaluate
from scoring.stats import bootstrap_ci


@pytest.fixture(params=["whole", "small"])
def blocks(request, monkeypatch):
    """Run each test with the default block sizes and with blocks of a few lines."""
    if request.param == "small":
        monkeypatch.setattr(scoring.io, "_BLOCK", 40)
        monkeypatch.setattr(scoring.io, "_BATCH", 3)
    return request.param


def seeded_run(n_queries=25, depth=30):
    """(query, document, score text) rows; scores with 17 significant digits, so a parser
    that rounds differently would show."""
    rng = np.random.default_rng(7)
    for q in range(n_queries):
        docs = rng.permutation(200)[:depth]
        for d in docs:
            yield f"q{q:02d}", f"doc-{d:03d}", repr(float(rng.random()))


def layout_text(rows, layout):
    rows = list(rows)
    if layout == "jsonl":
        by_query: dict[str, list] = {}
        for q, d, s in rows:
            by_query.setdefault(q, []).append(f'{{"doc_id": "{d}", "score": {s}}}')
        return "".join(
            f'{{"query_id": "{q}", "results": [{", ".join(r)}]}}\n' for q, r in by_query.items()
        )
    sep = {"trec": " ", "tab": "\t", "spaces": "  ", "crlf": " "}[layout]
    end = "\r\n" if layout == "crlf" else "\n"
    return "".join(
        sep.join([q, "Q0", d, str(i), s, "tag"]) + end for i, (q, d, s) in enumerate(rows)
    )


def test_the_same_run_in_every_layout_gives_the_same_figures(write, blocks):
    qrels_lines = [f"q{q:02d} 0 doc-{d:03d} {d % 3}" for q in range(25) for d in range(0, 200, 7)]
    qrels = read_qrels(write("qrels.txt", "\n".join(qrels_lines) + "\n"))
    results = {}
    for layout in ("trec", "tab", "spaces", "crlf", "jsonl"):
        run = read_run(write(f"run.{layout}", layout_text(seeded_run(), layout)))
        result = evaluate(qrels, run, k=10, metrics=default_metrics(10), all_queries=True)
        ci = bootstrap_ci(result.per_query["ndcg@10"], n=200, seed=3)
        results[layout] = (run.score.tolist(), result.per_query_dict(), result.aggregate, ci)
    assert len(results["trec"][1]) == 25 and len(set(results["trec"][0])) == 25 * 30
    for layout in ("tab", "spaces", "crlf", "jsonl"):
        assert results[layout] == results["trec"], layout


def trec_lines(n, sep="\t"):
    return [sep.join([f"q{i % 4}", "Q0", f"d{i}", str(i), "1.5", "t"]) for i in range(n)]


def raised(read, path):
    with pytest.raises(InputError) as info:
        read(path)
    return info.value.line, info.value.message


BAD_SCORE = (30, "1.5", "high")
TREC_CASES = [
    # (edits: (0-based line, old, new) ..., expected line, message)
    ([BAD_SCORE], 31, "score must be a number, got 'high'"),
    # A document listed twice before the bad line is what a line-by-line read meets first
    # (line 21 is query q0, as line 1) ...
    ([BAD_SCORE, (20, "d20", "d0")], 21, "document 'd0' is listed twice for query 'q0'"),
    # ... and after it, the bad line wins.
    ([BAD_SCORE, (35, "d35", "d3")], 31, "score must be a number, got 'high'"),
    ([(25, "1.5 t", "1.5")], 26, "expected 6 fields (qid Q0 docid rank score tag), found 5"),
    ([(39, "1.5", "inf")], 40, "score must be a finite number, got 'inf'"),
    ([(33, "d33", "d1")], 34, "document 'd1' is listed twice for query 'q1'"),
]


@pytest.mark.parametrize("sep", ["\t", "  "])
@pytest.mark.parametrize(("edits", "line", "message"), TREC_CASES)
def test_a_tab_or_spaces_run_names_the_first_bad_line_in_any_block(
    write, blocks, sep, edits, line, message
):
    lines = trec_lines(40, " ")
    for index, old, new in edits:
        lines[index] = lines[index].replace(old, new)
    text = "".join(sep.join(x.split(" ")) + "\n" for x in lines)
    assert raised(read_run, write("run", text)) == (line, message)


def test_invalid_utf8_anywhere_is_reported_before_a_bad_line(tmp_path, blocks):
    lines = trec_lines(40)
    lines[5] = lines[5].replace("1.5", "high")
    data = ("\n".join(lines) + "\n").encode()
    path = tmp_path / "run.tsv"
    path.write_bytes(data.replace(b"d37", b"d\xff7"))
    assert raised(read_run, str(path)) == (38, "not valid UTF-8 text")
    jsonl = tmp_path / "run.jsonl"
    rows = [json.dumps({"query_id": f"q{i}", "results": []}) for i in range(30)]
    rows[3] = "{oops"
    jsonl.write_bytes(("\n".join(rows) + "\n").encode().replace(b'"q27"', b'"q\xe92"'))
    assert raised(read_run, str(jsonl)) == (28, "not valid UTF-8 text")


def jsonl_run(lines):
    return "\n".join(json.dumps(x) if not isinstance(x, str) else x for x in lines) + "\n"


def record(qid, *docs, score=1.0):
    return {"query_id": qid, "results": [{"doc_id": d, "score": score} for d in docs]}


def results(qid, *items):
    return {"query_id": qid, "results": [dict(item) for item in items]}


A1, A2, Z = {"doc_id": "a", "score": 1}, {"doc_id": "a", "score": 2}, {"doc_id": "z"}
JSONL_CASES = [
    # (edits: {0-based line: record}, expected line, message)
    ({25: "{oops"}, 26, "invalid JSON: Expecting property name enclosed in double quotes"),
    # A document listed twice before the bad line is what a line-by-line read meets first.
    (
        {12: record("q3", "x"), 14: record("q3", "y", "x"), 25: "{oops"},
        15,
        "document 'x' is listed twice for query 'q3'",
    ),
    # Within one line the results come in order: a repeat of "a" before a bad score ...
    ({20: results("q20", A1, A2, Z)}, 21, "document 'a' is listed twice for query 'q20'"),
    # ... and a bad score before the repeat.
    ({20: results("q20", A1, Z, A2)}, 21, "results[1].score must be a finite number, got None"),
    ({29: record("q2", "b")}, 30, "document 'b' is listed twice for query 'q2'"),
]


@pytest.mark.parametrize(("edits", "line", "message"), JSONL_CASES)
def test_a_jsonl_run_names_the_first_bad_line_in_any_block(write, blocks, edits, line, message):
    rows = [record(f"q{i}", "a", "b", "c") for i in range(30)]
    for index, value in edits.items():
        rows[index] = value
    assert raised(read_run, write("run.jsonl", jsonl_run(rows))) == (line, message)


def test_a_jsonl_run_without_results_is_rejected(write, blocks):
    empty = [{"query_id": f"q{i}", "results": []} for i in range(10)]
    assert raised(read_run, write("j6", jsonl_run(empty))) == (None, "the run has no results")


def test_a_jsonl_run_with_a_first_line_longer_than_the_peek_is_detected(write):
    long_line = record("q1", *(f"document-{i:06d}" for i in range(4000)))
    path = write("long.jsonl", jsonl_run([long_line, record("q2", "a")]))
    assert scoring.io.detect_format(path, kind="run") == "jsonl"
    run = read_run(path)
    assert len(run) == 4001 and run.doc_id[-1] == "a"


def test_jsonl_qrels_report_invalid_utf8_before_a_bad_line(tmp_path, blocks):
    lines = [json.dumps({"query_id": f"q{i}", "doc_id": "d", "relevance": 1}) for i in range(20)]
    lines[2] = json.dumps({"query_id": "q2", "doc_id": "d", "relevance": "x"})
    path = tmp_path / "qrels.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode().replace(b'"q17"', b'"q\xff7"'))
    assert raised(read_qrels, str(path)) == (18, "not valid UTF-8 text")
