"""`python -m scoring`: JSON on stdout, exit 2 with file and line on stderr for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scoring.cli import main

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d9 1\n"
RUN = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d4 1 1 t\nq2 Q0 d3 2 1 t\n"


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_retrieval_json_contract(capsys, write):
    code, out, _ = _run(
        capsys,
        [
            "retrieval",
            "--qrels",
            write("q.txt", QRELS),
            "--run",
            write("r.txt", RUN),
            "--per-query",
        ],
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["n_queries"] == 2
    assert list(payload["aggregate"]) == [
        "recall@10",
        "precision@10",
        "hit@10",
        "mrr@10",
        "mrr",
        "ndcg@10",
    ]
    # q2's ranking is d4 then d3 (tie broken by doc id descending), so its MRR is 1/2.
    assert payload["per_query"]["q2"]["mrr"] == 0.5
    assert payload["aggregate"]["mrr"] == 0.75
    assert payload["ci"] is None


def test_retrieval_all_queries_ci_and_metric_subset(capsys, write):
    code, out, _ = _run(
        capsys,
        [
            "retrieval",
            "--qrels",
            write("q.txt", QRELS),
            "--run",
            write("r.txt", RUN),
            "--all-queries",
            "--ci",
            "--resamples",
            "200",
            "--metrics",
            "hit@1,map",
        ],
    )
    payload = json.loads(out)
    assert code == 0 and payload["n_queries"] == 3
    assert payload["aggregate"] == {"hit@1": pytest.approx(1 / 3), "map": pytest.approx(0.5)}
    low, high = payload["ci"]["hit@1"]
    assert 0.0 <= low <= high <= 1.0


def test_python_dash_m_scoring_runs(write):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scoring",
            "retrieval",
            "--qrels",
            write("q.txt", QRELS),
            "--run",
            write("r.txt", RUN),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["aggregate"]["hit@10"] == 1.0


@pytest.mark.parametrize(
    ("which", "content", "line", "problem"),
    [
        ("run", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2\n", 2, "expected 6 fields"),
        ("run", "q1 Q0 d1 1 abc t\n", 1, "score must be a number"),
        ("run", "q1 Q0 d1 1 1 t\nq1 Q0 d1 2 0.5 t\n", 2, "listed twice"),
        (
            "run",
            '{"query_id": "q1", "results": [{"doc_id": null}]}\n',
            1,
            "must be a non-empty string",
        ),
        ("qrels", "q1 0 d1 1\nq1 0 d2 maybe\n", 2, "relevance must be an integer"),
        ("qrels", '{"query_id": "q1", "doc_id": "d1", "relevance": 1}\n{bad\n', 2, "invalid JSON"),
        (
            "qrels",
            '{\n "version": "7",\n "queries": []\n}\n',
            2,
            "unsupported Unrag dataset version",
        ),
    ],
)
def test_retrieval_bad_input_exits_2_naming_file_and_line(
    capsys, write, which, content, line, problem
):
    files = {"qrels": write("q.txt", QRELS), "run": write("r.txt", RUN)}
    files[which] = write(f"bad-{which}.txt", content)
    code, out, err = _run(capsys, ["retrieval", "--qrels", files["qrels"], "--run", files["run"]])
    assert code == 2
    assert out == ""
    assert f"{files[which]}, line {line}: " in err and problem in err


def test_retrieval_missing_file_and_disjoint_queries(capsys, write):
    code, _, err = _run(
        capsys, ["retrieval", "--qrels", "/no/such/q.txt", "--run", write("r.txt", RUN)]
    )
    assert code == 2 and "/no/such/q.txt: file not found" in err
    run = write("other.txt", "zz Q0 d1 1 1 t\n")
    code, _, err = _run(capsys, ["retrieval", "--qrels", write("q.txt", QRELS), "--run", run])
    assert code == 2 and f"{run}: none of the run's queries appear in the qrels" in err


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["retrieval", "--qrels", "q", "--run", "r", "--metrics", "recall,bogus"])
    assert info.value.code == 2
    assert "unknown measure" in capsys.readouterr().err


LABELS = "item,annotator,label\n" + "".join(
    f"i{i},{who},{lab}\n"
    for i, (a, b) in enumerate(
        [("yes", "yes")] * 20 + [("no", "no")] * 15 + [("yes", "no")] * 5 + [("no", "yes")] * 10
    )
    for who, lab in (("A", a), ("B", b))
)


def test_agreement_cohen_contract(capsys, write):
    code, out, _ = _run(
        capsys, ["agreement", "--labels", write("l.csv", LABELS), "--metric", "cohen"]
    )
    payload = json.loads(out)
    assert code == 0
    assert payload["value"] == pytest.approx(0.4)
    assert (payload["n_items"], payload["n_annotators"], payload["reason"], payload["ci"]) == (
        50,
        2,
        None,
        None,
    )


def test_agreement_krippendorff_numeric_labels_and_ci(capsys, write):
    from tests.scoring.conftest import KRIPPENDORFF_2011

    rows = "".join(
        f"u{u},{obs},{value}\n"
        for obs, values in zip("ABCD", KRIPPENDORFF_2011, strict=True)
        for u, value in enumerate(values)
        if value is not None
    )
    path = write("k.csv", "item,annotator,label\n" + rows)
    for level, published in [
        ("nominal", 0.743),
        ("ordinal", 0.815),
        ("interval", 0.849),
        ("ratio", 0.797),
    ]:
        code, out, _ = _run(
            capsys,
            [
                "agreement",
                "--labels",
                path,
                "--metric",
                "krippendorff",
                "--level",
                level,
                "--ci",
                "--resamples",
                "300",
            ],
        )
        payload = json.loads(out)
        assert code == 0 and round(payload["value"], 3) == published
        assert payload["ci"][0] < payload["value"]


def test_agreement_weighted_with_declared_categories(capsys, write):
    rows = "item,annotator,label\n1,a,low\n1,b,mid\n2,a,high\n2,b,high\n3,a,low\n3,b,low\n4,a,mid\n4,b,high\n"
    code, out, _ = _run(
        capsys,
        [
            "agreement",
            "--labels",
            write("w.csv", rows),
            "--metric",
            "cohen",
            "--weights",
            "quadratic",
            "--categories",
            "low,mid,high",
        ],
    )
    assert code == 0 and json.loads(out)["weights"] == "quadratic"


def test_agreement_undefined_value_is_null_with_reason(capsys, write):
    rows = "item,annotator,label\n1,a,x\n1,b,x\n2,a,x\n2,b,x\n"
    code, out, _ = _run(
        capsys, ["agreement", "--labels", write("u.csv", rows), "--metric", "krippendorff"]
    )
    payload = json.loads(out)
    assert code == 0 and payload["value"] is None and "0/0" in payload["reason"]


@pytest.mark.parametrize(
    ("content", "metric", "expected"),
    [
        ("", "percent", "line 1: the file is empty"),
        ("item,rater,label\n1,a,x\n", "percent", "line 1: expected the header"),
        ("item,annotator,label\n1,a,x\n1,b\n", "percent", "line 3: expected 3 fields"),
        ("item,annotator,label\n1,a,x\n,b,y\n", "percent", "line 3: item is empty"),
        ("item,annotator,label\n1,a,x\n1,,y\n", "percent", "line 3: annotator is empty"),
        ("item,annotator,label\n1,a,x\n1,b,\n", "percent", "line 3: label is empty"),
        (
            "item,annotator,label\n1,a,x\n1,a,y\n",
            "percent",
            "line 3: annotator 'a' already labelled item '1' on line 2",
        ),
        ("item,annotator,label\n", "percent", "no label rows"),
        ("item,annotator,label\n1,a,x\n1,b,y\n1,c,x\n", "cohen", "exactly two annotators"),
        ("item,annotator,label\n1,a,x\n1,b,y\n2,a,x\n", "fleiss", "Krippendorff's alpha"),
    ],
)
def test_agreement_bad_input_exits_2(capsys, write, content, metric, expected):
    path = write("bad.csv", content)
    code, out, err = _run(capsys, ["agreement", "--labels", path, "--metric", metric])
    assert code == 2 and out == ""
    assert path in err and expected in err


def test_agreement_label_outside_declared_categories_exits_2(capsys, write):
    path = write("c.csv", "item,annotator,label\n1,a,x\n1,b,z\n")
    code, _, err = _run(
        capsys, ["agreement", "--labels", path, "--metric", "cohen", "--categories", "x,y"]
    )
    assert code == 2 and "not among the declared categories" in err


def test_probe_cli_reports_pcs_caps_and_release(capsys, write):
    from tests.scoring.unit.test_probe import ANSWER, GOOD_LABELS, PACKET

    labels = dict(GOOD_LABELS, question_id=PACKET["question_id"], system_id=ANSWER["system_id"])
    code, out, _ = _run(
        capsys,
        [
            "probe",
            "--questions",
            write("q.jsonl", json.dumps(PACKET) + "\n"),
            "--answers",
            write("a.jsonl", json.dumps(ANSWER) + "\n"),
            "--labels",
            write("l.jsonl", json.dumps(labels) + "\n"),
        ],
    )
    payload = json.loads(out)
    assert code == 0
    (answer,) = payload["answers"]
    assert answer["caps"] == {} and answer["components"]["citation_precision"] == 1.0
    assert payload["systems"][ANSWER["system_id"]]["release"] is True


@pytest.mark.parametrize(
    ("which", "content", "expected"),
    [
        ("questions", '{"question_id": "q"}\n', "line 1: gold_evidence: missing field"),
        (
            "questions",
            '{"question_id": "q", "gold_evidence": [{"passage_id": "p", "label": "sufficient", "effective": "soon"}]}\n',
            "line 1: gold_evidence[0].effective: 'soon'",
        ),
        (
            "answers",
            '{"question_id": "q", "retrieved_passages": [], "citations": []}\n{x\n',
            "line 2: invalid JSON",
        ),
        (
            "answers",
            '{"question_id": "other", "retrieved_passages": [], "citations": []}\n',
            "line 1: question_id 'other'",
        ),
        (
            "answers",
            '{"question_id": "q", "retrieved_passages": [{"rank": 1}], "citations": []}\n',
            "line 1: retrieved_passages[0]",
        ),
        (
            "answers",
            '{"question_id": "q", "retrieved_passages": [{"passage_id": "p", "rank": 0}], "citations": []}\n',
            "line 1: retrieved_passages[0].rank: expected an integer ≥ 1, got 0",
        ),
        (
            "answers",
            '{"question_id": "q", "retrieved_passages": [{"passage_id": "p", "rank": -1}], "citations": []}\n',
            "line 1: retrieved_passages[0].rank: expected an integer ≥ 1, got -1",
        ),
        (
            "answers",
            '{"question_id": "q", "retrieved_passages": [{"passage_id": "p", "rank": "1"}], "citations": []}\n',
            "line 1: retrieved_passages[0].rank: expected an integer ≥ 1, got '1'",
        ),
        (
            "answers",
            '{"question_id": "q", "retrieved_passages": [{"passage_id": "p", "rank": 1}, {"passage_id": "r", "rank": 1}], "citations": []}\n',
            "line 1: retrieved_passages[1].rank: rank 1 is also given",
        ),
        (
            "answers",
            '{"question_id": "q", "retrieved_passages": [{"passage_id": "p", "rank": 1}, {"passage_id": "p", "rank": 2}], "citations": []}\n',
            "line 1: retrieved_passages[1].passage_id: 'p' is also",
        ),
        (
            "answers",
            '{"question_id": "q", "retrieved_passages": [{"passage_id": "p", "rank": 1}], "citations": "p"}\n',
            "line 1: citations: expected a list of passage id strings",
        ),
        (
            "answers",
            '{"question_id": "q", "retrieved_passages": [{"passage_id": "p", "rank": 1}], "citations": [], "latency_s": NaN}\n',
            "line 1: latency_s: expected a finite number",
        ),
        (
            "answers",
            '{"question_id": "q", "retrieved_passages": [{"passage_id": "p", "rank": 1}], "citations": [], "latency_ms": -5}\n',
            "line 1: latency_ms: expected a finite number ≥ 0, got -5",
        ),
        (
            "questions",
            '{"question_id": "q", "gold_evidence": [{"passage_id": "p", "label": "sufficient", "authority": "high"}]}\n',
            "line 1: authority: expected a finite number in [0, 1], got 'high'",
        ),
        (
            "questions",
            '{"question_id": "q", "gold_evidence": [{"passage_id": "p", "label": "sufficent"}]}\n',
            "line 1: gold_evidence[0].label: 'sufficent' is not one of",
        ),
    ],
)
def test_probe_bad_input_exits_2(capsys, write, which, content, expected):
    files = {
        "questions": write("q.jsonl", '{"question_id": "q", "gold_evidence": []}\n'),
        "answers": write(
            "a.jsonl", '{"question_id": "q", "retrieved_passages": [], "citations": []}\n'
        ),
    }
    files[which] = write(f"bad-{which}.jsonl", content)
    code, out, err = _run(
        capsys, ["probe", "--questions", files["questions"], "--answers", files["answers"]]
    )
    assert code == 2 and out == ""
    assert files[which] in err and expected in err


def test_retrieval_catalogue_in_one_call_with_trec_q_output(capsys, write):
    metrics = "map,rprec,bpref,ndcg,infap,precision@5,precision@20,recall@100,ndcg@20,map@10,mrr"
    argv = ["retrieval", "--qrels", write("q.txt", QRELS), "--run", write("r.txt", RUN)]
    code, out, _ = _run(capsys, [*argv, "--metrics", metrics])
    payload = json.loads(out)
    assert code == 0 and list(payload["aggregate"]) == metrics.split(",")
    assert payload["aggregate"]["mrr"] == pytest.approx((1 + 0.5) / 2)
    code, out, _ = _run(capsys, [*argv, "--metrics", "P_5,mrr", "--format", "trec", "--per-query"])
    assert code == 0
    # trec_eval's names and order (recip_rank before P), runid = the run's tag column.
    assert out.splitlines() == [
        "recip_rank            \tq1\t1.0000",
        "P_5                   \tq1\t0.2000",
        "recip_rank            \tq2\t0.5000",
        "P_5                   \tq2\t0.2000",
        "runid                 \tall\tt",
        "num_q                 \tall\t2",
        "recip_rank            \tall\t0.7500",
        "P_5                   \tall\t0.2000",
    ]
    code, out, _ = _run(capsys, [*argv, "--metrics", "mrr", "-l", "2", "-J", "--format", "trec"])
    assert code == 0 and out.splitlines()[-1] == "recip_rank            \tall\t0.5000"


def test_compare_runs_paired_tests_with_holm(capsys, write):
    qrels = "".join(f"q{i} 0 d{i} 1\n" for i in range(12))
    good = "".join(f"q{i} Q0 d{i} 1 2.0 t\nq{i} Q0 x{i} 2 1.0 t\n" for i in range(12))
    bad = "".join(f"q{i} Q0 d{i} 2 1.0 t\nq{i} Q0 x{i} 1 2.0 t\n" for i in range(12))
    code, out, _ = _run(
        capsys,
        [
            "compare",
            "--qrels",
            write("q.txt", qrels),
            "--run",
            write("good.txt", good),
            "--run",
            write("bad.txt", bad),
            "--metrics",
            "mrr,hit@1",
            "--wilcoxon-method",
            "exact",
        ],
    )
    payload = json.loads(out)
    assert code == 0 and payload["n_queries"] == 12 and payload["correction"] == "holm"
    mrr, hit = payload["pairs"]
    assert (mrr["metric"], mrr["test"], mrr["method"]) == ("mrr", "Wilcoxon signed-rank", "exact")
    assert mrr["pvalue"] == pytest.approx(2 / 2**12) and mrr["wins"] == 12
    assert hit["test"] == "McNemar" and hit["adjusted"] == pytest.approx(2 * 2 / 2**12)
    assert mrr["reject"] and hit["reject"]


def test_compare_needs_two_runs(capsys, write):
    code, out, err = _run(
        capsys, ["compare", "--qrels", write("q.txt", QRELS), "--run", write("r.txt", RUN)]
    )
    assert code == 2 and out == "" and "at least two runs" in err


def test_ordinal_agreement_on_text_labels_needs_the_order(capsys, write):
    rows = "item,annotator,label\n" + "".join(
        f"i{i},{who},{lab}\n"
        for i, pair in enumerate(
            [("fully_grounded", "fully_grounded"), ("misgrounded", "ungrounded")] * 5
        )
        for who, lab in zip("AB", pair, strict=True)
    )
    path = write("l.csv", rows)
    argv = ["agreement", "--labels", path, "--metric", "krippendorff", "--level", "ordinal"]
    code, out, err = _run(capsys, argv)
    assert code == 2 and "needs the category order" in err
    code, out, _ = _run(capsys, [*argv, "--axis", "grounding"])
    assert code == 0 and json.loads(out)["value"] is not None
